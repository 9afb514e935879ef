// ocbg against OpenCode's own background sub-agents, in real OpenCode with the
// same scripted fake model (fake_model.mjs). For each project size, two `opencode
// serve` side by side, each in its own isolated HOME, both in the same project, the
// batches alternating between them (so that both meet the same load on a shared machine):
//   native: OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true, no ocbg; the model
//           calls OpenCode's `task` with background: true, N times in one step;
//   ocbg:   ocbg listed in opencode.json with its default options, no flag; the
//           model calls background_task N times in one step.
// Each batch is a new parent session; its children answer after staggered
// delays ("CHILD after X MS"). In a batch of 3 the last child waits at a gate of the fake
// model until the first two have ended, the parent has taken their results (natively, a
// turn each) and it has been idle for SETTLE_MS with no other model call open: so its
// answer always lands in an idle parent, on both sides, whatever the machine's load (with a
// fixed stagger, a loaded machine let native wake turns overlap it). A batch of 20 is
// staggered only (150 ms apart): there the natively queued results are part of the figure.
// The project (made at run time, WORK/<size>/project) is a git repository of one commit, so
// that OpenCode snapshots it at every step of every session, as it does a user's project
// (its snapshot is a second git index over the worktree, in its data dir: each snapshot runs
// `diff-files` and `ls-files --others` over the whole worktree and `write-tree`; so its time
// grows with the files in the worktree, a snapshot at a time per project), but for plain:
//   plain: 12 files in a folder outside any git repository (under TMPDIR): no snapshot at all,
//          so nothing hides ocbg's own path (the notification's round trip through the SDK);
//   small: 12 files (the snapshot is a few git processes over a tiny index);
//   large: --large-files small files (100,000 by default) in directories of 100: its
//          snapshot's git commands take ~300 ms on the shared 2-core test machine (30,000
//          files: 100–400 ms from run to run, in situ hardly slower than the small one's).
// The step that ends a child stores its answer, then snapshots (the `patch` of the step),
// then completes the message and ends the child's turn: ocbg starts its completion check
// at the answer, OpenCode's own mode after the turn, so the snapshot's time is ocbg's head start.
// For each size, mode and batch size it prints `name: value unit` lines (cmp_<size>_<mode>_b<N>_…):
//   cmp_<mode>_b<N>_parent_calls    the parent's model calls after its launch turn (median over batches)
//   cmp_<mode>_b<N>_idle_to_wake_ms the last child's session.idle (as this process receives it
//                                   from /event) → the parent's model request that carries that
//                                   child's answer (the wake; it may come first: negative), at the
//                                   fake model (median, and min–max over the batches)
//   cmp_<mode>_b<N>_done_to_wake_ms the last child's answer streamed to its end → that request,
//                                   both on the fake model's clock (a cross-check that no event
//                                   stream delay enters)
//   cmp_<mode>_b<N>_launch_to_wake_ms the launch prompt sent → that request (the batch's wall time)
//   cmp_<mode>_b<N>_exit_to_loop_ms   from OpenCode's log: the last child's `exiting loop` → the
//                                   parent's `loop … step=0` of the turn the wake starts (the part
//                                   ocbg's path adds to; a wake merged into a running turn has none)
//   cmp_<mode>_b<N>_loop_to_request_ms that → the request (OpenCode's own step, the same both ways)
//   cmp_<mode>_b<N>_answer_to_completed_ms the last child's answer stored (its message.updated
//                                   with a finish) → its message completed (time.completed), both
//                                   from /event: the step's snapshot work in situ
//   cmp_<mode>_b<N>_answer_to_wake_ms that answer stored → the wake request (not moved by what
//                                   delays the child's own idle: in the large project ocbg's
//                                   parent turn takes the project's snapshot lock before the
//                                   child's last snapshot, which then ends later)
//   cmp_<mode>_b<N>_hop_<hop>_ms    the wake's hops inside the server, from wake_trace.js (a
//                                   bench-only plugin listed first on both sides; its event hook
//                                   gets each event as the bus publishes it): answer_to_idle (the
//                                   last child's answer stored → its session.idle), idle_to_event
//                                   (→ this process receiving it from /event: idle_to_wake's start),
//                                   idle_to_call
//                                   (→ ocbg's promptAsync leaving the plugin: its event hook, engine,
//                                   completion check, push, the hop to the JS thread), call_to_chat
//                                   (→ OpenCode's chat.message for it: the HTTP request, the route),
//                                   call_to_done (→ its 204 back), idle_to_chat (natively: the
//                                   <task_result> prompt), chat_to_params (→ the parent's step
//                                   about to call the model: message stored, loop started, the
//                                   step's context), params_to_request (→ the fake model),
//                                   idle_to_request (the wake from the server's own session.idle:
//                                   /event's delivery to this process is late by what the server's
//                                   thread does first, which differs by side), answer_to_request,
//                                   ocbg's call_to_chat split: call_to_fetch (→ the SDK's request leaving
//                                   by the global fetch), fetch_to_chat = fetch_to_server (→ OpenCode's
//                                   node:http server emitting it) + server_to_chat (the route), call_to_tick
//                                   (→ the thread's next macrotask: how long queued work holds it)
// and, per size: cmp_<size>_b<N>_{idle,answer,done,server_idle,server_answer}_to_wake_gap_ms:
// ocbg's median minus native's; cmp_loadavg_start, cmp_loadavg_end, cmp_<size>_loadavg: the load;
// cmp_<size>_project: what the project is; cmp_<size>_snapshot_ms: OpenCode's snapshot
// commands (rev-parse, then diff-files and ls-files --others at once, then write-tree) replayed
// on each server's snapshot repository (its path from the log's `message=tracking` line) after
// the servers stopped, 5 times each (median, min–max). Exits 1 when a batch did not
// complete (a child or wake missing), not on timing (figures are the output, not a verdict).
// WORK/batches.log: each parent request after the launch turn, with the message that caused it;
// WORK/trace-<size>-<mode>.log: wake_trace.js's lines (--trace-events: every event's type too).
//
// node e2e_compare.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR
//                      [--project plain,small,large] [--large-files N] [--batches3 N]
//                      [--batches20 N] [--batches20-large N] [--only native|ocbg] [--trace-events]
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "./fake_model.mjs";
import {
  diag, eventWatchers, fakeModelConfig, followEvents, isIdle, isolatedEnv, newSession, ocbgCopy, provideConfigDeps,
  runSuite, say, setBase, startServe, stopEvents, stopGroup, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), OCBG_DIR = opt("ocbg-dir"), WORK = opt("work");
const BATCHES3 = Number(opt("batches3", "10")), BATCHES20 = Number(opt("batches20", "3"));
const BATCHES20_LARGE = Number(opt("batches20-large", "1"));
const SIZES = opt("project", "plain,small,large").split(",").filter(Boolean);
const LARGE_FILES = Number(opt("large-files", "100000"));
const ONLY = opt("only", "");
const TRACE_EVENTS = argv.includes("--trace-events");
if (SIZES.some((s) => !["plain", "small", "large"].includes(s))) { console.error("--project: a list of plain, small, large"); process.exit(2); }
if (!BIN || !NPM_DIR || !OCBG_DIR || !WORK) {
  console.error("usage: e2e_compare.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR");
  process.exit(2);
}
// Children's delays: the first after BASE_MS, each next STEP_MS later (a batch of 3's last
// child: at its gate instead).
const PLAN = {
  plain: { 3: { base: 400, step: 400 }, 20: { base: 400, step: 150 } },
  small: { 3: { base: 400, step: 400 }, 20: { base: 400, step: 150 } },
  large: { 3: { base: 400, step: 400 }, 20: { base: 400, step: 150 } },
};
const QUIET_MS = 1200; // no new parent request for this long, parent idle: the batch is over
const SETTLE_MS = 500; // the same before a batch of 3's last child is let answer
const SMALL_FILES = 12;

const servers = {}; // `${size}_${mode}` → {proc, base}
let fake = null;
async function stopServer(key) {
  await stopGroup(servers[key]?.proc, "SIGTERM", 8000);
}
async function stopAll() {
  stopEvents();
  for (const key of Object.keys(servers)) await stopServer(key);
  if (fake) { await fake.close(); fake = null; }
  if (plainDir) { fs.rmSync(plainDir, { recursive: true, force: true }); plainDir = null; }
}

function git(args, cwd, input) {
  const r = spawnSync("git", args, { cwd, input, encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.error || r.stderr}`);
  return r.stdout;
}

// The project: a git repository of `files` small files (src/m<k>/d<j>/f<i>.ts, 100 a
// directory), one commit of a fixed date (so its root commit, OpenCode's project id, is the
// same from run to run), written by git fast-import and checked out. The index is refreshed
// a second after the checkout, so that no entry is left racily clean (OpenCode's first
// snapshot copies this index; a racy entry would look changed to it). `.opencode/` (the
// config deps written below) is ignored, as OpenCode's own .gitignore there would have it.
function makeProject(dir, files) {
  fs.mkdirSync(dir, { recursive: true });
  const parts = ["commit refs/heads/main\ncommitter ocbg-e2e <e2e@localhost> 1700000000 +0000\ndata 8\nproject\n"];
  const blob = (p, body) => parts.push(`M 100644 inline ${p}\ndata ${Buffer.byteLength(body)}\n${body}\n`);
  blob(".gitignore", ".opencode/\n");
  for (let i = 0; i < files - 1; i++) blob(`src/m${Math.floor(i / 5000)}/d${Math.floor(i / 100)}/f${i}.ts`, `export const v${i} = ${i};\n`);
  git(["-c", "init.defaultBranch=main", "init", "-q"], dir);
  git(["symbolic-ref", "HEAD", "refs/heads/main"], dir);
  git(["fast-import", "--quiet"], dir, parts.join(""));
  git(["reset", "-q", "--hard"], dir);
  spawnSync("sleep", ["1.1"]);
  spawnSync("git", ["update-index", "-q", "--refresh"], { cwd: dir });
  if (git(["status", "--porcelain"], dir).trim()) throw new Error(`${dir}: not clean after the checkout`);
}

// The plain project: a folder of `files` small files and no git repository, in the system's
// temporary directory (WORK is inside this repository's checkout, and OpenCode would take
// that for the project: a folder inside a git worktree is snapshotted with it). OpenCode
// then takes no snapshot at all. Removed when the run ends.
let plainDir = null;
function makePlain(files) {
  plainDir = fs.mkdtempSync(path.join(os.tmpdir(), "ocbg-cmp-plain-"));
  const dir = path.join(plainDir, "project");
  for (let i = 0; i < files; i++) {
    fs.mkdirSync(path.join(dir, "src"), { recursive: true });
    fs.writeFileSync(path.join(dir, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
  }
  if (spawnSync("git", ["rev-parse", "--git-dir"], { cwd: dir, stdio: "ignore" }).status === 0)
    throw new Error(`${dir} is inside a git repository: the plain project needs a folder outside any (TMPDIR)`);
  return dir;
}

// Starts `opencode serve` for one size and mode in WORK/<size>/<mode> (its HOME), in the
// size's project, and follows its events.
async function startServer(size, mode, project) {
  const key = `${size}_${mode}`;
  const root = path.join(WORK, size, mode);
  const home = path.join(root, "home"), config = path.join(home, ".config");
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  // wake_trace.js first, on both sides: its event hook sees each event just before ocbg's
  const plugin = [[fileURLToPath(new URL("./wake_trace.js", import.meta.url)), { file: tracePath(size, mode), events: TRACE_EVENTS, fetch: true }]];
  if (mode === "ocbg") {
    plugin.push([ocbgCopy(path.join(root, "ocbg"), OCBG_DIR, NPM_DIR), {}]);
  }
  const cfg = { ...fakeModelConfig(fake.port), plugin };
  const env = isolatedEnv(home, config, cfg,
    mode === "native" ? { OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS: "true" } : {});
  const logPath = path.join(WORK, `opencode-${size}-${mode}.log`);
  const started = await startServe({ bin: BIN, cwd: project, env, logPath });
  const { proc: server, base, healthy } = started;
  servers[key] = { proc: server, base };
  setBase(base);
  if (healthy) followEvents(); // each server's stream feeds the same list (told apart by session ids)
  diag(`${key}: opencode serve pid ${server.pid} (log: ${logPath}) ${healthy ? "healthy" : "NOT healthy"}`);
  return healthy;
}

const tracePath = (size, mode) => path.join(WORK, `trace-${size}-${mode}.log`);

// Events with the time this process received them.
const timed = [];
eventWatchers.add((ev) => timed.push({ ev, at: Date.now() }));

const systemOf = (r) => (r.body.messages || []).filter((m) => m.role === "system")
  .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content))).join("\n");
// The parent's own model requests (its turns, not its title) for a batch line.
const parentRequests = (line, from) => fake.requests.slice(from).filter((r) =>
  (r.body.tools || []).length > 0 && !/title/i.test(systemOf(r).slice(0, 200)) &&
  JSON.stringify(r.body.messages || []).includes(line));

// One batch: a new parent session launches n children in one step. Its figures, or null.
async function batch(size, mode, n, tag) {
  const { base, step } = PLAN[size][n];
  const gated = n === 3;
  const line = `E2E ${gated ? "cmpgated" : "cmpbatch"} ${mode} ${tag} ${n} ${base} ${step}`;
  const parent = await newSession(`cmp ${tag}`);
  const ev0 = timed.length, rq0 = fake.requests.length;
  const load = os.loadavg()[0];
  const t0 = Date.now();
  await say(parent, line);
  const lastDelay = base + (n - 1) * step;
  const children = () => timed.slice(ev0).filter((e) => e.ev.type === "session.created" &&
    e.ev.properties?.info?.parentID === parent).map((e) => e.ev.properties.info.id);
  const idleAt = (sid) => timed.slice(ev0).find((e) => e.ev.type === "session.idle" && e.ev.properties?.sessionID === sid)?.at;
  if (gated) {
    // The last child waits at its gate until the others have ended and the parent has
    // done with them (native: their wake turns) and been idle, with no model request
    // open but that child's, for SETTLE_MS: then it answers, into an idle parent.
    const gate = `${tag}-${n - 1}`;
    let seen = -1, since = Date.now();
    const settled = await waitFor(`${tag}: the first ${n - 1} children done, the parent idle`, async () => {
      const cs = children();
      if (cs.length !== n || cs.filter((c) => idleAt(c) !== undefined).length < n - 1) return false;
      const open = fake.requests.slice(rq0).filter((r) => !r.done && !r.closed);
      if (open.length !== 1 || open[0].decision.gate !== gate) { seen = -1; return false; }
      const k = parentRequests(line, rq0).length;
      if (k !== seen) { seen = k; since = Date.now(); return false; }
      return Date.now() - since >= SETTLE_MS && (await isIdle(parent));
    }, 60000 + lastDelay * 3, 50);
    if (!settled) return null;
    fake.openGate(gate);
  }
  const allIdle = await waitFor(`${tag}: ${n} children idle`, () => {
    const cs = children();
    return cs.length === n && cs.every((c) => idleAt(c) !== undefined) ? cs : null;
  }, 60000 + lastDelay * 3, 50);
  if (!allIdle) return null;
  // Quiet: the parent idle and no new parent request for QUIET_MS.
  let seen = -1, since = Date.now();
  const quiet = await waitFor(`${tag}: parent quiet`, async () => {
    const k = parentRequests(line, rq0).length;
    if (k !== seen) { seen = k; since = Date.now(); return false; }
    return Date.now() - since >= QUIET_MS && fake.requests.slice(rq0).every((r) => r.done || r.closed) && (await isIdle(parent));
  }, 60000, 100);
  if (!quiet) return null;
  const reqs = parentRequests(line, rq0);
  // The launch turn: the step that calls the tools and the step after their results (which
  // says "launched N", or "ack" when a result already came in during the turn, on a loaded
  // machine). The parent's model calls after it are what the results cost.
  if (reqs.length < 2 || !reqs[0].decision.calls) { diag(`${tag}: no launch turn`); return null; }
  const after = reqs.slice(2);
  // The last child: the one whose idle came last (ocbg starts its children one after the
  // other, so on a loaded machine it is not always the one with the longest delay); its
  // title ("child k") names its answer, which is in the message that wakes the parent for it
  // (OpenCode's <task_result>, ocbg's notification): that request is the wake. It may come
  // before the child's idle (a negative latency: the parent was woken first).
  const titleOf = (sid) => timed.slice(ev0).find((e) => e.ev.type === "session.created" &&
    e.ev.properties?.info?.id === sid)?.ev.properties.info.title || "";
  const lastChild = allIdle.reduce((a, b) => (idleAt(b) > idleAt(a) ? b : a));
  const k = titleOf(lastChild).match(/^child (\d+)\b/)?.[1];
  if (k === undefined) { diag(`${tag}: the last child's title is "${titleOf(lastChild)}"`); return null; }
  const lastIdle = idleAt(lastChild);
  const answer = `child reply ${tag}-${k}`;
  const childDone = fake.requests.slice(rq0).find((r) => r.decision.text === answer)?.doneAt;
  const wake = reqs.slice(1).find((r) => JSON.stringify(r.body.messages).includes(answer));
  if (!wake || !childDone) { diag(`${tag}: no parent request with the last child's answer`); return null; }
  // The last child's answer stored (message.updated with its finish, not yet completed) → its
  // message completed: what OpenCode does in between is the step's snapshot work.
  const infos = timed.slice(ev0).filter((e) => e.ev.type === "message.updated" &&
    e.ev.properties?.info?.sessionID === lastChild && e.ev.properties.info.role === "assistant");
  const stored = infos.find((e) => { const i = e.ev.properties.info; return i.finish && !["tool-calls", "unknown"].includes(i.finish) && !i.time?.completed; });
  const completed = stored && infos.find((e) => e.ev.properties.info.id === stored.ev.properties.info.id && e.ev.properties.info.time?.completed);
  // What woke the parent each time, for a reader of WORK/batches.log (the last message of each request).
  fs.appendFileSync(path.join(WORK, "batches.log"), after.map((r) =>
    `${tag} parent request at idle${r.at >= lastIdle ? "+" : ""}${r.at - lastIdle} ms: ${JSON.stringify(r.body.messages.at(-1)).slice(0, 400)}\n`).join(""));
  return { calls: after.length, idleToWake: wake.at - lastIdle, doneToWake: wake.at - childDone, launchToWake: wake.at - t0,
    answerToCompleted: completed ? completed.at - stored.at : undefined, answerToWake: stored ? wake.at - stored.at : undefined,
    load, tag, startAt: t0,
    parent, lastChild, wakeAt: wake.at, prevAt: reqs[reqs.indexOf(wake) - 1].at };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const results = {}; // `${size}_${mode}_b${n}` → rows (with .size, .mode)
const projects = {}; // size → {dir, files, madeMs}
const snapshots = {}; // size → replayed snapshot times (ms), both servers'
let failed = 0;

// One size: its project, both servers in it side by side, the batches alternating between
// them (native, ocbg, native…), so that both meet the same load on a shared machine.
async function runSize(size, modes) {
  const files = size === "large" ? LARGE_FILES : SMALL_FILES;
  const t = Date.now();
  const dir = size === "plain" ? makePlain(files) : path.join(WORK, size, "project");
  if (size !== "plain") makeProject(dir, files);
  projects[size] = { dir, files, madeMs: Date.now() - t };
  diag(`${size}: project of ${files} files made in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  provideConfigDeps(path.join(dir, ".opencode"), NPM_DIR);
  for (const mode of modes) if (!(await startServer(size, mode, dir))) { failed++; return; }
  // A first turn on each server: its snapshot repository is made and the project's index
  // copied into it then, not in the first batch.
  for (const mode of modes) {
    setBase(servers[`${size}_${mode}`].base);
    const s = await newSession("cmp warm-up"), rq0 = fake.requests.length;
    await say(s, `warm up ${size} ${mode}`);
    await waitFor(`${size}_${mode}: warm-up turn`, async () => {
      const rs = fake.requests.slice(rq0).filter((r) => JSON.stringify(r.body.messages || []).includes(`warm up ${size} ${mode}`));
      return rs.length > 0 && rs.every((r) => r.done || r.closed) && (await isIdle(s));
    }, 60000, 100);
  }
  const b20 = size === "large" ? BATCHES20_LARGE : BATCHES20;
  for (const [n, count] of [[3, BATCHES3], [20, b20]]) {
    for (const mode of modes) { const key = `${size}_${mode}_b${n}`; results[key] = []; Object.assign(results[key], { size, mode, n }); }
    for (let i = 0; i < count; i++) {
      for (const mode of modes) {
        setBase(servers[`${size}_${mode}`].base);
        const r = await batch(size, mode, n, `${size[0]}${mode}${n}x${i}`);
        if (!r) { failed++; diag(`${size} ${mode} batch of ${n} #${i}: incomplete`); continue; }
        diag(`${size} ${mode} batch of ${n} #${i}: parent calls ${r.calls}, idle→wake ${r.idleToWake} ms, done→wake ${r.doneToWake} ms, answer→completed ${r.answerToCompleted} ms, load ${r.load.toFixed(2)}`);
        results[`${size}_${mode}_b${n}`].push(r);
      }
    }
  }
  stopEvents();
  for (const mode of modes) { await stopServer(`${size}_${mode}`); splitByLog(size, mode); splitByTrace(size, mode); }
  snapshots[size] = [];
  if (size !== "plain") for (const mode of modes) snapshots[size].push(...(await replaySnapshot(size, mode)));
}

// OpenCode's own log (--print-logs) splits idle → wake: the last child's `exiting loop` →
// the parent's next `loop … step=0` (what ocbg's path adds: the completion check, the
// prompt), and that → the request at the fake model (OpenCode's own step: the same code
// both ways). Both are wall-clock times on this machine.
const logLines = (size, mode) => {
  try { return fs.readFileSync(path.join(WORK, `opencode-${size}-${mode}.log`), "utf8").split("\n"); } catch { return []; }
};
function splitByLog(size, mode) {
  const lines = logLines(size, mode);
  const at = (l) => Date.parse(l.match(/^timestamp=(\S+)/)?.[1] || "");
  for (const rows of Object.values(results).filter((r) => r.size === size && r.mode === mode)) {
    for (const r of rows) {
      const exit = lines.find((l) => l.includes('message="exiting loop"') && l.includes(`session.id=${r.lastChild}`));
      const t = exit ? at(exit) : NaN;
      // the parent's turn that made the wake request, when that request is its first (a turn
      // that was already running when the result came, as OpenCode's merged wakes are, has no
      // start to measure): its loop start may come before the child's exit (a negative figure:
      // the parent woken first)
      const loop = lines.filter((l) => l.includes("message=loop ") && l.includes(`session.id=${r.parent} step=0`) &&
        at(l) <= r.wakeAt && at(l) > r.prevAt).at(-1);
      // OpenCode's hourly `git gc` of its snapshot repository (first a minute after its first
      // snapshot) holds the snapshot lock: a batch it overlapped is named
      if (lines.some((l) => l.includes("message=cleanup ") && at(l) >= r.startAt && at(l) <= r.wakeAt + 2000))
        diag(`${size} ${mode} batch ${r.tag}: OpenCode's snapshot cleanup (git gc) ran during it`);
      if (!exit || !loop) continue;
      r.exitToLoop = at(loop) - t;
      r.loopToRequest = r.wakeAt - at(loop);
    }
  }
}

// The hops of each batch's wake from wake_trace.js's lines, on the server's own clock (to 0.01
// ms; the fake model's request time: to 1 ms, on the same machine's clock): the last child's
// answer stored, its session.idle as the server publishes it (every plugin's event hook gets it
// then, synchronously: no event stream in between), ocbg's notification leaving through the SDK
// client (promptAsync) and its answer, OpenCode's chat.message for the parent's new user message
// (the notification, or natively the <task_result>), the parent's chat.params (its step about to
// call the model), the request at the fake model.
const HOPS = ["answer_to_idle", "idle_to_event", "idle_to_call", "call_to_chat", "call_to_done", "idle_to_chat", "chat_to_params",
  "params_to_request", "idle_to_request", "answer_to_request", "call_to_fetch", "fetch_to_chat", "call_to_tick", "fetch_to_server", "server_to_chat"];
function splitByTrace(size, mode) {
  let lines = [];
  try { lines = fs.readFileSync(tracePath(size, mode), "utf8").split("\n"); } catch {}
  const recs = lines.map((l) => l.split(" ")).filter((f) => f.length === 3).map(([at, hop, sid]) => ({ at: Number(at), hop, sid }));
  const find = (hop, sid, pred) => recs.filter((x) => x.hop === hop && x.sid === sid && pred(x));
  const d = (a, b) => (a === undefined || b === undefined ? undefined : Math.round((b - a) * 10) / 10);
  for (const rows of Object.values(results).filter((r) => r.size === size && r.mode === mode)) {
    for (const r of rows) {
      const answer = find("answer", r.lastChild, () => true)[0]?.at, idle = find("idle", r.lastChild, () => true)[0]?.at;
      const before = (x) => x.at <= r.wakeAt + 1;
      // the waking notification: the parent's last promptAsync before the request (the silent ones came earlier)
      const call = find("pa_call", r.parent, before).at(-1)?.at;
      const from = call ?? answer;
      const done = call === undefined ? undefined : find("pa_done", r.parent, (x) => x.at >= call)[0]?.at;
      const chat = from === undefined ? undefined : find("chat", r.parent, (x) => x.at >= from && before(x))[0]?.at;
      const params = find("params", r.parent, before).at(-1)?.at;
      // after the call: its request leaving by the global fetch, the server emitting it, the thread's next macrotask
      const [fetched, served, tick] = ["f_call", "s_req", "pa_tick"].map((h) => (call === undefined ? undefined : find(h, r.parent, (x) => x.at >= call)[0]?.at));
      const v = [d(answer, idle), d(idle, r.wakeAt - r.idleToWake), d(idle, call), d(call, chat), d(call, done), d(idle, chat), d(chat, params),
        d(params, r.wakeAt), d(idle, r.wakeAt), d(answer, r.wakeAt), d(call, fetched), d(fetched, chat), d(call, tick), d(fetched, served), d(served, chat)];
      r.hops = Object.fromEntries(HOPS.map((h, k) => [h, v[k]]));
    }
  }
}

// OpenCode's snapshot (Snapshot.track: rev-parse of info/exclude, then diff-files and
// ls-files --others over the directory at once, then write-tree; each in its own git
// process, with its own options) replayed on the server's snapshot repository, named by the
// log's `message=tracking … git=<dir>` line, 5 times, once the servers have stopped.
async function replaySnapshot(size, mode) {
  const line = logLines(size, mode).filter((l) => l.includes("message=tracking ")).at(-1);
  const gitdir = line?.match(/ git=(\S+)/)?.[1], cwd = line?.match(/ cwd=(\S+)/)?.[1];
  if (!gitdir || !cwd) { diag(`${size}_${mode}: no snapshot in the log`); return []; }
  const worktree = projects[size].dir;
  const run = (args, dir) => new Promise((resolve) => {
    const p = spawn("git", args, { cwd: dir, stdio: "ignore" });
    p.on("exit", resolve); p.on("error", resolve);
  });
  const c = ["-c", "core.autocrlf=false", "-c", "core.longpaths=true", "-c", "core.symlinks=true", "-c", "core.quotepath=false"];
  const V = ["--git-dir", gitdir, "--work-tree", worktree];
  const times = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await run(["rev-parse", "--path-format=absolute", "--git-path", "info/exclude"], worktree);
    await Promise.all([run([...c, ...V, "diff-files", "--name-only", "-z", "--", "."], cwd),
      run([...c, ...V, "ls-files", "--full-name", "--others", "--exclude-standard", "-z", "--", "."], cwd)]);
    await run([...V, "write-tree"], cwd);
    times.push(Math.round(performance.now() - t));
  }
  return times;
}

const loadAt = (what) => `${os.loadavg().map((x) => x.toFixed(2)).join(" ")} (1, 5, 15-minute load averages ${what}, ${os.cpus().length} CPUs)`;
async function main() {
  const loadStart = loadAt("at the start");
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  fake = await startFakeModel();
  const modes = ["native", "ocbg"].filter((m) => !ONLY || ONLY === m);
  for (const size of SIZES) { await runSize(size, modes); if (failed && !Object.keys(results).length) return; }
  console.log(`cmp_loadavg_start: ${loadStart}`);
  console.log(`cmp_loadavg_end: ${loadAt("at the end")}`);
  const span = (xs, what = "batches") => `(min ${Math.min(...xs)}, max ${Math.max(...xs)}, ${xs.length} ${what})`;
  for (const size of SIZES) {
    const p = projects[size];
    if (!p) continue;
    console.log(`cmp_${size}_project: ${p.files} files (${size === "plain" ? "a folder outside any git repository: no snapshot" : "a git repository of one commit"}, made in ${(p.madeMs / 1000).toFixed(1)} s)`);
    const sn = snapshots[size] || [];
    if (sn.length) console.log(`cmp_${size}_snapshot_ms: ${median(sn)} ms ${span(sn, "runs")}`);
    const loads = Object.values(results).filter((r) => r.size === size).flatMap((rows) => rows.map((r) => r.load));
    if (loads.length) console.log(`cmp_${size}_loadavg: ${median(loads).toFixed(2)} (min ${Math.min(...loads).toFixed(2)}, max ${Math.max(...loads).toFixed(2)}, 1-minute load average at each batch's launch, ${os.cpus().length} CPUs)`);
    for (const [key, rows] of Object.entries(results)) {
      if (rows.size !== size || !rows.length) continue;
      const print = (name, k, unit = "ms") => {
        const xs = rows.map((r) => r[k]).filter((x) => x !== undefined);
        if (xs.length) console.log(`cmp_${key}_${name}: ${median(xs)} ${unit} ${span(xs)}`);
      };
      print("parent_calls", "calls", "calls");
      print("idle_to_wake_ms", "idleToWake");
      print("done_to_wake_ms", "doneToWake");
      print("launch_to_wake_ms", "launchToWake");
      print("exit_to_loop_ms", "exitToLoop");
      print("loop_to_request_ms", "loopToRequest");
      print("answer_to_completed_ms", "answerToCompleted");
      print("answer_to_wake_ms", "answerToWake");
      for (const hop of HOPS) {
        const xs = rows.map((r) => r.hops?.[hop]).filter((x) => x !== undefined);
        if (xs.length) console.log(`cmp_${key}_hop_${hop}_ms: ${median(xs)} ms ${span(xs)}`);
      }
    }
    for (const n of [3, 20]) {
      const a = results[`${size}_native_b${n}`], b = results[`${size}_ocbg_b${n}`];
      if (!a?.length || !b?.length) continue;
      const get = (r, k) => (k.startsWith("hop:") ? r.hops?.[k.slice(4)] : r[k]);
      const gap = (k) => { const x = a.map((r) => get(r, k)).filter((v) => v !== undefined), y = b.map((r) => get(r, k)).filter((v) => v !== undefined);
        return x.length && y.length ? Math.round((median(y) - median(x)) * 10) / 10 : NaN; };
      console.log(`cmp_${size}_b${n}_idle_to_wake_gap_ms: ${gap("idleToWake")} ms (ocbg minus native, medians)`);
      console.log(`cmp_${size}_b${n}_answer_to_wake_gap_ms: ${gap("answerToWake")} ms (ocbg minus native, medians)`);
      console.log(`cmp_${size}_b${n}_done_to_wake_gap_ms: ${gap("doneToWake")} ms (ocbg minus native, medians)`);
      console.log(`cmp_${size}_b${n}_server_idle_to_wake_gap_ms: ${gap("hop:idle_to_request")} ms (ocbg minus native, medians of hop_idle_to_request)`);
      console.log(`cmp_${size}_b${n}_server_answer_to_wake_gap_ms: ${gap("hop:answer_to_request")} ms (ocbg minus native, medians of hop_answer_to_request)`);
    }
  }
}

// Figures, not TAP: an incomplete batch or an exception fails the run.
const t0 = Date.now();
await runSuite("e2e-compare", main, {
  stop: stopAll, tapSummary: false,
  onError: (e) => { failed++; console.log(`# error: ${e?.stack || e}`); },
  after: () => diag(`e2e-compare: ${((Date.now() - t0) / 1000).toFixed(0)} s${failed ? `, ${failed} incomplete` : ""}`),
  status: () => (failed ? 1 : 0),
});

// ocbg against OpenCode's own background sub-agents, in real OpenCode with the
// same scripted fake model (fake_model.mjs). Two `opencode serve` side by side,
// each in its own isolated HOME and project, the batches alternating between
// them (so that both meet the same load on a shared machine):
//   native: OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=true, no ocbg; the model
//           calls OpenCode's `task` with background: true, N times in one step;
//   ocbg:   ocbg listed in opencode.json with its default options, no flag; the
//           model calls background_task N times in one step.
// Each batch is a new parent session; its children answer after staggered
// delays ("CHILD after X MS"), so that each child ends while the parent is idle.
// For each mode and batch size it prints `name: value unit` lines:
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
// and cmp_b<N>_idle_to_wake_gap_ms: ocbg's median minus native's. Exits 1 when a batch did not
// complete (a child or wake missing), not on timing (figures are the output, not a verdict).
// WORK/batches.log: each parent request after the launch turn, with the message that caused it.
//
// node e2e_compare.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR
//                      [--batches3 N] [--batches20 N] [--only native|ocbg]
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { startFakeModel } from "./fake_model.mjs";
import {
  api, diag, eventWatchers, followEvents, freePort, isIdle, newSession, fakeModelConfig, provideConfigDeps, say, setBase, sleep, stopEvents, stopGroup, waitFor,
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), OCBG_DIR = opt("ocbg-dir"), WORK = opt("work");
const BATCHES3 = Number(opt("batches3", "12")), BATCHES20 = Number(opt("batches20", "3"));
const ONLY = opt("only", "");
if (!BIN || !NPM_DIR || !OCBG_DIR || !WORK) {
  console.error("usage: e2e_compare.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR");
  process.exit(2);
}
// Children's delays: the first after BASE_MS, each next STEP_MS later (wide enough for a
// native wake turn in between, under load).
const PLAN = { 3: { base: 400, step: 400 }, 20: { base: 400, step: 150 } };
const QUIET_MS = 1200; // no new parent request for this long, parent idle: the batch is over

const servers = {}; // mode → {proc, base}
let fake = null;
async function stopServer(mode) {
  await stopGroup(servers[mode]?.proc, "SIGTERM", 8000);
}
async function stopAll() {
  stopEvents();
  for (const mode of Object.keys(servers)) await stopServer(mode);
  if (fake) { await fake.close(); fake = null; }
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, async () => { await stopAll(); process.exit(1); });
process.on("exit", () => {
  for (const { proc } of Object.values(servers)) try { process.kill(-proc.pid, "SIGKILL"); } catch {}
});


// Starts `opencode serve` for one mode in WORK/<mode> and follows its events.
async function startServer(mode) {
  const root = path.join(WORK, mode);
  const home = path.join(root, "home"), project = path.join(root, "project"), config = path.join(home, ".config");
  fs.mkdirSync(project, { recursive: true });
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(project, ".opencode"), NPM_DIR);
  const plugin = [];
  if (mode === "ocbg") {
    const dir = path.join(root, "ocbg");
    fs.mkdirSync(dir, { recursive: true });
    for (const f of ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"]) fs.copyFileSync(path.join(OCBG_DIR, f), path.join(dir, f));
    if (!fs.existsSync(path.join(dir, "node_modules"))) fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(dir, "node_modules"));
    plugin.push([path.join(dir, "ocbg.js"), {}]);
  }
  const cfg = { ...fakeModelConfig(fake.port), plugin };
  const env = {
    PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: config,
    XDG_DATA_HOME: path.join(home, ".local/share"), XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local/state"), TMPDIR: process.env.TMPDIR || "/tmp",
    OPENCODE_CONFIG_CONTENT: JSON.stringify(cfg),
    OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1", OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    ...(mode === "native" ? { OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS: "true" } : {}),
  };
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  setBase(base);
  const logPath = path.join(WORK, `opencode-${mode}.log`);
  const log = fs.openSync(logPath, "w");
  const server = spawn(BIN, ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs", "--log-level", "INFO"],
    { cwd: project, env, detached: true, stdio: ["ignore", log, log] });
  servers[mode] = { proc: server, base };
  fs.closeSync(log);
  const healthy = await waitFor("health", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy, 60000, 250);
  if (healthy) followEvents(); // each server's stream feeds the same list (told apart by session ids)
  diag(`${mode}: opencode serve pid ${server.pid} (log: ${logPath}) ${healthy ? "healthy" : "NOT healthy"}`);
  return !!healthy;
}

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
async function batch(mode, n, tag) {
  const { base, step } = PLAN[n];
  const line = `E2E cmpbatch ${mode} ${tag} ${n} ${base} ${step}`;
  const parent = await newSession(`cmp ${tag}`);
  const ev0 = timed.length, rq0 = fake.requests.length;
  const t0 = Date.now();
  await say(parent, line);
  const lastDelay = base + (n - 1) * step;
  const children = () => timed.slice(ev0).filter((e) => e.ev.type === "session.created" &&
    e.ev.properties?.info?.parentID === parent).map((e) => e.ev.properties.info.id);
  const idleAt = (sid) => timed.slice(ev0).find((e) => e.ev.type === "session.idle" && e.ev.properties?.sessionID === sid)?.at;
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
  // What woke the parent each time, for a reader of WORK/batches.log (the last message of each request).
  fs.appendFileSync(path.join(WORK, "batches.log"), after.map((r) =>
    `${tag} parent request at idle${r.at >= lastIdle ? "+" : ""}${r.at - lastIdle} ms: ${JSON.stringify(r.body.messages.at(-1)).slice(0, 400)}\n`).join(""));
  return { calls: after.length, idleToWake: wake.at - lastIdle, doneToWake: wake.at - childDone, launchToWake: wake.at - t0,
    parent, lastChild, wakeAt: wake.at, prevAt: reqs[reqs.indexOf(wake) - 1].at };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const results = {};
let failed = 0;

// Both servers run side by side and the batches alternate between them (native, ocbg, native…),
// so that both meet the same load on a shared machine.
async function runAll(modes) {
  for (const mode of modes) if (!(await startServer(mode))) { failed++; return; }
  await sleep(500);
  for (const [n, count] of [[3, BATCHES3], [20, BATCHES20]]) {
    for (const mode of modes) { results[`${mode}_b${n}`] = []; results[`${mode}_b${n}`].mode = mode; }
    for (let i = 0; i < count; i++) {
      for (const mode of modes) {
        setBase(servers[mode].base);
        const r = await batch(mode, n, `${mode}${n}x${i}`);
        if (!r) { failed++; diag(`${mode} batch of ${n} #${i}: incomplete`); continue; }
        diag(`${mode} batch of ${n} #${i}: parent calls ${r.calls}, idle→wake ${r.idleToWake} ms, done→wake ${r.doneToWake} ms`);
        results[`${mode}_b${n}`].push(r);
      }
    }
  }
  stopEvents();
  for (const mode of modes) { await stopServer(mode); splitByLog(mode); }
}

// OpenCode's own log (--print-logs) splits idle → wake: the last child's `exiting loop` →
// the parent's next `loop … step=0` (what ocbg's path adds: the completion check, the
// prompt), and that → the request at the fake model (OpenCode's own step: the same code
// both ways). Both are wall-clock times on this machine.
function splitByLog(mode) {
  let lines = [];
  try { lines = fs.readFileSync(path.join(WORK, `opencode-${mode}.log`), "utf8").split("\n"); } catch { return; }
  const at = (l) => Date.parse(l.match(/^timestamp=(\S+)/)?.[1] || "");
  for (const rows of Object.values(results).filter((r) => r.mode === mode)) {
    for (const r of rows) {
      const exit = lines.find((l) => l.includes('message="exiting loop"') && l.includes(`session.id=${r.lastChild}`));
      const t = exit ? at(exit) : NaN;
      // the parent's turn that made the wake request, when that request is its first (a turn
      // that was already running when the result came, as OpenCode's merged wakes are, has no
      // start to measure): its loop start may come before the child's exit (a negative figure:
      // the parent woken first)
      const loop = lines.filter((l) => l.includes("message=loop ") && l.includes(`session.id=${r.parent} step=0`) &&
        at(l) <= r.wakeAt && at(l) > r.prevAt).at(-1);
      if (!exit || !loop) continue;
      r.exitToLoop = at(loop) - t;
      r.loopToRequest = r.wakeAt - at(loop);
    }
  }
}

async function main() {
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  fake = await startFakeModel();
  await runAll(["native", "ocbg"].filter((m) => !ONLY || ONLY === m));
  for (const [key, rows] of Object.entries(results)) {
    if (!rows.length) continue;
    const col = (k) => rows.map((r) => r[k]);
    const span = (k) => `(min ${Math.min(...col(k))}, max ${Math.max(...col(k))}, ${rows.length} batches)`;
    console.log(`cmp_${key}_parent_calls: ${median(col("calls"))} calls ${span("calls")}`);
    console.log(`cmp_${key}_idle_to_wake_ms: ${median(col("idleToWake"))} ms ${span("idleToWake")}`);
    console.log(`cmp_${key}_done_to_wake_ms: ${median(col("doneToWake"))} ms ${span("doneToWake")}`);
    console.log(`cmp_${key}_launch_to_wake_ms: ${median(col("launchToWake"))} ms ${span("launchToWake")}`);
    const split = rows.filter((r) => r.exitToLoop !== undefined);
    if (split.length) {
      const c = (k) => split.map((r) => r[k]);
      const sp = (k) => `(min ${Math.min(...c(k))}, max ${Math.max(...c(k))}, ${split.length} batches)`;
      console.log(`cmp_${key}_exit_to_loop_ms: ${median(c("exitToLoop"))} ms ${sp("exitToLoop")}`);
      console.log(`cmp_${key}_loop_to_request_ms: ${median(c("loopToRequest"))} ms ${sp("loopToRequest")}`);
    }
  }
  for (const n of [3, 20]) {
    const a = results[`native_b${n}`], b = results[`ocbg_b${n}`];
    if (a?.length && b?.length)
      console.log(`cmp_b${n}_idle_to_wake_gap_ms: ${median(b.map((r) => r.idleToWake)) - median(a.map((r) => r.idleToWake))} ms (ocbg minus native, medians)`);
  }
}

const t0 = Date.now();
main()
  .catch((e) => { failed++; console.log(`# error: ${e?.stack || e}`); })
  .finally(async () => {
    await stopAll();
    diag(`e2e-compare: ${((Date.now() - t0) / 1000).toFixed(0)} s${failed ? `, ${failed} incomplete` : ""}`);
    process.exit(failed ? 1 : 0);
  });

// The wake where the plugins' SDK client is in-process: ocbg against OpenCode's own
// background sub-agents in the plain TUI (`opencode` with no --port, --hostname or mDNS,
// run headless in tmux), with the same scripted fake model and the same gated batches of 3
// as e2e_compare.mjs (which runs `opencode serve`). OpenCode 1.18.33 hands plugins a client
// whose fetch is its own app's (`Server.Default().app.fetch`) only when it has no server URL,
// i.e. when no HTTP server was started: the plain TUI and `opencode run`; in `serve`, `web`,
// `acp` and the TUI with --port/--hostname (as e2e_tui.mjs runs it) the client fetches the
// server's URL over loopback HTTP. So this harness has no HTTP API to ask: it types into the
// TUI (tmux send-keys) and reads what happens from wake_trace.js's lines (options detail and
// fetch: sessions made with their parents, statuses, idles, promptAsync and whether it left
// through the global fetch) and from the fake model's requests.
//
// For each project (plain: 12 files in a folder outside any git repository, no snapshot;
// small: a git repository of 12 files, one commit) two TUIs side by side, each in its own
// isolated HOME, the batches alternating between them. A batch: a new session (ctrl+x n),
// the line typed; the parent launches 3 children; the last waits at its gate until the first
// two are idle, the parent has taken their results and been idle SETTLE_MS: its answer then
// lands in an idle parent on both sides. Figures (`name: value unit`, medians over batches):
//   cmptui_<size>_<mode>_client             how the plugins' client fetched (wake_trace's
//                                           `client:` line; ocbg: its promptAsync calls that
//                                           went through the global fetch, none in-process)
//   cmptui_<size>_<mode>_b3_idle_to_wake_ms  the last child's session.idle as the bus publishes
//                                           it (wake_trace) → the parent's model request with
//                                           that child's answer (the fake model)
//   cmptui_<size>_<mode>_b3_answer_to_wake_ms the child's answer stored → that request
//   cmptui_<size>_<mode>_b3_done_to_wake_ms  the answer streamed to its end → that request
//                                           (both on the fake model's clock)
//   cmptui_<size>_<mode>_b3_hop_<hop>_ms     idle_to_call (ocbg: → its promptAsync), call_to_chat
//                                           (→ OpenCode's chat.message for it), idle_to_chat,
//                                           chat_to_params, params_to_request
//   cmptui_<size>_b3_{idle,answer,done}_to_wake_gap_ms, _hop_idle_to_chat_gap_ms  ocbg's median
//                                           minus native's (the last: the part that differs by side)
//   cmptui_loopback_*                       loopback_floor.mjs: the loopback HTTP's own cost in
//                                           OpenCode's Bun, the thread idle (the floor of `serve`'s)
//   cmptui_loadavg_*                        the machine's load
// Figures, not a verdict: exits 1 only when a batch did not complete.
//
// node e2e_compare_tui.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR
//                          [--project plain,small] [--batches3 N] [--only native|ocbg] [--keep]
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "./fake_model.mjs";
import { diag, fakeModelConfig, isolatedEnv, ocbgCopy, provideConfigDeps, runSuite, waitFor } from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), OCBG_DIR = opt("ocbg-dir"), WORK = opt("work");
const BATCHES3 = Number(opt("batches3", "10"));
const SIZES = opt("project", "plain,small").split(",").filter(Boolean);
const ONLY = opt("only", ""), KEEP = argv.includes("--keep");
if (SIZES.some((s) => !["plain", "small"].includes(s))) { console.error("--project: a list of plain, small"); process.exit(2); }
if (!BIN || !NPM_DIR || !OCBG_DIR || !WORK) {
  console.error("usage: e2e_compare_tui.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR");
  process.exit(2);
}
const N = 3, BASE_MS = 400, STEP_MS = 400; // the children: after 400 and 800 ms, the last at its gate
const QUIET_MS = 1200, SETTLE_MS = 500, FILES = 12;

// ---- tmux: a server of its own socket per TUI (a tmux server gives every session it starts
// the environment it was started with: two TUIs in one server would share one HOME) ----
const SOCK = `ocbg-cmp-tui-${process.pid}`;
const socks = new Map(); // TUI name → its tmux socket's path (tmux leaves the file behind)
const tmuxOf = (name, ...args) => execFileSync("tmux", ["-L", `${SOCK}-${name}`, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const screen = (name) => { try { return tmuxOf(name, "capture-pane", "-p", "-t", name); } catch { return ""; } };
const keys = (name, ...k) => tmuxOf(name, "send-keys", "-t", name, ...k);
const type = (name, s) => tmuxOf(name, "send-keys", "-t", name, "-l", s);
function stopTmux(name) {
  const sock = socks.get(name);
  if (KEEP || !socks.delete(name)) return;
  try { tmuxOf(name, "kill-server"); } catch {}
  if (sock) fs.rmSync(sock, { force: true });
}

// ---- the projects ----
const tmpDirs = [];
function makeProjectDir(size) {
  // outside WORK (inside this repository's checkout, which OpenCode would take for the project)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `ocbg-cmptui-${size}-`));
  tmpDirs.push(root);
  const dir = path.join(root, "project");
  fs.mkdirSync(path.join(dir, "src"), { recursive: true });
  for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(dir, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
  const git = (...a) => spawnSync("git", ["-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...a], { encoding: "utf8" });
  if (size === "small") {
    fs.writeFileSync(path.join(dir, ".gitignore"), ".opencode/\n");
    for (const a of [["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "project"]])
      if (git(...a).status !== 0) throw new Error(`${dir}: git ${a.join(" ")} failed`);
  } else if (git("rev-parse", "--git-dir").status === 0) {
    throw new Error(`${dir} is inside a git repository: the plain project needs a folder outside any (TMPDIR)`);
  }
  return dir;
}

// ---- the trace: wake_trace.js's lines, read again at each look ----
const tracePath = (size, mode) => path.join(WORK, `trace-${size}-${mode}.log`);
function trace(size, mode) {
  let text = "";
  try { text = fs.readFileSync(tracePath(size, mode), "utf8"); } catch {}
  return text.split("\n").map((l) => l.split(" ")).filter((f) => f.length === 3).map(([at, hop, sid]) => ({ at: Number(at), hop, sid }));
}

// Starts the TUI for one size and mode in tmux session `<size>-<mode>`, with no --port: no
// server URL, so OpenCode gives the plugins its in-process client. Whether it loaded.
async function startTui(size, mode, project) {
  const root = path.join(WORK, size, mode), home = path.join(root, "home"), config = path.join(home, ".config");
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  const plugin = [[fileURLToPath(new URL("./wake_trace.js", import.meta.url)), { file: tracePath(size, mode), detail: true, fetch: true }]];
  if (mode === "ocbg") {
    plugin.push([ocbgCopy(path.join(root, "ocbg"), OCBG_DIR, NPM_DIR), {}]);
  }
  const env = isolatedEnv(home, config, { ...fakeModelConfig(fake.port), plugin }, {
    TERM: "xterm-256color", OPENCODE_FAST_BOOT: "1",
    ...(mode === "native" ? { OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS: "true" } : {}) });
  const name = `${size}-${mode}`;
  execFileSync("tmux", ["-L", `${SOCK}-${name}`, "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", "-c", project, BIN],
    { env, stdio: "ignore" });
  let sock = "";
  try { sock = tmuxOf(name, "display-message", "-p", "#{socket_path}").trim(); } catch {}
  socks.set(name, sock);
  diag(`${name}: the TUI runs in tmux -L ${SOCK}-${name} (attach: tmux -L ${SOCK}-${name} attach -t ${name})`);
  return !!await homeReady(name, 60000);
}

// The home screen's prompt, the model loaded (a line typed before is dropped by the TUI).
const homeReady = (name, ms) => waitFor(`${name}: the prompt`, () => {
  const s = screen(name);
  return /Ask anything/.test(s) && /Build · Fake/.test(s) && !/E2E cmpgated|warm up/.test(s);
}, ms, 100);

let fake = null;
const sessionsBy = (recs, parent) => recs.filter((r) => r.hop === `created:${parent}`).map((r) => r.sid);
const statusOf = (recs, sid) => recs.filter((r) => r.sid === sid && r.hop.startsWith("status:")).at(-1)?.hop.slice(7);
const idleAt = (recs, sid) => recs.find((r) => r.hop === "idle" && r.sid === sid)?.at;
const parentRequests = (line, from) => fake.requests.slice(from).filter((r) => (r.body.tools || []).length > 0 &&
  JSON.stringify(r.body.messages || []).includes(line) && !/title/i.test(JSON.stringify(r.body.messages?.[0] ?? "").slice(0, 300)));

// One gated batch of 3 on one side: its figures, or null.
async function batch(size, mode, tag) {
  const name = `${size}-${mode}`;
  const line = `E2E cmpgated ${mode} ${tag} ${N} ${BASE_MS} ${STEP_MS}`;
  const rq0 = fake.requests.length, load = os.loadavg()[0];
  const seen0 = new Set(trace(size, mode).filter((r) => r.hop === "created:-").map((r) => r.sid));
  keys(name, "C-x"); keys(name, "n"); // a new session
  if (!(await homeReady(name, 15000))) return null;
  type(name, line); keys(name, "Enter");
  const parent = await waitFor(`${tag}: the parent session`, () =>
    trace(size, mode).find((r) => r.hop === "created:-" && !seen0.has(r.sid))?.sid, 30000, 50);
  if (!parent) return null;
  const gate = `${tag}-${N - 1}`;
  let seen = -1, since = Date.now();
  const settled = await waitFor(`${tag}: the first ${N - 1} children done, the parent idle`, () => {
    const recs = trace(size, mode), cs = sessionsBy(recs, parent);
    if (cs.length !== N || cs.filter((c) => idleAt(recs, c) !== undefined).length < N - 1) return false;
    const open = fake.requests.slice(rq0).filter((r) => !r.done && !r.closed);
    if (open.length !== 1 || open[0].decision.gate !== gate) { seen = -1; return false; }
    const k = parentRequests(line, rq0).length;
    if (k !== seen) { seen = k; since = Date.now(); return false; }
    return Date.now() - since >= SETTLE_MS && statusOf(recs, parent) === "idle";
  }, 60000, 50);
  if (!settled) return null;
  fake.openGate(gate);
  const all = await waitFor(`${tag}: ${N} children idle`, () => {
    const recs = trace(size, mode), cs = sessionsBy(recs, parent);
    return cs.length === N && cs.every((c) => idleAt(recs, c) !== undefined) ? cs : null;
  }, 60000, 50);
  if (!all) return null;
  seen = -1; since = Date.now();
  const quiet = await waitFor(`${tag}: parent quiet`, () => {
    const k = parentRequests(line, rq0).length;
    if (k !== seen) { seen = k; since = Date.now(); return false; }
    return Date.now() - since >= QUIET_MS && fake.requests.slice(rq0).every((r) => r.done || r.closed) &&
      statusOf(trace(size, mode), parent) === "idle";
  }, 60000, 100);
  if (!quiet) return null;
  const recs = trace(size, mode);
  const lastChild = all.reduce((a, b) => (idleAt(recs, b) > idleAt(recs, a) ? b : a));
  const answer = `child reply ${gate}`;
  const reqs = parentRequests(line, rq0);
  const wake = reqs.slice(1).find((r) => JSON.stringify(r.body.messages).includes(answer));
  const childDone = fake.requests.slice(rq0).find((r) => r.decision.text === answer)?.doneAt;
  if (!wake || !childDone) { diag(`${tag}: no parent request with the last child's answer`); return null; }
  const at = (hop, sid, pred = () => true) => recs.filter((r) => r.hop === hop && r.sid === sid && pred(r));
  const idle = idleAt(recs, lastChild), stored = at("answer", lastChild)[0]?.at;
  const before = (r) => r.at <= wake.at + 1;
  const call = at("pa_call", parent, before).at(-1)?.at;
  const chat = at("chat", parent, (r) => r.at >= (call ?? idle) && before(r))[0]?.at;
  const params = at("params", parent, before).at(-1)?.at;
  const d = (a, b) => (a === undefined || b === undefined ? undefined : Math.round((b - a) * 10) / 10);
  return { tag, load, idleToWake: d(idle, wake.at), answerToWake: d(stored, wake.at), doneToWake: wake.at - childDone,
    viaFetch: at("f_call", parent).length, calls: at("pa_call", parent).length,
    hops: { idle_to_call: d(idle, call), call_to_chat: d(call, chat), idle_to_chat: d(idle, chat), chat_to_params: d(chat, params),
      params_to_request: d(params, wake.at) } };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const results = {}; // `${size}_${mode}` → rows
const clients = {}; // `${size}_${mode}` → wake_trace's client: line
let failed = 0;

async function runSize(size, modes) {
  const project = makeProjectDir(size);
  provideConfigDeps(path.join(project, ".opencode"), NPM_DIR);
  for (const mode of modes) if (!(await startTui(size, mode, project))) { failed++; diag(`${size}-${mode}: the TUI did not start`); return; }
  for (const mode of modes) {
    results[`${size}_${mode}`] = [];
    // a first turn on each side: the plugins loaded, the instance warm (and its first snapshot made)
    const name = `${size}-${mode}`, rq0 = fake.requests.length;
    type(name, `warm up ${size} ${mode}`); keys(name, "Enter");
    await waitFor(`${name}: warm-up turn`, () => {
      const rs = fake.requests.slice(rq0).filter((r) => JSON.stringify(r.body.messages || []).includes(`warm up ${size} ${mode}`));
      return rs.length > 0 && rs.every((r) => r.done || r.closed);
    }, 60000, 100);
    clients[`${size}_${mode}`] = trace(size, mode).find((r) => r.hop.startsWith("client:"))?.hop.slice(7) ?? "unknown";
  }
  for (let i = 0; i < BATCHES3; i++) {
    for (const mode of modes) {
      const r = await batch(size, mode, `t${size[0]}${mode}x${i}`);
      if (!r) { failed++; diag(`${size} ${mode} batch #${i}: incomplete`); continue; }
      diag(`${size} ${mode} batch #${i}: idle→wake ${r.idleToWake} ms, answer→wake ${r.answerToWake} ms, call→chat ${r.hops.call_to_chat} ms, load ${r.load.toFixed(2)}`);
      results[`${size}_${mode}`].push(r);
    }
  }
  for (const mode of modes) stopTmux(`${size}-${mode}`);
}

const loadNow = () => `${os.loadavg().map((x) => x.toFixed(2)).join(" ")} (1, 5, 15-minute load averages, ${os.cpus().length} CPUs)`;
async function main() {
  const loadStart = loadNow();
  fs.rmSync(WORK, { recursive: true, force: true });
  fs.mkdirSync(WORK, { recursive: true });
  fake = await startFakeModel();
  const modes = ["native", "ocbg"].filter((m) => !ONLY || ONLY === m);
  for (const size of SIZES) await runSize(size, modes);
  // the transport's own floor in OpenCode's Bun, for the `serve` breakdown (loopback_floor.mjs)
  const floor = spawnSync(BIN, [fileURLToPath(new URL("./loopback_floor.mjs", import.meta.url))],
    { env: { PATH: process.env.PATH, BUN_BE_BUN: "1" }, encoding: "utf8", timeout: 60000 });
  if (floor.status === 0) process.stdout.write(floor.stdout); else diag(`loopback_floor.mjs: ${floor.stderr || floor.error}`);
  console.log(`cmptui_loadavg_start: ${loadStart}`);
  console.log(`cmptui_loadavg_end: ${loadNow()}`);
  const span = (xs) => `(min ${Math.min(...xs)}, max ${Math.max(...xs)}, ${xs.length} batches)`;
  const FIG = [["idle_to_wake_ms", (r) => r.idleToWake], ["answer_to_wake_ms", (r) => r.answerToWake], ["done_to_wake_ms", (r) => r.doneToWake],
    ...["idle_to_call", "call_to_chat", "idle_to_chat", "chat_to_params", "params_to_request"].map((h) => [`hop_${h}_ms`, (r) => r.hops[h]])];
  for (const size of SIZES) {
    const loads = modes.flatMap((m) => (results[`${size}_${m}`] || []).map((r) => r.load));
    if (loads.length) console.log(`cmptui_${size}_loadavg: ${median(loads).toFixed(2)} (min ${Math.min(...loads).toFixed(2)}, max ${Math.max(...loads).toFixed(2)}, 1-minute load average at each batch's launch)`);
    for (const mode of modes) {
      const rows = results[`${size}_${mode}`] || [];
      const calls = rows.reduce((s, r) => s + r.calls, 0), via = rows.reduce((s, r) => s + r.viaFetch, 0);
      console.log(`cmptui_${size}_${mode}_client: ${clients[`${size}_${mode}`] ?? "unknown"}` +
        (mode === "ocbg" ? ` (${calls} promptAsync calls, ${via} through the global fetch)` : ""));
      for (const [fig, get] of FIG) {
        const xs = rows.map(get).filter((x) => x !== undefined);
        if (xs.length) console.log(`cmptui_${size}_${mode}_b3_${fig}: ${Math.round(median(xs) * 10) / 10} ms ${span(xs)}`);
      }
    }
    const a = results[`${size}_native`], b = results[`${size}_ocbg`];
    if (!a?.length || !b?.length) continue;
    for (const [fig, get] of [...FIG.slice(0, 3), FIG.find(([f]) => f === "hop_idle_to_chat_ms")]) {
      const x = a.map(get).filter((v) => v !== undefined), y = b.map(get).filter((v) => v !== undefined);
      if (x.length && y.length) console.log(`cmptui_${size}_b3_${fig.replace(/_ms$/, "")}_gap_ms: ${Math.round((median(y) - median(x)) * 10) / 10} ms (ocbg minus native, medians)`);
    }
  }
}

async function stopAll() {
  for (const name of [...socks.keys()]) stopTmux(name);
  if (fake) { await fake.close(); fake = null; }
  for (const d of tmpDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

const t0 = Date.now();
await runSuite("e2e-compare-tui", main, {
  stop: stopAll, tapSummary: false,
  onError: (e) => { failed++; console.log(`# error: ${e?.stack || e}`); },
  after: () => diag(`e2e-compare-tui: ${((Date.now() - t0) / 1000).toFixed(0)} s${failed ? `, ${failed} incomplete` : ""}`),
  status: () => (failed ? 1 : 0),
});

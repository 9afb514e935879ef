// End-to-end: ocbg's TUI panel in the real OpenCode TUI (pinned, from npm),
// run headless in a detached tmux session of its own socket and read with
// `tmux capture-pane -p`: what a person sees is asserted on the screen. The
// TUI runs offline in an isolated HOME with the scripted fake model; its
// --port opens the HTTP API the test uses to make sessions and to play the
// server part's side of the channel (docs/panel.md).
//
// The panel's files are the installed ones (make install-opencode PROJECT=...:
// .opencode/ocbg-tui/ listed in the project's tui.json); the test only adds
// options to that entry (marker: the file the panel writes "loaded" to). The
// server side is test/fake_view_plugin.js, which speaks the channel as ocbg's
// server part does for the tasks the test gives it. Prints TAP; stops all it
// started, also on failure. With ocbg's own server part it also times the
// panel (realTimed): `panel_*` lines, `name: value unit`, figures only.
//
// node e2e_tui.mjs --opencode BIN --npm-dir DIR --project DIR --work DIR [--package TGZ] [--keep]
//   --project: where install-opencode PROJECT= put ocbg; --package: make package's tarball, then
//   installed by name (a fake registry) in opencode.json and tui.json; --keep: leave the TUI running (debugging)
import { execFile, execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "./fake_model.mjs";
import { packageJsonOf, startFakeRegistry } from "./fake_registry.mjs";
import {
  api, diag, events, eventWatchers, fakeModelConfig, followEvents, freePort, gitRepoWithCommit, idle, isolatedEnv,
  messages, ok, permissionAsked, provideConfigDeps, replyPermission, runSuite, say, sayTool, setBase, sleep,
  stopEvents, taskIds, textOf, toolEnded, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), PROJECT = opt("project"), WORK = opt("work");
const KEEP = argv.includes("--keep");
const PACKAGE = opt("package"); // make package's tarball: also load it by name from a fake registry
if (!BIN || !NPM_DIR || !PROJECT || !WORK) {
  console.error("usage: e2e_tui.mjs --opencode BIN --npm-dir DIR --project DIR --work DIR [--keep]");
  process.exit(2);
}
const HERE = path.dirname(fileURLToPath(import.meta.url));
const HOME = path.join(WORK, "home");
const CONFIG = path.join(HOME, ".config");
const MARKER = path.join(WORK, "tui-marker");
const FAKE_LOG = path.join(WORK, "fake-view.log");
const SOCK = `ocbg-e2e-tui-${process.pid}`;
const NAME = "tui";
const WIDE = 160, NARROW = 110, ROWS = 45;
const SIDEBAR = 42; // the sidebar's columns, at the right of a wide screen

// ---- tmux ----
let tmuxUp = false;
const tmux = (...args) => execFileSync("tmux", ["-L", SOCK, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
const screen = () => tmux("capture-pane", "-p", "-t", NAME);
const paneTitle = () => tmux("display-message", "-p", "-t", NAME, "#{pane_title}").trim();
const keys = (...k) => tmux("send-keys", "-t", NAME, ...k);
const type = (s) => tmux("send-keys", "-t", NAME, "-l", s);
function stopTmux() {
  if (!tmuxUp || KEEP) return;
  try { tmux("kill-server"); } catch {}
  tmuxUp = false;
}

// The screen's text with runs of blanks made one space (a line the panel
// draws is found whole even where the terminal wrapped it).
const flat = (s) => s.replace(/\s+/g, " ");
// The sidebar's column of the screen, flattened.
const sidebar = (s) => flat(s.split("\n").map((r) => r.padEnd(WIDE).slice(WIDE - SIDEBAR)).join("\n"));
const has = (text, want) => (typeof want === "string" ? text.includes(want) : want.test(text));
// Waits until the screen (through view) shows every one of wants; the screen at the deadline otherwise.
async function shows(what, wants, view = flat, timeoutMs = 15000) {
  let last = "";
  const hit = await waitFor(what, () => { last = screen(); return wants.every((w) => has(view(last), w)); }, timeoutMs, 100);
  return { hit: !!hit, last };
}
async function showsOk(name, wants, view = flat, timeoutMs = 15000) {
  const r = await shows(name, wants, view, timeoutMs);
  return ok(r.hit, name, { want: wants.map(String), screen: r.last });
}
async function gone(name, unwanted, view = flat, timeoutMs = 15000) {
  let last = "";
  const hit = await waitFor(name, () => { last = screen(); return !has(view(last), unwanted); }, timeoutMs, 100);
  return ok(!!hit, name, { unwanted: String(unwanted), screen: last });
}

// Keeps the screen as WORK/screens/NAME.txt (for a look, and the README's pictures).
const keepScreen = (name) => {
  fs.mkdirSync(path.join(WORK, "screens"), { recursive: true });
  fs.writeFileSync(path.join(WORK, "screens", `${name}.txt`), screen());
};

// ---- the server side of the channel (the fake server part) ----
const publish = (command) => api("POST", "/tui/publish", { type: "tui.command.execute", properties: { command } });
const setTasks = (session, tasks) => publish(`ocbgfake.set ${JSON.stringify({ session, tasks })}`);
const requestsSeen = () => {
  try { return fs.readFileSync(FAKE_LOG, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; }
};

let fake = null, registry = null;

// Starts the TUI in tmux (session NAME, WIDE x ROWS) in project, isolated in
// home, with --port for the test's HTTP client. Whether its API answered.
async function startTui(home, config, project, opencodeConfig) {
  if (tmuxUp) { try { tmux("kill-session", "-t", NAME); } catch {} }
  spawnSync("git", ["init", "-q", project]); // its own repository: not the ocbg checkout around build/
  const port = await freePort();
  setBase(`http://127.0.0.1:${port}`);
  const env = isolatedEnv(home, config, opencodeConfig, { TERM: "xterm-256color", OPENCODE_FAST_BOOT: "1" });
  execFileSync("tmux", ["-L", SOCK, "-f", "/dev/null", "new-session", "-d", "-s", NAME, "-x", String(WIDE), "-y", String(ROWS),
    "-c", project, BIN, "--port", String(port), "--hostname", "127.0.0.1", "--log-level", "DEBUG"], { env, stdio: "ignore" });
  tmuxUp = true;
  diag(`the TUI runs in tmux -L ${SOCK} (attach: tmux -L ${SOCK} attach -t ${NAME})`);
  return !!await waitFor("the TUI's server", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy, 60000, 250);
}

async function main() {
  fs.rmSync(HOME, { recursive: true, force: true });
  fs.mkdirSync(HOME, { recursive: true });
  fs.rmSync(MARKER, { force: true });
  fs.rmSync(FAKE_LOG, { force: true });
  provideConfigDeps(path.join(CONFIG, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(PROJECT, ".opencode"), NPM_DIR);

  // The installed entry, with the test's options added to it.
  const tuiJson = path.join(PROJECT, "tui.json");
  let cfg = null;
  try { cfg = JSON.parse(fs.readFileSync(tuiJson, "utf8")); } catch {}
  const entry = (cfg?.plugin || []).map((p) => (Array.isArray(p) ? p[0] : p)).find((p) => /ocbg_tui\.js$/.test(p));
  if (!ok(entry && fs.existsSync(entry), "install-opencode listed the installed TUI entry in the project's tui.json",
    { tuiJson: cfg, entry })) return;
  cfg.plugin = cfg.plugin.map((p) => ((Array.isArray(p) ? p[0] : p) === entry ? [entry, { marker: MARKER, key: "<leader>j" }] : p));
  fs.writeFileSync(tuiJson, JSON.stringify(cfg, null, 2));
  // The server part here is the fake: ocbg's own (scanned) server plugin is set aside.
  const scanned = path.join(PROJECT, ".opencode/plugin");
  if (fs.existsSync(scanned)) fs.renameSync(scanned, path.join(PROJECT, ".opencode/plugin.off"));

  fake = await startFakeModel();
  const config = { ...fakeModelConfig(fake.port), plugin: [[path.join(HERE, "fake_view_plugin.js"), { log: FAKE_LOG }]] };
  const t0 = Date.now();
  if (!ok(await startTui(HOME, CONFIG, PROJECT, config), "the TUI's HTTP API answers")) return;
  const loaded = await waitFor("the panel's marker", () => fs.existsSync(MARKER) && fs.readFileSync(MARKER, "utf8"), 60000, 100);
  if (!ok(loaded === "loaded\n", "the TUI entry loaded from the installed files (its marker says loaded)", loaded)) return;
  diag(`the panel loaded ${Date.now() - t0} ms after launch`);
  // The fake server part is loaded at the first request to the project's instance; wait for its answer to a sync.
  await api("GET", "/session");
  const synced = await waitFor("the fake server part", async () => {
    await publish(`ocbg.ui ${JSON.stringify({ v: 1, id: "e2e-probe", action: "sync" })}`);
    return requestsSeen().some((r) => r.id === "e2e-probe");
  }, 30000, 500);
  if (!ok(synced, "the fake server part answers on the bus")) return;

  for (const scenario of [sidebarLive, summaryNarrow, pageOpens, pageDetail, pageStop, pageStopConfirm, openChild,
    hostileText])
    await scenario();
  await realOcbg(scanned);
  await realNestedAsk(scanned);
  if (PACKAGE) await packageByName();
}

// ---- the real server part ----
// The TUI again, now with ocbg's own server part (the installed, scanned
// plugin) and the fake model: tasks the model launches show in the sidebar
// and change live; a task whose sub-agent waits for the user's permission is
// marked; the page stops a running task through ocbg (its sub-agent's model
// stream closes, the parent is told it was stopped by the user), and neither
// looking nor stopping makes a model request (the parent's notified turn
// afterwards is the model learning of it, as of any ending).
async function realOcbg(scanned) {
  if (tmuxUp) { try { tmux("kill-session", "-t", NAME); } catch {} }
  stopEvents();
  if (fs.existsSync(path.join(PROJECT, ".opencode/plugin.off"))) fs.renameSync(path.join(PROJECT, ".opencode/plugin.off"), scanned);
  fs.rmSync(MARKER, { force: true });
  // A commit, for isolation "worktree" (realIsolated); only shared.txt is tracked, so a worktree has no .opencode/.
  const git = gitRepoWithCommit(PROJECT);
  const base = fakeModelConfig(fake.port);
  // external_directory: the launch of an isolated task asks for its worktree, outside the project (and
  // realTty's command names /dev/tty). The scanned copy listed with options: loaded once, from the scan,
  // its options found by ocbg_options.mjs; face_claude for realTty's Bash.
  const config = { ...base, snapshot: false, permission: { ...base.permission, bash: { "*": "allow", "*e2e-ask*": "ask" },
    external_directory: "allow" }, plugin: [[path.join(scanned, "ocbg.js"), { face_claude: true }]] };
  if (!ok(await startTui(HOME, CONFIG, PROJECT, config), "real: the TUI with ocbg's server part answers")) return;
  ok(await waitFor("the marker", () => fs.existsSync(MARKER) && fs.readFileSync(MARKER, "utf8") === "loaded\n", 60000, 100),
    "real: the panel loaded");
  followEvents();
  const sid = (await api("POST", "/session", { title: "real panel" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  let since = await sayTool(sid, "background_task", { description: "Slow real", prompt: "CHILD slow", agent: "general" });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  ok(launched?.status === "completed", "real: the model launched a background task", launched);
  await idle(sid);
  await showsOk("real: the task the model launched shows in the sidebar, running", [/● running Slow real general · \d+s/],
    sidebar, 20000);
  const slowReq = await waitFor("the slow child's model request", async () => fake.requests.find((r) => r.decision.hang && !r.closed), 30000);
  const from = events.length;
  since = await sayTool(sid, "background_task", { description: "Asking real", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: "echo e2e-ask-tui > e2e-ask-tui.txt", description: "child echo" })}` });
  await toolEnded(sid, "background_task", since, 60000);
  const child = await waitFor("the asking child", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Asking real"))?.id, 20000);
  const asked = child && await permissionAsked(child, from);
  ok(asked, "real: the second task's sub-agent asks for permission");
  await showsOk("real: the task waiting for the user's permission is marked", [/● running ⚠ Asking real general/], sidebar, 20000);
  keepScreen("real-sidebar");
  // OpenCode's TUI puts the child's question in place of the prompt: the user answers it (here through the API).
  ok(asked && await replyPermission(asked.properties.id, "once") === 200, "real: the user answers the question");
  await showsOk("real: answered, the task runs on and completes", [/✓ done Asking real general/], sidebar, 30000);
  await waitFor("its notification", async () => (await messages(sid)).some((m) => textOf(m).includes("child reply bash")), 30000);
  await idle(sid);
  const before = fake.requests.length;
  type("/bgtasks");
  await showsOk("real: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("real: the page lists both tasks, newest first", [/› ✓ done Asking real · general · \d+s[^●]*● running Slow real · general/]);
  ok(fake.requests.length === before, "real: opening the page made no model request", fake.requests.length - before);
  keys("Down");
  await showsOk("real: the slow task selected", [/› ● running Slow real/]);
  keys("s");
  await showsOk("real: s stops it: the page shows it cancelled", [/› ■ cancelled Slow real · general/], flat, 20000);
  ok(await waitFor("slow request closed", async () => slowReq?.closed, 15000), "real: its sub-agent's model stream was closed");
  const notice = await waitFor("the stop's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes("stopped by the user")), 30000);
  ok(notice && textOf(notice).includes("Slow real"), "real: the parent is told the user stopped it", notice && textOf(notice));
  await idle(sid);
  const after = fake.requests.slice(before);
  const others = after.filter((r) => !JSON.stringify(r.body?.messages || []).includes("stopped by the user"));
  ok(others.length === 0, "real: the stop made no model request but the parent's notified turn", others.map((r) => r.decision));
  keepScreen("real-page");
  keys("Escape");
  await gone("real: esc: back from the page", "↑↓ select · enter detail");
  await realIsolated(sid, git);
  await realTty(sid);
  await realTimed();
  await realMonitor();
}

// A command ocbg runs has no controlling terminal: `Bash` (face_claude), in the
// background and in the foreground, runs a command that writes a mark to
// /dev/tty and reads from it. The TUI owns the terminal: were the command's
// its too, the mark would land on the screen (it did, in the prompt area) and
// its read would take the person's keys. The screen is read every 50 ms
// while the commands run: the mark never shows (the command line on screen
// spells it as $((6*7)), the mark itself is TTY42HIT); each command says
// /dev/tty could not be opened and its read failed, reading nothing. The
// background one's description has escape sequences: the toast ocbg sends
// when it ends, and its sidebar line, show it without them.
async function realTty(sid) {
  const cmd = 'echo "TTY$((6*7))HIT" > /dev/tty; read x < /dev/tty; echo "read:$?:[$x]"';
  const toastText = "Background task completed: tty probe\ufffd!";
  // ocbg's toasts are rate-limited (one per 3 s): a task ending in the window of another's toast is
  // told in one summary with it ("2 background tasks: 2 completed"), which names no description, so
  // shows no sequence either. Every toast line seen is kept, for the diagnosis.
  let seen = null, polls = 0, toasted = false, merged = false, armed = false;
  const toasts = new Set();
  const poll = setInterval(() => {
    try {
      polls++;
      const s = screen();
      if (!seen && s.includes("TTY42HIT")) seen = s;
      const f = flat(s);
      toasted ||= f.includes(toastText);
      merged ||= armed && /\b\d+ background tasks: \d+ completed/.test(f);
      for (const m of f.matchAll(/(Background (?:task|command) \w+: .{0,40}|\d+ background tasks: [a-z0-9 ,]+)/g))
        toasts.add(m[1]);
    } catch {}
  }, 50);
  try {
    let since = await sayTool(sid, "Bash", { command: cmd, description: "tty probe\x1b]2;PWNED\x07\x1b[2J\u202e!",
      run_in_background: true });
    const launched = await toolEnded(sid, "Bash", since, 60000);
    armed = true; // from here on, a summary on the screen counts
    const [id] = taskIds(launched?.output);
    ok(launched?.status === "completed" && id, "tty: ocbg's Bash started the command in the background", launched);
    const notice = id && await waitFor("its notification", async () => (await messages(sid))
      .find((m) => m.info.role === "user" && textOf(m).includes(`Background command completed: ${id}`)), 30000);
    const out = notice ? textOf(notice) : "";
    ok(/\/dev\/tty: No such device or address/.test(out) && /^read:[1-9]\d*:\[\]$/m.test(out),
      "tty: in the background, /dev/tty cannot be opened (no controlling terminal), its read failed, read nothing", out);
    await showsOk("tty: its sidebar line shows its description without the sequences", [/✓ done tty probe\ufffd!/], sidebar);
    ok(await waitFor("the toast", () => toasted || merged, 10000),
      `tty: so does ocbg's toast: "${toastText}" (or a summary it is merged into)`, [...toasts]);
    await idle(sid);
    since = await sayTool(sid, "Bash", { command: cmd, description: "tty probe, foreground" });
    const fg = await toolEnded(sid, "Bash", since, 60000);
    ok(/\/dev\/tty: No such device or address/.test(fg?.output) && /^read:[1-9]\d*:\[\]$/m.test(fg?.output || ""),
      "tty: in the foreground the same", fg);
    await idle(sid);
    await sleep(500); // a last look after both ended
  } finally {
    clearInterval(poll);
  }
  ok(!seen && polls > 20, `tty: the mark a command wrote to /dev/tty never showed on the screen (${polls} looks)`, seen);
  keepScreen("real-tty");
}

// ---- the panel, timed (docs/panel.md: a view within 250 ms of a task's status change) ----
// Figures, never checks (timing goals are for benchmarks): `name: value unit` lines. The screen is read
// with an asynchronous capture-pane every POLL_MS, so the event loop keeps timestamping the server's
// events (GET /event) while the harness looks; a sample ends when the first capture showing the change
// returns (a few ms late at most: panel_poll_ms is the time between two looks).
const POLL_MS = 10;
const capture = () => new Promise((resolve, reject) => execFile("tmux", ["-L", SOCK, "capture-pane", "-p", "-t", NAME],
  { encoding: "utf8" }, (e, out) => (e ? reject(e) : resolve(out))));
const looks = [];
// The time the first capture where view(screen) matches want returned; null at the deadline.
async function firstSeen(want, view, timeoutMs = 10000) {
  const start = Date.now();
  let prev = null;
  while (Date.now() - start < timeoutMs) {
    const s = await capture();
    const at = Date.now();
    if (prev !== null) looks.push(at - prev);
    prev = at;
    if (has(view(s), want)) return at;
    await sleep(POLL_MS);
  }
  return null;
}
// The server's events the figures need, as the harness's event stream got them: ocbg's views and the
// panel's requests (tui.command.execute) and sessions going idle.
const seen = [];
const watchTimed = (ev) => {
  const at = Date.now();
  if (ev.type === "session.idle") seen.push({ at, idle: ev.properties?.sessionID });
  const cmd = ev.type === "tui.command.execute" ? ev.properties?.command || "" : "";
  const sp = cmd.indexOf(" ");
  if (sp < 0) return;
  try {
    const body = JSON.parse(cmd.slice(sp + 1));
    if (cmd.startsWith("ocbg.view ")) seen.push({ at, view: body });
    else if (cmd.startsWith("ocbg.ui ")) seen.push({ at, ui: body });
  } catch {}
};
// The first view (after from) in which the task described desc has status.
const viewAt = (from, desc, status) => seen.find((e) => e.at >= from && e.view?.tasks?.some((t) =>
  t.description === desc && t.status === status));
const nearestRank = (xs, q) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(q * xs.length) - 1)];
function figure(name, xs) {
  const nums = xs.filter((x) => typeof x === "number");
  if (!nums.length) return console.log(`${name}: none`);
  console.log(`${name}_p50: ${nearestRank(nums, 0.5)} ms`);
  console.log(`${name}_max: ${Math.max(...nums)} ms`);
}
const span = (a, b) => (a != null && b != null ? b - a : undefined);

// Launches a batch of n tasks in session sid ("busy T-k", children waiting at gate T-k); true once each
// child's model request waits.
async function launchGated(sid, t, n) {
  fake.openGate(`${t}-parent`); // the parent's own step after the launch answers at once
  await say(sid, `E2E busybatch ${t} ${n}`);
  const waiting = await waitFor(`${n} gated children`, () => fake.requests.filter((r) =>
    r.decision.gate?.startsWith(`${t}-`) && r.decision.gate !== `${t}-parent` && !r.done && !r.closed).length === n, 60000);
  await idle(sid);
  return !!waiting;
}

// Six tasks end one after the other (their children's gates opened a varying gap apart, so the changes
// fall at different points of the view thread's 1 s tick and the TUI's clock), then five are stopped
// with `s` on the page. A change's clock starts when the fake model wrote the end of the reply that
// ends the child's turn (rec.doneAt): the earliest moment of the change the harness sees, before
// OpenCode read it, ended the turn and sent session.idle, and before ocbg's completion check made the
// task completed and its view thread published the view. A stop's starts just before tmux send-keys s.
async function realTimed() {
  eventWatchers.add(watchTimed);
  try {
    const change = [], replyToIdle = [], idleToView = [], viewToScreen = [];
    // Two batches of five (max_running_agents), each in a session of its own on screen.
    for (const t of ["tm", "tn"]) {
      const sid = (await api("POST", "/session", { title: `timed panel ${t}` })).json?.id;
      await api("POST", "/tui/select-session", { sessionID: sid });
      if (!ok(await launchGated(sid, t, 5), `timed: five tasks launched, each child's model request waiting (${t})`)) return;
      await showsOk(`timed: the five run in the sidebar (${t})`, [1, 2, 3, 4, 5].map((k) => `● running busy ${t}-${k}`),
        sidebar, 20000);
      for (let k = 1; k <= 5; k++) {
        await sleep(300 + 170 * k); // the gap between changes (not a wait for anything)
        const rec = fake.requests.find((r) => r.decision.gate === `${t}-${k}` && !r.done);
        fake.openGate(`${t}-${k}`);
        const t0 = rec?.doneAt;
        const shown = await firstSeen(new RegExp(`✓ done busy ${t}-${k} general`), sidebar);
        if (!ok(t0 && shown, `timed: ${t}-${k} ends and its sidebar line says done`, screen())) continue;
        const view = viewAt(t0, `busy ${t}-${k}`, "completed");
        const child = view?.view.tasks.find((x) => x.description === `busy ${t}-${k}`)?.session;
        const idleAt = seen.find((e) => e.at >= t0 && e.idle === child)?.at;
        change.push(shown - t0);
        replyToIdle.push(span(t0, idleAt));
        idleToView.push(span(idleAt, view?.at));
        viewToScreen.push(span(view?.at, shown));
      }
      await idle(sid);
    }
    const sid = (await api("POST", "/session", { title: "timed panel stops" })).json?.id;
    await api("POST", "/tui/select-session", { sessionID: sid });
    if (!ok(await launchGated(sid, "tc", 5), "timed: five more tasks launched, waiting")) return;
    type("/bgtasks");
    await showsOk("timed: /bgtasks is offered", ["/bgtasks"]);
    keys("Enter");
    await showsOk("timed: the page lists the five running", [1, 2, 3, 4, 5].map((k) => `● running busy tc-${k} ·`));
    for (let i = 0; i < 12; i++) keys("Up"); // the newest first: one of the five
    const cancel = [], keyToRequest = [], requestToView = [], cancelViewToScreen = [];
    let prev = null;
    for (let i = 0; i < 5; i++) {
      const sel = await waitFor("a running task selected", () => {
        const m = flat(screen()).match(/› ● running (busy tc-\d) ·/);
        return m && m[1] !== prev ? m[1] : null;
      }, 5000, 20);
      if (!ok(sel, `timed: stop ${i + 1}: a running task selected`, screen())) break;
      await sleep(300 + 170 * i);
      const t0 = Date.now();
      keys("s");
      const shown = await firstSeen(new RegExp(`› ■ cancelled ${sel} ·`), flat);
      if (!ok(shown, `timed: s stops ${sel}: its line says cancelled`, screen())) break;
      const req = seen.find((e) => e.at >= t0 && e.ui?.action === "stop");
      const view = viewAt(t0, sel, "cancelled");
      cancel.push(shown - t0);
      keyToRequest.push(span(t0, req?.at));
      requestToView.push(span(req?.at, view?.at));
      cancelViewToScreen.push(span(view?.at, shown));
      prev = sel;
      keys("Down");
    }
    // Each sample whole and in its hops (ms), for where the time went.
    diag(`changes: ${change.map((x, i) => `${x} (${replyToIdle[i]}+${idleToView[i]}+${viewToScreen[i]})`).join(", ")}`);
    diag(`stops: ${cancel.map((x, i) => `${x} (${keyToRequest[i]}+${requestToView[i]}+${cancelViewToScreen[i]})`).join(", ")}`);
    console.log(`panel_change_samples: ${change.length} changes`);
    figure("panel_change_ms", change);
    figure("panel_change_reply_to_idle_ms", replyToIdle);
    figure("panel_change_idle_to_view_ms", idleToView);
    figure("panel_change_view_to_screen_ms", viewToScreen);
    console.log(`panel_cancel_samples: ${cancel.length} stops`);
    figure("panel_cancel_ms", cancel);
    figure("panel_cancel_key_to_request_ms", keyToRequest);
    figure("panel_cancel_request_to_view_ms", requestToView);
    figure("panel_cancel_view_to_screen_ms", cancelViewToScreen);
    figure("panel_poll_ms", looks);
    await idle(sid);
    keys("Escape");
    await gone("timed: esc: back from the page", "↑↓ select · enter detail");
  } finally {
    eventWatchers.delete(watchTimed);
  }
}

// A monitor the model starts, on the real screen: background_monitor on a
// script that follows a file (`tail -F`) the test appends lines to. Its
// sidebar line and its /bgtasks page line show its command, its events so far
// and the time left, the count moving as each line arrives (each event wakes
// the parent once); the person stops it from the page (s, confirming if the
// page asks) and its line says cancelled, in the page and the sidebar, and its
// command's process is gone. No toast calls it failed (docs/behaviour.md: a
// cancelled task gives none): the screen is read every 50 ms throughout.
async function realMonitor() {
  let failedToast = null;
  const poll = setInterval(() => {
    try {
      const f = flat(screen());
      if (!failedToast && f.includes("Background task failed")) failedToast = f;
    } catch {}
  }, 50);
  try {
    await watchMonitor();
  } finally {
    clearInterval(poll);
  }
  ok(!failedToast, "monitor: no toast said it failed", failedToast);
}
async function watchMonitor() {
  const sid = (await api("POST", "/session", { title: "real monitor" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("monitor: a fresh session on screen", ["real monitor"]);
  const file = (f) => path.join(PROJECT, f);
  fs.writeFileSync(file("mon.log"), "");
  fs.rmSync(file("mon.pid"), { force: true });
  // exec: the shell's pid becomes tail's, the process the watch reads.
  fs.writeFileSync(file("mon.sh"), "echo $$ > mon.pid\nexec tail -n 0 -F mon.log\n");
  const since = await sayTool(sid, "background_monitor", { command: "sh mon.sh", description: "Watch log",
    timeout_ms: 600000 });
  const started = await toolEnded(sid, "background_monitor", since, 60000);
  const [id] = taskIds(started?.output);
  if (!ok(started?.status === "completed" && id && started.output.startsWith(`Monitor ${id} started: $ sh mon.sh`),
    "monitor: the model started a monitor", started)) return;
  await idle(sid);
  const pid = Number(await waitFor("its command's pid", () => {
    try { return fs.readFileSync(file("mon.pid"), "utf8").trim() || null; } catch { return null; }
  }, 10000));
  const alive = (p) => { try { process.kill(p, 0); return true; } catch (e) { return e.code === "EPERM"; } };
  ok(pid > 0 && alive(pid), "monitor: its command runs", pid);
  await showsOk("monitor: its sidebar line: its command, no event yet, the time left", [
    /● running Watch log sh mon\.sh · 0 events · 9m[45]\ds left · \d+s/], sidebar, 20000);
  for (const n of [1, 2, 3]) {
    fs.appendFileSync(file("mon.log"), `line ${n}\n`);
    const word = n === 1 ? "event" : "events";
    await showsOk(`monitor: line ${n} written: the sidebar says ${n} ${word}`, [
      new RegExp(`● running Watch log sh mon\\.sh · ${n} ${word} · 9m[45]\\ds left`)], sidebar, 20000);
    const told = await waitFor(`event ${n}'s notification`, async () => (await messages(sid)).find((m) =>
      m.info.role === "user" && textOf(m).includes(`[ocbg] Monitor ${id} "Watch log", event ${n}:`)), 20000);
    ok(told && textOf(told).includes(`line ${n}`), `monitor: event ${n} told the parent its line`, told && textOf(told));
    await idle(sid);
    const woke = fake.requests.filter((r) => {
      const u = JSON.stringify([...(r.body?.messages || [])].reverse().find((m) => m.role === "user") || {});
      return u.includes(id) && u.includes(`event ${n}:`);
    }).length;
    ok(woke === 1, `monitor: event ${n} woke the parent once (one model call has it as its newest message)`, woke);
  }
  keepScreen("real-monitor-sidebar");
  type("/bgtasks");
  await showsOk("monitor: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("monitor: the page line: its command, 3 events, the time left",
    [/› ● running Watch log · sh mon\.sh · 3 events · 9m[45]\ds left · \d+s/]);
  keepScreen("real-monitor-page");
  keys("s");
  // The page asks first for a task that ran 2 minutes or more (a slow machine).
  const asked = await shows("the stop, or its question", [/› ■ cancelled Watch log|Stop background task/], flat, 20000);
  if (has(flat(asked.last), "Stop background task")) keys("Enter");
  await showsOk("monitor: s stops it: the page line says cancelled, no time left",
    [/› ■ cancelled Watch log · sh mon\.sh · 3 events · \d+s/], flat, 20000);
  ok(!has(flat(screen()), /Watch log · sh mon\.sh · 3 events · \d+m\d+s left/), "monitor: no time left on a stopped monitor");
  ok(await waitFor("its command gone", () => !alive(pid), 15000), "monitor: its command's process is gone", pid);
  const notice = await waitFor("the stop's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes("stopped by the user") && textOf(m).includes(id)), 30000);
  ok(notice, "monitor: the parent is told the user stopped it", notice && textOf(notice));
  keys("Escape");
  await gone("monitor: esc: back from the page", "↑↓ select · enter detail");
  await showsOk("monitor: the sidebar line says cancelled", [/■ cancelled Watch log sh mon\.sh · 3 events · \d+s/],
    sidebar, 20000);
  keepScreen("real-monitor-stopped");
  await idle(sid);
  await sleep(1000); // a last look for a toast after the stop's notified turn
}

const reEscape = (s) => String(s).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// A task the model launches with isolation "worktree": its page line names its
// branch; its detail shows the branch, the worktree folder and, the run over,
// what it did there (the report of its notification), on the real screen.
async function realIsolated(sid, git) {
  const since = await sayTool(sid, "background_task", { description: "Isolated real", agent: "general",
    isolation: "worktree",
    prompt: `CHILD call bash ${JSON.stringify({ command: "echo from-tui >> shared.txt", description: "child append" })}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id && /on new branch ocbg\//.test(launched.output),
    "isolated: the model launched a task in a worktree", launched)) return;
  const notice = await waitFor("its notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes(`Branch: ocbg/${id} (from `), "isolated: it completed, its notification has the report",
    notice && textOf(notice));
  await idle(sid);
  const wt = worktreeOf(id);
  ok(wt && fs.readFileSync(path.join(wt, "shared.txt"), "utf8") === "base\nfrom-tui\n" &&
    git("status", "--porcelain", "--untracked-files=no").stdout === "", "isolated: it wrote in its worktree, not the checkout", wt);
  type("/bgtasks");
  await showsOk("isolated: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("isolated: the page line names its branch", [
    new RegExp(`✓ done Isolated real · general · ocbg/${id} · \\d+s`)]);
  for (let i = 0; i < 3; i++) keys("Up"); // the page kept the earlier selection; the newest is first
  await showsOk("isolated: it is selected", [/› ✓ done Isolated real/]);
  keys("Enter");
  await showsOk("isolated: its detail shows its branch, worktree and, the run over, what it did there", [
    new RegExp(`${id} · agent general · ✓ done · \\d+s Isolated real branch: ocbg/${id} worktree: ${reEscape(wt)} `),
    new RegExp(`in its worktree: Branch: ocbg/${id} \\(from [0-9a-f]{8}\\), 0 commits: nothing committed ` +
      "Uncommitted: 1 file changed, 1 insertion\\(\\+\\); 0 untracked files " +
      "Changed since [0-9a-f]{8} \\(tracked files, committed or not\\): shared\\.txt \\| 1 \\+ " +
      "1 file changed, 1 insertion\\(\\+\\) latest answer:")], flat, 20000);
  keepScreen("real-isolated-detail");
  keys("Escape");
  await showsOk("isolated: esc: back to the list", ["↑↓ select · enter detail"]);
  keys("Escape");
  await gone("isolated: esc: back from the page", "↑↓ select · enter detail");
  await realIsolatedAsk(sid);
}

// The folder of task id's worktree (under ocbg's data directory), or undefined.
function worktreeOf(id) {
  const data = path.join(HOME, ".local/share/opencode/ocbg");
  return (fs.existsSync(data) ? fs.readdirSync(data) : []).map((p) => path.join(data, p, "worktrees", id))
    .find((d) => fs.existsSync(d));
}

// An isolated task whose sub-agent asks a bash permission: OpenCode lists the
// question only for the worktree's folder (GET /permission?directory=), yet
// its own TUI shows it on the parent's screen, as it does a child's question
// (its TUI follows every folder's events), and answers it for the child's
// folder: the person presses Enter (Allow once) on the real screen, the task
// runs on and completes, and the answer itself makes no model request.
async function realIsolatedAsk(sid) {
  const cmd = "echo e2e-ask-wt > asked.txt";
  const since = await sayTool(sid, "background_task", { description: "Isolated ask", agent: "general",
    isolation: "worktree", prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "child ask" })}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id, "isolated ask: the model launched a task in a worktree", launched)) return;
  const wt = await waitFor("its worktree", () => worktreeOf(id), 20000);
  const child = await waitFor("its child session", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Isolated ask")), 20000);
  const asked = wt && child && await waitFor("the worktree's question", async () =>
    ((await api("GET", `/permission?directory=${encodeURIComponent(wt)}`)).json || []).find((p) => p.sessionID === child.id), 30000);
  if (!ok(asked?.permission === "bash" && asked.patterns?.includes(cmd) && child.directory === wt,
    "isolated ask: its sub-agent asks bash, listed for the worktree's folder", { asked, child, wt })) return;
  const projectList = (await api("GET", "/permission")).json || [];
  ok(!projectList.some((p) => p.id === asked.id), "isolated ask: the project's own list (GET /permission) does not have it",
    projectList);
  await showsOk("isolated ask: the sidebar marks it waiting", [/● running ⚠ Isolated ask general/], sidebar, 20000);
  await showsOk("isolated ask: OpenCode's own prompt shows the child's question on the parent's screen",
    ["Permission required", cmd, "Allow once", "Allow always", "Reject"], flat, 20000);
  keepScreen("real-isolated-ask");
  // ocbg tells the parent the task waits (a turn of its own): done before the answer is counted.
  const told = await waitFor("the waiting notice", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task ${id} "Isolated ask" (agent: general) is waiting for permission: bash: ${cmd}`)), 20000);
  ok(told, "isolated ask: ocbg told the parent the task waits for permission");
  await idle(sid);
  // The child's own screen does not show it (OpenCode lists the questions of a session and its children
  // on a root session's screen only): the person answers on the parent's.
  await api("POST", "/tui/select-session", { sessionID: child.id });
  const there = await shows("the child's screen", [/Subagent \(\d+ of \d+\)/, `CHILD call bash {"command":"${cmd}"`]);
  keepScreen("real-isolated-ask-child");
  ok(there.hit && !has(flat(there.last), "Permission required"),
    "isolated ask: the child's own screen does not show the question", there.last);
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("isolated ask: back on the parent's screen, the question again", ["Permission required", cmd], flat, 20000);
  const before = fake.requests.length;
  keys("Enter");
  await showsOk("isolated ask: Enter (Allow once): answered, the task completes", [/✓ done Isolated ask general/], sidebar, 30000);
  ok(!((await api("GET", `/permission?directory=${encodeURIComponent(wt)}`)).json || []).some((p) => p.id === asked.id),
    "isolated ask: the question is gone from the worktree's list");
  ok(fs.existsSync(path.join(wt, "asked.txt")) && fs.readFileSync(path.join(wt, "asked.txt"), "utf8") === "e2e-ask-wt\n",
    "isolated ask: the command ran in the worktree");
  const notice = await waitFor("its notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes("child reply bash"), "isolated ask: the parent is notified with its answer",
    notice && textOf(notice));
  await idle(sid);
  const after = fake.requests.slice(before).map((r) => JSON.stringify(r.body?.messages || []));
  const others = after.filter((m) => !m.includes(`Background task completed: ${id}`) && !m.includes("child ask"));
  ok(others.length === 0, "isolated ask: the answer made no model request but the child's next step and the notified turn",
    others.map((m) => m.slice(-300)));
}

// A question asked by a task a task launched (max_depth 2): OpenCode's own
// prompt shows it on no screen (it lists the questions of the session on
// screen and of its children only), so ocbg's panel carries it on the line of
// the task the person's session launched: the sidebar marks that line ⚠, the
// page's `a` asks the person (OpenCode's three answers) and the answer goes
// through OpenCode's permission reply; the grandchild runs on, its command
// runs, and the task that launched it, then the person's session, are told.
async function realNestedAsk(scanned) {
  if (tmuxUp) { try { tmux("kill-session", "-t", NAME); } catch {} }
  stopEvents();
  fs.rmSync(MARKER, { force: true });
  const base = fakeModelConfig(fake.port);
  const config = { ...base, snapshot: false, permission: { ...base.permission, bash: { "*": "allow", "*e2e-ask*": "ask" } },
    plugin: [[path.join(scanned, "ocbg.js"), { max_depth: 2 }]] };
  if (!ok(await startTui(HOME, CONFIG, PROJECT, config), "nested ask: the TUI with ocbg (max_depth 2) answers")) return;
  ok(await waitFor("the marker", () => fs.existsSync(MARKER) && fs.readFileSync(MARKER, "utf8") === "loaded\n", 60000, 100),
    "nested ask: the panel loaded");
  followEvents();
  const sid = (await api("POST", "/session", { title: "nested ask" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  const cmd = "echo e2e-ask-nested > nested.txt";
  const grandchild = { description: "Grandchild ask", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "grandchild ask" })}` };
  const since = await sayTool(sid, "background_task", { description: "Nest ask", agent: "general",
    prompt: `CHILD nest NA ${JSON.stringify(grandchild)}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id, "nested ask: the model launched a task that launches one", launched)) return;
  const child = await waitFor("its child session", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Nest ask")), 30000);
  const gc = child && await waitFor("the grandchild's session", async () =>
    ((await api("GET", `/session/${child.id}/children`)).json || []).find((c) => c.title?.includes("Grandchild ask")), 60000);
  const asked = gc && await waitFor("the grandchild's question", async () =>
    ((await api("GET", "/permission")).json || []).find((p) => p.sessionID === gc.id), 60000);
  if (!ok(asked?.permission === "bash" && asked.patterns?.includes(cmd),
    "nested ask: the grandchild (a task of a task) asks bash", { child, gc, asked })) return;
  await idle(sid);
  await showsOk("nested ask: the sidebar marks the line of the task the session launched", [/● running ⚠ Nest ask general/],
    sidebar, 20000);
  const prompt = await shows("OpenCode's own prompt", ["Permission required"], flat, 3000);
  ok(!prompt.hit, "nested ask: OpenCode's own prompt does not show the grandchild's question (the premise)", prompt.last);
  keepScreen("real-nested-ask");
  type("/bgtasks");
  await showsOk("nested ask: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("nested ask: the page marks the task's line", [/› ● running ⚠ Nest ask · general/, "a answer"]);
  keys("Enter");
  await showsOk("nested ask: its detail names the grandchild and what it asks",
    [new RegExp(`⚠ bg_\\w+ \\(Grandchild ask\\) waits for you: bash: ${reEscape(cmd)}`)], flat, 20000);
  keys("Escape"); // then wait: an Escape followed at once by a key reads as Alt+key
  await showsOk("nested ask: esc: back to the list", ["↑↓ select · enter detail"]);
  const before = fake.requests.length;
  keys("a");
  const squash = (x) => x.replace(/\s+/g, ""); // the dialog wraps its title anywhere, also inside a word
  await showsOk("nested ask: a: the question, its folder and OpenCode's three answers", [
    squash(`Permission required esc bg_`), squash(`(Grandchild ask) asks: bash: ${cmd} in ${PROJECT}`), "Allowonce",
    "Allowalways", "Reject"], squash, 10000);
  keepScreen("real-nested-answer");
  keys("Enter");
  const replied = await waitFor("the answer", () => events.find((e) => e.type === "permission.replied" &&
    e.properties?.requestID === asked.id), 20000);
  ok(replied?.properties?.reply === "once" && !((await api("GET", "/permission")).json || []).some((p) => p.id === asked.id),
    "nested ask: Enter (Allow once) answered it through OpenCode: once", replied);
  ok(await waitFor("the command's file", () => fs.existsSync(path.join(PROJECT, "nested.txt")) &&
    fs.readFileSync(path.join(PROJECT, "nested.txt"), "utf8") === "e2e-ask-nested\n", 30000),
  "nested ask: the grandchild ran on: its command ran");
  ok(await waitFor("the grandchild's notification", async () => (await messages(child.id))
    .some((m) => m.info.role === "user" && textOf(m).includes("Background task completed:") && textOf(m).includes("child reply bash")), 60000),
  "nested ask: the task that launched it is notified");
  await showsOk("nested ask: the mark goes", [/› ✓ done Nest ask · general/], flat, 60000);
  const notice = await waitFor("the person's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes("NA final"), "nested ask: the person's session is notified with the task's answer",
    notice && textOf(notice));
  await idle(sid);
  const others = fake.requests.slice(before).map((r) => JSON.stringify(r.body?.messages || []))
    .filter((m) => !m.includes("grandchild ask") && !m.includes("Background task completed"));
  ok(others.length === 0, "nested ask: the answer made no model request but the tasks' next steps and notified turns",
    others.map((m) => m.slice(-300)));
  keepScreen("real-nested-done");
  keys("Escape");
  await gone("nested ask: esc: back from the page", "↑↓ select · enter detail");
}

// The package (make package) by name, as a user installs it (README): `opencode
// plugin <spec>` first, which installs it into OpenCode's cache once (from the
// fake registry here) and lists it in the project's .opencode/opencode.json and
// .opencode/tui.json; then the first start loads both entries (the server
// part's tools are offered to the model, the panel writes its marker).
// Without that step, OpenCode's TUI and its server worker may install the
// spec at once and the server read a half-extracted package (docs/opencode.md).
async function packageByName() {
  const pkg = packageJsonOf(fs.readFileSync(PACKAGE));
  const spec = `${pkg.name}@${pkg.version}`;
  registry = await startFakeRegistry([PACKAGE]);
  const w = path.join(WORK, "bypkg");
  const home = path.join(w, "home"), config = path.join(home, ".config"), project = path.join(w, "project");
  const marker = path.join(w, "tui-marker");
  fs.rmSync(w, { recursive: true, force: true });
  fs.mkdirSync(project, { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, ".npmrc"), `registry=${registry.url}\n`);
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(project, ".opencode"), NPM_DIR);
  spawnSync("git", ["init", "-q", project]);
  // Asynchronous: the fake registry answers from this process's event loop.
  const env = isolatedEnv(home, config, fakeModelConfig(fake.port), { TERM: "xterm-256color" });
  const cli = await new Promise((resolve) => {
    const p = spawn(BIN, ["plugin", spec], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { out += d; });
    const timer = setTimeout(() => p.kill("SIGKILL"), 120000);
    p.on("exit", (code) => { clearTimeout(timer); resolve({ code, out }); });
  });
  const tuiJson = path.join(project, ".opencode/tui.json");
  let tcfg = null;
  try { tcfg = JSON.parse(fs.readFileSync(tuiJson, "utf8")); } catch {}
  if (!ok(cli.code === 0 && tcfg?.plugin?.some((p) => (Array.isArray(p) ? p[0] : p) === spec),
    `package: opencode plugin ${spec} installs it and lists it in .opencode/tui.json`, { cli, tcfg })) return;
  tcfg.plugin = tcfg.plugin.map((p) => ((Array.isArray(p) ? p[0] : p) === spec ? [spec, { marker }] : p));
  fs.writeFileSync(tuiJson, JSON.stringify(tcfg, null, 2));
  // The tools the model is offered in a new session of the running TUI.
  const offered = async (title) => {
    const sid = (await api("POST", "/session", { title })).json?.id;
    const from = fake.requests.length;
    await api("POST", `/session/${sid}/prompt_async`, { parts: [{ type: "text", text: "hello" }] });
    return waitFor("a model request with tools", () =>
      fake.requests.slice(from).map((r) => (r.body.tools || []).map((t) => t.function?.name)).find((n) => n.length), 60000);
  };
  if (!ok(await startTui(home, config, project, fakeModelConfig(fake.port)), "package: the TUI's HTTP API answers")) return;
  const loaded = await waitFor("the packaged panel's marker", () => fs.existsSync(marker) && fs.readFileSync(marker, "utf8"),
    120000, 200);
  ok(loaded === "loaded\n", `package: the first start loads the panel from the package's exports["./tui"]`, loaded);
  const tools = await offered("package, first start");
  ok(tools?.includes("background_task"), `package: the first start offers the server part's tools to the model`, tools);
}

// ---- scenarios ----
const T = { sid: null, child: null };
const AGO = (ms) => Date.now() - ms;
const tasksNow = () => [
  { id: "bg_aaaa0001", kind: "agent", status: "running", description: "Lint", agent: "general", session: T.child,
    created: AGO(300000), started: AGO(20000), tokens: 1234, cost: 0.0042, tools: 3, recent: ["read", "grep"],
    answer: "Lint is clean." },
  { id: "bg_bbbb0002", kind: "shell", status: "pending", description: "Tests", command: "make check", queue: 1,
    created: AGO(10000) },
  { id: "bg_cccc0003", kind: "shell", status: "completed", description: "Build", command: "make all",
    created: AGO(400000), started: AGO(90000), ended: AGO(30000), exit: 0, output: "built\n" },
];
// Changes one task at the fake server part (null removes a field), which publishes the view.
const update = (id, fields) => publish(`ocbgfake.patch ${JSON.stringify({ session: T.sid, id, fields })}`);

// Tasks appear in the sidebar and follow the server part's views live.
async function sidebarLive() {
  T.sid = (await api("POST", "/session", { title: "panel e2e" })).json?.id;
  T.child = (await api("POST", "/session", { title: "Lint (child)", parentID: T.sid })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: T.sid });
  await setTasks(T.sid, tasksNow());
  await showsOk("the sidebar shows the session's tasks, one line each", [
    "Background tasks",
    /● running Lint general · 2\ds · 1\.2k tok · \$0\.0042/,
    "○ pending #1 Tests make check",
    "✓ done Build make all · 1m00s",
  ], sidebar);
  const t0 = Date.now();
  await update("bg_bbbb0002", { status: "running", started: AGO(0), queue: null });
  const r = await shows("the pending task runs", [/● running Tests make check · \ds/], sidebar, 5000);
  ok(r.hit, "a status change shows in the sidebar", r.last);
  // A figure, not a check (timing goals are for benchmarks): the bus, the TUI and capture-pane's 100 ms polling.
  diag(`view -> screen: ${Date.now() - t0} ms`);
  await showsOk("elapsed times tick while a task runs", [/● running Tests make check · [2-9]s/], sidebar, 10000);
  await update("bg_bbbb0002", { waiting: "bash: rm -rf build" });
  await showsOk("a task waiting for permission is marked", [/● running ⚠ Tests make check · \d+s/], sidebar);
  keepScreen("sidebar");
}

// Where the sidebar is not (a narrow terminal), the summary line says it.
async function summaryNarrow() {
  ok(!has(flat(screen()), "Background tasks: "), "no summary line while the sidebar shows the tasks");
  tmux("resize-window", "-t", NAME, "-x", String(NARROW), "-y", String(ROWS));
  await showsOk("a narrow terminal: the summary line", [
    "Background tasks: 2 running · 1 waiting for you · 1 done · $0.0042"]);
  keepScreen("summary");
  tmux("resize-window", "-t", NAME, "-x", String(WIDE), "-y", String(ROWS));
  await gone("wide again: the sidebar instead of the summary", "Background tasks: ");
}

// /bgtasks opens the page, newest first, with no model request.
async function pageOpens() {
  const before = fake.requests.length;
  type("/bgtasks");
  await showsOk("/bgtasks is offered in the prompt's completion", ["/bgtasks"]);
  keys("Enter");
  await showsOk("the page lists the tasks newest first", [
    /Background tasks 2 running · 1 waiting for you · 1 done · \$0\.0042 › ● running ⚠ Tests · make check · \d+s ● running Lint · general · \d+s · 1\.2k tok · \$0\.0042 ✓ done Build · make all · 1m00s/,
    "↑↓ select · enter detail · s stop · o open session · esc back"]);
  keepScreen("page");
  ok(fake.requests.length === before, "opening the page made no model request", fake.requests.length - before);
}

// Enter shows the selected task's detail, from the server part's reply.
async function pageDetail() {
  keys("Down");
  await showsOk("down selects the next task", [/› ● running Lint/]);
  keys("Enter");
  await showsOk("enter: the agent task's detail, with its latest answer", [
    /bg_aaaa0001 · agent general · ● running · \d+s Lint usage: 1\.2k tok · \$0\.0042 · 3 tool calls recent tools: read, grep latest answer: Lint is clean\./,
    "s stop · o open session · esc back to the list"]);
  keepScreen("detail");
  ok(requestsSeen().some((r) => r.action === "detail" && r.task_id === "bg_aaaa0001"), "the detail was asked of the server part");
  keys("Escape");
  await showsOk("esc: back to the list", ["↑↓ select · enter detail"]);
}

// s stops the selected task (no confirmation for a short, cheap one).
async function pageStop() {
  const before = fake.requests.length;
  keys("Up");
  await showsOk("up selects the waiting task", [/› ● running ⚠ Tests/]);
  keys("s");
  await showsOk("s: the task shows cancelled", [/› ■ cancelled Tests · make check · \d+s/]);
  ok(requestsSeen().filter((r) => r.action === "stop").map((r) => r.task_id).join() === "bg_bbbb0002",
    "one stop request, for that task", requestsSeen());
  ok(fake.requests.length === before, "stopping made no model request", fake.requests.length - before);
}

// A task that ran long asks first; confirming stops it.
async function pageStopConfirm() {
  await update("bg_aaaa0001", { started: AGO(185000) });
  keys("Down");
  await showsOk("the long task selected", [/› ● running Lint · general · 3m0\ds/]);
  keys("s");
  await showsOk("s on a long task asks first", ["Stop background task",
    /Stop "Lint"\? It has run 3m0\ds and cost \$0\.0042; its work so far is kept\./]);
  keepScreen("confirm");
  ok(!requestsSeen().some((r) => r.action === "stop" && r.task_id === "bg_aaaa0001"), "no stop before the answer");
  keys("Enter");
  await showsOk("confirmed: the task shows cancelled", [/› ■ cancelled Lint · general · 3m0\ds/]);
  ok(requestsSeen().filter((r) => r.action === "stop" && r.task_id === "bg_aaaa0001").length === 1,
    "one stop request after the confirmation");
}

// o opens an agent task's session; there (a child: no sidebar) the summary line shows the launcher's tasks.
async function openChild() {
  await update("bg_aaaa0001", { status: "running", ended: null, stopped_by_user: null, started: AGO(5000) });
  await showsOk("the agent task runs again", [/› ● running Lint/]);
  keys("o");
  await showsOk("o: the task's child session, with the summary line of its launcher's tasks",
    ["Background tasks: 1 running · 1 done · 1 cancelled · $0.0042"]);
  keepScreen("child");
  keys("C-x");
  keys("j");
  await showsOk("the key of the option (<leader>j) opens the page there: the launcher's tasks",
    [/Background tasks 1 running · 1 done · 1 cancelled · \$0\.0042 ■ cancelled Tests/, "esc back"]);
  keys("Escape");
  await showsOk("esc: back to the child session", ["Background tasks: 1 running · 1 done · 1 cancelled · $0.0042"]);
}

// Text a model wrote, with escape sequences in it (a title set by OSC 2, a
// clear screen and a cursor move by CSI, a bidirectional override): the panel
// shows it without them, in the sidebar, on the page and in the detail; the
// pane's title is what it was; nothing of the sequences' payload shows.
async function hostileText() {
  const sid = (await api("POST", "/session", { title: "hostile text" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("hostile: a fresh session on screen", ["hostile text"]);
  const title = paneTitle();
  const evil = "Evil\x1b]2;PWNED\x07 \x1b[2J\x1b[1;1Htask\u202eok";
  await setTasks(sid, [{ id: "bg_eeee0001", kind: "agent", status: "running", description: evil,
    agent: "gen\x1b[31meral", created: AGO(5000), started: AGO(5000),
    answer: "Done.\x1b]2;PWNED\x07\n\x1b[2J\x1b[Hline two \u202eevil" }]);
  await showsOk("hostile: the sidebar shows the description without its sequences", [/● running Evil task\ufffdok general · \d+s/],
    sidebar);
  ok(paneTitle() === title, `hostile: the pane's title is the one OpenCode set ("${title}")`, paneTitle());
  type("/bgtasks");
  await showsOk("hostile: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("hostile: the page line too", [/› ● running Evil task\ufffdok · general · \d+s/]);
  keys("Enter");
  await showsOk("hostile: the detail: description and answer without sequences, the answer's line break kept",
    [/bg_eeee0001 · agent general · ● running · \d+s Evil task\ufffdok latest answer: Done\. line two \ufffdevil/]);
  const shown = screen();
  keepScreen("hostile-detail");
  ok(/^ {2}line two \ufffdevil\s*$/m.test(shown) && /^ {2}Done\.\s*$/m.test(shown),
    "hostile: the answer's two lines, each on its own row", shown);
  ok(!shown.includes("PWNED") && !shown.includes("[2J") && !shown.includes("[1;1H"), "hostile: no payload of a sequence on the screen",
    shown);
  ok(!paneTitle().includes("PWNED"), `hostile: the pane's title is OpenCode's page title ("${paneTitle()}")`, paneTitle());
  keys("Escape");
  await showsOk("hostile: esc: back to the list", ["↑↓ select · enter detail"]);
  keys("Escape");
  await gone("hostile: esc: back from the page", "↑↓ select · enter detail");
  ok(await waitFor("the session's title", () => paneTitle() === title, 5000), "hostile: back on the session, its title again",
    paneTitle());
}

// The screen at the end into WORK/screen-at-end.txt, then tmux, the fake model and registry stopped.
async function stopAll() {
  try { fs.writeFileSync(path.join(WORK, "screen-at-end.txt"), tmuxUp ? screen() : ""); } catch {}
  stopTmux();
  if (fake) { await fake.close(); fake = null; }
  if (registry) { await registry.close(); registry = null; }
}
process.on("exit", () => stopTmux());
await runSuite("e2e_tui", main, { stop: stopAll });

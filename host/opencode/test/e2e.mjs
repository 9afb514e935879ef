// End-to-end: a real `opencode serve` (pinned, from npm) on 127.0.0.1 with an
// isolated HOME and offline settings, the scripted fake model of
// fake_model.mjs, ocbg installed with make install-opencode PROJECT=... and
// then moved out of the scanned folder to be listed in opencode.json with
// options {face_claude: true} (OpenCode 1.18.33 would load a scanned copy a
// second time, without options), and the stub plugin listed with options.
// The permission rules of the config let every scenario run, except commands
// naming e2e-ask (asked) or e2e-deny (denied), the agent e2e-nope (denied) and
// the agent e2e-asked (asked).
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR [--only stub|ocbg]
//              [--cases name,name]   (only these scenario functions, e.g. while working on one)
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { RATE_LIMIT_RETRY_MS, startFakeModel } from "./fake_model.mjs";
import {
  api, assistantTexts, callTool, diag, events, eventWatchers, followEvents, freePort, groupMembers, idle,
  isIdle, isLoopback, isolatedEnv, listeners, messages, newSession, ok, permissionAsked, procStat,
  provideConfigDeps, replyPermission, say, sayTool, secs, setBase, sleep, staysFalse, stopEvents, stopGroup,
  tap, taskIds, textOf, toolEnded, toolParts, turnEnds, userMessage, userTexts, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), STUB_DIR = opt("stub-dir"), WORK = opt("work");
const ONLY = opt("only", "");
const CASES = opt("cases", "").split(",").filter(Boolean);
const chosen = (scenarios) => scenarios.filter((f) => !CASES.length || CASES.includes(f.name));
if (!BIN || !NPM_DIR || !STUB_DIR || !WORK) {
  console.error("usage: e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR");
  process.exit(2);
}

// ---- processes to stop ----
let server = null, fake = null;
const shellGroups = new Set(); // process groups of the shell tasks the suite started
async function stopAll() {
  stopEvents();
  if (server && server.exitCode === null && server.signalCode === null) {
    try { process.kill(-server.pid, "SIGTERM"); } catch {}
    const t = Date.now();
    while (server.exitCode === null && server.signalCode === null && Date.now() - t < 5000) await sleep(100);
    if (server.exitCode === null && server.signalCode === null) {
      try { process.kill(-server.pid, "SIGKILL"); } catch {}
    }
  }
  for (const g of shellGroups) { try { process.kill(-g, "SIGKILL"); } catch {} }
  if (fake) { await fake.close(); fake = null; }
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(sig, async () => { await stopAll(); process.exit(1); });
process.on("exit", () => {
  if (server) try { process.kill(-server.pid, "SIGKILL"); } catch {}
  for (const g of shellGroups) { try { process.kill(-g, "SIGKILL"); } catch {} }
});

const TASK_TOKENS = 20000; // ocbg's max_task_tokens in this suite

// ---- the isolated world ----
const HOME = path.join(WORK, "home");
const PROJECT = path.join(WORK, "project");
const CONFIG = path.join(HOME, ".config");
const STUBPLUG = path.join(WORK, "stubplug");
const OCBGPLUG = path.join(WORK, "ocbg"); // listed with options, not scanned
const AUTO_BG_MS = 2000; // auto_background_ms in this suite (autoBackground)
// Files the permission scenarios' commands would write: inside the project,
// so that only the bash rules decide (a path outside it asks external_directory).
const SIDE = path.join(PROJECT, "side");

// OpenCode installs @opencode-ai/plugin into every config directory at the first
// request (slow, or a stall offline): give each one what it would install.
const provideConfigDepsIn = (dir) => provideConfigDeps(dir, NPM_DIR);

// ---- the server: started, stopped, started again ----
let serverEnv = null; // set by main(): the same HOME, XDG dirs and config for every start
let starts = 0;
const LOG = path.join(WORK, "opencode.log");

// Starts `opencode serve` in the project on a free 127.0.0.1 port (its log
// appended to LOG), points the HTTP client at it and follows its event
// stream. Whether it answered healthy within 60 s.
async function startServer() {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  setBase(base);
  if (starts > 0) fs.appendFileSync(LOG, `\n===== e2e: opencode serve started again (start ${starts + 1}) =====\n`);
  const log = fs.openSync(LOG, starts === 0 ? "w" : "a");
  starts++;
  server = spawn(BIN, ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs", "--log-level", "INFO"],
    { cwd: PROJECT, env: serverEnv, detached: true, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  diag(`opencode serve pid ${server.pid} on ${base} (log: ${LOG})`);
  const t0 = Date.now();
  const healthy = await waitFor("health", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy, 60000, 250);
  if (healthy) followEvents();
  diag(`healthy after ${Date.now() - t0} ms`);
  return !!healthy;
}

// Whether the server process has exited.
const serverGone = () => !server || server.exitCode !== null || server.signalCode !== null;

// Sends `signal` to the server's process group (SIGKILL: no dispose, nothing
// flushed; SIGTERM: a clean stop) and waits for it to exit (up to 15 s; then
// SIGKILL). Stops following its event stream. Whether it exited by itself.
async function stopServer(signal) {
  stopEvents();
  if (serverGone()) return true;
  const byItself = await stopGroup(server, signal, 15000);
  diag(`opencode serve pid ${server.pid} stopped by ${signal}${byItself ? "" : " (then SIGKILL)"}`);
  return byItself;
}

// Stops the server with `signal` and starts it again with the same HOME,
// XDG directories, config and project. Whether the new one is healthy.
async function restartServer(signal) {
  await stopServer(signal);
  return startServer();
}

async function main() {
  fs.mkdirSync(HOME, { recursive: true });
  fs.mkdirSync(PROJECT, { recursive: true });
  provideConfigDepsIn(path.join(CONFIG, "opencode"));
  provideConfigDepsIn(path.join(PROJECT, ".opencode"));
  // the stub plugin, listed in the config with options
  fs.mkdirSync(STUBPLUG, { recursive: true });
  for (const f of ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"])
    fs.copyFileSync(path.join(STUB_DIR, f), path.join(STUBPLUG, f));
  if (!fs.existsSync(path.join(STUBPLUG, "node_modules")))
    fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(STUBPLUG, "node_modules"));
  const installed = path.join(PROJECT, ".opencode/plugin");
  const ocbgInstalled = fs.existsSync(path.join(installed, "ocbg.js"));
  if (ocbgInstalled) {
    fs.mkdirSync(OCBGPLUG, { recursive: true });
    for (const f of ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"])
      fs.renameSync(path.join(installed, f), path.join(OCBGPLUG, f));
    if (!fs.existsSync(path.join(OCBGPLUG, "node_modules")))
      fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(OCBGPLUG, "node_modules"));
  }
  fs.mkdirSync(SIDE, { recursive: true });

  fake = await startFakeModel();
  diag(`fake model on 127.0.0.1:${fake.port}`);
  const config = {
    $schema: "https://opencode.ai/config.json",
    model: "fake/fake-model",
    small_model: "fake/fake-model",
    autoupdate: false,
    share: "disabled",
    permission: {
      edit: "allow", webfetch: "allow",
      bash: { "*": "allow", "*e2e-ask*": "ask", "*e2e-deny*": "deny" },
      task: { "*": "allow", "e2e-nope": "deny", "e2e-asked": "ask" },
    },
    agent: {
      "e2e-nope": { description: "A sub-agent the e2e permission rules deny", mode: "subagent" },
      "e2e-asked": { description: "A sub-agent the e2e permission rules ask about", mode: "subagent" },
      "e2e-compact": { description: "A sub-agent on a small-context model (it compacts)", mode: "subagent",
        model: "fake/small-model" },
      "e2e-capped": { description: "A sub-agent ocbg runs two at a time", mode: "subagent" },
      "e2e-limited": { description: "A sub-agent whose model call is rate-limited once", mode: "subagent" },
    },
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `http://127.0.0.1:${fake.port}/v1`, apiKey: "fake" },
        models: {
          // Prices in US dollars per million tokens: OpenCode computes a message's cost from them.
          "fake-model": { name: "Fake", tool_call: true, limit: { context: 100000, output: 4000 },
            cost: { input: 3, output: 15, cache_read: 0.3 } },
          "small-model": { name: "Fake small", tool_call: true, limit: { context: 8000, output: 1000 } },
        },
      },
    },
    plugin: [
      ...(ONLY === "ocbg" ? [] : [[path.join(STUBPLUG, "ocbg.js"), { answer: 42 }]]),
      [path.join(path.dirname(new URL(import.meta.url).pathname), "bus_recorder.js"), { file: BUS_LOG }],
      ...(ONLY === "stub" ? [] : [[path.join(OCBGPLUG, "ocbg.js"),
        // max_task_tokens: above every other scenario's tasks (the compacting one uses ~7,550);
        // max_depth 2: a task's own session may launch once (nestedTasks, nestedCancel)
        { face_claude: true, max_running_per_agent: { "e2e-capped": 2 }, max_task_tokens: TASK_TOKENS,
          max_depth: 2, auto_background_ms: AUTO_BG_MS }]]),
    ],
  };
  serverEnv = isolatedEnv(HOME, CONFIG, config);
  if (!ok(await startServer(), "opencode serve is healthy on 127.0.0.1")) return;

  if (ONLY !== "ocbg") {
    for (const scenario of chosen([stubToolCall, stubHostCalls, stubEventsAndTransform, stubAbort, stubCommand, stubEdits,
      stubWorktree]))
      await scenario();
  }
  if (ONLY !== "stub" && !ocbgInstalled) {
    ok(false, "ocbg is installed in the project (make install-opencode PROJECT=...)");
  } else if (ONLY !== "stub") {
    for (const scenario of chosen([launchAndNotify, cancelSlow, panelChannel, failingChild, resume, fork, claudeShell, claudeAgent,
      autoBackground, tasksCommand, silentThenWaking, batchWhileBusy, bashDenied, bashAskedOnce, rejectLikeHost, bashEscWhileAsking,
      childAsksPermission, taskDenied, deleteStopsChildren, compactedChild, compactedAfter, capTwoOfFour, usageNotified,
      tokenBudget, rateLimited, nestedTasks, nestedCancel, nestedRefused,
      editCollision, restartAfterNotify, restartBeforeNotify, restartMidTask, endedTaskBusyAgain, monitorEvents,
      monitorFlood])) {
      const t0 = Date.now();
      await scenario();
      diag(`${scenario.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  }

  const listen = serverGone() ? [] : listeners(server.pid);
  ok(listen.length >= 1 && listen.every(isLoopback), "opencode listens on 127.0.0.1 only",
    serverGone() ? "opencode serve has exited" : listen);
  const types = new Set(events.map((e) => e.type));
  ok(types.has("session.idle") && types.has("message.part.updated"), "the event stream was followed", [...types]);
}


// ================= the adapter, with the stub plugin =================

async function stubToolCall() {
  const s = await newSession("stub echo");
  ok(s, "session created");
  const echo = await callTool(s, "stub_echo", { text: "hello" }, 60000);
  ok(echo?.status === "completed", "the model called stub_echo; the tool completed", echo);
  const eo = echo?.output ? JSON.parse(echo.output) : {};
  ok(eo.echo === "hello" && eo.repeat_given === false && eo.session === s && eo.agent === "build",
    "the tool ran in the plugin with the call context", eo);
  ok(eo.options === '{"answer":42,"face_claude":false}',
    "plugin options from opencode.json reach the plugin (the adapter adds face_claude: false)", eo.options);
  ok(/^call_/.test(eo.call) && /^msg_/.test(eo.message), "call id and message id reach the plugin", eo);

  // What the model was shown: optional stays optional, descriptions kept.
  const withTools = fake.requests.find((r) => (r.body.tools || []).some((t) => t.function?.name === "stub_echo"));
  const spec = withTools?.body.tools.find((t) => t.function.name === "stub_echo")?.function;
  ok(spec && JSON.stringify(spec.parameters.required) === '["text"]', "the model sees stub_echo with only text required", spec);
  ok(spec?.parameters.properties.repeat?.description === "How many times (optional)" &&
     spec?.parameters.properties.repeat?.type === "integer", "the model sees argument types and descriptions", spec);

  const bad = await callTool(s, "stub_echo", { repeat: 2 });
  ok(bad?.status === "error" && /text/.test(bad?.error || ""), "a missing required argument is refused before the plugin", bad);
}

async function stubHostCalls() {
  const s = await newSession("stub host");
  const host = await callTool(s, "stub_host", { title: "stub child" }, 60000);
  const ho = host?.output ? JSON.parse(host.output) : {};
  ok(ho.create?.rc === 0 && ho.create.out.parentID === s && ho.create.out.title === "stub child",
    "session_create from a plugin thread, through the SDK", ho.create);
  ok(ho.prompt?.rc === 0 && ho.messages?.rc === 0 && ho.messages.out.some((m) => m.parts.some((p) => p.text === "hello from stub")),
    "session_prompt (noReply) and session_messages", { prompt: ho.prompt, messages: ho.messages?.rc });
  ok(ho.get?.rc === 0 && ho.status?.rc === 0, "session_get and session_status", { get: ho.get?.rc, status: ho.status });
  ok(ho.missing?.enoent === true, "a missing session is -ENOENT", ho.missing);
  const child = ho.create?.out?.id;
  const cg = child ? await api("GET", `/session/${child}`) : {};
  ok(cg.json?.parentID === s, "the child session exists in OpenCode with its parent", cg.json);
}

async function stubEventsAndTransform() {
  const s = await newSession("stub events");
  const ev = await callTool(s, "stub_events");
  const eo = ev?.output ? JSON.parse(ev.output) : {};
  ok(eo.events?.["session.idle"] >= 1 && eo.events?.["message.part.updated"] >= 1 && eo.events?.["session.status"] >= 1,
    "OpenCode events reach on_event", eo.events);
  ok(eo.transforms >= 1 && /^ses_/.test(eo.transform_session), "messages.transform reaches the plugin with a session id", eo);
  ok(fake.requests.some((r) => JSON.stringify(r.body.messages).includes("STUB-MARKER")),
    "the transformed history is what the model was sent");
}

// Cancellation: abort the session while the tool blocks.
async function stubAbort() {
  const s = await newSession("stub block");
  await say(s, "E2E stub_block");
  const running = await waitFor("stub_block running", async () =>
    toolParts(await messages(s), "stub_block").some((p) => p.state.status === "running"), 30000);
  ok(running, "stub_block is running (blocked in the plugin)");
  const tAbort = Date.now();
  await api("POST", `/session/${s}/abort`);
  const ended = await waitFor("stub_block ended", async () => {
    const p = toolParts(await messages(s), "stub_block").at(-1);
    return p && p.state.status !== "running" && p.state.status !== "pending" ? p.state : null;
  }, 15000);
  ok(ended && ended.status === "error", `abort ends the blocked tool call (${Date.now() - tAbort} ms)`, ended);
  ok(await idle(s, 15000), "the session is idle after the abort");
}

// A plugin command: config registers it, command.execute.before runs it.
async function stubCommand() {
  const cmds = (await api("GET", "/command")).json || [];
  ok(cmds.some((c) => c.name === "stubcmd"), "the plugin's command is listed by OpenCode", cmds.map((c) => c.name));
  const s = await newSession("stub command");
  const cr = await api("POST", `/session/${s}/command`, { command: "stubcmd", arguments: "x y" }, 60000);
  ok(cr.status === 200, "POST /session/:id/command", cr.status);
  ok(userTexts(await messages(s)).some((t) => t.includes(`stubcmd ran in ${s} with arguments [x y]`)),
    "the command's output is the prompt OpenCode runs", userTexts(await messages(s)));
}

// The adapter's tool.execute.before / after in OpenCode (ABI 1.5 tool_before, the stub's answers): OpenCode's
// own write, with content holding STUB-WARN, runs and its stored output ends with the stub's warning; with
// STUB-REFUSE the call fails with the stub's text and the file is not written.
async function stubEdits() {
  const s = await newSession("stub edits");
  const warned = path.join(SIDE, "stub-warned.txt"), refused = path.join(SIDE, "stub-refused.txt");
  const w = await callTool(s, "write", { filePath: warned, content: "STUB-WARN\n" });
  ok(w?.status === "completed" && w.output.endsWith(`\n\nstub warning: write in ${s}`) &&
     fs.readFileSync(warned, "utf8") === "STUB-WARN\n",
    "a write the plugin warns of runs, and its result ends with the warning", w);
  const r = await callTool(s, "write", { filePath: refused, content: "STUB-REFUSE\n" });
  diag(`a refused write's error in OpenCode: ${JSON.stringify(r?.error)}`);
  ok(r?.status === "error" && r.error === "stub refusal: write" && !fs.existsSync(refused),
    "a write the plugin refuses fails with its text, and the file is not written", r);
}

// ABI 1.5: a session working in a git worktree (another OpenCode instance),
// through the stub's stub_dir tool: directory_watch, session_create_in,
// session_status, session_abort, then directory_watch 0.
const stubDir = async (sid, args) => {
  const st = await callTool(sid, "stub_dir", args, 60000);
  try { return JSON.parse(st?.output); } catch { return { rc: null, state: st }; }
};
const idsIn = (ev) => [ev.properties?.sessionID, ev.properties?.info?.sessionID, ev.properties?.part?.sessionID,
  ev.type?.startsWith("session.") ? ev.properties?.info?.id : undefined];
const git = (...args) => execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
// "creating instance"/"disposing instance" lines of the log for dir, from byte `from` on.
const instanceLines = (dir, from) => fs.readFileSync(LOG, "utf8").slice(from).split("\n")
  .filter((l) => /message="(creating|disposing) instance"/.test(l) && l.includes(`directory=${dir}`) &&
    !l.includes(`directory=${dir}/`));
async function stubWorktree() {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ocbg-e2e-wt-")));
  const repo = path.join(tmp, "repo"), wt = path.join(tmp, "wt1");
  try {
    fs.mkdirSync(repo);
    git("-C", repo, "init", "-q");
    fs.writeFileSync(path.join(repo, "README"), "main checkout\n");
    git("-C", repo, "add", "README");
    git("-C", repo, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", "commit", "-qm", "first");
    git("-C", repo, "worktree", "add", "-q", "-b", "ocbg/t1", wt, "HEAD");
    await worktreeCase(repo, wt);
  } finally {
    fake.openGate("wtbusy");
    try { git("-C", repo, "worktree", "remove", "--force", wt); } catch {}
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function worktreeCase(repo, wt) {
  const driver = await newSession("stub worktree driver");
  const parent = await newSession("stub worktree parent");
  const logFrom = fs.statSync(LOG).size, evFrom = events.length;
  const w = await stubDir(driver, { op: "watch", directory: wt });
  ok(w.rc === 0, "directory_watch(wt, 1) answers 0", w);
  const made = await stubDir(driver, { op: "create_in", directory: wt, parent, title: "wt child" });
  const child = made.out?.id;
  ok(made.rc === 0 && made.out.directory === wt && made.out.parentID === parent,
    "session_create_in: a child of a main-checkout session, working in the worktree", made);
  if (!child) return;
  await say(child, 'CHILD call bash {"command":"pwd; pwd > wt_marker.txt","description":"pwd"}');
  ok(await turnEnds(child, "child reply bash", 60000), "the child ran bash and answered");
  const bash = toolParts(await messages(child), "bash").at(-1)?.state;
  ok(bash?.status === "completed" && bash.output.trim().split("\n")[0] === wt, "pwd in the child printed the worktree", bash);
  const childReq = fake.requests.find((r) => r.body.tools?.length &&
    JSON.stringify(r.body.messages).includes('"pwd; pwd > wt_marker.txt'));
  ok(toolNames(childReq).includes("bash") && !toolNames(childReq).some((n) => n.startsWith("stub_")) &&
    fs.readFileSync(LOG, "utf8").slice(logFrom).includes(`ocbg: ${wt} is the folder of a task of the ocbg instance`),
    "the stub's copy in the worktree's instance stays idle: the child is not offered its tools", toolNames(childReq));
  const childEvents = async (want) => waitFor(`stub events of ${child}`, async () => {
    const e = JSON.parse((await callTool(driver, "stub_events", { session: child }))?.output).session_events;
    return want(e) ? e : null;
  }, 30000, 300);
  const seen = await childEvents((e) => e["session.idle"] >= 1);
  ok(seen && seen["session.created"] >= 1 && seen["session.status"] >= 1 && seen["message.part.updated"] >= 1 &&
    seen["session.idle"] >= 1, "the child's session.created/status/idle and message.part.updated reach on_event", seen);
  ok(!events.slice(evFrom).some((e) => idsIn(e).includes(child)),
    "none of them came by the main instance's own stream (the watch brought them)");

  await say(child, "CHILD gate wtbusy");
  const held = await waitFor("the child's gated model request", async () =>
    fake.requests.find((r) => r.decision.gate === "wtbusy" && !r.closed), 30000);
  const st = await stubDir(driver, { op: "status" });
  ok(held && st.rc === 0 && st.out?.[child]?.type === "busy", "session_status lists the worktree child busy", st);
  ok((await api("DELETE", `/session/${parent}`)).status === 200, "the child's parent deleted (the child's row with it)");
  const stillBusy = (await api("GET", `/session/status?directory=${encodeURIComponent(wt)}`)).json?.[child];
  ok(stillBusy?.type === "busy", "the child still runs in the worktree's instance", stillBusy);
  const ab = await stubDir(driver, { op: "abort", session: child });
  const stopped = await waitFor("the child not busy", async () =>
    !(await api("GET", `/session/status?directory=${encodeURIComponent(wt)}`)).json?.[child] && held.closed, 15000);
  ok(ab.rc === 0 && stopped, "session_abort stops it (it names the worktree: by id alone it reaches the main instance)", ab);

  const un = await stubDir(driver, { op: "unwatch", directory: wt });
  const lines = instanceLines(wt, logFrom);
  const disposedAt = lines.findIndex((l) => l.includes("disposing instance"));
  ok(un.rc === 0 && disposedAt > 0 && lines.slice(0, disposedAt).every((l) => l.includes("creating instance")),
    "directory_watch(wt, 0) disposed the worktree's instance", lines);
  const after = await stubDir(driver, { op: "status" });
  ok(after.rc === 0 && !after.out?.[child], "session_status no longer asks the worktree", after);
  ok(await staysFalse(() => instanceLines(wt, logFrom).length > disposedAt + 1, 2000),
    "no request names the worktree after it (no new instance there)", instanceLines(wt, logFrom));
  ok(git("-C", repo, "status", "--porcelain") === "" && !fs.existsSync(path.join(repo, "wt_marker.txt")) &&
    fs.readFileSync(path.join(wt, "wt_marker.txt"), "utf8").trim() === wt,
    "the child wrote in the worktree; the main checkout is untouched");
}

// ================= ocbg =================

// Launches one task through the model; its id, or undefined.
async function launch(sid, args) {
  const st = await callTool(sid, "background_task", args);
  return st?.status === "completed" ? taskIds(st.output)[0] : undefined;
}

// Two background_task calls in one streamed step; both notify, the last wakes.
async function launchAndNotify() {
  const parent = await newSession("ocbg parent");
  const since = (await messages(parent)).length;
  await say(parent, "E2E launch2 alpha beta");
  const launched = await waitFor("two launches ended", async () => {
    const ps = toolParts((await messages(parent)).slice(since), "background_task");
    return ps.length === 2 && ps.every((p) => p.state.status === "completed" || p.state.status === "error") ? ps : null;
  }, 60000);
  const launches = launched || [];
  ok(launches.length === 2 && launches.every((p) => p.state.status === "completed"),
    "the model launched two background tasks", launches.map((p) => p.state));
  const ids = launches.flatMap((p) => taskIds(p.state.output));
  ok(ids.length === 2, "two task ids", launches.map((p) => p.state.output));
  const seen = fake.requests.flatMap((r) => r.body.tools || []).find((t) => t.function?.name === "background_output")?.function;
  ok(seen && (seen.parameters.required || []).join() === "task_id" && seen.parameters.properties.block?.type === "boolean",
    "the model sees background_output(task_id, block?, timeout?)", seen?.parameters);

  const notified = await waitFor("two notifications", async () => {
    const us = (await messages(parent)).filter((m) => m.info.role === "user").map(textOf);
    return ids.every((id) => us.some((t) => t.includes(id))) ? us : null;
  }, 60000);
  ok(notified, "both completions were notified in the parent session", notified);
  if (notified) {
    const woke = await waitFor("parent woken", async () => {
      const last = (await messages(parent)).at(-1);
      return last.info.role === "assistant" && last.parts.some((p) => p.text === "ack");
    }, 30000);
    ok(woke, "the last notification woke the parent (the model answered it)");
    const wakers = fake.requests.filter((r) => r.decision.text === "ack" &&
      ids.some((id) => JSON.stringify(r.body.messages).includes(id)));
    ok(wakers.length >= 1, "the model was called with the notifications in its context", wakers.length);
    // The human hears of it too: one toast for the batch (ABI 1.3 notify_user → client.tui.showToast).
    const toast = await waitFor("a toast", async () =>
      events.find((e) => e.type === "tui.toast.show" && /2 background tasks: 2 completed/.test(e.properties?.message || "")),
    10000);
    ok(toast && toast.properties.variant === "success" && toast.properties.title === "ocbg",
      "the user got one toast for the batch (2 background tasks: 2 completed)", toast?.properties);
  }
  await idle(parent);

  const out = await callTool(parent, "background_output", { task_id: ids[0] });
  ok(out?.status === "completed" && /child reply (alpha|beta)/.test(out?.output || ""),
    "background_output returns the child's reply", out);
  const list = await callTool(parent, "background_list");
  ok(list?.status === "completed" && ids.every((id) => list.output.includes(id)) && /completed/i.test(list.output),
    "background_list shows both tasks completed", list);

  // The durable store: ocbg.db in OpenCode's data dir, in the folder of the parent session's project (other
  // projects have theirs: the stub part's sessions in other folders), holding both tasks (their rows are in
  // the file or its write-ahead log).
  const storeRoot = path.join(HOME, ".local/share/opencode/ocbg");
  const projectID = (await api("GET", `/session/${parent}`)).json?.projectID;
  const db = projectID && path.join(storeRoot, projectID, "ocbg.db");
  const bytes = db ? [db, db + "-wal"].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f).toString("latin1")).join("") : "";
  ok(db && ids.every((id) => bytes.includes(id)), "the tasks are in the store, <data>/opencode/ocbg/<project id>/ocbg.db",
    { projectID, projects: fs.existsSync(storeRoot) ? fs.readdirSync(storeRoot) : [] });
}

// background_cancel of a slow task aborts its session.
async function cancelSlow() {
  const parent = await newSession("ocbg cancel");
  const slowId = await launch(parent, { description: "slow one", prompt: "CHILD slow", agent: "general" });
  ok(slowId, "a slow task launched");
  const slowReq = await waitFor("the slow child's model request", async () =>
    fake.requests.find((r) => r.decision.hang && !r.closed), 30000);
  ok(slowReq, "the slow child is waiting on the model");
  const cancel = await callTool(parent, "background_cancel", { task_id: slowId });
  ok(cancel?.status === "completed" && /cancel/i.test(cancel?.output || ""), "background_cancel answers", cancel);
  const aborted = await waitFor("slow request closed", async () => slowReq && slowReq.closed, 15000);
  ok(aborted, "the slow child's session was aborted (its model request closed)");
  const lc = await callTool(parent, "background_list", { status: "cancelled" });
  ok(lc?.output?.includes(slowId), "background_list(status=cancelled) shows it", lc);
}

// The TUI panel's channel (docs/panel.md), server side: ocbg publishes a view
// of the session's tasks on the bus as a task starts and ends; a TUI's stop
// request (published as a TUI would) stops a running task through the same
// path as background_cancel, the reply says ok, the view says cancelled and
// stopped by the user, and the parent is notified "stopped by the user". No
// model request is made for the stop itself.
const BUS_LOG = path.join(WORK, "bus.log");
const busLines = () => (fs.existsSync(BUS_LOG) ? fs.readFileSync(BUS_LOG, "utf8").split("\n").filter(Boolean) : [])
  .map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter((c) => typeof c === "string");
const busViews = (sid) => busLines().filter((c) => c.startsWith("ocbg.view "))
  .map((c) => { try { return JSON.parse(c.slice(10)); } catch { return null; } }).filter((v) => v && v.session === sid);
const viewLine = (sid, id) => { const v = busViews(sid).at(-1); return v?.tasks?.find((t) => t.id === id); };

async function panelChannel() {
  const parent = await newSession("ocbg panel");
  const slowId = await launch(parent, { description: "panel slow", prompt: "CHILD slow", agent: "general" });
  ok(slowId, "a slow task launched");
  const running = await waitFor("a view with the task running", async () => viewLine(parent, slowId)?.status === "running", 15000);
  ok(running, "ocbg published the session's view with the task running", busViews(parent).at(-1));
  const line = viewLine(parent, slowId) || {};
  ok(line.kind === "agent" && line.agent === "general" && line.description === "panel slow" && /^ses_/.test(line.session || ""),
    "the view's line names the agent, the description and the child session", line);
  const slowReq = await waitFor("the slow child's model request", async () =>
    fake.requests.find((r) => r.decision.hang && !r.closed), 30000);
  const before = fake.requests.length;
  const rid = `e2e-${Date.now()}`;
  const pub = await api("POST", "/tui/publish", { type: "tui.command.execute",
    properties: { command: `ocbg.ui ${JSON.stringify({ v: 1, id: rid, action: "stop", task_id: slowId })}` } });
  ok(pub.status === 200, "a TUI's stop request is accepted by the server", pub.text);
  const reply = await waitFor("the reply", async () => busLines().filter((c) => c.startsWith("ocbg.reply "))
    .map((c) => JSON.parse(c.slice(11))).find((r) => r.id === rid), 15000);
  ok(reply?.ok === true, "ocbg replies ok to the stop", reply);
  ok(await waitFor("slow request closed", async () => slowReq && slowReq.closed, 15000),
    "the child's model stream was closed (its session aborted)");
  const stopped = await waitFor("the view says cancelled", async () => viewLine(parent, slowId)?.status === "cancelled", 15000);
  ok(stopped && viewLine(parent, slowId)?.stopped_by_user === true, "the view shows it cancelled, stopped by the user",
    viewLine(parent, slowId));
  const notice = await userMessage(parent, `stopped by the user: ${slowId}`, 30000);
  ok(notice, "the parent is notified that the user stopped it");
  await idle(parent);
  const sync = await api("POST", "/tui/publish", { type: "tui.command.execute",
    properties: { command: `ocbg.ui ${JSON.stringify({ v: 1, id: rid + "s", action: "sync" })}` } });
  const n = busViews(parent).length;
  ok(sync.status === 200 && await waitFor("a view after sync", async () => busViews(parent).length > n, 10000),
    "a sync request makes ocbg publish the view again");
  const detailId = rid + "d";
  await api("POST", "/tui/publish", { type: "tui.command.execute",
    properties: { command: `ocbg.ui ${JSON.stringify({ v: 1, id: detailId, action: "detail", task_id: slowId })}` } });
  const detail = await waitFor("the detail reply", async () => busLines().filter((c) => c.startsWith("ocbg.reply "))
    .map((c) => JSON.parse(c.slice(11))).find((r) => r.id === detailId), 10000);
  ok(detail?.ok && detail.detail?.status === "cancelled" && detail.detail?.error === "Stopped by the user.",
    "a detail request is answered with the task's detail", detail);
  const modelCalls = fake.requests.slice(before).filter((r) => !(r.body?.messages || []).some((m) =>
    JSON.stringify(m.content || "").includes("stopped by the user")));
  ok(modelCalls.length === 0, "stopping, syncing and reading detail made no model request (only the notified turn)",
    modelCalls.map((r) => r.decision));
}

// A child whose model fails (HTTP 400) ends as error, and the failure notifies.
async function failingChild() {
  const parent = await newSession("ocbg error");
  const errId = await launch(parent, { description: "failing one", prompt: "CHILD error", agent: "general" });
  ok(errId, "a failing task launched");
  const notice = errId && await userMessage(parent, errId, 45000);
  ok(notice && /failed/.test(textOf(notice.msg)), "the failure is notified in the parent", notice && textOf(notice.msg));
  await idle(parent);
  const st = await callTool(parent, "background_list", { status: "error" });
  ok(st?.output?.includes(errId), "the failing child ends as error", st);
  ok(events.some((e) => e.type === "session.error"), "OpenCode reported session.error for it");
}

// A completed task resumed twice: with background_task(resume=…) it notifies
// again; with background_resume(block=true) the tool returns only the new
// reply and nothing is pushed.
async function resume() {
  const parent = await newSession("ocbg resume");
  const id = await launch(parent, { description: "resume me", prompt: "CHILD fast r1", agent: "general" });
  ok(id, "a task to resume launched");
  const first = await userMessage(parent, "child reply r1");
  ok(first && textOf(first.msg).includes(id), "its first reply was notified", first && textOf(first.msg));
  await idle(parent);
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  ok(child, "the task's child session");

  const r = await callTool(parent, "background_task", { resume: id, prompt: "CHILD fast r2" });
  ok(r?.status === "completed" && r.output.includes(`Resumed task ${id}`), "background_task(resume=id) answers", r);
  const second = await userMessage(parent, "child reply r2");
  const st = second ? textOf(second.msg) : "";
  ok(st.includes(`completed: ${id} (resumed)`),
    "the resumed task completed again: a second notification with the new reply", st);
  const cm = child ? await messages(child) : [];
  ok(userTexts(cm).some((t) => t.includes("CHILD fast r2")) && assistantTexts(cm).includes("child reply r2"),
    "the child session got the follow-up and answered it", { user: userTexts(cm), assistant: assistantTexts(cm) });
  await idle(parent);

  const b = await callTool(parent, "background_resume", { task_id: id, message: "CHILD fast r3", block: true });
  ok(b?.status === "completed" && b.output === "child reply r3",
    "background_resume(block=true) returns only the new reply", b);
  const cm3 = child ? await messages(child) : [];
  ok(assistantTexts(cm3).includes("child reply r3"), "the child answered the blocking follow-up", assistantTexts(cm3));
  await sleep(1500); // a notification would have been pushed by now
  const pushed = userTexts(await messages(parent)).filter((t) => t.includes("child reply r3"));
  ok(pushed.length === 0, "no notification was pushed for the blocking resume", pushed);
}

// background_task(fork=true): OpenCode forks the parent; the child sees the
// parent's history with the long tool result cut.
async function fork() {
  const big = path.join(PROJECT, "e2e-big.txt");
  const lines = Array.from({ length: 80 }, (_, i) => `big file line ${String(i + 1).padStart(3, "0")} ${"x".repeat(40)}`);
  lines.push("big-file-tail-marker");
  fs.writeFileSync(big, lines.join("\n") + "\n");
  const parent = await newSession("fork parent");
  const read = await callTool(parent, "read", { filePath: big });
  ok(read?.status === "completed" && read.output.length > 1500 && read.output.includes("big-file-tail-marker"),
    "the parent's history holds a tool result longer than 1500 characters", read && { ...read, output: read.output?.length });

  const id = await launch(parent, { description: "forked one", prompt: "CHILD fast forked", agent: "general", fork: true });
  ok(id, "a forked task launched");
  const forked = await waitFor("the fork session", async () =>
    ((await api("GET", "/session")).json || []).find((s) => s.title === "fork parent (fork #1)"), 15000);
  ok(forked && !forked.parentID, "OpenCode forked the parent: a session without parentID titled '... (fork #1)'", forked);
  const fm = forked ? await messages(forked.id) : [];
  ok(userTexts(fm).some((t) => t.startsWith("[ocbg] You are a background sub-agent forked")),
    "the fork session holds the preamble", userTexts(fm));
  ok(userTexts(fm).some((t) => t.includes("E2E read")), "the fork session holds the parent's history", userTexts(fm));

  const req = await waitFor("the forked child's model request", async () =>
    fake.requests.find((r) => r.decision.text === "child reply forked"), 15000);
  const body = req ? JSON.stringify(req.body.messages) : "";
  ok(body.includes("big file line 001") && body.includes("the original was") && !body.includes("big-file-tail-marker"),
    "the forked child's model request has the parent's long tool result cut",
    { hasStart: body.includes("big file line 001"), hasCut: body.includes("the original was"),
      hasTail: body.includes("big-file-tail-marker") });
  ok(fake.requests.some((r) => r.body.messages?.some((m) => m.role === "system") &&
    JSON.stringify(r.body.messages).includes("big-file-tail-marker")),
    "the parent's own requests keep the full tool result");
  const notice = await userMessage(parent, "child reply forked");
  ok(notice && textOf(notice.msg).includes(id), "the forked task completed and notified the parent",
    notice && textOf(notice.msg));
  await idle(parent);
}

// Claude face, shell: a failing background command, and one stopped with TaskStop.
const claude = { session: null, failed: null, stopped: null, agent: null };
async function claudeShell() {
  const s = (claude.session = await newSession("claude face"));
  const b = await callTool(s, "Bash", { command: "echo e2e-shell-out; exit 3", description: "failing echo",
    run_in_background: true });
  const id = (claude.failed = b?.output ? taskIds(b.output)[0] : null);
  ok(b?.status === "completed" && id, "Bash(run_in_background=true) returns a task id", b);
  const offered = new Set(fake.requests.flatMap((r) => (r.body.tools || []).map((t) => t.function?.name)));
  ok(offered.has("Bash") && offered.has("bash") && offered.has("Task") && offered.has("task"),
    "with face_claude: true the model is offered Bash and bash, Task and task (why it is off by default)",
    [...offered].filter((n) => /^(bash|task)$/i.test(n)));
  const o = await callTool(s, "TaskOutput", { task_id: id });
  const out = o?.output || "";
  ok(out.includes("<status>failed</status>") && out.includes("<exit_code>3</exit_code>") && out.includes("e2e-shell-out"),
    "TaskOutput: status failed, exit code 3, the output", o);

  const dir = path.join(WORK, "pids");
  fs.mkdirSync(dir, { recursive: true });
  const shPid = path.join(dir, "sh.pid"), sleepPid = path.join(dir, "sleep.pid");
  const long = await callTool(s, "Bash", {
    command: `echo $$ > ${shPid}; sleep 300 & echo $! > ${sleepPid}; wait`, description: "long sleep",
    run_in_background: true });
  const lid = (claude.stopped = long?.output ? taskIds(long.output)[0] : null);
  ok(lid, "a long-running background Bash", long);
  const pids = await waitFor("pid files", () => {
    const a = Number(fs.readFileSync(shPid, "utf8")), z = Number(fs.readFileSync(sleepPid, "utf8"));
    return a && z ? [a, z] : null;
  }, 10000);
  const pgrp = pids ? procStat(pids[0])?.pgrp : null;
  if (pgrp) shellGroups.add(pgrp);
  ok(pgrp === pids?.[0] && procStat(pids[1])?.pgrp === pgrp && groupMembers(pgrp).length >= 2,
    "the command runs in its own process group (sh and sleep)", { pids, pgrp });
  const stop = await callTool(s, "TaskStop", { task_id: lid });
  ok(stop?.status === "completed" && stop.output.includes(`Stopped task ${lid}`), "TaskStop answers", stop);
  const gone = pgrp && await waitFor("the process group gone", () => groupMembers(pgrp).length === 0, 10000);
  ok(gone, "the command's whole process group is gone", pgrp && groupMembers(pgrp));
  if (gone) shellGroups.delete(pgrp);
}

// background_monitor (docs/tools.md#monitors): a command printing a line a
// second for 5 s gives at most 5 events after coalescing, each a user message
// that wakes the parent once (one model call has it as its newest user
// message), then "stream ended" once.
const lastUserOf = (r) => JSON.stringify([...(r.body.messages || [])].reverse().find((m) => m.role === "user") || {});
async function monitorEvents() {
  const s = await newSession("monitor ticks");
  const m = await callTool(s, "background_monitor", { command: "for i in 1 2 3 4 5; do echo tick $i; sleep 1; done",
    description: "ticks" }, 60000);
  const id = m?.output ? taskIds(m.output)[0] : null;
  ok(m?.status === "completed" && id && m.output.startsWith(`Monitor ${id} started: $ for i in`),
    "background_monitor starts a monitor", m);
  const ended = `[ocbg] Monitor ${id} "ticks": stream ended (exit code 0)`;
  const us = await waitFor("stream ended", async () => {
    const t = userTexts(await messages(s));
    return t.some((x) => x.includes(ended)) ? t : null;
  }, 60000);
  const evs = (us || []).filter((x) => x.includes(`[ocbg] Monitor ${id} "ticks", event `));
  ok(evs.length >= 1 && evs.length <= 5 && ["tick 1", "tick 5"].every((l) => evs.join("\n").includes(l)),
    "5 lines a second apart: at most 5 events, every line told", evs);
  ok((us || []).filter((x) => x.includes(ended)).length === 1, "stream ended, once", us);
  await idle(s);
  const woke = evs.map((_, i) => fake.requests.filter((r) => {
    const u = lastUserOf(r);
    return u.includes(id) && u.includes(`event ${i + 1}:`);
  }).length);
  ok(woke.length && woke.every((n) => n === 1), "each event woke the parent once (a model call per event)", woke);
}

// A flood (`yes`) under the default bounds: 12 events at most, then the watch
// stops with the advice to filter more precisely, and its command is stopped.
async function monitorFlood() {
  const s = await newSession("monitor flood");
  const m = await callTool(s, "background_monitor", { command: "yes", description: "flood" }, 60000);
  const id = m?.output ? taskIds(m.output)[0] : null;
  ok(id, "a monitor on `yes`", m);
  const stop = `[ocbg] Monitor ${id} "flood" stopped: its lines came faster than 12 events a minute for 30.0s`;
  const us = await waitFor("the flood stop", async () => {
    const t = userTexts(await messages(s));
    return t.some((x) => x.includes(stop)) ? t : null;
  }, 90000);
  const note = (us || []).find((x) => x.includes(stop)) || "";
  ok(note.includes("Its command was stopped. Filter more precisely: a pattern that matches only the lines you must " +
    "react to, or a filter in the command"), "the flood is stopped with the advice", note);
  ok((us || []).filter((x) => x.includes(`[ocbg] Monitor ${id} "flood", event `)).length <= 12,
    "at most 12 events before it", us?.length);
  await idle(s);
}

// Long foreground work moves to the background (auto_background_ms, small in
// this suite): a foreground Task whose child waits at its gate, and a
// foreground Bash that sleeps past the limit, each return a task id with the
// face's background text, then notify once with their result.
async function autoBackground() {
  const s = await newSession("auto background");
  const t = await callTool(s, "Task", { description: "auto bg agent", prompt: "CHILD gate autobg",
    subagent_type: "general" }, 60000);
  const tid = t?.output ? taskIds(t.output)[0] : null;
  ok(t?.status === "completed" && tid && t.output.startsWith("Still running after 2 s, so it was moved to the " +
    "background (auto_background_ms).\nAsync agent launched in the background.\ntask_id: " + tid),
    "a foreground Task past auto_background_ms returns its task id and the background text", t);
  const b = await callTool(s, "Bash", { command: "sleep 4; echo autobg-done", description: "slow echo" }, 60000);
  const bid = b?.output ? taskIds(b.output)[0] : null;
  ok(b?.status === "completed" && bid && b.output.includes("moved to the background") &&
    b.output.includes("Command running in the background.\ntask_id: " + bid),
    "a foreground Bash past auto_background_ms returns its task id and the background text", b);
  fake.openGate("autobg");
  const notes = await waitFor("both notified", async () => {
    const us = userTexts(await messages(s));
    const ta = us.filter((x) => x.includes(`[ocbg] Background task completed: ${tid}`));
    const ba = us.filter((x) => x.includes(`[ocbg] Background command completed: ${bid}`));
    return ta.length && ba.length ? { ta, ba } : null;
  }, 30000);
  ok(notes?.ta.length === 1 && notes.ta[0].includes("child reply autobg"),
    "the moved Task is notified once, with the sub-agent's reply", notes?.ta);
  ok(notes?.ba.length === 1 && notes.ba[0].includes("autobg-done"),
    "the moved Bash is notified once, with the command's output (it kept running)", notes?.ba);
  await idle(s);
  const again = userTexts(await messages(s)).filter((x) => x.includes(tid) || x.includes(bid));
  ok(again.length === 2, "and never again", again);
}

// Claude face, agent: Task(run_in_background) read with TaskOutput(block=true).
async function claudeAgent() {
  const s = claude.session || (claude.session = await newSession("claude face"));
  const t = await callTool(s, "Task", { description: "claude agent", prompt: "CHILD gate claude",
    subagent_type: "general", run_in_background: true });
  const id = (claude.agent = t?.output ? taskIds(t.output)[0] : null);
  ok(t?.status === "completed" && id, "Task(run_in_background=true) returns a task id", t);
  // The child waits for its gate: TaskOutput really blocks until it answers.
  const since = (await messages(s)).length;
  await say(s, `E2E TaskOutput ${JSON.stringify({ task_id: id, block: true })}`);
  const blocked = await waitFor("TaskOutput running", async () =>
    toolParts((await messages(s)).slice(since), "TaskOutput").some((p) => p.state.status === "running"), 15000);
  ok(blocked, "TaskOutput(block=true) waits while the agent works");
  fake.openGate("claude");
  const o = await waitFor("TaskOutput ended", async () => {
    const p = toolParts((await messages(s)).slice(since), "TaskOutput").at(-1);
    return p && (p.state.status === "completed" || p.state.status === "error") ? p.state : null;
  }, 30000);
  ok(o?.output?.includes("<status>completed</status>") && o.output.includes("child reply claude"),
    "TaskOutput(block=true) returns the agent's reply", o);
  await idle(s);
}

// /tasks through OpenCode's command route: the listing is the prompt.
async function tasksCommand() {
  const s = claude.session;
  const cmds = (await api("GET", "/command")).json || [];
  ok(cmds.some((c) => c.name === "tasks"), "OpenCode lists the /tasks command", cmds.map((c) => c.name));
  const cr = await api("POST", `/session/${s}/command`, { command: "tasks", arguments: "" }, 60000);
  ok(cr.status === 200, "POST /session/:id/command tasks", cr.status);
  const listing = userTexts(await messages(s)).find((t) => t.startsWith("Background tasks")) || "";
  const row = (id, type, status) => id && new RegExp(`^${id}\\s+${type}\\s+${status}\\s`, "m").test(listing);
  ok(/Task ID\s+Type\s+Status/.test(listing) && row(claude.failed, "shell", "failed") &&
     row(claude.stopped, "shell", "stopped") && row(claude.agent, "agent", "completed"),
    "the listing (Task ID / Type / Status) is in the session as the prompt", listing);
  const last = (await messages(s)).at(-1);
  ok(last?.info.role === "assistant" && textOf(last) === "ack", "the model answered the listing", last && textOf(last));
}

// Two tasks in one parent: the first notification is silent (noReply, no
// model turn), the second wakes the parent. Both children are gated, so the
// silence is checked while the second one surely still runs.
async function silentThenWaking() {
  const parent = await newSession("ocbg order");
  const since = (await messages(parent)).length;
  await say(parent, "E2E launch2gated one two");
  const launched = await turnEnds(parent, "launched two", 30000, since);
  const ids = launched ? toolParts(launched, "background_task").flatMap((p) => taskIds(p.state.output)) : [];
  ok(ids.length === 2, "two gated tasks launched", ids);
  await idle(parent);
  const [idOne, idTwo] = ids;
  const requestsBefore = fake.requests.length; // the launch turn's own requests name the ids

  fake.openGate("one");
  const first = await userMessage(parent, idOne, 30000);
  ok(first, "the first completion is notified");
  await sleep(1500); // a model turn for it would have started by now
  const msgs = await messages(parent);
  const at = first ? msgs.findIndex((m) => m.info.id === first.msg.info.id) : -1;
  const after = at >= 0 ? msgs.slice(at + 1) : [];
  const isBusy = (e) => e.type === "session.status" && e.properties.sessionID === parent &&
    e.properties.status?.type === "busy";
  const noticeEvent = first ? events.findIndex((e) => e.type === "message.updated" &&
    e.properties.info?.id === first.msg.info.id) : -1;
  const busySince = noticeEvent >= 0 ? events.slice(noticeEvent).filter(isBusy).length : -1;
  const seenByModel = fake.requests.slice(requestsBefore).filter((r) =>
    JSON.stringify(r.body.messages || []).includes(idOne));
  ok(at >= 0 && after.length === 0 && busySince === 0 && await isIdle(parent) && seenByModel.length === 0,
    "the first notification is silent: no assistant reply, no model call, the parent never went busy",
    { after: after.map((m) => m.info.role), noticeEvent, busySince, seenByModel: seenByModel.length });
  const busyBefore = events.filter(isBusy).length;

  fake.openGate("two");
  const second = await userMessage(parent, idTwo, 30000);
  ok(second && second.index > at, "the second completion is notified after it");
  const woke = await turnEnds(parent, "ack", 30000, second ? second.index : 0);
  ok(woke, "the second notification woke the parent: the model answered");
  const waker = fake.requests.find((r) => r.decision.text === "ack" &&
    [idOne, idTwo].every((id) => JSON.stringify(r.body.messages).includes(id)));
  ok(waker, "that model turn saw both notifications");
  const busyAfter = events.filter(isBusy).length;
  ok(busyAfter > busyBefore, "the parent went busy only after the second one", { busyBefore, busyAfter });
  await idle(parent);
}

// A batch whose children end while the parent's own turn still runs
// (plugin/engine/defer.c). A silent notice pushed into a busy session costs
// the parent a model step (OpenCode's loop steps again for a user message
// newer than its answer); ocbg holds it while the parent is busy and pushes
// it at the parent's idle, or just before the waking notice. The parent
// launches 4 gated children ("E2E busybatch"); its next (last) model step
// waits at its own gate, so its turn stays busy while the test opens the
// children's gates. Two cases, each in its own parent session:
//  - during: all 4 children end inside the parent's turn; the silent notices
//    of the first 3 are held, the 4th (waking) one takes them along;
//  - after: the first 3 end inside the turn (held), the turn ends (held
//    notices pushed at the idle, no model call), then the 4th ends and wakes.
// Either way: exactly one parent model call after its own last step, which
// sees all 4 notices, and none after it. (With defer_hold disabled, checked
// once: the first 3 notices land in the busy session in both cases, and in
// "after" the parent's model is called twice, once for them when its last
// step ends, once for the waking notice; in "during" every notice lands in
// the same step, so only the held check tells.)
async function batchWhileBusy() {
  await busyBatchCase("bbd", true);
  await busyBatchCase("bba", false);
}

// The text of a model request's messages (content strings or parts).
const requestText = (r) => (r.body.messages || []).map((m) => typeof m.content === "string" ? m.content :
  (Array.isArray(m.content) ? m.content.map((p) => p?.text || "").join("\n") : "")).join("\n");

async function busyBatchCase(tag, lastDuringTurn) {
  const N = 4, ks = [1, 2, 3, 4];
  const what = lastDuringTurn ? "all end during the parent's turn" : "the last ends after the parent's turn";
  const parent = await newSession(`ocbg busy batch ${tag}`);
  const line = `E2E busybatch ${tag} ${N}`;
  const before = fake.requests.length;
  const since = (await messages(parent)).length;
  await say(parent, line);
  // The parent's own model requests (its script line in the history; not the title's).
  const parentCalls = () => fake.requests.slice(before).filter((r) => r.decision.text !== "E2E title" &&
    requestText(r).includes(line));
  const childReq = (k) => fake.requests.slice(before).find((r) => r.decision.gate === `${tag}-${k}`);
  const gated = await waitFor("the parent's last step at its gate", () =>
    fake.requests.slice(before).find((r) => r.decision.gate === `${tag}-parent`), 60000);
  const launched = toolParts((await messages(parent)).slice(since), "background_task");
  const idOf = {};
  for (const p of launched) idOf[(p.state.input?.description || "").replace(`busy ${tag}-`, "")] = taskIds(p.state.output)[0];
  ok(gated && ks.every((k) => idOf[k]) && launched.every((p) => p.state.status === "completed"),
    `[${tag}] the parent launched ${N} background tasks; its next model step waits (its turn is busy)`,
    launched.map((p) => p.state.status));
  const atGates = await waitFor("4 children at their gates", () => ks.every((k) => childReq(k)), 30000);
  ok(atGates, `[${tag}] the ${N} children wait on the model`);
  const kids = (await api("GET", `/session/${parent}/children`)).json || [];
  const kidOf = (k) => kids.find((s) => s.title === `busy ${tag}-${k} (@general background task)`)?.id;
  const notices = async () => userTexts(await messages(parent)).filter((t) => t.startsWith("[ocbg] Background task"));
  const parentBusy = async () => !(await isIdle(parent)) && !gated.done && !gated.closed;

  // The first three end while the parent's turn runs.
  for (const k of [1, 2, 3]) fake.openGate(`${tag}-${k}`);
  const ended = await waitFor("3 children ended", async () => {
    const st = (await api("GET", "/session/status")).json || {};
    return [1, 2, 3].every((k) => childReq(k).done && kidOf(k) && !st[kidOf(k)] &&
      fake.requests.some((r) => r.decision.text === `child reply ${tag}-${k}` && r.done));
  }, 30000);
  ok(ended && await parentBusy(), `[${tag}] 3 children answered and went idle; the parent's turn still runs`);
  // ocbg pushes a notice some 0.1–0.5 s after the child's idle; held, none
  // comes while the parent is busy. A check that nothing happens: the
  // condition (a notice in the parent session) must stay false for 3 s,
  // well under the 12 s after which ocbg would push a held notice anyway.
  const heldQuiet = await staysFalse(async () => (await notices()).length > 0, 3000);
  ok(heldQuiet && await parentBusy(), `[${tag}] their silent notices are held: none in the busy parent session`,
    await notices());

  let lastStepEnd;
  if (lastDuringTurn) {
    fake.openGate(`${tag}-4`);
    const all = await waitFor("4 notices in the busy parent", async () => {
      const ns = await notices();
      return ns.length >= N ? ns : null;
    }, 30000);
    ok(all && await parentBusy(), `[${tag}] the 4th (waking) notice took the held ones along, while the parent is busy`,
      all);
    ok(all?.length === N && all.at(-1).startsWith(`[ocbg] Background task completed: ${idOf[4]} "busy ${tag}-4"`) &&
       all.at(-1).includes(`: all ${N} tasks done.\n`),
      `[${tag}] the held 3 first, then the waking one ("all ${N} tasks done")`, all);
    fake.openGate(`${tag}-parent`);
    lastStepEnd = await waitFor("the parent's gated step answered", () => gated.done && gated.doneAt, 30000);
  } else {
    fake.openGate(`${tag}-parent`);
    lastStepEnd = await waitFor("the parent's gated step answered", () => gated.done && gated.doneAt, 30000);
    ok(await turnEnds(parent, `held ${tag}`, 30000, since) && await idle(parent),
      `[${tag}] the parent's turn ended ("held ${tag}"); it is idle`);
    const three = await waitFor("the 3 held notices pushed at the idle", async () => {
      const ns = await notices();
      return ns.length >= 3 ? ns : null;
    }, 30000);
    ok(three?.length === 3 && [1, 2, 3].every((k) => three.some((t) =>
      t.startsWith(`[ocbg] Background task completed: ${idOf[k]} "busy ${tag}-${k}"`))),
      `[${tag}] at the parent's idle the 3 held notices were pushed`, three);
    ok(parentCalls().filter((r) => r.at >= lastStepEnd).length === 0,
      `[${tag}] without a model call (none since its last step)`, parentCalls().map((r) => r.decision));
    fake.openGate(`${tag}-4`);
  }

  // The call that sees the waking notice; then the parent idle again.
  const wakes = () => parentCalls().filter((r) => r.at >= lastStepEnd);
  const wakeText = `[ocbg] Background task completed: ${idOf[4]} "busy ${tag}-4"`;
  const woke = await waitFor("the parent's model called with the waking notice", () =>
    wakes().find((r) => r.done && requestText(r).includes(wakeText)), 30000);
  ok(woke && await idle(parent), `[${tag}] the parent's model was called with the waking notice; the parent is idle`);
  // No further call: the condition (one more parent model request, or the
  // parent busy again) must stay false for 3 s.
  const seenSoFar = wakes().length;
  const quiet = await staysFalse(async () => wakes().length > seenSoFar || !(await isIdle(parent)), 3000);
  const after = wakes();
  diag(`[${tag}] parent model requests after its own last step: ${after.length} ` +
    JSON.stringify(after.map((r) => ({ decision: r.decision.text ?? r.decision, ms: r.at - lastStepEnd }))));
  ok(quiet && after.length === 1 && after[0].decision.text === "ack" && await turnEnds(parent, "ack", 5000, since),
    `[${tag}] ${what}: exactly one parent model call after its own last step, and none after it`,
    after.map((r) => r.decision));
  const seen = woke ? requestText(woke) : "";
  const missing = ks.filter((k) => !seen.includes(`[ocbg] Background task completed: ${idOf[k]} "busy ${tag}-${k}"`) ||
    !seen.includes(`\nResult:\nchild reply ${tag}-${k}\n`));
  ok(woke && missing.length === 0, `[${tag}] that call carries all ${N} notices, each with its child's reply`,
    { missing });
  const ns = await notices();
  ok(ks.every((k) => ns.filter((t) => t.includes(`completed: ${idOf[k]} `)).length === 1),
    `[${tag}] each task was notified exactly once`, ns);
}

// ================= without isolation, collisions are at least seen (ABI 1.5 tool_before) =================

// The state of the newest `tool` part of session sid once it ended (completed or error), or null.
async function endedPart(sid, tool, timeoutMs = 30000) {
  return waitFor(`${tool} in ${sid}`, async () => {
    const st = toolParts(await messages(sid), tool).at(-1)?.state;
    return st && (st.status === "completed" || st.status === "error") ? st : null;
  }, timeoutMs);
}

// Two running tasks of one session (no isolation) write the same file with
// OpenCode's own write tool: the first is held open at a gate after its
// write; the second write's result, as the child session stores it, ends
// with ocbg's warning naming the first (tool.execute.before asked the
// plugin, tool.execute.after appended it). The file holds the second write.
async function editCollision() {
  const parent = await newSession("ocbg edit collision");
  const file = path.join(SIDE, "collide.txt");
  const write = (content) => JSON.stringify({ filePath: file, content });
  const one = await launch(parent, { description: "writer one", agent: "general",
    prompt: `CHILD callgate col1 write ${write("one\n")}` });
  ok(one, "task one launched", one);
  const childNamed = async (title) => waitFor(`child ${title}`, async () =>
    ((await api("GET", `/session/${parent}/children`)).json || []).find((s) => s.title.startsWith(title))?.id, 30000);
  const oneSession = await childNamed("writer one");
  const first = oneSession && await endedPart(oneSession, "write");
  ok(first?.status === "completed" && !first.output.includes("[ocbg]"),
    "task one wrote the file, nothing to say (it is alone), and stays running at its gate", first);
  const two = await launch(parent, { description: "writer two", agent: "general",
    prompt: `CHILD call write ${write("two\n")}` });
  ok(two, "task two launched", two);
  const twoSession = await childNamed("writer two");
  const second = twoSession && await endedPart(twoSession, "write");
  const warning = `[ocbg] Warning: ${file} was also edited by background task ${one} ("writer one"), still running ` +
    `in this checkout; your edits may overwrite each other. Re-read the file before editing it again, or run ` +
    `parallel writers with isolation "worktree".`;
  ok(second?.status === "completed" && second.output.endsWith(`\n\n${warning}`) &&
     !second.output.startsWith("[ocbg]"),
    "task two's write ran, and its result (what its model read) ends with the warning naming task one", second);
  const answered = await waitFor("task two's next model call", () => fake.requests.some((r) =>
    JSON.stringify(r.body.messages).includes(`background task ${one} (\\"writer one\\")`)), 15000);
  ok(answered, "the model of task two was called with the warning in its context");
  ok(fs.readFileSync(file, "utf8") === "two\n", "the file holds the second write (a warning does not stop it)");
  fake.openGate("col1");
  const done = await userMessage(parent, `[ocbg] Background task completed: ${one}`, 30000);
  ok(done, "task one completes once its gate opens");
  await idle(parent);
}

// ================= ocbg asking OpenCode's permission (ABI 1.1) =================

// A deny rule: the Bash call is refused, nobody is asked, nothing runs.
async function bashDenied() {
  const s = await newSession("perm deny");
  const f = path.join(SIDE, "e2e-deny.txt");
  const from = events.length;
  const st = await callTool(s, "Bash", { command: `touch ${f}`, description: "denied touch" });
  ok(st?.status === "error" && /^Permission denied: running `touch /.test(st.error) &&
     st.error.includes(`OpenCode's permission rules deny it (bash "*e2e-deny*": deny)`) && /was not run/.test(st.error),
    "a bash deny rule refuses Bash: Permission denied, naming the rule", st);
  ok(!fs.existsSync(f), "the denied command never ran (no side-effect file)");
  ok(!events.slice(from).some((e) => e.type === "permission.asked" && e.properties.sessionID === s),
    "a deny rule asks nobody");
}

// An "ask" rule answered "once": asked with the call's patterns, then it runs.
async function bashAskedOnce() {
  const s = await newSession("perm ask");
  const f = path.join(SIDE, "e2e-ask-once.txt");
  const cmd = `echo yes > ${f}`;
  const from = events.length;
  const since = await sayTool(s, "Bash", { command: cmd, description: "asked echo" });
  const asked = await permissionAsked(s, from);
  const ap = asked?.properties;
  ok(ap?.permission === "bash" && JSON.stringify(ap.patterns) === JSON.stringify([cmd]) &&
     JSON.stringify(ap.always) === '["echo *"]' && ap.metadata?.command === cmd && /^call_/.test(ap.tool?.callID || ""),
    "Bash asks OpenCode: permission.asked for the session, patterns = the command, always = echo *, the tool call",
    ap);
  ok(!fs.existsSync(f), "nothing ran before the answer");
  ok(ap && await replyPermission(ap.id, "once") === 200, "the user answers once (POST /permission/:id/reply)");
  const st = await toolEnded(s, "Bash", since);
  await idle(s);
  ok(st?.status === "completed" && fs.existsSync(f), "allowed once: the command ran", st);
  ok(events.slice(from).some((e) => e.type === "permission.replied" && e.properties.requestID === ap?.id &&
     e.properties.reply === "once"), "permission.replied once");
}

// Side by side, OpenCode's own tools and ocbg's, each call in a session of
// its own, the question answered through POST /permission/:id/reply:
// - "reject": OpenCode's bash (and task) fail with its RejectedError and the
//   turn ends there: one model request, no "done <tool>". ocbg's Bash, Task
//   and background_task must end the same: the same request count, the same
//   part error, the same last assistant message; nothing ran, no task, no
//   child session.
// - "reject" with the user's words, and a deny rule: OpenCode's bash fails and
//   the model takes another step ("done bash"); so must ocbg's Bash, with its
//   own text naming the words or the rule.
async function rejectLikeHost() {
  const agent = "e2e-asked"; // task rule: ask
  const launchArgs = (tag) => ({ description: `reject ${tag}`, prompt: `CHILD fast ${tag}` });
  const cases = [
    { tool: "bash", kind: "reject", file: "e2e-ask-rej-native.txt" },
    { tool: "Bash", kind: "reject", file: "e2e-ask-rej-ocbg.txt" },
    { tool: "task", kind: "reject", args: { ...launchArgs("native-task"), subagent_type: agent } },
    { tool: "Task", kind: "reject", args: { ...launchArgs("claude-task"), subagent_type: agent } },
    { tool: "background_task", kind: "reject", args: { ...launchArgs("bg-task"), agent } },
    { tool: "bash", kind: "words", file: "e2e-ask-words-native.txt", message: "use printf instead" },
    { tool: "Bash", kind: "words", file: "e2e-ask-words-ocbg.txt", message: "use printf instead" },
    { tool: "bash", kind: "deny", file: "e2e-deny-native.txt" },
    { tool: "Bash", kind: "deny", file: "e2e-deny-ocbg.txt" },
  ];
  const res = {};
  for (const c of cases) {
    const s = await newSession(`reject like host ${c.tool} ${c.kind}`);
    const args = c.args ?? { command: `touch ${path.join(SIDE, c.file)}`, description: `${c.kind} touch` };
    const line = `E2E ${c.tool} ${JSON.stringify(args)}`;
    const from = events.length, before = fake.requests.length;
    const since = await sayTool(s, c.tool, args);
    let asked = null;
    if (c.kind !== "deny") {
      asked = await permissionAsked(s, from);
      ok(asked && await replyPermission(asked.properties.id, "reject", c.message) === 200,
        `${c.tool} (${c.kind}): asked; the user answers reject${c.message ? " with a message" : ""}`);
    }
    const st = await toolEnded(s, c.tool, since);
    await idle(s);
    const msgs = (await messages(s)).slice(since);
    const last = msgs.filter((m) => m.info.role === "assistant").at(-1);
    const kids = (await api("GET", `/session/${s}/children`)).json;
    const requests = fake.requests.slice(before).filter((r) => r.decision.text !== "E2E title" && requestText(r).includes(line)).length;
    // (a later call in the session: its model requests carry the line too)
    const listed = /_task$|^Task$/.test(c.tool) && c.tool !== "task" ? await callTool(s, "background_list", {}) : null;
    res[`${c.tool} ${c.kind}`] = {
      requests, status: st?.status, error: st?.error, texts: assistantTexts(msgs), finish: last?.info.finish,
      messageError: last?.info.error ?? null, ran: c.file ? fs.existsSync(path.join(SIDE, c.file)) : false,
      children: Array.isArray(kids) ? kids.length : -1, tasks: listed && !/No background tasks found/.test(listed.output),
      asked: events.slice(from).filter((e) => e.type === "permission.asked" && e.properties.sessionID === s).length,
    };
  }
  diag(`reject like host: ${JSON.stringify(res)}`);
  const rejected = "The user rejected permission to use this specific tool call.";
  const n = res["bash reject"];
  ok(n.requests === 1 && n.status === "error" && n.error === rejected && n.texts.length === 0 && !n.ran,
    "OpenCode's bash, rejected: its RejectedError, the turn ends (one model request, no further step)", n);
  const sameEnd = (a, b) => a.requests === b.requests && a.status === b.status && a.error === b.error &&
    JSON.stringify(a.texts) === JSON.stringify(b.texts) && a.finish === b.finish &&
    JSON.stringify(a.messageError) === JSON.stringify(b.messageError);
  for (const k of ["Bash reject", "Task reject", "background_task reject", "task reject"]) {
    const o = res[k];
    ok(sameEnd(o, n) && !o.ran && o.children === 0 && !o.tasks,
      `${k.split(" ")[0]}, rejected, ends the turn as OpenCode's bash: ${n.requests} model request, part error ` +
      `"${rejected}", nothing run or created`, { got: o, native: n });
  }
  await resumeRejected(agent, n);
  const nw = res["bash words"], ow = res["Bash words"];
  ok(nw.requests === 2 && nw.texts.includes("done bash") && /with the following feedback: use printf instead/.test(nw.error || ""),
    "OpenCode's bash, rejected with words: the model takes another step", nw);
  ok(ow.requests === nw.requests && ow.status === "error" && ow.texts.includes("done Bash") && !ow.ran &&
     /^Permission denied: running `touch /.test(ow.error || "") &&
     (ow.error || "").includes(`the user rejected it, saying: "use printf instead"`) && /was not run/.test(ow.error || ""),
    "ocbg's Bash, rejected with words: the same steps, its own text with the words", { got: ow, native: nw });
  const nd = res["bash deny"], od = res["Bash deny"];
  ok(nd.requests === 2 && nd.texts.includes("done bash") && /specified a rule which prevents/.test(nd.error || "") &&
     nd.asked === 0 && !nd.ran, "OpenCode's bash, denied by a rule: nobody asked, the model takes another step", nd);
  ok(od.requests === nd.requests && od.status === "error" && od.texts.includes("done Bash") && od.asked === 0 && !od.ran &&
     (od.error || "").includes(`OpenCode's permission rules deny it (bash "*e2e-deny*": deny)`),
    "ocbg's Bash, denied by a rule: the same steps, its own text naming the rule", { got: od, native: nd });
}

// A resume rejected (the task's agent asks): the turn ends as for OpenCode's
// bash (native: its result), and the task stays as it was.
async function resumeRejected(agent, native) {
  const p = await newSession("reject like host resume");
  let from = events.length;
  const since0 = await sayTool(p, "background_task", { description: "reject resumed", prompt: "CHILD fast resumed", agent });
  const asked0 = await permissionAsked(p, from);
  ok(asked0 && await replyPermission(asked0.properties.id, "once") === 200, "resume: the launch is asked and allowed once");
  const launched = await toolEnded(p, "background_task", since0);
  const id = taskIds(launched?.output)[0];
  ok(id && await userMessage(p, `[ocbg] Background task completed: ${id}`) && await idle(p), "resume: the task completed", launched);
  const args = { resume: id, prompt: "CHILD fast again" };
  const line = `E2E background_task ${JSON.stringify(args)}`;
  from = events.length;
  const before = fake.requests.length;
  const since = await sayTool(p, "background_task", args);
  const asked = await permissionAsked(p, from);
  ok(asked?.properties.permission === "task" && await replyPermission(asked.properties.id, "reject") === 200,
    "resume: asked (task), the user answers reject");
  const st = await toolEnded(p, "background_task", since);
  await idle(p);
  const requests = fake.requests.slice(before).filter((r) => r.decision.text !== "E2E title" && requestText(r).includes(line)).length;
  const texts = assistantTexts((await messages(p)).slice(since));
  ok(requests === native.requests && st?.status === native.status && st?.error === native.error && texts.length === 0,
    `resume, rejected, ends the turn as OpenCode's bash (${requests} model request)`, { st, requests, texts, native });
  const out = await callTool(p, "background_output", { task_id: id });
  ok(out?.status === "completed" && /completed/i.test(out.output) && !/again/.test(out.output),
    "resume: the task is still completed, with its first answer only", out);
}

// Esc while the user is being asked: the tool ends at once, nothing runs.
async function bashEscWhileAsking() {
  const s = await newSession("perm esc");
  const f = path.join(SIDE, "e2e-ask-esc.txt");
  const from = events.length;
  const since = await sayTool(s, "Bash", { command: `touch ${f}`, description: "abandoned touch" });
  const asked = await permissionAsked(s, from);
  ok(asked, "the question is open");
  const t0 = Date.now();
  await api("POST", `/session/${s}/abort`);
  const st = await toolEnded(s, "Bash", since, 10000);
  const ms = Date.now() - t0;
  ok(st?.status === "error" && ms < 3000, `Esc while asking ends the Bash call (${ms} ms)`, st);
  await idle(s);
  await sleep(300); // a late run would have written the file by now
  ok(!fs.existsSync(f), "the abandoned command never ran");
  const open = ((await api("GET", "/permission")).json || []).some((p) => p.id === asked?.properties.id);
  diag(`after the abort the question is ${open ? "still listed" : "gone"} in GET /permission`);
}

// A background sub-agent whose own bash tool (OpenCode's) hits an "ask" rule:
// the parent hears once that it waits, background_output says so; answered,
// the task completes and notifies.
async function childAsksPermission() {
  const parent = await newSession("perm child");
  const f = path.join(PROJECT, "e2e-ask-child.txt"); // inside the project: no external_directory question
  const cmd = "echo e2e-ask-child > e2e-ask-child.txt";
  const from = events.length;
  const id = await launch(parent, { description: "asking child", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "child echo" })}` });
  ok(id, "a task whose sub-agent runs bash launched");
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  const asked = child && await permissionAsked(child, from);
  ok(asked?.properties.permission === "bash" && asked.properties.patterns.some((p) => p.includes("e2e-ask-child")),
    "the sub-agent's bash asks in the child session", asked?.properties);
  const notice = await userMessage(parent, "is waiting for permission", 30000);
  const nt = notice ? textOf(notice.msg) : "";
  ok(nt.startsWith(`[ocbg] Background task ${id} "asking child" (agent: general) is waiting for permission: bash: `) &&
     nt.includes("e2e-ask-child"), "the parent is told the task waits for permission", nt);
  ok(notice && await turnEnds(parent, "ack", 30000, notice.index), "the notice woke the parent (the model answered)");
  await idle(parent);
  const out = await callTool(parent, "background_output", { task_id: id });
  ok(out?.status === "completed" && /Waiting for permission: bash: .*e2e-ask-child/.test(out.output),
    "background_output shows Waiting for permission", out);
  ok(!fs.existsSync(f), "the sub-agent's command waits for the answer");
  ok(asked && await replyPermission(asked.properties.id, "once") === 200, "the user answers once");
  const done = await userMessage(parent, "child reply bash", 30000);
  ok(done && textOf(done.msg).includes(id) && fs.existsSync(f), "the command ran; the task completed and notified",
    done && textOf(done.msg));
  await idle(parent);
  const waits = userTexts(await messages(parent)).filter((t) => t.includes("is waiting for permission"));
  ok(waits.length === 1, "the waiting notice came exactly once", waits);
}

// A task deny rule for the agent: background_task refused, no session made.
async function taskDenied() {
  const parent = await newSession("perm task");
  const st = await callTool(parent, "background_task", { description: "denied agent", prompt: "CHILD fast nope",
    agent: "e2e-nope" });
  ok(st?.status === "error" && /^Permission denied: starting a sub-agent of type "e2e-nope"/.test(st.error) &&
     st.error.includes(`task "e2e-nope": deny`) && /No task was started/.test(st.error),
    "a task deny rule refuses background_task for that agent", st);
  const kids = (await api("GET", `/session/${parent}/children`)).json;
  ok(Array.isArray(kids) && kids.length === 0, "no child session was created", kids);
}

// ================= host events in OpenCode's own order =================

// Deleting a parent with three running tasks: OpenCode deletes the children
// first and would leave them busy, their model streams open; ocbg aborts them.
async function deleteStopsChildren() {
  const parent = await newSession("ocbg delete");
  const before = fake.requests.length;
  const ids = [];
  for (const x of ["d1", "d2", "d3"])
    ids.push(await launch(parent, { description: `slow ${x}`, prompt: `CHILD slow ${x}`, agent: "general" }));
  ok(ids.every(Boolean), "three slow tasks launched", ids);
  const streams = await waitFor("three open child model streams", async () => {
    const open = fake.requests.slice(before).filter((r) => r.decision.hang && !r.closed);
    return open.length === 3 ? open : null;
  }, 30000);
  ok(streams, "their three model streams are open");
  const kids = ((await api("GET", `/session/${parent}/children`)).json || []).map((s) => s.id);
  ok(kids.length === 3, "three child sessions", kids);
  const del = await api("DELETE", `/session/${parent}`);
  ok(del.status === 200, "DELETE /session/<parent>", del.status);
  const closed = streams && await waitFor("child streams closed", async () => streams.every((r) => r.closed), 15000);
  ok(closed, "every child's model stream closed", streams && streams.map((r) => r.closed));
  const quiet = await waitFor("no child busy", async () => {
    const st = (await api("GET", "/session/status")).json || {};
    return kids.every((k) => !st[k]);
  }, 15000);
  ok(quiet, "no child is busy (or retrying) in /session/status");
  const gone = await Promise.all(kids.map(async (k) => (await api("GET", `/session/${k}`)).status));
  ok(gone.every((s) => s === 404), "the child sessions are gone", gone);
}

// Children whose answer brings their context near the limit: OpenCode compacts
// each right after (summary, continue message, one more turn). The task's
// result is the answer, then what the continue turn added after the mark (for
// "more": a bash call, then "continued X"); a sign-off adds nothing; never the
// summary. Five children (ocbg's default cap of running agents) answer at once
// (their gates open together), so that ocbg's completion checks queue up
// behind each other: a check that reads the
// answer before OpenCode's compaction request exists completes the task with
// the answer (order "before": the parent is then told what the continue turn
// added), one that reads it after waits for the continue turn (order "after":
// the notification has it all). Each case's name says which order it ran in.
const CX_MARK = "\n\n[The sub-agent's context was compacted after this answer; then it continued:]\n";
async function compactedChild() {
  const parent = await newSession("ocbg compaction");
  const cases = [["cxa", true], ["cxb", false], ["cxc", true], ["cxd", false], ["cxe", true]];
  const ids = {};
  for (const [x, more] of cases) {
    ids[x] = await launch(parent, { description: `compacting ${x}`, prompt: `CHILD compact ${x}${more ? " more" : ""} gate`,
      agent: "e2e-compact" });
  }
  ok(cases.every(([x]) => ids[x]), "five tasks on the small-context model launched", ids);
  await idle(parent);
  for (const [x] of cases) fake.openGate(`cx-${x}`);
  const orders = [];
  for (const [x, more] of cases) {
    if (ids[x]) orders.push(await compactedCase(parent, x, more, ids[x]));
  }
  diag(`compactedChild orders: ${orders.join(", ")}`);
  await idle(parent, 60000);
  const texts = userTexts(await messages(parent));
  for (const [x, more] of cases) {
    if (!more && ids[x])
      ok(!texts.some((t) => t.includes(`[ocbg] Background task ${ids[x]} "compacting ${x}" (agent: e2e-compact) went on`)),
        `${x}: after a sign-off the parent is told nothing more`);
  }
}

// One child of compactedChild: its order, "x: check before|after the compaction".
async function compactedCase(parent, x, more, id) {
  const kids = (await api("GET", `/session/${parent}/children`)).json || [];
  const child = kids.find((s) => s.title?.startsWith(`compacting ${x} `))?.id;
  const notice = await userMessage(parent, `[ocbg] Background task completed: ${id}`, 60000);
  const nt = notice ? textOf(notice.msg).trimEnd() : "";
  let cm = [];
  const done = child && await waitFor(`${x}'s compaction and continue turn`, async () => {
    cm = await messages(child);
    const last = cm.at(-1)?.info;
    return cm.some((m) => m.info.summary === true) && last?.role === "assistant" && !last.summary && last.time?.completed &&
      await isIdle(child);
  }, 60000);
  ok(done && cm.some((m) => m.info.summary === true && textOf(m).startsWith("E2E SUMMARY of the conversation")),
    `${x}: OpenCode compacted the child (its own summary) and ran the continue turn`,
    cm.map((m) => `${m.info.role}:${m.info.summary ? "summary" : ""}:${textOf(m).slice(0, 40)}`));
  // Which order: with more work, the notification has it or not (exact);
  // after a sign-off, the notification was created before the continue turn
  // began ("before": its check cannot have waited for that turn) or not.
  const cont = cm.findIndex((m) => m.info.role === "user" && m.parts.some((p) => p.metadata?.compaction_continue));
  const turn = cont >= 0 ? cm.slice(cont + 1).find((m) => m.info.role === "assistant") : undefined;
  const before = more ? !nt.includes(`continued ${x}`)
    : !!(notice && turn && notice.msg.info.time.created < turn.info.time.created);
  const order = `${x}: check ${before ? "before" : "after"} the compaction`;
  const full = more ? `child reply ${x}${CX_MARK}continued ${x}` : `child reply ${x}`;
  const first = more && before ? `child reply ${x}` : full;
  ok(nt.endsWith(`\nResult:\n${first}`) && !nt.includes("E2E SUMMARY"),
    `${order}, ${more ? "more work" : "a sign-off"}: the notification's result, exactly, no summary`, nt);
  if (more && before) {
    const want = `[ocbg] Background task ${id} "compacting ${x}" (agent: e2e-compact) went on after its result was ` +
      `reported. Its result now ends with:\n${CX_MARK.trimStart()}continued ${x}`;
    const extra = await userMessage(parent, `[ocbg] Background task ${id} "compacting ${x}" (agent: e2e-compact) went on`,
      60000);
    ok(extra && textOf(extra.msg).trimEnd() === want, `${order}: the parent is told what the continue turn added`,
      extra && textOf(extra.msg));
  }
  await idle(parent, 60000);
  const out = await callTool(parent, "background_output", { task_id: id });
  ok(out?.status === "completed" && out.output.trimEnd().endsWith(`\nResult:\n${full}`) && !out.output.includes("E2E SUMMARY"),
    `${order}: background_output's result, exactly, no summary`, out);
  return order;
}

// The other order in real OpenCode: the completion check after the compaction began. ocbg checks at
// the turn-ending message.updated, and OpenCode decides to compact only after the step's snapshot, so
// with the events this order does not come; with message.updated lost (the adapter's fault injection,
// OCBG_TEST_DROP_EVENTS, on a restarted server) the check comes at the idle after the continue turn,
// and the one notification carries the answer and what that turn added.
async function compactedAfter() {
  serverEnv.OCBG_TEST_DROP_EVENTS = "message.updated";
  try {
    if (!ok(await restartServer("SIGTERM"), "opencode serve restarted with message.updated kept from ocbg")) return;
    const parent = await newSession("ocbg compaction after");
    const id = await launch(parent, { description: "compacting cxz", prompt: "CHILD compact cxz more gate",
      agent: "e2e-compact" });
    ok(id, "a task on the small-context model launched", id);
    if (!id) return;
    await idle(parent);
    fake.openGate("cx-cxz");
    const order = await compactedCase(parent, "cxz", true, id);
    ok(order === "cxz: check after the compaction", "without the turn-ending event, the check came after the compaction",
      order);
  } finally {
    delete serverEnv.OCBG_TEST_DROP_EVENTS;
    ok(await restartServer("SIGTERM"), "opencode serve restarted with every event");
  }
}

let exitCode = 1;
try {
  await main();
  exitCode = tap.failed ? 1 : 0;
} catch (e) {
  ok(false, `unexpected: ${e.stack || e}`);
} finally {
  await stopAll();
  const stopped = server ? server.exitCode !== null || server.signalCode !== null : true;
  ok(stopped, "opencode serve stopped");
  console.log(`1..${tap.n}`);
  console.log(`# e2e: ${tap.n - tap.failed} passed, ${tap.failed} failed in ${secs()} s`);
  if (tap.failed) {
    try {
      const tail = fs.readFileSync(path.join(WORK, "opencode.log"), "utf8").split("\n").filter((l) => /ERROR|ocbg|plugin|panic|Segmentation/i.test(l)).slice(-30);
      for (const l of tail) console.log(`# log: ${l.slice(0, 300)}`);
    } catch {}
  }
  process.exitCode = tap.failed ? 1 : exitCode;
}

// ================= bounds =================

// A cap of 2 (max_running_per_agent) with 4 launches: two run, two wait
// pending with no session, each starts as a slot frees, in order, and each
// is notified exactly once.
async function capTwoOfFour() {
  const parent = await newSession("ocbg cap");
  const names = ["capA", "capB", "capC", "capD"];
  const ids = [];
  for (const [i, n] of names.entries()) {
    const st = await callTool(parent, "background_task", { description: n, prompt: `CHILD gate ${n}`, agent: "e2e-capped" });
    ids.push(taskIds(st?.output)[0]);
    const want = i < 2 ? /Status: running/ : /Status: pending[\s\S]*max_running_per_agent e2e-capped: 2/;
    ok(want.test(st?.output || ""), `${n}: ${i < 2 ? "runs at once" : "waits pending for the agent's cap of 2"}`, st?.output);
  }
  const asked = (n) => fake.requests.some((r) => r.decision?.gate === n); // a child's own model call
  ok(await waitFor("two children on the model", async () => asked("capA") && asked("capB"), 30000),
    "the first two children reached the model");
  const children = async () => ((await api("GET", `/session/${parent}/children`)).json || []).length;
  ok(!asked("capC") && !asked("capD") && await children() === 2, "the two pending tasks have no session yet",
    { children: await children() });
  fake.openGate("capA");
  ok(await waitFor("capC started", async () => asked("capC"), 30000), "capA's end starts capC (the oldest waiting)");
  ok(!asked("capD"), "capD still waits");
  fake.openGate("capB");
  ok(await waitFor("capD started", async () => asked("capD"), 30000), "capB's end starts capD");
  fake.openGate("capC");
  fake.openGate("capD");
  const all = await waitFor("four notifications", async () => {
    const us = userTexts(await messages(parent));
    return ids.every((id) => us.filter((t) => t.includes(`completed: ${id}`)).length === 1) ? us : null;
  }, 60000);
  ok(all, "each of the four tasks was notified exactly once", ids);
  await idle(parent);
}

// The model reports its usage in the stream (the last chunk, as OpenAI does when
// stream_options.include_usage asks for it); OpenCode prices it with the model's
// configured cost and reports both in message.updated; ocbg shows them in the
// completion notification and in background_list.
async function usageNotified() {
  const parent = await newSession("ocbg usage");
  const from = events.length;
  const id = await launch(parent, { description: "spender", prompt: "CHILD spend u1 2000 700 1000 200",
    agent: "general" });
  ok(id, "a task whose model call reports its usage launched");
  const notice = id && await userMessage(parent, id, 30000);
  const nt = notice ? textOf(notice.msg) : "";
  const req = fake.requests.find((r) => r.decision.text === "child reply u1");
  ok(req?.body.stream_options?.include_usage === true && req.usage?.prompt_tokens === 2000 &&
     req.usage.prompt_tokens_details.cached_tokens === 1000 && req.usage.completion_tokens === 700 &&
     req.usage.completion_tokens_details.reasoning_tokens === 200,
    "OpenCode asks for usage in the stream (stream_options.include_usage); the model reports it in its last chunk",
    req && { stream_options: req.body.stream_options, usage: req.usage });
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  const info = events.slice(from).filter((e) => e.type === "message.updated" &&
    e.properties.info?.sessionID === child && e.properties.info.role === "assistant").at(-1)?.properties.info;
  const tk = info?.tokens;
  ok(tk?.input === 1000 && tk.output === 500 && tk.reasoning === 200 && tk.cache?.read === 1000 &&
     tk.cache.write === 0 && info.cost === 0.0138,
    "OpenCode's message.updated: input 1000 (2000 less 1000 cached), output 500 (700 less 200 reasoning), " +
    "reasoning 200, cache read 1000; cost $0.0138 from the model's prices",
    info && { tokens: info.tokens, cost: info.cost });
  const usage = "Usage: 1,700 tokens (in 1,000, out 500, reasoning 200, cache read 1,000, write 0), $0.0138";
  ok(nt.startsWith(`[ocbg] Background task completed: ${id} "spender" (agent: general, `) &&
     nt.split("\n").includes(usage) && nt.includes("\nResult:\nchild reply u1"),
    `the completion notification shows the spend: ${usage}`, nt);
  await idle(parent);
  const list = await callTool(parent, "background_list");
  const line = (list?.output || "").split("\n").find((l) => l.startsWith(`- ${id} `)) || "";
  ok(line.endsWith(` | ${usage}`), "its background_list line ends with the usage", list?.output);
}

// A per-task token budget: a sub-agent's model call reports more tokens than
// max_task_tokens and the sub-agent would go on (a tool call, then a model
// call that never ends): ocbg stops it, status error, the parent told once;
// the child's session is aborted (not busy, no model stream left open, its
// last message aborted). OpenCode reports a step's usage when the step ends,
// after its tool calls ran; the abort has so far landed before the next model
// call (checked either way: no stream stays open).
async function tokenBudget() {
  const parent = await newSession("ocbg budget");
  const before = fake.requests.length;
  const id = await launch(parent, { description: "runaway", prompt: "CHILD spendcall b1 24000 1000",
    agent: "general" });
  ok(id, "a task whose first model call reports 25,000 tokens launched");
  const notice = id && await userMessage(parent, id, 30000);
  const nt = notice ? textOf(notice.msg) : "";
  const stop = `Stopped by the token budget: this task used 25,000 tokens (max_task_tokens is ${TASK_TOKENS}).`;
  const usage = "Usage: 25,000 tokens (in 24,000, out 1,000, reasoning 0, cache read 0, write 0), $0.0870";
  ok(nt.startsWith(`[ocbg] Background task failed: ${id} "runaway" (agent: general, `) &&
     nt.includes(`\nError: ${stop}`) && nt.split("\n").includes(usage),
    `the parent is told it failed: ${stop}`, nt);
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  const mine = () => fake.requests.slice(before).filter((r) => r.decision.hang ||
    r.decision.calls?.[0]?.args?.command === "echo spent b1");
  const quiet = child && await waitFor("the child stopped", async () => {
    const st = (await api("GET", "/session/status")).json || {};
    return !st[child] && mine().every((r) => r.done || r.closed);
  }, 15000);
  ok(quiet, "the child's session is no longer busy and none of its model streams is open",
    mine().map((r) => ({ hang: !!r.decision.hang, done: r.done, closed: r.closed })));
  const last = child ? (await messages(child)).at(-1)?.info : null;
  ok(last?.role === "assistant" && last.error?.name === "MessageAbortedError",
    "the child was aborted: its last message ended with MessageAbortedError", last);
  diag(`the child made ${mine().length} model call(s) before the abort`);
  await idle(parent);
  const out = await callTool(parent, "background_output", { task_id: id });
  ok(out?.status === "completed" && out.output.startsWith(`Task ${id}: error\n`) &&
     out.output.includes(`\nError: ${stop}\n`), "background_output: status error, the budget's text", out);
  const failures = userTexts(await messages(parent)).filter((t) => t.startsWith("[ocbg]") && t.includes(id));
  ok(failures.length === 1, "the failure was notified exactly once", failures);
}

// A rate limit: the first model call of a sub-agent gets HTTP 429 (retry-after-ms);
// OpenCode reports session.status retry and waits. A second task of the same
// agent launched meanwhile waits pending and says why; it starts only once
// the retry went through.
async function rateLimited() {
  const parent = await newSession("ocbg rate limit");
  const from = events.length;
  const id1 = await launch(parent, { description: "limited one", prompt: "CHILD ratelimit rl1", agent: "e2e-limited" });
  ok(id1, "a task whose first model call is rate-limited launched");
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  const retry = child && await waitFor("session.status retry", () => events.slice(from).find((e) =>
    e.type === "session.status" && e.properties.sessionID === child && e.properties.status?.type === "retry"), 30000, 50);
  const limitedAt = fake.requests.find((r) => r.decision.rateLimitOnce === "rl1" && r.status === 429)?.at;
  ok(retry && limitedAt, "the model answered 429; OpenCode reports session.status retry for the child",
    retry?.properties);
  const t0 = Date.now();
  const since = await sayTool(parent, "background_task", { description: "limited two", prompt: "CHILD fast rl2",
    agent: "e2e-limited" });
  const st = await toolEnded(parent, "background_task", since);
  diag(`the second launch answered ${Date.now() - t0} ms after the retry was seen (the retry waits ${RATE_LIMIT_RETRY_MS} ms)`);
  const id2 = taskIds(st?.output)[0];
  const why = "Queued: the host is retrying a rate-limited call of a running e2e-limited task; e2e-limited tasks " +
    "wait until it clears; it starts when a slot frees (0 ahead of it in the queue). Its status is pending until then.";
  ok(id2 && /Status: pending/.test(st.output) && st.output.includes(why),
    "a second task of that agent waits pending: the host is retrying a rate-limited call", st?.output);
  const second = await waitFor("the second child's model call", () =>
    fake.requests.find((r) => r.decision.text === "child reply rl2"), 30000);
  const retried = fake.requests.find((r) => r.decision.rateLimitOnce === "rl1" && r.status === 200);
  ok(second && retried && second.at >= limitedAt + RATE_LIMIT_RETRY_MS - 50 && second.at >= retried.at,
    "it started only after the retry went through",
    { limitedAt, retriedAfter: retried && retried.at - limitedAt, secondAfter: second && second.at - limitedAt });
  const both = await waitFor("two notifications", async () => {
    const us = userTexts(await messages(parent));
    return [id1, id2].every((id) => us.filter((t) => t.includes(`completed: ${id}`)).length === 1) ? us : null;
  }, 30000);
  ok(both, "both tasks completed, each notified once");
  await idle(parent);
}

// ================= nesting (max_depth 2 in this suite) =================

// ocbg's tools, as the model sees them (face_claude: true adds the last five).
// (Functions, not constants: main() runs before this part of the module.)
function ocbgTools() {
  return ["background_task", "background_output", "background_cancel", "background_list", "background_clear",
    "background_resume", "background_block", "background_send", "background_monitor", "Task", "Bash", "TaskOutput",
    "TaskStop", "Monitor"];
}
function toolNames(r) { return (r?.body.tools || []).map((t) => t.function?.name); }
async function childOf(sid) { return (await api("GET", `/session/${sid}/children`)).json?.[0]?.id; }
function endNotices(texts, id) {
  return texts.filter((t) => ["completed", "failed", "cancelled"].some((e) =>
    t.includes(`[ocbg] Background task ${e}: ${id}`)));
}

// A task launches one of its own: A (depth 1) has ocbg's tools and calls
// background_task for B (depth 2 = max_depth: none of them), then answers
// "A first" while B waits at its gate. A is not done: it stays running and
// says it waits. B's notification goes into A's session and wakes A, whose
// new answer "A final" is its result; the root hears of A once, of B never.
async function nestedTasks() {
  const root = await newSession("ocbg nested");
  const before = fake.requests.length;
  const bArgs = { description: "nested B", prompt: "CHILD gate nestB", agent: "general" };
  const a = await launch(root, { description: "nested A", prompt: `CHILD nest A ${JSON.stringify(bArgs)}`,
    agent: "general" });
  ok(a, "the root launched task A");
  const as = await childOf(root);
  const bReq = await waitFor("B's model call", () => fake.requests.find((r) => r.decision.gate === "nestB"), 30000);
  const aReq = fake.requests.slice(before).find((r) => r.decision.calls?.[0]?.name === "background_task" &&
    JSON.stringify(r.body.messages).includes("CHILD nest A"));
  ok(aReq && ocbgTools().every((n) => toolNames(aReq).includes(n)),
    "A (depth 1, below max_depth 2) is offered ocbg's tools", toolNames(aReq));
  ok(bReq && toolNames(bReq).includes("bash") && !toolNames(bReq).some((n) => ocbgTools().includes(n)),
    "B (depth 2, at max_depth) is offered none of ocbg's tools, OpenCode's own still", toolNames(bReq));
  const aLaunch = as ? toolParts(await messages(as), "background_task").at(-1)?.state : null;
  const b = taskIds(aLaunch?.output)[0];
  ok(aLaunch?.status === "completed" && b && b !== a && /Status: running/.test(aLaunch.output),
    "A's own background_task call launched B", aLaunch);
  const bs = as && await childOf(as);
  ok(bs && (await api("GET", `/session/${bs}`)).json?.parentID === as, "B's session is a child of A's session", bs);
  const bUser = bs ? (await messages(bs)).find((m) => m.info.role === "user") : null;
  const denied = bUser?.info.tools || {};
  ok(Object.keys(denied).length === ocbgTools().length && ocbgTools().every((n) => denied[n] === false),
    "B's prompt set every ocbg tool false; OpenCode keeps that map on B's user message (info.tools)", bUser?.info);

  ok(as && await turnEnds(as, "A first", 30000), "A answered \"A first\" while B still runs");
  const waiting = await waitFor("A shown waiting for its tasks", async () => {
    const st = await callTool(root, "background_output", { task_id: a });
    return st?.output?.includes("Waiting for the background tasks it launched to end.") ? st : null;
  }, 30000, 300);
  ok(waiting?.output.startsWith(`Task ${a}: running\n`) &&
     waiting.output.split("\n").includes("Waiting for the background tasks it launched to end."),
    "background_output(A): running, \"Waiting for the background tasks it launched to end.\"", waiting);
  ok(endNotices(userTexts(await messages(root)), a).length === 0 && await isIdle(as),
    "A is not done: the root has no notification of it, A's session is idle");

  fake.openGate("nestB");
  const bNotice = as && await userMessage(as, `[ocbg] Background task completed: ${b}`, 30000);
  ok(bNotice && textOf(bNotice.msg).includes("\nResult:\nchild reply nestB"),
    "B's completion is notified in A's session", bNotice && textOf(bNotice.msg));
  ok(bNotice?.msg.info.agent === "general" && !bNotice.msg.info.tools,
    "that notification runs A's own agent (general), with ocbg's tools left as they are", bNotice?.msg.info);
  const final = as && await turnEnds(as, "A final", 30000, bNotice ? bNotice.index : 0);
  const finalReq = fake.requests.find((r) => r.decision.text === "A final");
  ok(final && finalReq && JSON.stringify(finalReq.body.messages).includes(`completed: ${b}`) &&
     ocbgTools().every((n) => toolNames(finalReq).includes(n)),
    "the notification woke A: its model was called again, with it (and ocbg's tools), and answered \"A final\"",
    toolNames(finalReq));
  const aNotice = await userMessage(root, `[ocbg] Background task completed: ${a}`, 30000);
  const at = aNotice ? textOf(aNotice.msg) : "";
  ok(at.includes("\nResult:\nA final") && !at.includes("A first"),
    "the root is notified of A with its final answer", at);
  await idle(root);
  await idle(as);
  const rootTexts = userTexts(await messages(root));
  ok(endNotices(rootTexts, a).length === 1, "the root heard of A exactly once", endNotices(rootTexts, a));
  ok(!rootTexts.some((t) => t.startsWith("[ocbg]") && t.includes(b)), "and nothing of B", rootTexts);
  ok(endNotices(userTexts(await messages(as)), b).length === 1, "A's session heard of B exactly once");
  const out = await callTool(root, "background_output", { task_id: a });
  ok(out?.output?.startsWith(`Task ${a}: completed\n`) && out.output.includes("\nResult:\nA final\n"),
    "background_output(A): completed, \"A final\"", out);
}

// A launches B, whose model never answers; A answers and waits for it. The
// root cancels A: B is cancelled with it, its session aborted (its model
// stream closed, not busy), and nobody is told of B.
async function nestedCancel() {
  const root = await newSession("ocbg nested cancel");
  const bArgs = { description: "nested slow", prompt: "CHILD slow nested", agent: "general" };
  const a = await launch(root, { description: "nested C", prompt: `CHILD nest C ${JSON.stringify(bArgs)}`,
    agent: "general" });
  ok(a, "the root launched task A");
  const as = await childOf(root);
  const bReq = await waitFor("B's model stream", () => fake.requests.find((r) => r.decision.hang &&
    JSON.stringify(r.body.messages).includes("CHILD slow nested")), 30000);
  ok(bReq && !bReq.closed, "A launched B; B's model stream is open");
  const b = as ? taskIds(toolParts(await messages(as), "background_task").at(-1)?.state.output)[0] : null;
  const bs = as && await childOf(as);
  ok(as && await turnEnds(as, "C first", 30000) && await idle(as), "A answered; its session went idle");
  const waiting = await waitFor("A shown waiting for its tasks", async () => {
    const st = await callTool(root, "background_output", { task_id: a });
    return st?.output?.includes("Waiting for the background tasks it launched to end.") ? st : null;
  }, 30000, 300);
  ok(waiting?.output.startsWith(`Task ${a}: running\n`), "A is running, waiting for B", waiting);
  const st0 = (await api("GET", "/session/status")).json || {};
  ok(b && bs && st0[bs] && !st0[as], "B's session is busy, A's idle", st0);

  const cancel = await callTool(root, "background_cancel", { task_id: a });
  ok(cancel?.status === "completed" && cancel.output.includes(a), "background_cancel(A) answers", cancel);
  const closed = bReq && await waitFor("B's model stream closed", () => bReq.closed, 15000);
  ok(closed, "B's model stream closed");
  const quiet = bs && await waitFor("B not busy", async () => {
    const st = (await api("GET", "/session/status")).json || {};
    return !st[bs] && !st[as];
  }, 15000);
  ok(quiet, "neither B's nor A's session is busy in /session/status");
  const last = bs ? (await messages(bs)).at(-1)?.info : null;
  ok(last?.role === "assistant" && last.error?.name === "MessageAbortedError",
    "B's session was aborted: its last message ended with MessageAbortedError", last);
  const lc = await callTool(root, "background_list", { status: "cancelled" });
  ok(lc?.output?.includes(a), "background_list(status=cancelled) shows A", lc);
  await sleep(1500); // a notification of B would have been pushed by now
  const rootTexts = userTexts(await messages(root)), aTexts = as ? userTexts(await messages(as)) : [];
  ok(b && !rootTexts.some((t) => t.includes(b)) && !aTexts.some((t) => t.includes(b)),
    "no notification of B anywhere (neither in A's session nor in the root's)", { rootTexts, aTexts });
  diag(`after the cancel the root holds ${endNotices(rootTexts, a).length} notification(s) of A; ` +
    `A's session ${(await messages(as)).length} message(s)`);
}

// B, at max_depth, calls background_task anyway (a model may name a tool it
// was not offered): OpenCode turns the call into its own "invalid" tool part
// and never calls the plugin (so ocbg's depth refusal is for hosts that do);
// nothing is launched, B completes, A is woken and completes.
async function nestedRefused() {
  const root = await newSession("ocbg nested refused");
  const cArgs = { description: "too deep", prompt: "CHILD fast deep", agent: "general" };
  const bArgs = { description: "nested R2", prompt: `CHILD call background_task ${JSON.stringify(cArgs)}`,
    agent: "general" };
  const a = await launch(root, { description: "nested R", prompt: `CHILD nest R ${JSON.stringify(bArgs)}`,
    agent: "general" });
  ok(a, "the root launched task A");
  const as = await childOf(root);
  const bs = as && await waitFor("B's session", () => childOf(as), 30000);
  const inv = bs && await waitFor("B's invalid tool call", async () =>
    toolParts(await messages(bs), "invalid").find((p) => p.state.status === "completed")?.state, 30000);
  const unavailable = "Model tried to call unavailable tool 'background_task'. Available tools: ";
  const offered = (inv?.input?.error || "").startsWith(unavailable) ?
    inv.input.error.slice(unavailable.length).replace(/\.$/, "").split(", ") : [];
  ok(inv?.input?.tool === "background_task" && offered.includes("bash") &&
     !offered.some((n) => ocbgTools().includes(n)) && inv.output.includes(unavailable),
    "B's background_task call is OpenCode's \"invalid\" tool part: unavailable, ocbg's tools not among those offered",
    inv);
  ok(bs && toolParts(await messages(bs), "background_task").length === 0, "no background_task ran in B's session");
  const aNotice = await userMessage(root, `[ocbg] Background task completed: ${a}`, 30000);
  ok(aNotice && textOf(aNotice.msg).includes("\nResult:\nR final"), "A completed after B: the root is told once, \"R final\"",
    aNotice && textOf(aNotice.msg));
  const kids = bs ? (await api("GET", `/session/${bs}/children`)).json : null;
  ok(Array.isArray(kids) && kids.length === 0 && !fake.requests.some((r) => r.decision.text === "child reply deep"),
    "nothing was launched from B", kids);
  await idle(root);
  ok(endNotices(userTexts(await messages(root)), a).length === 1, "the root heard of A exactly once");
}

// ================= restarts (the durable store) =================

// The notifications of task `id` among a session's user messages.
function noticesOf(texts, id) {
  const re = new RegExp(`\\[ocbg\\] Background task [a-z]+: ${id}\\b`);
  return texts.filter((t) => re.test(t));
}
async function noticeCount(sid, id) { return noticesOf(userTexts(await messages(sid)), id).length; }
// Every session of the project and its [ocbg] completion/failure notices: {sid: count}.
async function allNotices() {
  const out = {};
  for (const s of (await api("GET", "/session")).json || [])
    out[s.id] = userTexts(await messages(s.id)).filter((t) => /\[ocbg\] Background (task|command) [a-z]+: /.test(t)).length;
  return out;
}

// A task completes and its notification is delivered; then a clean restart
// (SIGTERM). After it the old id resolves with its result, and no second
// notification comes: not for it, not for any task of the scenarios before.
async function restartAfterNotify() {
  const parent = await newSession("ocbg restart after notify");
  const id = await launch(parent, { description: "told before a restart", prompt: "CHILD fast ran", agent: "general" });
  ok(id, "a task launched");
  const notice = id && await userMessage(parent, `[ocbg] Background task completed: ${id}`, 45000);
  ok(notice && textOf(notice.msg).includes("child reply ran"), "its notification was delivered", notice && textOf(notice.msg));
  await waitFor("the parent answered the notification", async () => {
    const last = (await messages(parent)).at(-1);
    return last.info.role === "assistant" && last.info.finish;
  }, 30000);
  await idle(parent);
  const before = await allNotices();

  const stoppedCleanly = await stopServer("SIGTERM");
  ok(stoppedCleanly, "opencode serve stopped on SIGTERM by itself");
  ok(await startServer(), "opencode serve started again (same HOME, XDG dirs, project)");
  const again = await api("GET", `/session/${parent}`);
  ok(again.status === 200 && again.json?.id === parent, "the parent session is still there", again.status);
  const out = await callTool(parent, "background_output", { task_id: id }, 60000);
  ok(out?.status === "completed" && /completed/i.test(out.output) && out.output.includes("child reply ran"),
    "after the restart the old id resolves with its result", out);
  // The data dir is named by OpenCode's own project id (its log says it at each session's creation).
  const projectID = (fs.readFileSync(LOG, "utf8").match(/message=created id=ses_\S+ .*?projectID=(\S+)/) || [])[1];
  const dataDir = projectID && path.join(HOME, ".local/share/opencode/ocbg", projectID);
  let mode = null;
  try { mode = fs.statSync(dataDir).mode & 0o777; } catch {}
  ok(mode === 0o700 && fs.existsSync(path.join(dataDir, "ocbg.db")),
    `the store is in <XDG_DATA_HOME>/opencode/ocbg/<OpenCode's project id> (${projectID}), mode 0700`,
    { dataDir, mode: mode?.toString(8) });
  // A duplicate would be pushed when ocbg restores its tasks, or at a poll after (every 1 s).
  const noDuplicate = await staysFalse(async () => (await noticeCount(parent, id)) > 1, 3500);
  const n = await noticeCount(parent, id);
  ok(noDuplicate && n === 1, "no second notification after the restart: exactly one in the session", n);
  const after = await allNotices();
  const grew = Object.keys(before).filter((sid) => (after[sid] ?? 0) !== before[sid]);
  ok(Object.keys(before).length > 0 && grew.length === 0,
    `no session got a notification again (${Object.keys(before).length} sessions, ` +
    `${Object.values(before).reduce((a, b) => a + b, 0)} notifications before the restart)`, { grew, before, after });
}

// The child's answer is stored, and serve is SIGKILLed at that moment (on the
// event that says so), very likely before ocbg notified the parent. After
// the restart the task completes from the stored answer and the parent is
// told exactly once.
async function restartBeforeNotify() {
  const parent = await newSession("ocbg restart before notify");
  const id = await launch(parent, { description: "answered, then killed", prompt: "CHILD gate rbn", agent: "general" });
  ok(id, "a gated task launched");
  const child = id && await waitFor("its session", () => childOf(parent), 30000);
  const req = await waitFor("the child's model request", async () =>
    fake.requests.find((r) => r.decision.gate === "rbn" && !r.closed), 30000);
  ok(child && req, "the child waits at its gate");
  await idle(parent);
  let killedAt = 0;
  const victim = server;
  const watcher = (ev) => {
    const info = ev.type === "message.updated" ? ev.properties?.info : null;
    if (killedAt || !info || info.sessionID !== child || info.role !== "assistant") return;
    if (!info.finish && !info.time?.completed) return;
    try { process.kill(-victim.pid, "SIGKILL"); } catch {}
    killedAt = Date.now();
  };
  eventWatchers.add(watcher);
  fake.openGate("rbn");
  const killed = await waitFor("the kill", () => killedAt, 30000, 20);
  eventWatchers.delete(watcher);
  ok(killed, "serve was SIGKILLed when the child's finished answer was stored");
  ok(await restartServer("SIGKILL"), "opencode serve started again");
  const cm = child ? await messages(child) : [];
  ok(assistantTexts(cm).includes("child reply rbn"), "the child's answer survived the kill", assistantTexts(cm));
  const notice = await userMessage(parent, `[ocbg] Background task completed: ${id}`, 45000);
  ok(notice && textOf(notice.msg).includes("child reply rbn"),
    "after the restart the parent is told the task completed, with the answer", notice && textOf(notice.msg));
  const at = notice?.msg.info.time?.created;
  diag(`the notification was created ${at ? at - killedAt : "?"} ms after the kill (< 0: before it; then this ` +
    "scenario checked a delivered one, not an owed one)");
  await idle(parent);
  const out = await callTool(parent, "background_output", { task_id: id }, 60000);
  ok(out?.status === "completed" && /completed/i.test(out.output) && out.output.includes("child reply rbn"),
    "background_output gives the child's answer as its result", out);
  const once = await staysFalse(async () => (await noticeCount(parent, id)) > 1, 2500);
  const n = await noticeCount(parent, id);
  ok(once && n === 1, "the parent session holds exactly one notification of it", n);
}

// serve is SIGKILLed while a child streams its answer (its first step, which
// said "partial rmt" and ran a command, is stored). After the restart the old
// id is listed, it ended in error saying the restart interrupted it, with
// what it had written, and the parent is told once.
async function restartMidTask() {
  const parent = await newSession("ocbg restart mid-task");
  const id = await launch(parent, { description: "cut by a restart", prompt: "CHILD partial rmt", agent: "general" });
  ok(id, "a task launched");
  const child = id && await waitFor("its session", () => childOf(parent), 30000);
  const req = await waitFor("the child's second model request", async () =>
    fake.requests.find((r) => r.decision.partial === "rmt" && !r.closed), 30000);
  const stored = child && await waitFor("the first step stored", async () =>
    (await messages(child)).some((m) => m.info.role === "assistant" && textOf(m).includes("partial rmt")), 10000);
  ok(req && stored, "the child said \"partial rmt\", ran a command, and streams its next step");
  await idle(parent);
  ok(await restartServer("SIGKILL"), "opencode serve was SIGKILLed mid-stream and started again");
  ok(req?.closed, "the child's model stream was cut");
  const again = await api("GET", `/session/${parent}`);
  ok(again.status === 200 && again.json?.id === parent, "the parent session is still there", again.status);
  const notice = await userMessage(parent, `[ocbg] Background task failed: ${id}`, 45000);
  ok(notice && /interrupted/.test(textOf(notice.msg)), "the parent is told the task failed, interrupted by the restart",
    notice && textOf(notice.msg));
  await idle(parent);
  const list = await callTool(parent, "background_list", undefined, 60000);
  ok(list?.status === "completed" && list.output.includes(id) && /error/.test(list.output),
    "background_list lists the old id, ended in error", list);
  const out = await callTool(parent, "background_output", { task_id: id }, 60000);
  const text = out?.output || "";
  ok(out?.status === "completed" && /error/i.test(text) &&
     text.includes("interrupted: the host restarted before the task finished") && text.includes("partial rmt"),
    "background_output: error, interrupted by the restart, with the answer so far", out);
  const n = await noticeCount(parent, id);
  ok(n === 1, "the parent got exactly one notification of it", n);
}

// ================= an ended task's session busy again =================

// Task one completes (and is notified) while task two still runs; then the
// user types into one's child session, which goes busy again ("CHILD slow":
// it stays busy). The fallback poll, reading the status map because two
// runs silently (at least every 8 poll intervals), finds one's session in it:
// an ended task must be left alone there, and OpenCode must keep running.
async function endedTaskBusyAgain() {
  const parent = await newSession("ocbg ended task busy again");
  const since = (await messages(parent)).length;
  await say(parent, "E2E launch2gated eb1 eb2");
  const launched = await turnEnds(parent, "launched two", 30000, since);
  const ids = launched ? toolParts(launched, "background_task").flatMap((p) => taskIds(p.state.output)) : [];
  ok(ids.length === 2, "two gated tasks launched", ids);
  await idle(parent);
  fake.openGate("eb1");
  const one = await userMessage(parent, `[ocbg] Background task completed: ${ids[0]}`, 30000);
  ok(one && textOf(one.msg).includes("\nResult:\nchild reply eb1"), "task one completed and was notified; two still runs",
    one && textOf(one.msg));
  const kids = (await api("GET", `/session/${parent}/children`)).json || [];
  const oneSession = kids.find((s) => s.title === "gate eb1 (@general background task)")?.id;
  const from = events.length;
  // (Seen in the event stream: serve may be gone by the time a request asks.)
  try { if (oneSession) await say(oneSession, "CHILD slow"); } catch {}
  const busy = oneSession && await waitFor("one's session busy", () => events.slice(from).find((e) =>
    e.type === "session.status" && e.properties.sessionID === oneSession && e.properties.status?.type === "busy"),
  15000, 50);
  ok(busy, "the ended task's session is busy again (the user typed into it)");
  // Something that must not happen: serve exiting. The condition (serve
  // gone) must stay false for 12 s, more than the 8 poll intervals (1 s
  // each) within which the poll reads the status map while two runs.
  const t0 = Date.now();
  const alive = await staysFalse(() => serverGone(), 12000, 200);
  if (!alive) diag(`opencode serve exited ${Date.now() - t0} ms after the session went busy`);
  ok(alive, "opencode serve keeps running while an ended task's session is busy in the status map");
  if (!alive) return;
  await api("POST", `/session/${oneSession}/abort`);
  fake.openGate("eb2");
  const two = await userMessage(parent, `[ocbg] Background task completed: ${ids[1]}`, 30000);
  ok(two, "task two completed and was notified");
  await idle(parent);
  ok(endNotices(userTexts(await messages(parent)), ids[0]).length === 1, "task one was notified exactly once");
}

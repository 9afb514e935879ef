// The world e2e.mjs's scenarios share: the command line, an isolated HOME and
// project, the fake model, `opencode serve` (started, stopped, started again
// with the same HOME, XDG dirs, config and project), and a few helpers.
// Scenario modules import what they use; e2e.mjs calls makeWorld() once.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "../fake_model.mjs";
import {
  api, callTool, diag, followEvents, isolatedEnv, provideConfigDeps, setBase, startServe, stopEvents, stopGroup, taskIds
} from "../e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
export const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), STUB_DIR = opt("stub-dir"), WORK = opt("work");
export const ONLY = opt("only", "");
export const CASES = opt("cases", "").split(",").filter(Boolean);
if (!BIN || !NPM_DIR || !STUB_DIR || !WORK) {
  console.error("usage: e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR [--only stub|ocbg] [--cases a,b]");
  process.exit(2);
}

export const TASK_TOKENS = 20000; // ocbg's max_task_tokens in this suite

// ---- the isolated world ----
export const HOME = path.join(WORK, "home");
export const PROJECT = path.join(WORK, "project");
export const CONFIG = path.join(HOME, ".config");
const STUBPLUG = path.join(WORK, "stubplug");
const OCBGPLUG = path.join(WORK, "ocbg"); // listed with options, not scanned
export const AUTO_BG_MS = 2000; // auto_background_ms in this suite (autoBackground)
// Files the permission scenarios' commands would write: inside the project,
// so that only the bash rules decide (a path outside it asks external_directory).
export const SIDE = path.join(PROJECT, "side");
export const LOG = path.join(WORK, "opencode.log");
// What bus_recorder.js saw published on OpenCode's bus (panelChannel).
export const BUS_LOG = path.join(WORK, "bus.log");
const PLUGIN_FILES = ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"];

// ---- processes to stop ----
export let server = null, fake = null;
export const shellGroups = new Set(); // process groups of the shell tasks the suite started
export async function stopAll() {
  await stopServer("SIGTERM");
  for (const g of shellGroups) { try { process.kill(-g, "SIGKILL"); } catch {} }
  if (fake) { await fake.close(); fake = null; }
}
process.on("exit", () => {
  for (const g of shellGroups) { try { process.kill(-g, "SIGKILL"); } catch {} }
});

// The HOME, XDG dirs and config of every start (set by makeWorld; a scenario
// may add a variable for its restarts, and take it away).
export let serverEnv = null;
let starts = 0;

// Starts `opencode serve` in the project on a free 127.0.0.1 port (its log
// appended to LOG), points the HTTP client at it and follows its event
// stream. Whether it answered healthy within 60 s.
export async function startServer() {
  if (starts > 0) fs.appendFileSync(LOG, `\n===== e2e: opencode serve started again (start ${starts + 1}) =====\n`);
  const s = await startServe({ bin: BIN, cwd: PROJECT, env: serverEnv, logPath: LOG, append: starts > 0 });
  starts++;
  server = s.proc;
  setBase(s.base);
  diag(`opencode serve pid ${server.pid} on ${s.base} (log: ${LOG})`);
  if (s.healthy) followEvents();
  diag(`healthy after ${s.ms} ms`);
  return s.healthy;
}

// Whether the server process has exited.
export const serverGone = () => !server || server.exitCode !== null || server.signalCode !== null;

// Sends `signal` to the server's process group (SIGKILL: no dispose, nothing
// flushed; SIGTERM: a clean stop) and waits for it to exit (up to 15 s; then
// SIGKILL). Stops following its event stream. Whether it exited by itself.
export async function stopServer(signal) {
  stopEvents();
  if (serverGone()) return true;
  const byItself = await stopGroup(server, signal, 15000);
  diag(`opencode serve pid ${server.pid} stopped by ${signal}${byItself ? "" : " (then SIGKILL)"}`);
  return byItself;
}

// Stops the server with `signal` and starts it again with the same HOME,
// XDG directories, config and project. Whether the new one is healthy.
export async function restartServer(signal) {
  await stopServer(signal);
  return startServer();
}

// Makes the world: HOME, the project, the stub plugin listed with options,
// ocbg (installed by make install-opencode PROJECT=...) moved out of the
// scanned folder to be listed with options, the fake model, the config.
// Returns whether ocbg was installed in the project.
export async function makeWorld() {
  fs.mkdirSync(HOME, { recursive: true });
  fs.mkdirSync(PROJECT, { recursive: true });
  // OpenCode installs @opencode-ai/plugin into every config directory at the first
  // request (slow, or a stall offline): give each one what it would install.
  provideConfigDeps(path.join(CONFIG, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(PROJECT, ".opencode"), NPM_DIR);
  // the stub plugin, listed in the config with options
  fs.mkdirSync(STUBPLUG, { recursive: true });
  for (const f of PLUGIN_FILES) fs.copyFileSync(path.join(STUB_DIR, f), path.join(STUBPLUG, f));
  if (!fs.existsSync(path.join(STUBPLUG, "node_modules")))
    fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(STUBPLUG, "node_modules"));
  const installed = path.join(PROJECT, ".opencode/plugin");
  const ocbgInstalled = fs.existsSync(path.join(installed, "ocbg.js"));
  if (ocbgInstalled) {
    fs.mkdirSync(OCBGPLUG, { recursive: true });
    for (const f of PLUGIN_FILES) fs.renameSync(path.join(installed, f), path.join(OCBGPLUG, f));
    if (!fs.existsSync(path.join(OCBGPLUG, "node_modules")))
      fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(OCBGPLUG, "node_modules"));
  }
  fs.mkdirSync(SIDE, { recursive: true });

  fake = await startFakeModel();
  diag(`fake model on 127.0.0.1:${fake.port}`);
  serverEnv = isolatedEnv(HOME, CONFIG, suiteConfig(fake.port));
  return ocbgInstalled;
}

// The permission rules let every scenario run, except commands naming e2e-ask
// (asked) or e2e-deny (denied), the agent e2e-nope (denied) and e2e-asked (asked).
function suiteConfig(port) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return {
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
        options: { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "fake" },
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
      [path.join(here, "..", "bus_recorder.js"), { file: BUS_LOG }],
      ...(ONLY === "stub" ? [] : [[path.join(OCBGPLUG, "ocbg.js"),
        // max_task_tokens: above every other scenario's tasks (the compacting one uses ~7,550);
        // max_depth 2: a task's own session may launch once (nestedTasks, nestedCancel)
        { face_claude: true, max_running_per_agent: { "e2e-capped": 2 }, max_task_tokens: TASK_TOKENS,
          max_depth: 2, auto_background_ms: AUTO_BG_MS }]]),
    ],
  };
}

// ---- helpers several scenario modules use ----
// Launches one task through the model; its id, or undefined.
export async function launch(sid, args) {
  const st = await callTool(sid, "background_task", args);
  return st?.status === "completed" ? taskIds(st.output)[0] : undefined;
}

// The text of a model request's messages (content strings or parts).
export const requestText = (r) => (r.body.messages || []).map((m) => typeof m.content === "string" ? m.content :
  (Array.isArray(m.content) ? m.content.map((p) => p?.text || "").join("\n") : "")).join("\n");

// The first child session of sid (its id).
export async function childOf(sid) { return (await api("GET", `/session/${sid}/children`)).json?.[0]?.id; }

// The notices of task id's end among texts.
export function endNotices(texts, id) {
  return texts.filter((t) => ["completed", "failed", "cancelled"].some((e) =>
    t.includes(`[ocbg] Background task ${e}: ${id}`)));
}

// The tools a model request offered.
export function toolNames(r) { return (r?.body.tools || []).map((t) => t.function?.name); }

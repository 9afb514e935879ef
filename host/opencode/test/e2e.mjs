// End-to-end: a real `opencode serve` (pinned, from npm) on 127.0.0.1 with an
// isolated HOME and offline settings, the scripted fake model of
// fake_model.mjs, ocbg installed into the project (make install-opencode
// PROJECT=...) and the stub plugin listed in opencode.json with options.
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR [--only stub|ocbg]
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { startFakeModel } from "./fake_model.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), STUB_DIR = opt("stub-dir"), WORK = opt("work");
const ONLY = opt("only", "");
if (!BIN || !NPM_DIR || !STUB_DIR || !WORK) {
  console.error("usage: e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR");
  process.exit(2);
}
const T0 = Date.now();
const secs = () => ((Date.now() - T0) / 1000).toFixed(1);

// ---- TAP ----
let n = 0, failed = 0;
const ok = (cond, name, extra) => {
  n++;
  if (!cond) failed++;
  console.log(`${cond ? "ok" : "not ok"} ${n} - ${name}`);
  if (!cond && extra !== undefined) console.log(`# got: ${JSON.stringify(extra).slice(0, 1500)}`);
  return cond;
};
const diag = (s) => console.log(`# [${secs()}s] ${s}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- processes to stop ----
let server = null, fake = null, sse = null;
async function stopAll() {
  if (sse) { try { sse.abort(); } catch {} sse = null; }
  if (server && server.exitCode === null && server.signalCode === null) {
    try { process.kill(-server.pid, "SIGTERM"); } catch {}
    const t = Date.now();
    while (server.exitCode === null && server.signalCode === null && Date.now() - t < 5000) await sleep(100);
    if (server.exitCode === null && server.signalCode === null) {
      try { process.kill(-server.pid, "SIGKILL"); } catch {}
    }
  }
  if (fake) { await fake.close(); fake = null; }
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(sig, async () => { await stopAll(); process.exit(1); });
process.on("exit", () => { if (server) try { process.kill(-server.pid, "SIGKILL"); } catch {} });

// ---- the isolated world ----
const HOME = path.join(WORK, "home");
const PROJECT = path.join(WORK, "project");
const CONFIG = path.join(HOME, ".config");
const STUBPLUG = path.join(WORK, "stubplug");

// OpenCode installs @opencode-ai/plugin into every config directory at the first
// request (slow, or a stall offline): give each one what it would install.
function provideConfigDeps(dir) {
  fs.mkdirSync(dir, { recursive: true });
  const ver = JSON.parse(fs.readFileSync(path.join(NPM_DIR, "node_modules/@opencode-ai/plugin/package.json"))).version;
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: { "@opencode-ai/plugin": ver } }));
  fs.writeFileSync(path.join(dir, "package-lock.json"),
    JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: { "@opencode-ai/plugin": ver } } } }));
  const nm = path.join(dir, "node_modules");
  if (!fs.existsSync(nm)) fs.symlinkSync(path.join(NPM_DIR, "node_modules"), nm);
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

let BASE = "";
async function api(method, p, body, timeoutMs = 15000) {
  const r = await fetch(BASE + p, {
    method,
    headers: body !== undefined ? { "content-type": "application/json" } : {},
    body: body !== undefined ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch {}
  return { status: r.status, json, text };
}

async function waitFor(what, fn, timeoutMs = 30000, every = 150) {
  const t = Date.now();
  let last;
  while (Date.now() - t < timeoutMs) {
    try { last = await fn(); } catch (e) { last = undefined; }
    if (last) return last;
    await sleep(every);
  }
  diag(`timed out waiting for: ${what}`);
  return null;
}

const events = [];
async function followEvents() {
  const ac = new AbortController();
  sse = ac;
  try {
    const r = await fetch(BASE + "/event", { signal: ac.signal });
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of r.body) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line.startsWith("data:")) {
          try { events.push(JSON.parse(line.slice(5))); } catch {}
        }
      }
    }
  } catch {}
}

const messages = async (sid) => (await api("GET", `/session/${sid}/message`)).json || [];
const toolParts = (msgs, tool) =>
  msgs.flatMap((m) => m.parts || []).filter((p) => p.type === "tool" && (!tool || p.tool === tool));
const assistantTexts = (msgs) =>
  msgs.filter((m) => m.info.role === "assistant").flatMap((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text));
const userTexts = (msgs) =>
  msgs.filter((m) => m.info.role === "user").map((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n"));

async function newSession(title) {
  const r = await api("POST", "/session", { title });
  return r.json?.id;
}
async function say(sid, text) {
  return api("POST", `/session/${sid}/prompt_async`, { parts: [{ type: "text", text }] });
}
// Waits until the session's last assistant message says `want` (a finished turn).
// Only messages after the first `since` count (a new turn, not an old one).
async function turnEnds(sid, want, timeoutMs = 30000, since = 0) {
  return waitFor(`"${want}" in ${sid}`, async () => {
    const msgs = (await messages(sid)).slice(since);
    // any assistant message of the new turn (a notification may wake the session right after)
    const hit = msgs.find((m) => m.info.role === "assistant" && m.info.finish &&
      m.parts.some((p) => p.type === "text" && p.text === want));
    return hit ? msgs.slice(0, msgs.indexOf(hit) + 1) : null;
  }, timeoutMs);
}
// Says "E2E <tool> args" and returns the state of the tool part of that turn.
async function toolRun(sid, tool, argsText, timeoutMs = 30000) {
  const since = (await messages(sid)).length;
  await say(sid, `E2E ${tool}${argsText ? " " + argsText : ""}`);
  const msgs = await turnEnds(sid, `done ${tool}`, timeoutMs, since);
  const parts = msgs ? toolParts(msgs, tool) : [];
  return parts.at(-1)?.state;
}
// Launches through the model; returns the background_task part's state once it
// completed (the turn may end with "ack": a fast child's notice can arrive first).
async function launch(sid, args) {
  const since = (await messages(sid)).length;
  await say(sid, `E2E background_task ${JSON.stringify(args)}`);
  return waitFor("background_task completed", async () => {
    const p = toolParts((await messages(sid)).slice(since), "background_task").at(-1);
    return p && (p.state.status === "completed" || p.state.status === "error") ? p.state : null;
  }, 30000);
}

// Listening sockets of a process (from /proc): every one must be on 127.0.0.1.
function listeners(pid) {
  const inodes = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const l = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      const m = l.match(/^socket:\[(\d+)\]$/);
      if (m) inodes.add(m[1]);
    } catch {}
  }
  const out = [];
  for (const f of ["tcp", "tcp6"]) {
    let rows = [];
    try { rows = fs.readFileSync(`/proc/${pid}/net/${f}`, "utf8").trim().split("\n").slice(1); } catch {}
    for (const row of rows) {
      const c = row.trim().split(/\s+/);
      if (c[3] === "0A" && inodes.has(c[9])) out.push(c[1]);
    }
  }
  return out;
}
const isLoopback = (hexAddr) => {
  const [ip] = hexAddr.split(":");
  return ip === "0100007F" || ip === "00000000000000000000000001000000";
};

async function main() {
  fs.mkdirSync(HOME, { recursive: true });
  fs.mkdirSync(PROJECT, { recursive: true });
  provideConfigDeps(path.join(CONFIG, "opencode"));
  provideConfigDeps(path.join(PROJECT, ".opencode"));
  // the stub plugin, listed in the config with options
  fs.mkdirSync(STUBPLUG, { recursive: true });
  for (const f of ["ocbg.js", "ocbg_opencode.node", "ocbg.so"]) fs.copyFileSync(path.join(STUB_DIR, f), path.join(STUBPLUG, f));
  if (!fs.existsSync(path.join(STUBPLUG, "node_modules")))
    fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(STUBPLUG, "node_modules"));
  const ocbgInstalled = fs.existsSync(path.join(PROJECT, ".opencode/plugin/ocbg.js"));

  fake = await startFakeModel();
  diag(`fake model on 127.0.0.1:${fake.port}`);
  const port = await freePort();
  BASE = `http://127.0.0.1:${port}`;
  const config = {
    $schema: "https://opencode.ai/config.json",
    model: "fake/fake-model",
    small_model: "fake/fake-model",
    autoupdate: false,
    share: "disabled",
    permission: { edit: "allow", bash: "allow", webfetch: "allow" },
    provider: {
      fake: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: `http://127.0.0.1:${fake.port}/v1`, apiKey: "fake" },
        models: { "fake-model": { name: "Fake", tool_call: true, limit: { context: 100000, output: 4000 } } },
      },
    },
    plugin: ONLY === "ocbg" ? [] : [[path.join(STUBPLUG, "ocbg.js"), { answer: 42 }]],
  };
  const env = {
    PATH: process.env.PATH, HOME, XDG_CONFIG_HOME: CONFIG,
    XDG_DATA_HOME: path.join(HOME, ".local/share"), XDG_CACHE_HOME: path.join(HOME, ".cache"),
    XDG_STATE_HOME: path.join(HOME, ".local/state"), TMPDIR: process.env.TMPDIR || "/tmp",
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1", OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  };
  const log = fs.openSync(path.join(WORK, "opencode.log"), "w");
  server = spawn(BIN, ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs", "--log-level", "INFO"],
    { cwd: PROJECT, env, detached: true, stdio: ["ignore", log, log] });
  diag(`opencode serve pid ${server.pid} on ${BASE} (log: ${path.join(WORK, "opencode.log")})`);
  const healthy = await waitFor("health", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy, 60000, 250);
  if (!ok(healthy, "opencode serve is healthy on 127.0.0.1")) return;
  followEvents();

  // ---------------- the adapter, with the stub plugin ----------------
  if (ONLY !== "ocbg") {
    const s1 = await newSession("stub echo");
    ok(s1, "session created");
    const echo = await toolRun(s1, "stub_echo", '{"text":"hello"}', 60000);
    ok(echo?.status === "completed", "the model called stub_echo; the tool completed", echo);
    const eo = echo?.output ? JSON.parse(echo.output) : {};
    ok(eo.echo === "hello" && eo.repeat_given === false && eo.session === s1 && eo.agent === "build",
      "the tool ran in the plugin with the call context", eo);
    ok(eo.options === '{"answer":42}', "plugin options from opencode.json reach the plugin", eo.options);
    ok(/^call_/.test(eo.call) && /^msg_/.test(eo.message), "call id and message id reach the plugin", eo);

    // What the model was shown: optional stays optional, descriptions kept.
    const withTools = fake.requests.find((r) => (r.body.tools || []).some((t) => t.function?.name === "stub_echo"));
    const spec = withTools?.body.tools.find((t) => t.function.name === "stub_echo")?.function;
    ok(spec && JSON.stringify(spec.parameters.required) === '["text"]', "the model sees stub_echo with only text required", spec);
    ok(spec?.parameters.properties.repeat?.description === "How many times (optional)" &&
       spec?.parameters.properties.repeat?.type === "integer", "the model sees argument types and descriptions", spec);

    const bad = await toolRun(s1, "stub_echo", '{"repeat":2}');
    ok(bad?.status === "error" && /text/.test(bad?.error || ""), "a missing required argument is refused before the plugin", bad);

    const host = await toolRun(s1, "stub_host", '{"title":"stub child"}', 60000);
    const ho = host?.output ? JSON.parse(host.output) : {};
    ok(ho.create?.rc === 0 && ho.create.out.parentID === s1 && ho.create.out.title === "stub child",
      "session_create from a plugin thread, through the SDK", ho.create);
    ok(ho.prompt?.rc === 0 && ho.messages?.rc === 0 && ho.messages.out.some((m) => m.parts.some((p) => p.text === "hello from stub")),
      "session_prompt (noReply) and session_messages", { prompt: ho.prompt, messages: ho.messages?.rc });
    ok(ho.get?.rc === 0 && ho.status?.rc === 0, "session_get and session_status", { get: ho.get?.rc, status: ho.status });
    ok(ho.missing?.enoent === true, "a missing session is -ENOENT", ho.missing);
    const child = ho.create?.out?.id;
    const cg = child ? await api("GET", `/session/${child}`) : {};
    ok(cg.json?.parentID === s1, "the child session exists in OpenCode with its parent", cg.json);

    const ev = await toolRun(s1, "stub_events");
    const eo2 = ev?.output ? JSON.parse(ev.output) : {};
    ok(eo2.events?.["session.idle"] >= 1 && eo2.events?.["message.part.updated"] >= 1 && eo2.events?.["session.status"] >= 1,
      "OpenCode events reach on_event", eo2.events);
    ok(eo2.transforms >= 1 && /^ses_/.test(eo2.transform_session), "messages.transform reaches the plugin with a session id", eo2);
    ok(fake.requests.some((r) => JSON.stringify(r.body.messages).includes("STUB-MARKER")),
      "the transformed history is what the model was sent");

    // Cancellation: abort the session while the tool blocks.
    const s2 = await newSession("stub block");
    await say(s2, "E2E stub_block");
    const running = await waitFor("stub_block running", async () =>
      toolParts(await messages(s2), "stub_block").some((p) => p.state.status === "running"), 30000);
    ok(running, "stub_block is running (blocked in the plugin)");
    const tAbort = Date.now();
    await api("POST", `/session/${s2}/abort`);
    const ended = await waitFor("stub_block ended", async () => {
      const p = toolParts(await messages(s2), "stub_block").at(-1);
      return p && p.state.status !== "running" && p.state.status !== "pending" ? p.state : null;
    }, 15000);
    ok(ended && ended.status === "error", `abort ends the blocked tool call (${Date.now() - tAbort} ms)`, ended);
    const idle = await waitFor("s2 idle", async () => !((await api("GET", "/session/status")).json || {})[s2], 15000);
    ok(idle, "the session is idle after the abort");

    // A plugin command: config registers it, command.execute.before runs it.
    const cmds = (await api("GET", "/command")).json || [];
    ok(cmds.some((c) => c.name === "stubcmd"), "the plugin's command is listed by OpenCode", cmds.map((c) => c.name));
    const s3 = await newSession("stub command");
    const cr = await api("POST", `/session/${s3}/command`, { command: "stubcmd", arguments: "x y" }, 60000);
    ok(cr.status === 200, "POST /session/:id/command", cr.status);
    const m3 = await messages(s3);
    ok(userTexts(m3).some((t) => t.includes(`stubcmd ran in ${s3} with arguments [x y]`)),
      "the command's output is the prompt OpenCode runs", userTexts(m3));
  }

  // ---------------- ocbg itself ----------------
  if (ONLY !== "stub" && ocbgInstalled) {
    await ocbgScenarios();
  } else if (ONLY !== "stub") {
    ok(false, "ocbg is installed in the project (make install-opencode PROJECT=...)");
  }

  const listen = listeners(server.pid);
  ok(listen.length >= 1 && listen.every(isLoopback), "opencode listens on 127.0.0.1 only", listen);
  const types = new Set(events.map((e) => e.type));
  ok(types.has("session.idle") && types.has("message.part.updated"), "the event stream was followed", [...types]);
}

const taskIds = (text) => [...new Set((text || "").match(/bg_[A-Za-z0-9_-]+/g) || [])];

async function ocbgScenarios() {
  const tools = fake.requests.flatMap((r) => r.body.tools || []).map((t) => t.function?.name);
  const parent = await newSession("ocbg parent");
  await say(parent, "E2E launch2 alpha beta");
  const launched = await turnEnds(parent, "launched two", 60000, 0);
  const launches = launched ? toolParts(launched, "background_task") : [];
  ok(launches.length === 2 && launches.every((p) => p.state.status === "completed"),
    "the model launched two background tasks", launches.map((p) => p.state));
  const ids = launches.flatMap((p) => taskIds(p.state.output));
  ok(ids.length === 2, "two task ids", launches.map((p) => p.state.output));
  const seen = fake.requests.flatMap((r) => r.body.tools || []).find((t) => t.function?.name === "background_output")?.function;
  ok(seen && (seen.parameters.required || []).join() === "task_id" && seen.parameters.properties.block?.type === "boolean",
    "the model sees background_output(task_id, block?, timeout?)", seen?.parameters);
  void tools;

  // Both finish: notifications in the parent, a silent one, then one that wakes it.
  const notified = await waitFor("two notifications", async () => {
    const msgs = await messages(parent);
    const us = msgs.filter((m) => m.info.role === "user");
    const hits = ids.map((id) => us.findIndex((m) => m.parts.some((p) => (p.text || "").includes(id))));
    return hits.every((h) => h >= 0) ? msgs : null;
  }, 60000);
  ok(notified, "both completions were notified in the parent session", notified ? userTexts(notified) : null);
  if (notified) {
    // the last notice wakes the parent: an assistant turn follows it
    const woke = await waitFor("parent woken", async () => {
      const msgs = await messages(parent);
      const last = msgs.at(-1);
      return last.info.role === "assistant" && last.parts.some((p) => p.text === "ack") ? msgs : null;
    }, 30000);
    ok(woke, "the last notification woke the parent (the model answered it)");
    const wakers = fake.requests.filter((r) => r.decision.text === "ack" &&
      ids.some((id) => JSON.stringify(r.body.messages).includes(id)));
    ok(wakers.length >= 1, "the model was called with the notifications in its context", wakers.length);
  }

  const out = await toolRun(parent, "background_output", JSON.stringify({ task_id: ids[0] }), 30000);
  ok(out?.status === "completed" && /child reply (alpha|beta)/.test(out?.output || ""),
    "background_output returns the child's reply", out);
  const list = await toolRun(parent, "background_list", "", 30000);
  ok(list?.status === "completed" && ids.every((id) => list.output.includes(id)) && /completed/i.test(list.output),
    "background_list shows both tasks completed", list);

  // Cancel a slow task: its session is aborted.
  const ls = await launch(parent, { description: "slow one", prompt: "CHILD slow", agent: "general" });
  const slowId = taskIds(ls?.output)[0];
  ok(slowId, "a slow task launched", ls);
  const slowReq = await waitFor("the slow child's model request", async () =>
    fake.requests.find((r) => r.decision.hang && !r.closed), 30000);
  ok(slowReq, "the slow child is waiting on the model");
  const cancel = await toolRun(parent, "background_cancel", JSON.stringify({ task_id: slowId }), 30000);
  ok(cancel?.status === "completed" && /cancel/i.test(cancel?.output || ""), "background_cancel answers", cancel);
  const aborted = await waitFor("slow request closed", async () => slowReq && slowReq.closed, 15000);
  ok(aborted, "the slow child's session was aborted (its model request closed)");
  const lc = await toolRun(parent, "background_list", JSON.stringify({ status: "cancelled" }), 30000);
  ok(lc?.output?.includes(slowId), "background_list(status=cancelled) shows it", lc);

  // A child whose model fails ends as error.
  const le = await launch(parent, { description: "failing one", prompt: "CHILD error", agent: "general" });
  const errId = taskIds(le?.output)[0];
  ok(errId, "a failing task launched", le);
  const errored = await waitFor("task error", async () => {
    const st = await toolRun(parent, "background_list", JSON.stringify({ status: "error" }), 15000);
    return st?.output?.includes(errId) ? st : null;
  }, 45000, 1000);
  ok(errored, "the failing child ends as error", errored);
  ok(events.some((e) => e.type === "session.error"), "OpenCode reported session.error for it");
}

let exitCode = 1;
try {
  await main();
  exitCode = failed ? 1 : 0;
} catch (e) {
  ok(false, `unexpected: ${e.stack || e}`);
} finally {
  await stopAll();
  const stopped = server ? server.exitCode !== null || server.signalCode !== null : true;
  ok(stopped, "opencode serve stopped");
  console.log(`1..${n}`);
  console.log(`# e2e: ${n - failed} passed, ${failed} failed in ${secs()} s`);
  if (failed) {
    try {
      const tail = fs.readFileSync(path.join(WORK, "opencode.log"), "utf8").split("\n").filter((l) => /ERROR|ocbg|plugin/i.test(l)).slice(-30);
      for (const l of tail) console.log(`# log: ${l.slice(0, 300)}`);
    } catch {}
  }
  process.exitCode = failed ? 1 : exitCode;
}

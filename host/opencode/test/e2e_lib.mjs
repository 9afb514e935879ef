// Shared helpers of the e2e suites (e2e.mjs and e2e/*.mjs, e2e_*.mjs): TAP
// output, starting and stopping `opencode serve` and the suite itself, the
// HTTP API, the event stream, and the ways a scenario drives the scripted
// model ("E2E <tool> <json args>") and waits for what follows.
// (harness.mjs is the server-less adapter check; it runs on import.)
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { diag, ok, summary } from "./tap.mjs";

// ---- TAP (tap.mjs) ----
export { diag, eq, ok, secs, summary, tap } from "./tap.mjs";
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what, fn, timeoutMs = 30000, every = 150) {
  const t = Date.now();
  let last;
  while (Date.now() - t < timeoutMs) {
    try { last = await fn(); } catch { last = undefined; }
    if (last) return last;
    await sleep(every);
  }
  diag(`timed out waiting for: ${what}`);
  return null;
}

// Whether fn() stays false (or fails) until the deadline: for a check that
// something does not happen (a duplicate), given time to happen.
export async function staysFalse(fn, timeoutMs, every = 150) {
  const t = Date.now();
  while (Date.now() - t < timeoutMs) {
    let v;
    try { v = await fn(); } catch { v = undefined; }
    if (v) return false;
    await sleep(every);
  }
  return true;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// ---- the HTTP API ----
let BASE = "";
export const setBase = (url) => { BASE = url; };
// A request's deadline when the caller names none: 15 s, longer where the
// server runs emulated (its first request in a folder boots the instance and
// installs the plugins, which takes a minute under qemu).
let API_TIMEOUT_MS = 15000;
export const setApiTimeout = (ms) => { API_TIMEOUT_MS = ms; };
export const api = (method, p, body, timeoutMs) => apiAt(BASE, method, p, body, timeoutMs);
// The same against the server at base (for a suite with several at once).
export async function apiAt(base, method, p, body, timeoutMs = API_TIMEOUT_MS) {
  const r = await fetch(base + p, {
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

// ---- the event stream (GET /event), followed until stopEvents() ----
// `events` keeps every event of every server the suite started (a restart
// follows the new one's stream); each function in eventWatchers is called
// with each event as it arrives (to act at an exact moment).
export const events = [];
export const eventWatchers = new Set();
let sse = null;
export async function followEvents() {
  const ac = new AbortController();
  sse = ac;
  await readEvents(BASE, ac.signal, (ev) => {
    events.push(ev);
    for (const w of eventWatchers) { try { w(ev); } catch {} }
  });
}

// Reads the server at base's event stream (GET /event, server-sent events)
// until signal aborts it or the server goes: onEvent(ev) for each event.
export async function readEvents(base, signal, onEvent) {
  try {
    const r = await fetch(base + "/event", { signal });
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of r.body) {
      buf += dec.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line.startsWith("data:")) continue;
        let ev = null;
        try { ev = JSON.parse(line.slice(5)); } catch {}
        if (ev) onEvent(ev);
      }
    }
  } catch {}
}

// The environment of an `opencode serve` isolated in `home` (its config, data,
// cache and state there), with config as its OPENCODE_CONFIG_CONTENT and
// nothing fetched or shared; extra: more variables.
export function isolatedEnv(home, config, opencodeConfig, extra = {}) {
  return {
    PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: config,
    XDG_DATA_HOME: path.join(home, ".local/share"), XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local/state"), TMPDIR: process.env.TMPDIR || "/tmp",
    OPENCODE_CONFIG_CONTENT: JSON.stringify(opencodeConfig),
    OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1", OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_SHARE: "1", OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    ...extra,
  };
}
export function stopEvents() {
  if (sse) { try { sse.abort(); } catch {} sse = null; }
}

// ---- sessions and messages ----
export const messages = async (sid) => (await api("GET", `/session/${sid}/message`)).json || [];
export const textOf = (m) => m.parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
export const toolParts = (msgs, tool) =>
  msgs.flatMap((m) => m.parts || []).filter((p) => p.type === "tool" && (!tool || p.tool === tool));
export const assistantTexts = (msgs) =>
  msgs.filter((m) => m.info.role === "assistant").flatMap((m) => m.parts.filter((p) => p.type === "text").map((p) => p.text));
export const userTexts = (msgs) => msgs.filter((m) => m.info.role === "user").map(textOf);
export const taskIds = (text) => [...new Set((text || "").match(/bg_[A-Za-z0-9_-]+/g) || [])];

export async function newSession(title) {
  return (await api("POST", "/session", { title })).json?.id;
}
export async function say(sid, text) {
  return api("POST", `/session/${sid}/prompt_async`, { parts: [{ type: "text", text }] });
}
export async function isIdle(sid) {
  return !((await api("GET", "/session/status")).json || {})[sid];
}
export const idle = (sid, timeoutMs = 30000) => waitFor(`${sid} idle`, () => isIdle(sid), timeoutMs);

// Waits until the session's last assistant message says `want` (a finished turn).
// Only messages after the first `since` count (a new turn, not an old one).
export async function turnEnds(sid, want, timeoutMs = 30000, since = 0) {
  return waitFor(`"${want}" in ${sid}`, async () => {
    const msgs = (await messages(sid)).slice(since);
    // any assistant message of the new turn (a notification may wake the session right after)
    const hit = msgs.find((m) => m.info.role === "assistant" && m.info.finish &&
      m.parts.some((p) => p.type === "text" && p.text === want));
    return hit ? msgs.slice(0, msgs.indexOf(hit) + 1) : null;
  }, timeoutMs);
}

// Says "E2E <tool> <args json>": the model calls the tool. Returns the tool
// part's state once it ended (completed or error), after the session went
// idle again. A notification landing in the turn may make the model answer
// "ack" instead of "done <tool>": the tool part is what counts.
export async function callTool(sid, tool, args, timeoutMs = 30000) {
  const since = await sayTool(sid, tool, args);
  const state = await toolEnded(sid, tool, since, timeoutMs);
  await idle(sid);
  return state;
}

// Says "E2E <tool> <args json>" and returns at once: the number of messages
// before it (for toolEnded), so that the test can act while the tool runs.
export async function sayTool(sid, tool, args) {
  const since = (await messages(sid)).length;
  await say(sid, `E2E ${tool}${args !== undefined ? " " + JSON.stringify(args) : ""}`);
  return since;
}

// The state of the last <tool> part after message `since` once it ended
// (completed or error); null at the deadline.
export function toolEnded(sid, tool, since, timeoutMs = 30000) {
  return waitFor(`${tool} ended in ${sid}`, async () => {
    const p = toolParts((await messages(sid)).slice(since), tool).at(-1);
    return p && (p.state.status === "completed" || p.state.status === "error") ? p.state : null;
  }, timeoutMs);
}

// The first permission.asked event for the session among events[from…];
// null at the deadline.
export function permissionAsked(sid, from = 0, timeoutMs = 30000) {
  return waitFor(`permission.asked for ${sid}`, () =>
    events.slice(from).find((e) => e.type === "permission.asked" && e.properties.sessionID === sid), timeoutMs, 50);
}

// Answers a permission question as the TUI does: "once" | "always" | "reject"
// (with the user's message, if any). The HTTP status.
export async function replyPermission(requestID, reply, message) {
  return (await api("POST", `/permission/${requestID}/reply`, message === undefined ? { reply } : { reply, message })).status;
}

// The first user message of the session whose text matches (a string or a
// RegExp), with its index; null at the deadline.
export async function userMessage(sid, match, timeoutMs = 30000) {
  const test = (t) => (typeof match === "string" ? t.includes(match) : match.test(t));
  return waitFor(`a user message ${match} in ${sid}`, async () => {
    const msgs = await messages(sid);
    const i = msgs.findIndex((m) => m.info.role === "user" && test(textOf(m)));
    return i >= 0 ? { msgs, index: i, msg: msgs[i] } : null;
  }, timeoutMs);
}

// ---- processes (from /proc) ----
// Listening TCP sockets of a process: "HEXADDR:PORT" each.
export function listeners(pid) {
  const inodes = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = fs.readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
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
export const isLoopback = (hexAddr) => {
  const [ip] = hexAddr.split(":");
  return ip === "0100007F" || ip === "00000000000000000000000001000000";
};

// /proc/PID/stat: {state, pgrp}, or null when there is no such process.
export function procStat(pid) {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return { state: f[0], pgrp: Number(f[2]) };
  } catch {
    return null;
  }
}
// Live (not zombie) processes of a process group.
export function groupMembers(pgrp) {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(d);
    if (st && st.pgrp === pgrp && st.state !== "Z") out.push(Number(d));
  }
  return out;
}

// A copy of ocbg's OpenCode package (the files make opencode-package puts in
// ocbgDir) in folder dir, its node_modules linked to the pinned npm install
// in npmDir (zod): what a user's plugin folder holds. The path of its ocbg.js.
export function ocbgCopy(dir, ocbgDir, npmDir) {
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"])
    fs.copyFileSync(path.join(ocbgDir, f), path.join(dir, f));
  if (!fs.existsSync(path.join(dir, "node_modules")))
    fs.symlinkSync(path.join(npmDir, "node_modules"), path.join(dir, "node_modules"));
  return path.join(dir, "ocbg.js");
}

// What OpenCode would install into a config directory at its first request
// (@opencode-ai/plugin, slow or a stall offline): the package files, and
// node_modules linked to the pinned npm install in npmDir.
export function provideConfigDeps(dir, npmDir) {
  fs.mkdirSync(dir, { recursive: true });
  const ver = JSON.parse(fs.readFileSync(path.join(npmDir, "node_modules/@opencode-ai/plugin/package.json"))).version;
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ dependencies: { "@opencode-ai/plugin": ver } }));
  fs.writeFileSync(path.join(dir, "package-lock.json"),
    JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: { "@opencode-ai/plugin": ver } } } }));
  const nm = path.join(dir, "node_modules");
  if (!fs.existsSync(nm)) fs.symlinkSync(path.join(npmDir, "node_modules"), nm);
}

// A git repository in dir with one commit (shared.txt, "base\n"), as
// isolation "worktree" needs: git(...args) there, with an identity (an
// isolated HOME has none). dir may already be a repository without commits
// (then its branch keeps git's default name; one with a commit is kept as it
// is); made otherwise, on branch main.
export function gitRepoWithCommit(dir) {
  const git = (...a) => spawnSync("git", ["-C", dir, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...a],
    { encoding: "utf8" });
  fs.mkdirSync(dir, { recursive: true });
  git("init", "-q", "-b", "main");
  fs.writeFileSync(path.join(dir, "shared.txt"), "base\n");
  git("add", "shared.txt");
  const made = git("commit", "-q", "-m", "init");
  if (made.status !== 0 && git("rev-parse", "--verify", "-q", "HEAD").status !== 0)
    throw new Error(`git commit in ${dir}: ${made.stderr}`);
  return git;
}

// Sends `signal` to proc's process group and waits for proc to exit, with
// SIGKILL after graceMs. Whether it exited by itself (true when already gone).
export async function stopGroup(proc, signal, graceMs) {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return true;
  const exited = new Promise((r) => proc.once("exit", r));
  try { process.kill(-proc.pid, signal); } catch {}
  let timer;
  const deadline = new Promise((r) => { timer = setTimeout(() => r(false), graceMs); });
  const byItself = await Promise.race([exited.then(() => true), deadline]);
  clearTimeout(timer);
  if (!byItself) {
    try { process.kill(-proc.pid, "SIGKILL"); } catch {}
    await exited;
  }
  return byItself;
}

// The config every e2e server shares: the fake model on 127.0.0.1:port as
// the only provider, no updates or sharing, every permission allowed.
export function fakeModelConfig(port) {
  return {
    $schema: "https://opencode.ai/config.json",
    model: "fake/fake-model", small_model: "fake/fake-model", autoupdate: false, share: "disabled",
    permission: { edit: "allow", webfetch: "allow", bash: "allow", task: "allow" },
    provider: { fake: { npm: "@ai-sdk/openai-compatible", name: "Fake",
      options: { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "fake" },
      models: { "fake-model": { name: "Fake", tool_call: true, limit: { context: 100000, output: 4000 } } } } },
  };
}

// ---- the suite: servers started, everything stopped, the summary ----
// Every process group startServe started: SIGKILLed when the process exits,
// whatever the way (a suite's stop did not run, or did not finish).
const started = new Set();
process.on("exit", () => {
  for (const proc of started) {
    if (proc.exitCode === null && proc.signalCode === null) try { process.kill(-proc.pid, "SIGKILL"); } catch {}
  }
});

// Starts `opencode serve` on a free 127.0.0.1 port, in cwd with env as its
// whole environment, its output into logPath (appended when append), in a
// process group of its own; launch(args, options) spawns it when given (a
// serve run some other way), else bin. Waits up to healthMs for its health.
// Returns {proc, base, healthy, ms}: healthy false at the deadline (proc
// still running: the caller stops it). Follows no events, sets no base.
export async function startServe({ bin, cwd, env, logPath, append = false, logLevel = "INFO", healthMs = 60000, launch }) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const fd = fs.openSync(logPath, append ? "a" : "w");
  const args = ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs", "--log-level", logLevel];
  const options = { cwd, env, detached: true, stdio: ["ignore", fd, fd] };
  let proc;
  try { proc = launch ? launch(args, options) : spawn(bin, args, options); } finally { fs.closeSync(fd); }
  started.add(proc);
  proc.once("exit", () => started.delete(proc));
  const t0 = Date.now();
  const healthy = !!await waitFor("health", async () =>
    (await apiAt(base, "GET", "/global/health", undefined, 2000)).json?.healthy, healthMs, 250);
  return { proc, base, healthy, ms: Date.now() - t0 };
}

// Runs a suite: main(), then stop() (always; also on SIGINT, SIGTERM or
// SIGHUP, which end the process with status 1), then after() (checks that
// need everything stopped), then the plan and summary (summary(name)), then
// exits with 1 if a check failed. An exception in main is a failed check
// (onError(e) instead when given). status(failedStatus): the exit status
// instead, from the one the checks give.
export async function runSuite(name, main, { stop = async () => {}, after, onError, status, tapSummary = true } = {}) {
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, async () => { await stop(); process.exit(1); });
  try {
    await main();
  } catch (e) {
    if (onError) onError(e); else ok(false, `unexpected: ${e?.stack || e}`);
  }
  try { await stop(); } catch (e) { diag(`stopping: ${e?.stack || e}`); }
  if (after) await after();
  const failed = tapSummary ? summary(name) : 0;
  process.exit(status ? status(failed) : failed);
}

// e2e.mjs's scenarios: the adapter with the stub plugin: tool calls, host calls, events and the
// message transform, abort, a command, tool_before on OpenCode's own edits, a session in a git
// worktree (ABI 1.5).
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
// tool_before on OpenCode's own edits, a session in a git worktree (ABI 1.5).

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  api, callTool, diag, eq, events, idle, messages, newSession, ok, say, staysFalse, toolParts, turnEnds, userTexts,
  waitFor
} from "../e2e_lib.mjs";
import { LOG, SIDE, fake, toolNames } from "./world.mjs";

export async function stubToolCall() {
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
  eq(spec?.parameters.required, ["text"], "the model sees stub_echo with only text required");
  ok(spec?.parameters.properties.repeat?.description === "How many times (optional)" &&
     spec?.parameters.properties.repeat?.type === "integer", "the model sees argument types and descriptions", spec);

  const bad = await callTool(s, "stub_echo", { repeat: 2 });
  ok(bad?.status === "error" && /text/.test(bad?.error || ""), "a missing required argument is refused before the plugin", bad);
}

export async function stubHostCalls() {
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

export async function stubEventsAndTransform() {
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
export async function stubAbort() {
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
export async function stubCommand() {
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
export async function stubEdits() {
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
export async function stubWorktree() {
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
  ok(toolNames(childReq).includes("bash") && toolNames(childReq).includes("stub_echo") &&
    fs.readFileSync(LOG, "utf8").slice(logFrom).includes(`ocbg: ${wt} is the folder of a task of the ocbg instance ` +
      "that made it: this copy passes its tool calls to that instance"),
    "the stub's copy in the worktree's instance starts no plugin: it offers the owner's tools", toolNames(childReq));
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

// e2e.mjs's scenarios: restarts (the durable store): after, before and during a task's
// notification; an ended task's session busy again.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import fs from "node:fs";
import path from "node:path";
import {
  api, assistantTexts, callTool, diag, eventWatchers, events, idle, messages, newSession, ok, say, staysFalse,
  taskIds, textOf, toolParts, turnEnds, userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import {
  HOME, LOG, childOf, endNotices, fake, launch, restartServer, server, serverGone, startServer, stopServer
} from "./world.mjs";

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
export async function restartAfterNotify() {
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
export async function restartBeforeNotify() {
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
export async function restartMidTask() {
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

// Task one completes (and is notified) while task two still runs; then the
// user types into one's child session, which goes busy again ("CHILD slow":
// it stays busy). The fallback poll, reading the status map because two
// runs silently (at least every 8 poll intervals), finds one's session in it:
// an ended task must be left alone there, and OpenCode must keep running.
export async function endedTaskBusyAgain() {
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

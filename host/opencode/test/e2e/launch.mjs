// e2e.mjs's scenarios: ocbg's tasks launched and notified, cancelled, the TUI panel's channel, a failing
// child, resume, fork.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import fs from "node:fs";
import path from "node:path";
import {
  api, assistantTexts, callTool, events, idle, messages, newSession, ok, say, sleep, taskIds, textOf, toolParts,
  userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import { BUS_LOG, HOME, PROJECT, fake, launch } from "./world.mjs";

// Two background_task calls in one streamed step; both notify, the last wakes.
export async function launchAndNotify() {
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
export async function cancelSlow() {
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
const busLines = () => (fs.existsSync(BUS_LOG) ? fs.readFileSync(BUS_LOG, "utf8").split("\n").filter(Boolean) : [])
  .map((l) => { try { return JSON.parse(l); } catch { return null; } }).filter((c) => typeof c === "string");
const busViews = (sid) => busLines().filter((c) => c.startsWith("ocbg.view "))
  .map((c) => { try { return JSON.parse(c.slice(10)); } catch { return null; } }).filter((v) => v && v.session === sid);
const viewLine = (sid, id) => { const v = busViews(sid).at(-1); return v?.tasks?.find((t) => t.id === id); };

export async function panelChannel() {
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
export async function failingChild() {
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
export async function resume() {
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
export async function fork() {
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

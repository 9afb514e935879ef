// e2e.mjs's scenarios: nesting (max_depth 2 in this suite): a task launching its own, cancelled,
// refused.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import {
  api, callTool, diag, idle, isIdle, messages, newSession, ok, sleep, taskIds, textOf, toolParts, turnEnds,
  userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import { childOf, endNotices, fake, launch, toolNames } from "./world.mjs";

// ocbg's tools, as the model sees them (face_claude: true adds the last five).
const OCBG_TOOLS = ["background_task", "background_output", "background_cancel", "background_list", "background_clear",
  "background_resume", "background_block", "background_send", "background_monitor", "Task", "Bash", "TaskOutput",
  "TaskStop", "Monitor"];

// A task launches one of its own: A (depth 1) has ocbg's tools and calls
// background_task for B (depth 2 = max_depth: none of them), then answers
// "A first" while B waits at its gate. A is not done: it stays running and
// says it waits. B's notification goes into A's session and wakes A, whose
// new answer "A final" is its result; the root hears of A once, of B never.
export async function nestedTasks() {
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
  ok(aReq && OCBG_TOOLS.every((n) => toolNames(aReq).includes(n)),
    "A (depth 1, below max_depth 2) is offered ocbg's tools", toolNames(aReq));
  ok(bReq && toolNames(bReq).includes("bash") && !toolNames(bReq).some((n) => OCBG_TOOLS.includes(n)),
    "B (depth 2, at max_depth) is offered none of ocbg's tools, OpenCode's own still", toolNames(bReq));
  const aLaunch = as ? toolParts(await messages(as), "background_task").at(-1)?.state : null;
  const b = taskIds(aLaunch?.output)[0];
  ok(aLaunch?.status === "completed" && b && b !== a && /Status: running/.test(aLaunch.output),
    "A's own background_task call launched B", aLaunch);
  const bs = as && await childOf(as);
  ok(bs && (await api("GET", `/session/${bs}`)).json?.parentID === as, "B's session is a child of A's session", bs);
  const bUser = bs ? (await messages(bs)).find((m) => m.info.role === "user") : null;
  const denied = bUser?.info.tools || {};
  ok(Object.keys(denied).length === OCBG_TOOLS.length && OCBG_TOOLS.every((n) => denied[n] === false),
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
     OCBG_TOOLS.every((n) => toolNames(finalReq).includes(n)),
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
export async function nestedCancel() {
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
export async function nestedRefused() {
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
     !offered.some((n) => OCBG_TOOLS.includes(n)) && inv.output.includes(unavailable),
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

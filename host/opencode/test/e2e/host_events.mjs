// e2e.mjs's scenarios: host events in OpenCode's own order: a deleted parent stops its children; a
// child whose context is compacted.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import {
  api, callTool, diag, idle, isIdle, messages, newSession, ok, textOf, userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import { fake, launch, restartServer, serverEnv } from "./world.mjs";

// Deleting a parent with three running tasks: OpenCode deletes the children
// first and would leave them busy, their model streams open; ocbg aborts them.
export async function deleteStopsChildren() {
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
export async function compactedChild() {
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
export async function compactedAfter() {
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

// e2e.mjs's scenarios: when the parent is woken: a silent task then a waking one, a batch ending while
// the parent is busy.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import {
  api, diag, events, idle, isIdle, messages, newSession, ok, say, sleep, staysFalse, taskIds, toolParts, turnEnds,
  userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import { fake, requestText } from "./world.mjs";

export async function silentThenWaking() {
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
export async function batchWhileBusy() {
  await busyBatchCase("bbd", true);
  await busyBatchCase("bba", false);
}

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

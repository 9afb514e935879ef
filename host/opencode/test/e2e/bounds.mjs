// e2e.mjs's scenarios: bounds: the per-agent cap, usage, the token budget, a rate-limited model.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import { RATE_LIMIT_RETRY_MS } from "../fake_model.mjs";
import {
  api, callTool, diag, events, idle, messages, newSession, ok, sayTool, taskIds, textOf, toolEnded, userMessage,
  userTexts, waitFor
} from "../e2e_lib.mjs";
import { TASK_TOKENS, fake, launch } from "./world.mjs";

// A cap of 2 (max_running_per_agent) with 4 launches: two run, two wait
// pending with no session, each starts as a slot frees, in order, and each
// is notified exactly once.
export async function capTwoOfFour() {
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
export async function usageNotified() {
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
export async function tokenBudget() {
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
export async function rateLimited() {
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

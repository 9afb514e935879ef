// e2e.mjs's scenarios: ocbg asking OpenCode's permission (ABI 1.1): bash denied, asked once,
// rejected as the host does, esc while asking; a child asking; a task denied.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual as same } from "node:util";
import {
  api, assistantTexts, callTool, diag, events, idle, messages, newSession, ok, permissionAsked, replyPermission,
  sayTool, sleep, taskIds, textOf, toolEnded, turnEnds, userMessage, userTexts, waitFor
} from "../e2e_lib.mjs";
import { PROJECT, SIDE, fake, launch, requestText } from "./world.mjs";

// A deny rule: the Bash call is refused, nobody is asked, nothing runs.
export async function bashDenied() {
  const s = await newSession("perm deny");
  const f = path.join(SIDE, "e2e-deny.txt");
  const from = events.length;
  const st = await callTool(s, "Bash", { command: `touch ${f}`, description: "denied touch" });
  ok(st?.status === "error" && /^Permission denied: running `touch /.test(st.error) &&
     st.error.includes(`OpenCode's permission rules deny it (bash "*e2e-deny*": deny)`) && /was not run/.test(st.error),
    "a bash deny rule refuses Bash: Permission denied, naming the rule", st);
  ok(!fs.existsSync(f), "the denied command never ran (no side-effect file)");
  ok(!events.slice(from).some((e) => e.type === "permission.asked" && e.properties.sessionID === s),
    "a deny rule asks nobody");
}

// An "ask" rule answered "once": asked with the call's patterns, then it runs.
export async function bashAskedOnce() {
  const s = await newSession("perm ask");
  const f = path.join(SIDE, "e2e-ask-once.txt");
  const cmd = `echo yes > ${f}`;
  const from = events.length;
  const since = await sayTool(s, "Bash", { command: cmd, description: "asked echo" });
  const asked = await permissionAsked(s, from);
  const ap = asked?.properties;
  ok(ap?.permission === "bash" && same(ap.patterns, [cmd]) && same(ap.always, ["echo *"]) && ap.metadata?.command === cmd &&
     /^call_/.test(ap.tool?.callID || ""),
    "Bash asks OpenCode: permission.asked for the session, patterns = the command, always = echo *, the tool call",
    ap);
  ok(!fs.existsSync(f), "nothing ran before the answer");
  ok(ap && await replyPermission(ap.id, "once") === 200, "the user answers once (POST /permission/:id/reply)");
  const st = await toolEnded(s, "Bash", since);
  await idle(s);
  ok(st?.status === "completed" && fs.existsSync(f), "allowed once: the command ran", st);
  ok(events.slice(from).some((e) => e.type === "permission.replied" && e.properties.requestID === ap?.id &&
     e.properties.reply === "once"), "permission.replied once");
}

// background_monitor's command is asked for exactly as Bash's: the same
// question to OpenCode before anything runs; answered once, the watch starts.
export async function monitorAskedOnce() {
  const s = await newSession("perm ask monitor");
  const f = path.join(SIDE, "e2e-ask-monitor.txt");
  const cmd = `echo yes > ${f}`;
  const from = events.length;
  const since = await sayTool(s, "background_monitor", { command: cmd, description: "asked watch" });
  const asked = await permissionAsked(s, from);
  const ap = asked?.properties;
  ok(ap?.permission === "bash" && same(ap.patterns, [cmd]) && same(ap.always, ["echo *"]) && ap.metadata?.command === cmd,
    "background_monitor asks OpenCode what Bash asks: bash, patterns = the command, always = echo *", ap);
  ok(!fs.existsSync(f), "nothing ran before the answer");
  ok(ap && await replyPermission(ap.id, "once") === 200, "the user answers once");
  const st = await toolEnded(s, "background_monitor", since);
  ok(st?.status === "completed" && await waitFor("the watched command ran", () => fs.existsSync(f), 20000),
    "allowed once: the monitor started and its command ran", st);
  await idle(s);
}

// Side by side, OpenCode's own tools and ocbg's, each call in a session of
// its own, the question answered through POST /permission/:id/reply:
// - "reject": OpenCode's bash (and task) fail with its RejectedError and the
//   turn ends there: one model request, no "done <tool>". ocbg's Bash, Task
//   and background_task must end the same: the same request count, the same
//   part error, the same last assistant message; nothing ran, no task, no
//   child session.
// - "reject" with the user's words, and a deny rule: OpenCode's bash fails and
//   the model takes another step ("done bash"); so must ocbg's Bash, with its
//   own text naming the words or the rule.
export async function rejectLikeHost() {
  const agent = "e2e-asked"; // task rule: ask
  const launchArgs = (tag) => ({ description: `reject ${tag}`, prompt: `CHILD fast ${tag}` });
  const cases = [
    { tool: "bash", kind: "reject", file: "e2e-ask-rej-native.txt" },
    { tool: "Bash", kind: "reject", file: "e2e-ask-rej-ocbg.txt" },
    { tool: "task", kind: "reject", args: { ...launchArgs("native-task"), subagent_type: agent } },
    { tool: "Task", kind: "reject", args: { ...launchArgs("claude-task"), subagent_type: agent } },
    { tool: "background_task", kind: "reject", args: { ...launchArgs("bg-task"), agent } },
    { tool: "bash", kind: "words", file: "e2e-ask-words-native.txt", message: "use printf instead" },
    { tool: "Bash", kind: "words", file: "e2e-ask-words-ocbg.txt", message: "use printf instead" },
    { tool: "bash", kind: "deny", file: "e2e-deny-native.txt" },
    { tool: "Bash", kind: "deny", file: "e2e-deny-ocbg.txt" },
  ];
  const res = {};
  for (const c of cases) {
    const s = await newSession(`reject like host ${c.tool} ${c.kind}`);
    const args = c.args ?? { command: `touch ${path.join(SIDE, c.file)}`, description: `${c.kind} touch` };
    const line = `E2E ${c.tool} ${JSON.stringify(args)}`;
    const from = events.length, before = fake.requests.length;
    const since = await sayTool(s, c.tool, args);
    let asked = null;
    if (c.kind !== "deny") {
      asked = await permissionAsked(s, from);
      ok(asked && await replyPermission(asked.properties.id, "reject", c.message) === 200,
        `${c.tool} (${c.kind}): asked; the user answers reject${c.message ? " with a message" : ""}`);
    }
    const st = await toolEnded(s, c.tool, since);
    await idle(s);
    const msgs = (await messages(s)).slice(since);
    const last = msgs.filter((m) => m.info.role === "assistant").at(-1);
    const kids = (await api("GET", `/session/${s}/children`)).json;
    const requests = fake.requests.slice(before).filter((r) => r.decision.text !== "E2E title" && requestText(r).includes(line)).length;
    // (a later call in the session: its model requests carry the line too)
    const listed = /_task$|^Task$/.test(c.tool) && c.tool !== "task" ? await callTool(s, "background_list", {}) : null;
    res[`${c.tool} ${c.kind}`] = {
      requests, status: st?.status, error: st?.error, texts: assistantTexts(msgs), finish: last?.info.finish,
      messageError: last?.info.error ?? null, ran: c.file ? fs.existsSync(path.join(SIDE, c.file)) : false,
      children: Array.isArray(kids) ? kids.length : -1, tasks: listed && !/No background tasks found/.test(listed.output),
      asked: events.slice(from).filter((e) => e.type === "permission.asked" && e.properties.sessionID === s).length,
    };
  }
  diag(`reject like host: ${JSON.stringify(res)}`);
  const rejected = "The user rejected permission to use this specific tool call.";
  const n = res["bash reject"];
  ok(n.requests === 1 && n.status === "error" && n.error === rejected && n.texts.length === 0 && !n.ran,
    "OpenCode's bash, rejected: its RejectedError, the turn ends (one model request, no further step)", n);
  const sameEnd = (a, b) => a.requests === b.requests && a.status === b.status && a.error === b.error &&
    same(a.texts, b.texts) && a.finish === b.finish && same(a.messageError, b.messageError);
  for (const k of ["Bash reject", "Task reject", "background_task reject", "task reject"]) {
    const o = res[k];
    ok(sameEnd(o, n) && !o.ran && o.children === 0 && !o.tasks,
      `${k.split(" ")[0]}, rejected, ends the turn as OpenCode's bash: ${n.requests} model request, part error ` +
      `"${rejected}", nothing run or created`, { got: o, native: n });
  }
  await resumeRejected(agent, n);
  const nw = res["bash words"], ow = res["Bash words"];
  ok(nw.requests === 2 && nw.texts.includes("done bash") && /with the following feedback: use printf instead/.test(nw.error || ""),
    "OpenCode's bash, rejected with words: the model takes another step", nw);
  ok(ow.requests === nw.requests && ow.status === "error" && ow.texts.includes("done Bash") && !ow.ran &&
     /^Permission denied: running `touch /.test(ow.error || "") &&
     (ow.error || "").includes(`the user rejected it, saying: "use printf instead"`) && /was not run/.test(ow.error || ""),
    "ocbg's Bash, rejected with words: the same steps, its own text with the words", { got: ow, native: nw });
  const nd = res["bash deny"], od = res["Bash deny"];
  ok(nd.requests === 2 && nd.texts.includes("done bash") && /specified a rule which prevents/.test(nd.error || "") &&
     nd.asked === 0 && !nd.ran, "OpenCode's bash, denied by a rule: nobody asked, the model takes another step", nd);
  ok(od.requests === nd.requests && od.status === "error" && od.texts.includes("done Bash") && od.asked === 0 && !od.ran &&
     (od.error || "").includes(`OpenCode's permission rules deny it (bash "*e2e-deny*": deny)`),
    "ocbg's Bash, denied by a rule: the same steps, its own text naming the rule", { got: od, native: nd });
}

// A resume rejected (the task's agent asks): the turn ends as for OpenCode's
// bash (native: its result), and the task stays as it was.
async function resumeRejected(agent, native) {
  const p = await newSession("reject like host resume");
  let from = events.length;
  const since0 = await sayTool(p, "background_task", { description: "reject resumed", prompt: "CHILD fast resumed", agent });
  const asked0 = await permissionAsked(p, from);
  ok(asked0 && await replyPermission(asked0.properties.id, "once") === 200, "resume: the launch is asked and allowed once");
  const launched = await toolEnded(p, "background_task", since0);
  const id = taskIds(launched?.output)[0];
  ok(id && await userMessage(p, `[ocbg] Background task completed: ${id}`) && await idle(p), "resume: the task completed", launched);
  const args = { resume: id, prompt: "CHILD fast again" };
  const line = `E2E background_task ${JSON.stringify(args)}`;
  from = events.length;
  const before = fake.requests.length;
  const since = await sayTool(p, "background_task", args);
  const asked = await permissionAsked(p, from);
  ok(asked?.properties.permission === "task" && await replyPermission(asked.properties.id, "reject") === 200,
    "resume: asked (task), the user answers reject");
  const st = await toolEnded(p, "background_task", since);
  await idle(p);
  const requests = fake.requests.slice(before).filter((r) => r.decision.text !== "E2E title" && requestText(r).includes(line)).length;
  const texts = assistantTexts((await messages(p)).slice(since));
  ok(requests === native.requests && st?.status === native.status && st?.error === native.error && texts.length === 0,
    `resume, rejected, ends the turn as OpenCode's bash (${requests} model request)`, { st, requests, texts, native });
  const out = await callTool(p, "background_output", { task_id: id });
  ok(out?.status === "completed" && /completed/i.test(out.output) && !/again/.test(out.output),
    "resume: the task is still completed, with its first answer only", out);
}

// Esc while the user is being asked: the tool ends at once, nothing runs.
export async function bashEscWhileAsking() {
  const s = await newSession("perm esc");
  const f = path.join(SIDE, "e2e-ask-esc.txt");
  const from = events.length;
  const since = await sayTool(s, "Bash", { command: `touch ${f}`, description: "abandoned touch" });
  const asked = await permissionAsked(s, from);
  ok(asked, "the question is open");
  const t0 = Date.now();
  await api("POST", `/session/${s}/abort`);
  const st = await toolEnded(s, "Bash", since, 10000);
  const ms = Date.now() - t0;
  ok(st?.status === "error" && ms < 3000, `Esc while asking ends the Bash call (${ms} ms)`, st);
  await idle(s);
  await sleep(300); // a late run would have written the file by now
  ok(!fs.existsSync(f), "the abandoned command never ran");
  const open = ((await api("GET", "/permission")).json || []).some((p) => p.id === asked?.properties.id);
  diag(`after the abort the question is ${open ? "still listed" : "gone"} in GET /permission`);
}

// A background sub-agent whose own bash tool (OpenCode's) hits an "ask" rule:
// the parent hears once that it waits, background_output says so; answered,
// the task completes and notifies.
export async function childAsksPermission() {
  const parent = await newSession("perm child");
  const f = path.join(PROJECT, "e2e-ask-child.txt"); // inside the project: no external_directory question
  const cmd = "echo e2e-ask-child > e2e-ask-child.txt";
  const from = events.length;
  const id = await launch(parent, { description: "asking child", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "child echo" })}` });
  ok(id, "a task whose sub-agent runs bash launched");
  const child = (await api("GET", `/session/${parent}/children`)).json?.[0]?.id;
  const asked = child && await permissionAsked(child, from);
  ok(asked?.properties.permission === "bash" && asked.properties.patterns.some((p) => p.includes("e2e-ask-child")),
    "the sub-agent's bash asks in the child session", asked?.properties);
  const notice = await userMessage(parent, "is waiting for permission", 30000);
  const nt = notice ? textOf(notice.msg) : "";
  ok(nt.startsWith(`[ocbg] Background task ${id} "asking child" (agent: general) is waiting for permission: bash: `) &&
     nt.includes("e2e-ask-child"), "the parent is told the task waits for permission", nt);
  ok(notice && await turnEnds(parent, "ack", 30000, notice.index), "the notice woke the parent (the model answered)");
  await idle(parent);
  const out = await callTool(parent, "background_output", { task_id: id });
  ok(out?.status === "completed" && /Waiting for permission: bash: .*e2e-ask-child/.test(out.output),
    "background_output shows Waiting for permission", out);
  ok(!fs.existsSync(f), "the sub-agent's command waits for the answer");
  ok(asked && await replyPermission(asked.properties.id, "once") === 200, "the user answers once");
  const done = await userMessage(parent, "child reply bash", 30000);
  ok(done && textOf(done.msg).includes(id) && fs.existsSync(f), "the command ran; the task completed and notified",
    done && textOf(done.msg));
  await idle(parent);
  const waits = userTexts(await messages(parent)).filter((t) => t.includes("is waiting for permission"));
  ok(waits.length === 1, "the waiting notice came exactly once", waits);
}

// A task deny rule for the agent: background_task refused, no session made.
export async function taskDenied() {
  const parent = await newSession("perm task");
  const st = await callTool(parent, "background_task", { description: "denied agent", prompt: "CHILD fast nope",
    agent: "e2e-nope" });
  ok(st?.status === "error" && /^Permission denied: starting a sub-agent of type "e2e-nope"/.test(st.error) &&
     st.error.includes(`task "e2e-nope": deny`) && /No task was started/.test(st.error),
    "a task deny rule refuses background_task for that agent", st);
  const kids = (await api("GET", `/session/${parent}/children`)).json;
  ok(Array.isArray(kids) && kids.length === 0, "no child session was created", kids);
}

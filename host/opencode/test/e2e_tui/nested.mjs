// e2e_tui.mjs's scenario with ocbg's own server part started again with max_depth 2: a
// grandchild's question, answered from the panel's page (`a`).
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import fs from "node:fs";
import path from "node:path";
import {
  api, events, idle, messages, ok, sayTool, taskIds, textOf, toolEnded, waitFor
} from "../e2e_lib.mjs";
import {
  PROJECT, keys, type, flat, sidebar, shows, showsOk, gone, keepScreen, fake, reEscape, startWithOcbg
} from "./world.mjs";

// A question asked by a task a task launched (max_depth 2): OpenCode's own
// prompt shows it on no screen (it lists the questions of the session on
// screen and of its children only), so ocbg's panel carries it on the line of
// the task the person's session launched: the sidebar marks that line ⚠, the
// page's `a` asks the person (OpenCode's three answers) and the answer goes
// through OpenCode's permission reply; the grandchild runs on, its command
// runs, and the task that launched it, then the person's session, are told.
export async function realNestedAsk(scanned) {
  const sid = await startWithOcbg("nested ask", scanned, { max_depth: 2 }, {}, "nested ask");
  if (!sid) return;
  const cmd = "echo e2e-ask-nested > nested.txt";
  const grandchild = { description: "Grandchild ask", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "grandchild ask" })}` };
  const since = await sayTool(sid, "background_task", { description: "Nest ask", agent: "general",
    prompt: `CHILD nest NA ${JSON.stringify(grandchild)}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id, "nested ask: the model launched a task that launches one", launched)) return;
  const child = await waitFor("its child session", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Nest ask")), 30000);
  const gc = child && await waitFor("the grandchild's session", async () =>
    ((await api("GET", `/session/${child.id}/children`)).json || []).find((c) => c.title?.includes("Grandchild ask")), 60000);
  const asked = gc && await waitFor("the grandchild's question", async () =>
    ((await api("GET", "/permission")).json || []).find((p) => p.sessionID === gc.id), 60000);
  if (!ok(asked?.permission === "bash" && asked.patterns?.includes(cmd),
    "nested ask: the grandchild (a task of a task) asks bash", { child, gc, asked })) return;
  await idle(sid);
  await showsOk("nested ask: the sidebar marks the line of the task the session launched", [/● running ⚠ Nest ask general/],
    sidebar, 20000);
  const prompt = await shows("OpenCode's own prompt", ["Permission required"], flat, 3000);
  ok(!prompt.hit, "nested ask: OpenCode's own prompt does not show the grandchild's question (the premise)", prompt.last);
  keepScreen("real-nested-ask");
  type("/bgtasks");
  await showsOk("nested ask: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("nested ask: the page marks the task's line", [/› ● running ⚠ Nest ask · general/, "a answer"]);
  keys("Enter");
  await showsOk("nested ask: its detail names the grandchild and what it asks",
    [new RegExp(`⚠ bg_\\w+ \\(Grandchild ask\\) waits for you: bash: ${reEscape(cmd)}`)], flat, 20000);
  keys("Escape"); // then wait: an Escape followed at once by a key reads as Alt+key
  await showsOk("nested ask: esc: back to the list", ["↑↓ select · enter detail"]);
  const before = fake.requests.length;
  keys("a");
  const squash = (x) => x.replace(/\s+/g, ""); // the dialog wraps its title anywhere, also inside a word
  await showsOk("nested ask: a: the question, its folder and OpenCode's three answers", [
    squash(`Permission required esc bg_`), squash(`(Grandchild ask) asks: bash: ${cmd} in ${PROJECT}`), "Allowonce",
    "Allowalways", "Reject"], squash, 10000);
  keepScreen("real-nested-answer");
  keys("Enter");
  const replied = await waitFor("the answer", () => events.find((e) => e.type === "permission.replied" &&
    e.properties?.requestID === asked.id), 20000);
  ok(replied?.properties?.reply === "once" && !((await api("GET", "/permission")).json || []).some((p) => p.id === asked.id),
    "nested ask: Enter (Allow once) answered it through OpenCode: once", replied);
  ok(await waitFor("the command's file", () => fs.existsSync(path.join(PROJECT, "nested.txt")) &&
    fs.readFileSync(path.join(PROJECT, "nested.txt"), "utf8") === "e2e-ask-nested\n", 30000),
  "nested ask: the grandchild ran on: its command ran");
  ok(await waitFor("the grandchild's notification", async () => (await messages(child.id))
    .some((m) => m.info.role === "user" && textOf(m).includes("Background task completed:") && textOf(m).includes("child reply bash")), 60000),
  "nested ask: the task that launched it is notified");
  await showsOk("nested ask: the mark goes", [/› ✓ done Nest ask · general/], flat, 60000);
  const notice = await waitFor("the person's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes("NA final"), "nested ask: the person's session is notified with the task's answer",
    notice && textOf(notice));
  await idle(sid);
  const others = fake.requests.slice(before).map((r) => JSON.stringify(r.body?.messages || []))
    .filter((m) => !m.includes("grandchild ask") && !m.includes("Background task completed"));
  ok(others.length === 0, "nested ask: the answer made no model request but the tasks' next steps and notified turns",
    others.map((m) => m.slice(-300)));
  keepScreen("real-nested-done");
  keys("Escape");
  await gone("nested ask: esc: back from the page", "↑↓ select · enter detail");
}

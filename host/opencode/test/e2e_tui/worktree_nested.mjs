// e2e_tui.mjs's scenario with ocbg's own server part started again with max_depth 2 and
// external_directory allowed: a grandchild's question in an isolated task's worktree, answered from
// the panel's page (`a`) for the worktree's folder.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import fs from "node:fs";
import path from "node:path";
import {
  api, idle, messages, ok, readEvents, sayTool, taskIds, textOf, toolEnded, waitFor
} from "../e2e_lib.mjs";
import {
  PROJECT, fake, flat, gone, keepScreen, keys, shows, showsOk, sidebar, tuiBase, type, worktreeOf, startWithOcbg
} from "./world.mjs";

// The nested ask again, with the middle task launched with isolation
// "worktree" (the project has a commit: realOcbg made it): the task it
// launches works in its worktree, so the grandchild's question is OpenCode's
// for the worktree's folder (GET /permission?directory=<worktree>), on no
// screen of OpenCode's own. The sidebar marks the line of the task the
// person's session launched; the page's detail and `a` name the question and
// the worktree's folder, and the answer (Allow once) goes there; the
// grandchild runs on in the worktree, the task that launched it and then the
// person's session are told.
export async function realWorktreeNestedAsk(scanned) {
  // external_directory: the launch of an isolated task asks for its worktree, outside the project.
  const sid = await startWithOcbg("worktree nested ask", scanned, { max_depth: 2 }, { external_directory: "allow" },
    "worktree nested ask");
  if (!sid) return;
  const cmd = "echo e2e-ask-wtnested > wtnested.txt";
  const grandchild = { description: "Worktree grandchild", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "wt grandchild ask" })}` };
  const since = await sayTool(sid, "background_task", { description: "Nest wt ask", agent: "general",
    isolation: "worktree", prompt: `CHILD nest NW ${JSON.stringify(grandchild)}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id && /on new branch ocbg\//.test(launched.output),
    "worktree nested ask: the model launched a task in a worktree that launches one", launched)) return;
  const wt = await waitFor("its worktree", () => worktreeOf(id), 20000);
  // The answer's event is published in the worktree's instance, not on the project's GET /event: every
  // instance's events, each {directory, payload}, from GET /global/event.
  const all = [], stream = new AbortController();
  readEvents(`${tuiBase}/global`, stream.signal, (ev) => all.push(ev));
  try {
    await answered(sid, id, wt, cmd, all);
  } finally {
    stream.abort();
  }
}

// From the grandchild's question to the person's notification (all: the events of every instance).
async function answered(sid, id, wt, cmd, all) {
  const asked = await grandchildAsks(sid, wt, cmd);
  if (!asked) return;
  await idle(sid);
  await showsOk("worktree nested ask: the sidebar marks the line of the task the session launched",
    [/● running ⚠ Nest wt ask general/], sidebar, 20000);
  const prompt = await shows("OpenCode's own prompt", ["Permission required"], flat, 3000);
  ok(!prompt.hit, "worktree nested ask: OpenCode's own prompt does not show the grandchild's question", prompt.last);
  const before = fake.requests.length;
  if (!await answerFromPage(wt, cmd)) return;
  const replied = await waitFor("the answer", () => all.find((e) => e.payload?.type === "permission.replied" &&
    e.payload.properties?.requestID === asked.question.id), 20000);
  const inWt = `/permission?directory=${encodeURIComponent(wt)}`;
  ok(replied?.directory === wt && replied.payload.properties.reply === "once" &&
    !((await api("GET", inWt)).json || []).some((p) => p.id === asked.question.id),
    "worktree nested ask: Enter (Allow once) answered it through OpenCode, for the worktree: once", replied);
  await runsOn(sid, id, wt, asked.child, before);
}

// The grandchild's question, listed for the worktree's folder only: {question, child}, or null (its check failed).
async function grandchildAsks(sid, wt, cmd) {
  const child = await waitFor("its child session", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Nest wt ask")), 30000);
  const gc = child && await waitFor("the grandchild's session", async () =>
    ((await api("GET", `/session/${child.id}/children`)).json || []).find((c) => c.title?.includes("Worktree grandchild")),
  60000);
  const inWt = `/permission?directory=${encodeURIComponent(wt)}`;
  const question = wt && gc && await waitFor("the grandchild's question", async () =>
    ((await api("GET", inWt)).json || []).find((p) => p.sessionID === gc.id), 60000);
  if (!ok(question?.permission === "bash" && question.patterns?.includes(cmd) && gc.directory === wt,
    "worktree nested ask: the grandchild (a task of an isolated task) asks bash, listed for the worktree's folder",
    { wt, child, gc, question })) return null;
  const projectList = (await api("GET", "/permission")).json || [];
  ok(!projectList.some((p) => p.id === question.id), "worktree nested ask: the project's own list does not have it",
    projectList);
  return { question, child };
}

// The page: the task's line marked, its detail naming the grandchild, its question and the worktree's
// folder; `a` shows the question, its folder and OpenCode's three answers; Enter picks Allow once.
// Whether the dialog showed.
async function answerFromPage(wt, cmd) {
  keepScreen("real-wtnested-ask");
  type("/bgtasks");
  await showsOk("worktree nested ask: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("worktree nested ask: the page marks the task's line", [/› ● running ⚠ Nest wt ask · general/, "a answer"]);
  keys("Enter");
  const squash = (x) => x.replace(/\s+/g, ""); // a long folder wraps anywhere, also inside a word
  await showsOk("worktree nested ask: its detail names the grandchild, what it asks and the worktree's folder",
    [squash(`(Worktree grandchild) waits for you: bash: ${cmd} · in ${wt}`)], squash, 20000);
  keys("Escape"); // then wait: an Escape followed at once by a key reads as Alt+key
  await showsOk("worktree nested ask: esc: back to the list", ["↑↓ select · enter detail"]);
  keys("a");
  const dialog = await showsOk("worktree nested ask: a: the question, the worktree's folder and OpenCode's three answers", [
    squash("Permission required esc bg_"), squash(`(Worktree grandchild) asks: bash: ${cmd} in ${wt}`), "Allowonce",
    "Allowalways", "Reject"], squash, 10000);
  keepScreen("real-wtnested-answer");
  if (dialog) keys("Enter");
  return dialog;
}

// After the answer: the command ran in the worktree, the task that launched the grandchild was told, the
// mark went, the person's session was told; the answer made no model request of its own.
async function runsOn(sid, id, wt, child, before) {
  const file = path.join(wt, "wtnested.txt");
  ok(await waitFor("the command's file", () => fs.existsSync(file) && fs.readFileSync(file, "utf8") === "e2e-ask-wtnested\n",
    30000) && !fs.existsSync(path.join(PROJECT, "wtnested.txt")),
  "worktree nested ask: the grandchild ran on: its command ran in the worktree, not the checkout");
  ok(await waitFor("the grandchild's notification", async () => (await messages(child.id)).some((m) => m.info.role === "user" &&
    textOf(m).includes("Background task completed:") && textOf(m).includes("child reply bash")), 60000),
  "worktree nested ask: the task that launched it is notified");
  await showsOk("worktree nested ask: the mark goes", [/› ✓ done Nest wt ask · general/], flat, 60000);
  const notice = await waitFor("the person's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes("NW final") && textOf(notice).includes(`Branch: ocbg/${id} (from `),
    "worktree nested ask: the person's session is notified with the task's answer and its worktree's report",
    notice && textOf(notice));
  await idle(sid);
  const others = fake.requests.slice(before).map((r) => JSON.stringify(r.body?.messages || []))
    .filter((m) => !m.includes("wt grandchild ask") && !m.includes("Background task completed"));
  ok(others.length === 0, "worktree nested ask: the answer made no model request but the tasks' next steps and notified turns",
    others.map((m) => m.slice(-300)));
  keepScreen("real-wtnested-done");
  keys("Escape");
  await gone("worktree nested ask: esc: back from the page", "↑↓ select · enter detail");
}

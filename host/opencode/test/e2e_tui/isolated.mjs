// e2e_tui.mjs's scenarios with ocbg's own server part: tasks with isolation "worktree"
// (the page and detail name the branch and worktree; a sub-agent's question for the worktree's folder
// answered on OpenCode's own prompt).
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import fs from "node:fs";
import path from "node:path";
import { api, idle, messages, ok, sayTool, taskIds, textOf, toolEnded, waitFor } from "../e2e_lib.mjs";
import {
  keys, type, flat, sidebar, has, shows, showsOk, gone, keepScreen, fake, reEscape, worktreeOf
} from "./world.mjs";

// A task the model launches with isolation "worktree": its page line names its
// branch; its detail shows the branch, the worktree folder and, the run over,
// what it did there (the report of its notification), on the real screen.
export async function realIsolated(sid, git) {
  const since = await sayTool(sid, "background_task", { description: "Isolated real", agent: "general",
    isolation: "worktree",
    prompt: `CHILD call bash ${JSON.stringify({ command: "echo from-tui >> shared.txt", description: "child append" })}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id && /on new branch ocbg\//.test(launched.output),
    "isolated: the model launched a task in a worktree", launched)) return;
  const notice = await waitFor("its notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes(`Branch: ocbg/${id} (from `), "isolated: it completed, its notification has the report",
    notice && textOf(notice));
  await idle(sid);
  const wt = worktreeOf(id);
  ok(wt && fs.readFileSync(path.join(wt, "shared.txt"), "utf8") === "base\nfrom-tui\n" &&
    git("status", "--porcelain", "--untracked-files=no").stdout === "", "isolated: it wrote in its worktree, not the checkout", wt);
  type("/bgtasks");
  await showsOk("isolated: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("isolated: the page line names its branch", [
    new RegExp(`✓ done Isolated real · general · ocbg/${id} · \\d+s`)]);
  for (let i = 0; i < 3; i++) keys("Up"); // the page kept the earlier selection; the newest is first
  await showsOk("isolated: it is selected", [/› ✓ done Isolated real/]);
  keys("Enter");
  await showsOk("isolated: its detail shows its branch, worktree and, the run over, what it did there", [
    new RegExp(`${id} · agent general · ✓ done · \\d+s Isolated real branch: ocbg/${id} worktree: ${reEscape(wt)} `),
    new RegExp(`in its worktree: Branch: ocbg/${id} \\(from [0-9a-f]{8}\\), 0 commits: nothing committed ` +
      "Uncommitted: 1 file changed, 1 insertion\\(\\+\\); 0 untracked files " +
      "Changed since [0-9a-f]{8} \\(tracked files, committed or not\\): shared\\.txt \\| 1 \\+ " +
      "1 file changed, 1 insertion\\(\\+\\) latest answer:")], flat, 20000);
  keepScreen("real-isolated-detail");
  keys("Escape");
  await showsOk("isolated: esc: back to the list", ["↑↓ select · enter detail"]);
  keys("Escape");
  await gone("isolated: esc: back from the page", "↑↓ select · enter detail");
  await realIsolatedAsk(sid);
}

// An isolated task whose sub-agent asks a bash permission: OpenCode lists the
// question only for the worktree's folder (GET /permission?directory=), yet
// its own TUI shows it on the parent's screen, as it does a child's question
// (its TUI follows every folder's events), and answers it for the child's
// folder: the person presses Enter (Allow once) on the real screen, the task
// runs on and completes, and the answer itself makes no model request.
async function realIsolatedAsk(sid) {
  const cmd = "echo e2e-ask-wt > asked.txt";
  const since = await sayTool(sid, "background_task", { description: "Isolated ask", agent: "general",
    isolation: "worktree", prompt: `CHILD call bash ${JSON.stringify({ command: cmd, description: "child ask" })}` });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  const [id] = taskIds(launched?.output);
  if (!ok(launched?.status === "completed" && id, "isolated ask: the model launched a task in a worktree", launched)) return;
  const wt = await waitFor("its worktree", () => worktreeOf(id), 20000);
  const child = await waitFor("its child session", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Isolated ask")), 20000);
  const asked = wt && child && await waitFor("the worktree's question", async () =>
    ((await api("GET", `/permission?directory=${encodeURIComponent(wt)}`)).json || []).find((p) => p.sessionID === child.id), 30000);
  if (!ok(asked?.permission === "bash" && asked.patterns?.includes(cmd) && child.directory === wt,
    "isolated ask: its sub-agent asks bash, listed for the worktree's folder", { asked, child, wt })) return;
  const projectList = (await api("GET", "/permission")).json || [];
  ok(!projectList.some((p) => p.id === asked.id), "isolated ask: the project's own list (GET /permission) does not have it",
    projectList);
  await showsOk("isolated ask: the sidebar marks it waiting", [/● running ⚠ Isolated ask general/], sidebar, 20000);
  await showsOk("isolated ask: OpenCode's own prompt shows the child's question on the parent's screen",
    ["Permission required", cmd, "Allow once", "Allow always", "Reject"], flat, 20000);
  keepScreen("real-isolated-ask");
  // ocbg tells the parent the task waits (a turn of its own): done before the answer is counted.
  const told = await waitFor("the waiting notice", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task ${id} "Isolated ask" (agent: general) is waiting for permission: bash: ${cmd}`)), 20000);
  ok(told, "isolated ask: ocbg told the parent the task waits for permission");
  await idle(sid);
  // The child's own screen does not show it (OpenCode lists the questions of a session and its children
  // on a root session's screen only): the person answers on the parent's.
  await api("POST", "/tui/select-session", { sessionID: child.id });
  const there = await shows("the child's screen", [/Subagent \(\d+ of \d+\)/, `CHILD call bash {"command":"${cmd}"`]);
  keepScreen("real-isolated-ask-child");
  ok(there.hit && !has(flat(there.last), "Permission required"),
    "isolated ask: the child's own screen does not show the question", there.last);
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("isolated ask: back on the parent's screen, the question again", ["Permission required", cmd], flat, 20000);
  const before = fake.requests.length;
  keys("Enter");
  await showsOk("isolated ask: Enter (Allow once): answered, the task completes", [/✓ done Isolated ask general/], sidebar, 30000);
  ok(!((await api("GET", `/permission?directory=${encodeURIComponent(wt)}`)).json || []).some((p) => p.id === asked.id),
    "isolated ask: the question is gone from the worktree's list");
  ok(fs.existsSync(path.join(wt, "asked.txt")) && fs.readFileSync(path.join(wt, "asked.txt"), "utf8") === "e2e-ask-wt\n",
    "isolated ask: the command ran in the worktree");
  const notice = await waitFor("its notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes(`Background task completed: ${id}`)), 60000);
  ok(notice && textOf(notice).includes("child reply bash"), "isolated ask: the parent is notified with its answer",
    notice && textOf(notice));
  await idle(sid);
  const after = fake.requests.slice(before).map((r) => JSON.stringify(r.body?.messages || []));
  const others = after.filter((m) => !m.includes(`Background task completed: ${id}`) && !m.includes("child ask"));
  ok(others.length === 0, "isolated ask: the answer made no model request but the child's next step and the notified turn",
    others.map((m) => m.slice(-300)));
}

// e2e_tui.mjs's first scenario with ocbg's own server part: the TUI started again with it;
// tasks the model launches, live in the sidebar, one waiting for permission, one stopped from the page.
// It returns the session and the project's git for the scenarios that follow it on the same TUI.
import fs from "node:fs";
import path from "node:path";
import {
  api, events, gitRepoWithCommit, idle, messages, ok, permissionAsked, replyPermission, sayTool, stopEvents, textOf,
  toolEnded, waitFor
} from "../e2e_lib.mjs";
import {
  PROJECT, keys, type, flat, sidebar, showsOk, gone, keepScreen, fake, endTuiSession, startWithOcbg
} from "./world.mjs";

// ---- the real server part ----
// The TUI again, now with ocbg's own server part (the installed, scanned
// plugin) and the fake model: tasks the model launches show in the sidebar
// and change live; a task whose sub-agent waits for the user's permission is
// marked; the page stops a running task through ocbg (its sub-agent's model
// stream closes, the parent is told it was stopped by the user), and neither
// looking nor stopping makes a model request (the parent's notified turn
// afterwards is the model learning of it, as of any ending).
export async function realOcbg(scanned) {
  endTuiSession();
  stopEvents();
  if (fs.existsSync(path.join(PROJECT, ".opencode/plugin.off"))) fs.renameSync(path.join(PROJECT, ".opencode/plugin.off"), scanned);
  // A commit, for isolation "worktree" (realIsolated); only shared.txt is tracked, so a worktree has no .opencode/.
  const git = gitRepoWithCommit(PROJECT);
  // external_directory: the launch of an isolated task asks for its worktree, outside the project (and
  // realTty's command names /dev/tty). The scanned copy listed with options: loaded once, from the scan,
  // its options found by ocbg_options.mjs; face_claude for realTty's Bash.
  const sid = await startWithOcbg("real", scanned, { face_claude: true }, { external_directory: "allow" }, "real panel");
  if (!sid) return;
  let since = await sayTool(sid, "background_task", { description: "Slow real", prompt: "CHILD slow", agent: "general" });
  const launched = await toolEnded(sid, "background_task", since, 60000);
  ok(launched?.status === "completed", "real: the model launched a background task", launched);
  await idle(sid);
  await showsOk("real: the task the model launched shows in the sidebar, running", [/● running Slow real general · \d+s/],
    sidebar, 20000);
  const slowReq = await waitFor("the slow child's model request", async () => fake.requests.find((r) => r.decision.hang && !r.closed), 30000);
  const from = events.length;
  since = await sayTool(sid, "background_task", { description: "Asking real", agent: "general",
    prompt: `CHILD call bash ${JSON.stringify({ command: "echo e2e-ask-tui > e2e-ask-tui.txt", description: "child echo" })}` });
  await toolEnded(sid, "background_task", since, 60000);
  const child = await waitFor("the asking child", async () => ((await api("GET", `/session/${sid}/children`)).json || [])
    .find((c) => c.title?.includes("Asking real"))?.id, 20000);
  const asked = child && await permissionAsked(child, from);
  ok(asked, "real: the second task's sub-agent asks for permission");
  await showsOk("real: the task waiting for the user's permission is marked", [/● running ⚠ Asking real general/], sidebar, 20000);
  keepScreen("real-sidebar");
  // OpenCode's TUI puts the child's question in place of the prompt: the user answers it (here through the API).
  ok(asked && await replyPermission(asked.properties.id, "once") === 200, "real: the user answers the question");
  await showsOk("real: answered, the task runs on and completes", [/✓ done Asking real general/], sidebar, 30000);
  await waitFor("its notification", async () => (await messages(sid)).some((m) => textOf(m).includes("child reply bash")), 30000);
  await idle(sid);
  const before = fake.requests.length;
  type("/bgtasks");
  await showsOk("real: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("real: the page lists both tasks, newest first", [/› ✓ done Asking real · general · \d+s[^●]*● running Slow real · general/]);
  ok(fake.requests.length === before, "real: opening the page made no model request", fake.requests.length - before);
  keys("Down");
  await showsOk("real: the slow task selected", [/› ● running Slow real/]);
  keys("s");
  await showsOk("real: s stops it: the page shows it cancelled", [/› ■ cancelled Slow real · general/], flat, 20000);
  ok(await waitFor("slow request closed", async () => slowReq?.closed, 15000), "real: its sub-agent's model stream was closed");
  const notice = await waitFor("the stop's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes("stopped by the user")), 30000);
  ok(notice && textOf(notice).includes("Slow real"), "real: the parent is told the user stopped it", notice && textOf(notice));
  await idle(sid);
  const after = fake.requests.slice(before);
  const others = after.filter((r) => !JSON.stringify(r.body?.messages || []).includes("stopped by the user"));
  ok(others.length === 0, "real: the stop made no model request but the parent's notified turn", others.map((r) => r.decision));
  keepScreen("real-page");
  keys("Escape");
  await gone("real: esc: back from the page", "↑↓ select · enter detail");
  return { sid, git };
}

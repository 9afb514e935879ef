// e2e_tui.mjs's scenarios with the fake server part (test/fake_view_plugin.js): the
// sidebar live, the summary line in a narrow terminal, the /bgtasks page (list, detail, stop, a long
// task's confirmation) and `o` into an agent task's child session.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import { api, diag, ok } from "../e2e_lib.mjs";
import {
  NAME, WIDE, NARROW, ROWS, tmux, screen, keys, type, flat, sidebar, has, shows, showsOk, gone, keepScreen, publish,
  setTasks, requestsSeen, fake, AGO
} from "./world.mjs";

const T = { sid: null, child: null };
const tasksNow = () => [
  { id: "bg_aaaa0001", kind: "agent", status: "running", description: "Lint", agent: "general", session: T.child,
    created: AGO(300000), started: AGO(20000), tokens: 1234, cost: 0.0042, tools: 3, recent: ["read", "grep"],
    answer: "Lint is clean." },
  { id: "bg_bbbb0002", kind: "shell", status: "pending", description: "Tests", command: "make check", queue: 1,
    created: AGO(10000) },
  { id: "bg_cccc0003", kind: "shell", status: "completed", description: "Build", command: "make all",
    created: AGO(400000), started: AGO(90000), ended: AGO(30000), exit: 0, output: "built\n" },
];
// Changes one task at the fake server part (null removes a field), which publishes the view.
const update = (id, fields) => publish(`ocbgfake.patch ${JSON.stringify({ session: T.sid, id, fields })}`);

// Tasks appear in the sidebar and follow the server part's views live.
export async function sidebarLive() {
  T.sid = (await api("POST", "/session", { title: "panel e2e" })).json?.id;
  T.child = (await api("POST", "/session", { title: "Lint (child)", parentID: T.sid })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: T.sid });
  await setTasks(T.sid, tasksNow());
  await showsOk("the sidebar shows the session's tasks, one line each", [
    "Background tasks",
    /● running Lint general · 2\ds · 1\.2k tok · \$0\.0042/,
    "○ pending #1 Tests make check",
    "✓ done Build make all · 1m00s",
  ], sidebar);
  const t0 = Date.now();
  await update("bg_bbbb0002", { status: "running", started: AGO(0), queue: null });
  const r = await shows("the pending task runs", [/● running Tests make check · \ds/], sidebar, 5000);
  ok(r.hit, "a status change shows in the sidebar", r.last);
  // A figure, not a check (timing goals are for benchmarks): the bus, the TUI and capture-pane's 100 ms polling.
  diag(`view -> screen: ${Date.now() - t0} ms`);
  await showsOk("elapsed times tick while a task runs", [/● running Tests make check · [2-9]s/], sidebar, 10000);
  await update("bg_bbbb0002", { waiting: "bash: rm -rf build" });
  await showsOk("a task waiting for permission is marked", [/● running ⚠ Tests make check · \d+s/], sidebar);
  keepScreen("sidebar");
}

// Where the sidebar is not (a narrow terminal), the summary line says it.
export async function summaryNarrow() {
  ok(!has(flat(screen()), "Background tasks: "), "no summary line while the sidebar shows the tasks");
  tmux("resize-window", "-t", NAME, "-x", String(NARROW), "-y", String(ROWS));
  await showsOk("a narrow terminal: the summary line", [
    "Background tasks: 2 running · 1 waiting for you · 1 done · $0.0042"]);
  keepScreen("summary");
  tmux("resize-window", "-t", NAME, "-x", String(WIDE), "-y", String(ROWS));
  await gone("wide again: the sidebar instead of the summary", "Background tasks: ");
}

// /bgtasks opens the page, newest first, with no model request.
export async function pageOpens() {
  const before = fake.requests.length;
  type("/bgtasks");
  await showsOk("/bgtasks is offered in the prompt's completion", ["/bgtasks"]);
  keys("Enter");
  await showsOk("the page lists the tasks newest first", [
    /Background tasks 2 running · 1 waiting for you · 1 done · \$0\.0042 › ● running ⚠ Tests · make check · \d+s ● running Lint · general · \d+s · 1\.2k tok · \$0\.0042 ✓ done Build · make all · 1m00s/,
    "↑↓ select · enter detail · s stop · o open session · esc back"]);
  keepScreen("page");
  ok(fake.requests.length === before, "opening the page made no model request", fake.requests.length - before);
}

// Enter shows the selected task's detail, from the server part's reply.
export async function pageDetail() {
  keys("Down");
  await showsOk("down selects the next task", [/› ● running Lint/]);
  keys("Enter");
  await showsOk("enter: the agent task's detail, with its latest answer", [
    /bg_aaaa0001 · agent general · ● running · \d+s Lint usage: 1\.2k tok · \$0\.0042 · 3 tool calls recent tools: read, grep latest answer: Lint is clean\./,
    "s stop · o open session · esc back to the list"]);
  keepScreen("detail");
  ok(requestsSeen().some((r) => r.action === "detail" && r.task_id === "bg_aaaa0001"), "the detail was asked of the server part");
  keys("Escape");
  await showsOk("esc: back to the list", ["↑↓ select · enter detail"]);
}

// s stops the selected task (no confirmation for a short, cheap one).
export async function pageStop() {
  const before = fake.requests.length;
  keys("Up");
  await showsOk("up selects the waiting task", [/› ● running ⚠ Tests/]);
  keys("s");
  await showsOk("s: the task shows cancelled", [/› ■ cancelled Tests · make check · \d+s/]);
  ok(requestsSeen().filter((r) => r.action === "stop").map((r) => r.task_id).join() === "bg_bbbb0002",
    "one stop request, for that task", requestsSeen());
  ok(fake.requests.length === before, "stopping made no model request", fake.requests.length - before);
}

// A task that ran long asks first; confirming stops it.
export async function pageStopConfirm() {
  await update("bg_aaaa0001", { started: AGO(185000) });
  keys("Down");
  await showsOk("the long task selected", [/› ● running Lint · general · 3m0\ds/]);
  keys("s");
  await showsOk("s on a long task asks first", ["Stop background task",
    /Stop "Lint"\? It has run 3m0\ds and cost \$0\.0042; its work so far is kept\./]);
  keepScreen("confirm");
  ok(!requestsSeen().some((r) => r.action === "stop" && r.task_id === "bg_aaaa0001"), "no stop before the answer");
  keys("Enter");
  await showsOk("confirmed: the task shows cancelled", [/› ■ cancelled Lint · general · 3m0\ds/]);
  ok(requestsSeen().filter((r) => r.action === "stop" && r.task_id === "bg_aaaa0001").length === 1,
    "one stop request after the confirmation");
}

// o opens an agent task's session; there (a child: no sidebar) the summary line shows the launcher's tasks.
export async function openChild() {
  await update("bg_aaaa0001", { status: "running", ended: null, stopped_by_user: null, started: AGO(5000) });
  await showsOk("the agent task runs again", [/› ● running Lint/]);
  keys("o");
  await showsOk("o: the task's child session, with the summary line of its launcher's tasks",
    ["Background tasks: 1 running · 1 done · 1 cancelled · $0.0042"]);
  keepScreen("child");
  keys("C-x");
  keys("j");
  await showsOk("the key of the option (<leader>j) opens the page there: the launcher's tasks",
    [/Background tasks 1 running · 1 done · 1 cancelled · \$0\.0042 ■ cancelled Tests/, "esc back"]);
  keys("Escape");
  await showsOk("esc: back to the child session", ["Background tasks: 1 running · 1 done · 1 cancelled · $0.0042"]);
}

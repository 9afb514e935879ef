// The TUI panel's state logic (host/opencode/tui/panel_state.mjs) under node,
// no terminal: parsing the channel's commands (every text made safe for the
// screen: escape sequences and control characters), which view a screen
// shows, the exact texts of the lines, summary and detail, the stop
// confirmation rule, attention once only, and reply matching. Prints TAP.
import {
  applyView, attentionFor, confirmText, createAttention, createRequests, createViews, detailText, needsConfirm,
  pageTasks, parseCommand, request, screenText, serverNow, summaryText, takeReply, taskLine, taskRows, viewFor,
  questionsOf, isWaiting, questionToAnswer, answerTitle, replyArgs, REPLIES, pageKeys
} from "../tui/panel_state.mjs";
import { eq, ok, summary } from "./tap.mjs";


const T = 1764170000000;
const agent = { id: "bg_a1", kind: "agent", status: "running", description: "Fix the parser", agent: "general",
  session: "ses_C", created: T - 65000, started: T - 65000, tokens: 1234, cost: 0.0042, tools: 5,
  recent: ["read", "edit"] };
const shell = { id: "bg_s1", kind: "shell", status: "pending", description: "Run the tests", command: "make check",
  queue: 2, created: T - 1000 };
const view = (seq, now, tasks, session = "ses_P") => ({ v: 1, session, seq, now, tasks });
const cmd = (prefix, obj) => `${prefix} ${JSON.stringify(obj)}`;

// ---- parsing ----
{
  const v = view(1, T, [agent]);
  eq(parseCommand(cmd("ocbg.view", v)), { kind: "view", view: v }, "a view parses");
  eq(parseCommand(cmd("ocbg.reply", { v: 1, id: "r1", ok: true })), { kind: "reply", reply: { v: 1, id: "r1", ok: true } },
    "a reply parses");
  eq(parseCommand("ocbg.view {not json"), null, "malformed JSON: ignored");
  eq(parseCommand(cmd("ocbg.ui", { v: 1, id: "r1", action: "sync" })), null, "a request (ocbg.ui) is not for the TUI");
  eq(parseCommand("session.new"), null, "another command: ignored");
  eq(parseCommand(cmd("ocbg.views", v)), null, "a longer prefix: ignored");
  eq(parseCommand(cmd("ocbg.view", { ...v, v: 2 })), null, "another version: ignored");
  eq(parseCommand(cmd("ocbg.view", { ...v, tasks: "x" })), null, "tasks not a list: ignored");
  eq(parseCommand(cmd("ocbg.reply", { v: 1, ok: true })), null, "a reply without id: ignored");
  eq(parseCommand(cmd("ocbg.view", { ...v, tasks: [agent, { id: 3 }, null] })).view.tasks, [agent],
    "malformed tasks of a view are dropped");
  eq(parseCommand(undefined), null, "no command: ignored");
}

// ---- text from a task, as it may reach the screen ----
{
  eq(screenText("plain text, ünïcödé, 日本語"), "plain text, ünïcödé, 日本語", "plain text is unchanged");
  eq(screenText("a\x1b]2;PWNED\x07b\x1b]0;x\x1b\\c\x1b]2;y\x9cd"), "abcd", "OSC (a title) ended by BEL, ESC \\ or ST: gone whole");
  eq(screenText("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b"), "alinkb", "OSC 8 (a hyperlink): its text kept");
  eq(screenText("a\x1b]2;never ended"), "a", "an OSC never ended: gone to the end");
  eq(screenText("\x1b[2J\x1b[H\x1b[10;20Hx\x1b[31mred\x1b[0m \x1b[?1049h\x1b[38;5;196my"), "xred y",
    "CSI (clear, cursor moves, colours, private modes): gone whole");
  eq(screenText("a\x9b2Jb\x9d2;t\x07c\x90q\x9cd"), "abcd", "the C1 forms of CSI, OSC and DCS: gone whole");
  eq(screenText("a\x1bP1$r\x1b\\b\x1b_apc\x1b\\c\x1b^pm\x07d\x1bXsos\x1b\\e"), "abcde", "DCS, APC, PM, SOS: gone whole");
  eq(screenText("a\x1bcb\x1b7c\x1b8d\x1b(Be\x1b#8f"), "abcdef", "two-byte escapes (reset, save, charset, DECALN): gone");
  eq(screenText("a\x1b\x1b"), "a\ufffd\ufffd", "a lone ESC: U+FFFD");
  eq(screenText("a\x07b\x08c\x00d\x7fe\x85f\x9cg"), "a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf\ufffdg",
    "other C0 and C1 controls, DEL: U+FFFD");
  eq(screenText("abc\u202edef\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\u200e\u200f\u061cg"),
    "abc\ufffddef" + "\ufffd".repeat(11) + "g", "bidirectional overrides, embeddings, isolates and marks: U+FFFD");
  eq(screenText("one\r\ntwo\rthree\nfour\u2028five\u2029six\tseven"), "one two three four five six seven",
    "single-line: line breaks and tab are spaces");
  eq(screenText("one\r\ntwo\rthree\nfour\u2028five\tsix", true), "one\ntwo\nthree\nfour\nfive six",
    "multi-line: CR LF, CR, U+2028 a line break; tab a space");
  eq(screenText("\x1b\x1b]0;t\x07[31m"), "\ufffd[31m", "a sequence split by another cannot join up: its ESC is U+FFFD");
  eq(screenText(undefined), undefined, "not a string: unchanged");
  const evil = "Evil\x1b]2;PWNED\x07 \x1b[2J\x1b[1;1Htask\u202eok";
  const v = parseCommand(cmd("ocbg.view", view(1, T, [{ ...agent, description: evil, agent: "gen\x1b[31meral",
    branch: "ocbg/\u202ebg_a1", command: "make\ncheck", waiting: "bash: rm\x1b[8m -rf /", recent: ["re\x07ad"] }]))).view;
  eq([v.tasks[0].description, v.tasks[0].agent, v.tasks[0].branch, v.tasks[0].command, v.tasks[0].waiting, v.tasks[0].recent],
    ["Evil task\ufffdok", "general", "ocbg/\ufffdbg_a1", "make check", "bash: rm -rf /", ["re\ufffdad"]],
    "a view's texts are cleaned as it is parsed: description, agent, branch, command, question, tools");
  const r = parseCommand(cmd("ocbg.reply", { v: 1, id: "r1", ok: true, detail: { id: "bg_a1", answer: "line 1\n\x1b[1mline\x1b[0m 2\x1b]2;t\x07",
    output: "\x1b[32mok\x1b[0m\r\ndone\r", error: "e\x1b[Krr\nx", worktree: { report: "a\tb\nc\u202e" } } })).reply;
  eq(r.detail, { id: "bg_a1", answer: "line 1\nline 2", output: "ok\ndone\n", error: "err\nx", worktree: { report: "a b\nc\ufffd" } },
    "a reply's detail: its multi-line texts keep their line breaks, without sequences or controls");
  eq(parseCommand(cmd("ocbg.reply", { v: 1, id: "r2", ok: false, error: "busy\x1b]2;t\x07" })).reply.error, "busy",
    "a refusal's error is cleaned");
  eq(detailText(agent, { unavailable: "ocbg is busy: 64 panel requests are waiting; try again" }, T).split("\n").at(-1),
    "(no detail: ocbg is busy: 64 panel requests are waiting; try again)", "a refused detail says why");
}

// ---- newest view per session ----
{
  const views = createViews();
  ok(applyView(views, view(5, T, [agent]), T + 300), "first view kept");
  ok(!applyView(views, view(4, T - 100, []), T + 400), "an older seq (reordered) is ignored");
  ok(!applyView(views, view(5, T, []), T + 400), "the same seq again is ignored");
  eq(views.get("ses_P").view.tasks.length, 1, "the kept view is the newest");
  ok(applyView(views, view(6, T + 1000, [agent, shell]), T + 1300), "a greater seq replaces it");
  ok(applyView(views, view(1, T + 5000, [shell]), T + 5300), "a restarted server (seq anew, later clock) replaces it");
  eq(views.get("ses_P").offset, 300, "the clock offset is local minus server time at arrival");
  eq(serverNow(views.get("ses_P"), T + 6300), T + 6000, "server time from the local clock and the offset");
}

// ---- which view a screen shows ----
{
  const views = createViews();
  applyView(views, view(1, T, [agent], "ses_P"), T);
  applyView(views, view(1, T, [shell], "ses_Q"), T);
  const parents = { ses_C: "ses_P", ses_G: "ses_C", ses_X: undefined, ses_N: "ses_Q" };
  const parentOf = (id) => parents[id];
  eq(viewFor(views, "ses_P", parentOf)?.view.session, "ses_P", "a parent session shows its own view");
  eq(viewFor(views, "ses_C", () => undefined)?.view.session, "ses_P", "a task's child session shows its launcher's view");
  eq(viewFor(views, "ses_G", parentOf)?.view.session, "ses_P", "a grandchild walks up to the launcher");
  eq(viewFor(views, "ses_N", parentOf)?.view.session, "ses_Q", "a child by parentID shows its parent's view");
  eq(viewFor(views, "ses_X", parentOf), null, "a session without tasks shows none");
  eq(viewFor(views, "ses_L", (id) => (id === "ses_L" ? "ses_L" : undefined)), null, "a parent loop ends");
  applyView(views, view(1, T, [shell], "ses_C"), T);
  eq(viewFor(views, "ses_C", parentOf)?.view.session, "ses_C", "a child that launched tasks shows its own view");
}

// ---- lines, summary, page, detail ----
{
  eq(taskLine(agent, T), "● running Fix the parser · general · 1m05s · 1.2k tok · $0.0042", "a running agent's line");
  eq(taskLine(shell, T), "○ pending #2 Run the tests · make check", "a pending command's line, with its queue place");
  const waiting = { ...agent, waiting: "bash: rm -rf build", cost: 0.42, tokens: 800 };
  eq(taskLine(waiting, T), "● running ⚠ Fix the parser · general · 1m05s · 800 tok · $0.42", "a waiting task is marked");
  const done = { ...agent, status: "completed", ended: T - 5000, waiting: "stale" };
  eq(taskLine(done, T), "✓ done Fix the parser · general · 1m00s · 1.2k tok · $0.0042",
    "an ended task: elapsed up to its end, no waiting mark");
  const failed = { id: "bg_f", kind: "shell", status: "error", description: "Build", command: "make -j2 all && make install",
    started: T - 3 * 3600e3, ended: T - 3600e3 + 5000, exit: 2 };
  eq(taskLine(failed, T), "✗ failed Build · make -j2 all && make install · 2h00m", "a failed command's line");
  const mon = { id: "bg_m", kind: "monitor", status: "running", description: "errors", command: "tail -f app.log",
    started: T - 65000, events: 3, expires: T + 235000 };
  eq(taskLine(mon, T), "● running errors · tail -f app.log · 3 events · 3m55s left · 1m05s",
    "a monitor's line: its command, events so far, time left");
  const long = { id: "bg_l", kind: "shell", status: "cancelled", description: "x".repeat(50),
    command: "y".repeat(40), started: T - 2000, ended: T - 1000 };
  eq(taskLine(long, T), `■ cancelled ${"x".repeat(39)}… · ${"y".repeat(29)}… · 1s`, "long texts are clipped");

  eq(taskRows(agent, T), ["● running Fix the parser", "general · 1m05s · 1.2k tok · $0.0042"],
    "the sidebar's two rows of a task");
  eq(taskRows({ id: "bg_x", kind: "agent", status: "pending", queue: 1 }, T), ["○ pending #1 bg_x", ""],
    "a task with nothing more: its id, an empty second row");

  eq(summaryText([]), "", "no task: no summary");
  eq(summaryText([agent, { ...agent, id: "b2", waiting: "edit: a.c", cost: 0.4158 }, shell]),
    "2 running · 1 pending · 1 waiting for you · $0.42", "the summary: running, pending, waiting, cost");
  eq(summaryText([done, failed, long]), "1 done · 1 failed · 1 cancelled · $0.0042", "the summary of ended tasks");

  eq(pageTasks([shell, agent, failed]).map((t) => t.id), ["bg_s1", "bg_a1", "bg_f"], "the page: newest first");

  eq(detailText(agent, null, T), "bg_a1 · agent general · ● running · 1m05s\nFix the parser\n" +
    "usage: 1.2k tok · $0.0042 · 5 tool calls\nrecent tools: read, edit\n\n(loading…)", "detail before the reply");
  eq(detailText(agent, { id: "bg_a1", status: "running", answer: "Found it.", waiting: "bash: ls", tokens: 2000 }, T),
    "bg_a1 · agent general · ● running · 1m05s\nFix the parser\n⚠ waiting for you: bash: ls\n" +
    "usage: 2.0k tok · $0.0042 · 5 tool calls\nrecent tools: read, edit\n\nlatest answer:\nFound it.",
    "detail with an agent's answer and its question");
  eq(detailText(failed, { id: "bg_f", status: "error", output: "boom\n", exit: 2, error: "exit status 2" }, T),
    "bg_f · shell: make -j2 all && make install · ✗ failed · 2h00m\nBuild\nexit status: 2\nerror: exit status 2\n\n" +
    "output (tail):\nboom\n", "detail of a failed command: exit, error, output tail");
  eq(detailText(shell, {}, T), "bg_s1 · shell: make check · ○ pending · #2 in the queue\nRun the tests",
    "detail of a pending task: its queue place");
}

// ---- an isolated task (isolation "worktree": docs/worktrees.md) ----
{
  const WT = "/home/u/.local/share/opencode/ocbg/p1/worktrees/bg_w1";
  const iso = { ...agent, id: "bg_w1", branch: "ocbg/bg_w1" };
  eq(taskLine(iso, T), "● running Fix the parser · general · ocbg/bg_w1 · 1m05s · 1.2k tok · $0.0042",
    "an isolated task's page line names its branch");
  eq(taskRows(iso, T), ["● running Fix the parser", "general · 1m05s · 1.2k tok · $0.0042"],
    "the sidebar's rows leave the branch out");
  eq(detailText(iso, null, T), "bg_w1 · agent general · ● running · 1m05s\nFix the parser\nbranch: ocbg/bg_w1\n" +
    "usage: 1.2k tok · $0.0042 · 5 tool calls\nrecent tools: read, edit\n\n(loading…)",
    "an isolated task's detail before the reply: its branch, from the view");
  const running = { id: "bg_w1", status: "running", worktree: { path: WT, branch: "ocbg/bg_w1" } };
  eq(detailText(iso, running, T), "bg_w1 · agent general · ● running · 1m05s\nFix the parser\nbranch: ocbg/bg_w1\n" +
    `worktree: ${WT}\nusage: 1.2k tok · $0.0042 · 5 tool calls\nrecent tools: read, edit`,
    "while it runs: its branch and folder, no report yet");
  const report = "Branch: ocbg/bg_w1 (from 5e6f7a8b), 1 commit: 1 file changed, 1 insertion(+)\n" +
    `Uncommitted in ${WT}: 1 file changed, 1 insertion(+); 1 untracked file\n` +
    "Changed since 5e6f7a8b (tracked files, committed or not):\n   a.txt | 2 ++\n   b.txt | 1 +\n" +
    "   2 files changed, 3 insertions(+)\nUntracked:\n  made.txt\n";
  const ended = { ...iso, status: "completed", ended: T - 5000, recent: undefined };
  eq(detailText(ended, { id: "bg_w1", status: "completed", answer: "Fixed.", tokens: 1234, cost: 0.0042,
    worktree: { path: WT, branch: "ocbg/bg_w1", report } }, T),
    "bg_w1 · agent general · ✓ done · 1m00s\nFix the parser\nbranch: ocbg/bg_w1\n" +
    `worktree: ${WT}\nusage: 1.2k tok · $0.0042 · 5 tool calls\n\nin its worktree:\n` +
    "Branch: ocbg/bg_w1 (from 5e6f7a8b), 1 commit: 1 file changed, 1 insertion(+)\n" +
    "Uncommitted: 1 file changed, 1 insertion(+); 1 untracked file\n" +
    "Changed since 5e6f7a8b (tracked files, committed or not):\n   a.txt | 2 ++\n   b.txt | 1 +\n" +
    "   2 files changed, 3 insertions(+)\nUntracked:\n  made.txt\n\nlatest answer:\nFixed.",
    "after the run: the report (commits, diffstat, uncommitted, untracked), the folder named once, then the answer");
  eq(detailText(agent, { id: "bg_a1", status: "running", answer: "Found it." }, T),
    "bg_a1 · agent general · ● running · 1m05s\nFix the parser\nusage: 1.2k tok · $0.0042 · 5 tool calls\n" +
    "recent tools: read, edit\n\nlatest answer:\nFound it.", "a task not isolated: no branch, worktree or report");
  eq(detailText(agent, { id: "bg_a1", status: "running", answer: "Found it.", worktree: "x" }, T),
    detailText(agent, { id: "bg_a1", status: "running", answer: "Found it." }, T), "a malformed worktree is ignored");
}

// ---- the confirmation rule ----
{
  const at = (ms, cost) => ({ ...agent, started: T - ms, cost });
  ok(!needsConfirm(at(119000, 0.5), T), "no confirmation up to 2 minutes and $0.50");
  ok(needsConfirm(at(121000, 0), T), "confirmation after 2 minutes");
  ok(needsConfirm(at(1000, 0.51), T), "confirmation above $0.50");
  ok(!needsConfirm(shell, T), "a pending task: no confirmation");
  eq(confirmText(at(185000, 0.6), T), "Stop \"Fix the parser\"? It has run 3m05s and cost $0.60; its work so far is kept.",
    "the confirmation's text");
}

// ---- attention ----
{
  const att = createAttention();
  const w = { ...agent, waiting: "bash: rm -rf build" };
  eq(attentionFor(att, view(1, T, [agent, shell])), [], "nothing to say while tasks run");
  eq(attentionFor(att, view(2, T, [w, shell])),
    [{ title: "A background task waits for you", message: "Fix the parser: bash: rm -rf build" }], "a task newly waiting");
  eq(attentionFor(att, view(3, T, [w, shell])), [], "the same question again: said once");
  eq(attentionFor(att, view(4, T, [agent, shell])), [], "answered: nothing");
  eq(attentionFor(att, view(5, T, [{ ...agent, waiting: "edit: a.c" }, shell])).length, 1, "a new question: said");
  eq(attentionFor(att, view(6, T, [{ ...agent, status: "completed" }, { ...shell, status: "running" }])), [],
    "one of two ended: nothing");
  eq(attentionFor(att, view(7, T, [{ ...agent, status: "completed" }, { ...shell, status: "cancelled" }])),
    [{ title: "Background tasks", message: "2 background tasks finished" }], "the last live task ended: finished");
  eq(attentionFor(att, view(8, T, [{ ...agent, status: "completed" }, { ...shell, status: "cancelled" }])), [],
    "finished: said once");
  const fresh = createAttention();
  eq(attentionFor(fresh, view(9, T, [{ ...agent, status: "completed" }])), [],
    "tasks already ended when the TUI came: nothing");
  eq(attentionFor(fresh, view(1, T, [{ ...agent, status: "completed", waiting: "bash: ls" }])), [],
    "an ended task's stale question: nothing");
}

// ---- a question asked below a task (max_depth 2 or more) ----
{
  const q = { id: "per_9", task: "bg_g1", description: "Grandchild", what: "bash: rm -rf build" };
  const qw = { id: "per_8", task: "bg_g2", description: "", what: "edit: a.c", directory: "/wt/bg_g2" };
  const top = { ...agent, questions: [q] };
  eq(questionsOf(top), [q], "the questions on a live line");
  eq(questionsOf({ ...top, questions: [q, { id: 3 }, null, { id: "", task: "x", what: "y" }] }), [q],
    "malformed questions are dropped");
  eq(questionsOf({ ...top, status: "completed" }), [], "an ended task's line has none");
  ok(isWaiting(top) && !isWaiting(agent), "a question below marks the line waiting");
  eq(taskLine(top, T), "● running ⚠ Fix the parser · general · 1m05s · 1.2k tok · $0.0042", "with the ⚠ mark");
  eq(taskRows(top, T)[0], "● running ⚠ Fix the parser", "in the sidebar too");
  eq(summaryText([top, shell]), "1 running · 1 pending · 1 waiting for you · $0.0042", "and in the summary");
  eq(detailText({ ...top, questions: [q, qw] }, { id: "bg_a1", status: "running" }, T).split("\n").slice(2, 4),
    ["⚠ bg_g1 (Grandchild) waits for you: bash: rm -rf build", "⚠ bg_g2 waits for you: edit: a.c · in /wt/bg_g2"],
    "the detail lists each question below, an isolated task's with its folder");
  eq(questionToAnswer(top), q, "the answer key answers the line's first question");
  eq(pageKeys(top, false), "↑↓ select · enter detail · s stop · a answer · o open session · esc back",
    "the page's keys offer a answer on a line with a question");
  eq(pageKeys(top, true), "s stop · a answer · o open session · esc back to the list", "in its detail too");
  eq(pageKeys(agent, false), "↑↓ select · enter detail · s stop · o open session · esc back", "not on a line without");
  eq(pageKeys(undefined, false), "↑↓ select · enter detail · s stop · o open session · esc back", "nor on an empty page");
  eq(questionToAnswer(agent), null, "none on a line without one");
  eq(answerTitle(q, "/home/u/proj"), "Permission required\nbg_g1 (Grandchild) asks: bash: rm -rf build\nin /home/u/proj",
    "the dialog names the task, the question and the project's folder");
  eq(answerTitle(qw, "/home/u/proj"), "Permission required\nbg_g2 asks: edit: a.c\nin /wt/bg_g2", "or the worktree's");
  eq(answerTitle(q, undefined), "Permission required\nbg_g1 (Grandchild) asks: bash: rm -rf build", "no folder known: none said");
  eq(REPLIES.map((r) => `${r.value}=${r.title}`), ["once=Allow once", "always=Allow always", "reject=Reject"],
    "OpenCode's three answers, in its words");
  eq(replyArgs(q, "once", "/home/u/proj"), { requestID: "per_9", reply: "once", directory: "/home/u/proj" },
    "a project task's answer goes to the project's folder");
  eq(replyArgs(qw, "reject", "/home/u/proj"), { requestID: "per_8", reply: "reject", directory: "/wt/bg_g2" },
    "an isolated task's to its worktree's");
  eq(replyArgs(q, "always", undefined), { requestID: "per_9", reply: "always" }, "no folder known: none sent");
  const att = createAttention();
  const own = { ...agent, waiting: "bash: ls", questions: [{ id: "per_1", task: "bg_a1", what: "bash: ls" }, q] };
  eq(attentionFor(att, view(1, T, [own])), [
    { title: "A background task waits for you", message: "Fix the parser: bash: ls" },
    { title: "A background task waits for you", message: "Grandchild (under Fix the parser): bash: rm -rf build" }],
  "the person is called once for the task's own question and once for the one below");
  eq(attentionFor(att, view(2, T, [own])), [], "each once");
  const att2 = createAttention();
  const b = { ...agent, id: "bg_g1", description: "Grandchild", waiting: q.what, questions: [q] };
  eq(attentionFor(att2, view(1, T, [b], "ses_C")).length, 1, "a grandchild's question, on its own line in its parent's view");
  eq(attentionFor(att2, view(1, T, [top])), [], "and again below its top-level ancestor's line: said once");
  const v = parseCommand(cmd("ocbg.view", view(1, T, [{ ...agent, questions: [{ ...q, what: "bash: \x1b]0;pwn\x07ls" }] }])));
  eq(v.view.tasks[0].questions[0].what, "bash: ls", "a question's text is made safe for the screen");
}

// ---- requests and replies ----
{
  const a = createRequests("tA"), b = createRequests("tB");
  const sync = request(a, "sync");
  eq(sync.command, 'ocbg.ui {"v":1,"id":"tA-1","action":"sync"}', "the sync request");
  const stop = request(a, "stop", "bg_a1");
  eq(stop.command, 'ocbg.ui {"v":1,"id":"tA-2","action":"stop","task_id":"bg_a1"}', "a stop request");
  const other = request(b, "detail", "bg_a1");
  eq(takeReply(a, { v: 1, id: other.id, ok: true }), null, "another TUI's reply is not taken");
  eq(takeReply(a, { v: 1, id: sync.id }), null, "sync has no reply to wait for");
  eq(takeReply(a, { v: 1, id: stop.id, ok: false, error: "already ended" }),
    { action: "stop", task_id: "bg_a1", id: "tA-2" }, "the stop's reply is matched");
  eq(takeReply(a, { v: 1, id: stop.id, ok: true }), null, "a reply is taken once");
  eq(takeReply(b, { v: 1, id: other.id, ok: true })?.action, "detail", "the other TUI takes its own");
}

process.exit(summary("tui_state"));

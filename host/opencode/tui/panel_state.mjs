// The task panel's state, without OpenCode: what the TUI entry (ocbg_tui.js)
// keeps of the server part's views, which view a screen shows, the texts it
// draws, when a stop asks first, when to call for the person's attention, and
// the requests it sends. The channel is docs/panel.md's; everything here is a
// pure function of its inputs (clocks are passed in), so node tests it alone.

export const VIEW = "ocbg.view";
export const UI = "ocbg.ui";
export const REPLY = "ocbg.reply";

export const LIVE = new Set(["pending", "running", "resumed"]);
export const isLive = (t) => LIVE.has(t.status);

// A stop asks first when the task has run longer than this or spent more.
export const CONFIRM_MS = 2 * 60 * 1000;
export const CONFIRM_COST = 0.5;

const isObj = (x) => x !== null && typeof x === "object" && !Array.isArray(x);

// ---- text from a task, as it may reach the screen ----
// Descriptions, answers, command output, questions, agent and branch names are
// written by a model or a command: none may move the cursor, rewrite the
// screen or set the terminal's title, whatever the TUI's renderer would make
// of it. An escape sequence (ESC or its C1 form: CSI, OSC, DCS, SOS, PM, APC
// up to BEL or ST, two-byte escapes) is removed whole, left to right; CR LF,
// CR, LF, U+2028, U+2029 are a line break (multiline) or a space; tab a space;
// any other C0 or C1 control, DEL, and the bidirectional controls (U+061C,
// U+200E-F, U+202A-E, U+2066-9) U+FFFD. The adapter's toasts get the same
// (host/opencode/util.c, screen_text).
// A control string (OSC, DCS, SOS, PM, APC: up to BEL, ESC \, ST or the end),
// a CSI (parameters, intermediates, final), a two-byte escape (intermediates, final).
const SEQUENCE =
  /(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[\s\S]*?(?:\x07|\x1b\\|\x9c|$)|(?:\x1b\[|\x9b)[\x20-\x3f]*[\x40-\x7e]?|\x1b[\x20-\x2f]*[\x30-\x7e]/g;
const LINE_BREAK = /\r\n?|[\n\u2028\u2029]/g;
// (LF excepted: after LINE_BREAK, only a multi-line text has one, to keep)
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
export function screenText(s, multiline = false) {
  if (typeof s !== "string") return s;
  return s.replace(SEQUENCE, "").replace(LINE_BREAK, multiline ? "\n" : " ").replace(/\t/g, " ")
    .replace(CONTROL, "\ufffd");
}

// The fields that keep their line breaks (the detail's multi-line texts).
const MULTILINE = new Set(["answer", "output", "error", "report"]);
// Every string of a message from the server part, made screenText (field by
// field: a multi-line one keeps its line breaks), before anything keeps it.
function cleanAll(x, key) {
  if (typeof x === "string") return screenText(x, MULTILINE.has(key));
  if (Array.isArray(x)) return x.map((v) => cleanAll(v, key));
  if (isObj(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, cleanAll(v, k)]));
  return x;
}

// One tui.command.execute command: {kind: "view", view} | {kind: "reply", reply},
// or null for anything else (another plugin's command, bad JSON, another version).
export function parseCommand(command) {
  if (typeof command !== "string") return null;
  const sp = command.indexOf(" ");
  if (sp < 0) return null;
  const prefix = command.slice(0, sp);
  if (prefix !== VIEW && prefix !== REPLY) return null;
  let msg;
  try { msg = cleanAll(JSON.parse(command.slice(sp + 1))); } catch { return null; }
  if (!isObj(msg) || msg.v !== 1) return null;
  if (prefix === VIEW) {
    if (typeof msg.session !== "string" || !Number.isFinite(msg.seq) || !Number.isFinite(msg.now)) return null;
    if (!Array.isArray(msg.tasks)) return null;
    const tasks = msg.tasks.filter((t) => isObj(t) && typeof t.id === "string" && typeof t.status === "string");
    return { kind: "view", view: { ...msg, tasks } };
  }
  if (typeof msg.id !== "string") return null;
  return { kind: "reply", reply: msg };
}

// ---- the views, newest per parent session ----
export function createViews() {
  return new Map(); // session -> {view, offset}: offset = local clock - server clock at arrival
}

// Keeps view (received at local time localNow) when it is newer than the one
// kept for its session: a greater seq, or (a restarted server part counts
// seq anew) a smaller seq built later by the server's clock. Whether kept.
export function applyView(views, view, localNow) {
  const old = views.get(view.session);
  if (old) {
    const o = old.view;
    const newer = view.seq > o.seq || (view.seq < o.seq && view.now > o.now);
    if (!newer) return false;
  }
  views.set(view.session, { view, offset: localNow - view.now });
  return true;
}

// The view to show on the screen of session sid: its own, else the view that
// has sid as a task's session (an agent task's child), else its parent's (up
// the chain). parentOf(id) → the parent session id or undefined.
export function viewFor(views, sid, parentOf) {
  const seen = new Set();
  for (let s = sid; s && !seen.has(s) && seen.size < 16; s = parentOf(s)) {
    seen.add(s);
    const own = views.get(s);
    if (own) return own;
    for (const e of views.values()) if (e.view.tasks.some((t) => t.session === s)) return e;
  }
  return null;
}

// ---- texts ----
export function fmtElapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}
export function fmtTokens(n) {
  if (n < 1000) return `${n} tok`;
  if (n < 1e6) return `${(n / 1000).toFixed(1)}k tok`;
  return `${(n / 1e6).toFixed(1)}M tok`;
}
export const fmtCost = (c) => `$${c < 0.01 ? c.toFixed(4) : c.toFixed(2)}`;
const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);

// The server's clock now, from the local one and the view's offset.
export const serverNow = (entry, localNow) => localNow - entry.offset;

// How long the task has run (0 while pending), at server time now.
export function elapsedMs(t, now) {
  if (!Number.isFinite(t.started)) return 0;
  return (Number.isFinite(t.ended) ? t.ended : now) - t.started;
}

export const GLYPH = { pending: "○", running: "●", resumed: "●", completed: "✓", error: "✗", cancelled: "■" };
export const WORD = { pending: "pending", running: "running", resumed: "resumed", completed: "done", error: "failed",
  cancelled: "cancelled" };
export const WAITING_MARK = "⚠";

// ---- permission questions ----
// The open questions on a live task's line: its own and those of the tasks it
// launched (max_depth 2 or more), which OpenCode's own prompt shows on no
// screen (docs/panel.md). Each {id, task, what, description, directory?}.
export function questionsOf(t) {
  if (!isLive(t) || !Array.isArray(t.questions)) return [];
  return t.questions.filter((q) => isObj(q) && typeof q.id === "string" && q.id !== "" &&
    typeof q.task === "string" && typeof q.what === "string");
}
// Whether live task t waits for the person: its own question or one below it.
export const isWaiting = (t) => isLive(t) && (Boolean(t.waiting) || questionsOf(t).length > 0);
// The questions of the tasks t launched (its own shows in OpenCode's prompt).
export const belowQuestions = (t) => questionsOf(t).filter((q) => q.task !== t.id);

// The page's key line, for the task selected (or whose detail is open):
// "a answer" only while its line has a question.
export function pageKeys(t, inDetail) {
  const answer = t && questionsOf(t).length ? "a answer · " : "";
  return inDetail ? `s stop · ${answer}o open session · esc back to the list`
    : `↑↓ select · enter detail · s stop · ${answer}o open session · esc back`;
}

// OpenCode's own three answers, in its words.
export const REPLIES = [
  { value: "once", title: "Allow once" },
  { value: "always", title: "Allow always" },
  { value: "reject", title: "Reject" },
];
// The question the page's answer key answers on t's line (the first), or null.
export const questionToAnswer = (t) => (t ? questionsOf(t)[0] || null : null);
// The answer dialog's title: a short first line (the dialog draws "esc" at
// its right end), the question, and the folder it belongs to: an isolated
// task's worktree, else the project's (projectDir, the TUI's own).
export function answerTitle(q, projectDir) {
  const who = q.description ? `${q.task} (${clip(q.description, 40)})` : q.task;
  const dir = q.directory || projectDir;
  return `Permission required\n${who} asks: ${q.what}${dir ? `\nin ${dir}` : ""}`;
}
// The argument of OpenCode's permission reply (SDK v2 client.permission.reply:
// POST /permission/{requestID}/reply?directory=…): the answer goes to the
// question's own folder, as OpenCode's prompt sends it.
export function replyArgs(q, reply, projectDir) {
  const args = { requestID: q.id, reply };
  const dir = q.directory || projectDir;
  if (typeof dir === "string" && dir) args.directory = dir;
  return args;
}

// The status part of a line: "● running", "○ pending #2", "● running ⚠".
export function statusText(t) {
  let s = `${GLYPH[t.status] || "?"} ${WORD[t.status] || t.status}`;
  if (t.status === "pending" && Number.isFinite(t.queue)) s += ` #${t.queue}`;
  if (isWaiting(t)) s += ` ${WAITING_MARK}`;
  return s;
}

// One line per task (the page's): status, description, agent or command, an
// isolated task's branch, elapsed, tokens, cost.
export function taskLine(t, now) {
  return [taskRows(t, now)[0], ...metaParts(t, now, true)].join(" · ");
}

// The same in two rows, for the narrow sidebar: status and description, then
// agent or command, elapsed, tokens, cost. The sidebar leaves out an isolated
// task's branch (its 40 columns would wrap it); the page and detail show it.
export function taskRows(t, now) {
  return [`${statusText(t)} ${clip(t.description || t.id, 40)}`, metaParts(t, now, false).join(" · ")];
}
function metaParts(t, now, withBranch) {
  const meta = [];
  if (t.agent) meta.push(t.agent);
  else if (t.command) meta.push(clip(t.command, 30));
  if (Number.isFinite(t.events)) meta.push(`${t.events} event${t.events === 1 ? "" : "s"}`); // a watched command
  if (Number.isFinite(t.expires) && isLive(t)) meta.push(`${fmtElapsed(t.expires - now)} left`);
  if (withBranch && typeof t.branch === "string" && t.branch) meta.push(t.branch);
  if (Number.isFinite(t.started)) meta.push(fmtElapsed(elapsedMs(t, now)));
  if (t.tokens > 0) meta.push(fmtTokens(t.tokens));
  if (t.cost > 0) meta.push(fmtCost(t.cost));
  return meta;
}

// "2 running · 1 pending · 1 waiting for you · 3 done · $0.42"; "" for no task.
export function summaryText(tasks) {
  if (!tasks.length) return "";
  const n = (f) => tasks.filter(f).length;
  const parts = [];
  const add = (k, word) => { if (k) parts.push(`${k} ${word}`); };
  add(n((t) => t.status === "running" || t.status === "resumed"), "running");
  add(n((t) => t.status === "pending"), "pending");
  add(n(isWaiting), "waiting for you");
  add(n((t) => t.status === "completed"), "done");
  add(n((t) => t.status === "error"), "failed");
  add(n((t) => t.status === "cancelled"), "cancelled");
  const cost = tasks.reduce((a, t) => a + (t.cost > 0 ? t.cost : 0), 0);
  if (cost > 0) parts.push(fmtCost(cost));
  return parts.join(" · ");
}

// The page's tasks: newest first (by created, then the view's order).
export function pageTasks(tasks) {
  return tasks.map((t, i) => ({ t, i }))
    .sort((a, b) => (b.t.created || 0) - (a.t.created || 0) || a.i - b.i).map((x) => x.t);
}

// The detail text of task t (from the view) with the reply's detail (or null
// while none came): lines joined with "\n".
export function detailText(t, detail, now) {
  const d = { ...t, ...(detail || {}) };
  const out = [];
  const what = t.kind === "shell" || t.kind === "monitor" ? `${t.kind}: ${t.command || ""}` : `agent ${t.agent || ""}`;
  const head = [t.id, what.trim(), `${GLYPH[d.status] || "?"} ${WORD[d.status] || d.status}`];
  if (Number.isFinite(t.started)) head.push(fmtElapsed(elapsedMs(t, now)));
  else if (d.status === "pending" && Number.isFinite(t.queue)) head.push(`#${t.queue} in the queue`);
  out.push(head.join(" · "));
  if (t.description) out.push(t.description);
  if (d.waiting && isLive(d)) out.push(`${WAITING_MARK} waiting for you: ${d.waiting}`);
  for (const q of belowQuestions(t))
    out.push(`${WAITING_MARK} ${q.task}${q.description ? ` (${q.description})` : ""} waits for you: ${q.what}` +
      (q.directory ? ` · in ${q.directory}` : ""));
  const wt = isObj(d.worktree) ? d.worktree : {};
  const str = (x) => (typeof x === "string" && x ? x : null);
  const branch = str(wt.branch) || str(t.branch), wtPath = str(wt.path), report = str(wt.report);
  if (branch) out.push(`branch: ${branch}`);
  if (wtPath) out.push(`worktree: ${wtPath}`);
  const use = [];
  if (d.tokens > 0) use.push(fmtTokens(d.tokens));
  if (d.cost > 0) use.push(fmtCost(d.cost));
  if (d.tools > 0) use.push(`${d.tools} tool call${d.tools === 1 ? "" : "s"}`);
  if (use.length) out.push(`usage: ${use.join(" · ")}`);
  if (Array.isArray(d.recent) && d.recent.length) out.push(`recent tools: ${d.recent.join(", ")}`);
  if (Number.isFinite(d.exit)) out.push(`exit status: ${d.exit}`);
  if (d.stopped_by_user) out.push("stopped by you");
  if (d.error) out.push(`error: ${d.error}`);
  // The report after a run (docs/worktrees.md), its folder named once, above.
  if (report)
    out.push("", "in its worktree:", (wtPath ? report.replace(`Uncommitted in ${wtPath}:`, "Uncommitted:") : report).trimEnd());
  if (typeof d.answer === "string" && d.answer) out.push("", "latest answer:", d.answer);
  if (typeof d.output === "string" && d.output) out.push("", "output (tail):", d.output);
  if (!detail) out.push("", "(loading…)");
  else if (typeof detail.unavailable === "string") out.push("", `(no detail: ${detail.unavailable})`);
  return out.join("\n");
}

// ---- stop ----
// Whether stopping t asks first: it has run more than CONFIRM_MS or cost more than CONFIRM_COST.
export function needsConfirm(t, now) {
  return elapsedMs(t, now) > CONFIRM_MS || (t.cost || 0) > CONFIRM_COST;
}
export const canStop = (t) => isLive(t);
export function confirmText(t, now) {
  const bits = [];
  if (Number.isFinite(t.started)) bits.push(`has run ${fmtElapsed(elapsedMs(t, now))}`);
  if (t.cost > 0) bits.push(`cost ${fmtCost(t.cost)}`);
  return `Stop "${t.description || t.id}"? It ${bits.join(" and ")}; its work so far is kept.`;
}

// ---- attention ----
// Calls for the person, each once: a live task newly waiting on a question
// (once per task and question), and a session's tasks all ended after some
// were live while this TUI watched ("N background tasks finished").
export function createAttention() {
  return { asked: new Set(), live: new Map() }; // live: session -> Set of task ids seen live
}
export function attentionFor(att, view) {
  const out = [];
  for (const t of view.tasks) {
    if (!isLive(t) || !t.waiting) continue;
    // By the question's id where the view has it: the same question comes in
    // two views (its task's line, and as a question below on its top-level
    // ancestor's line), and is said once.
    const own = questionsOf(t).find((q) => q.task === t.id);
    const key = own ? `${t.id}\n${own.id}` : `${t.id}\n${t.waiting}`;
    if (att.asked.has(key)) continue;
    att.asked.add(key);
    out.push({ title: "A background task waits for you", message: `${t.description || t.id}: ${t.waiting}` });
  }
  for (const t of view.tasks) {
    for (const q of belowQuestions(t)) {
      const key = `${q.task}\n${q.id}`;
      if (att.asked.has(key)) continue;
      att.asked.add(key);
      out.push({ title: "A background task waits for you",
        message: `${q.description || q.task} (under ${t.description || t.id}): ${q.what}` });
    }
  }
  const seen = att.live.get(view.session) || new Set();
  const liveNow = view.tasks.filter(isLive);
  for (const t of liveNow) seen.add(t.id);
  if (liveNow.length === 0 && seen.size > 0) {
    out.push({ title: "Background tasks", message: `${seen.size} background task${seen.size === 1 ? "" : "s"} finished` });
    seen.clear();
  }
  att.live.set(view.session, seen);
  return out;
}

// ---- requests ----
// Request ids unique to this TUI (two TUIs on one server take only their own replies).
export function createRequests(tag) {
  return { tag, n: 0, pending: new Map() };
}
// The command string of a request, registered as pending (sync: not, it has no reply).
export function request(reqs, action, taskId) {
  const id = `${reqs.tag}-${++reqs.n}`;
  const msg = { v: 1, id, action };
  if (taskId !== undefined) msg.task_id = taskId;
  if (action !== "sync") reqs.pending.set(id, { action, task_id: taskId });
  return { id, command: `${UI} ${JSON.stringify(msg)}` };
}
// The pending request a reply answers (then forgotten), or null: another TUI's, or already taken.
export function takeReply(reqs, reply) {
  const p = reqs.pending.get(reply.id);
  if (!p) return null;
  reqs.pending.delete(reply.id);
  return { ...p, id: reply.id };
}

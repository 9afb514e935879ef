// End-to-end: isolation "worktree" in real OpenCode (make e2e runs it after
// e2e_bash_perm.mjs; E2E_ONLY=worktree runs only it). A fresh git repository
// outside any other is the project; ocbg is listed in the global config (so
// OpenCode also loads a second copy of it for each worktree's folder, as it
// would for a user with ocbg installed globally); the fake model scripts the
// sub-agents (fake_model.mjs: "CHILD call bash {...}", "CHILD gate X").
//   denied       on a server whose permission config denies external_directory
//                for ocbg's data folder (the only change): an isolated launch is
//                refused with OpenCode's deny rule named, and nothing is made
//                (no folder, branch, child session or task); the same launch on
//                the same session after a restart without that rule starts.
//   twoWriters   two isolated tasks append to the same file, each in its own
//                worktree: the checkout is untouched, each notification names
//                its branch and diffstat, background_output shows it, and
//                background_clear removes both folders (their leftover work
//                committed) and keeps both branches; OpenCode never sets up an
//                instance for a removed folder again.
//   latency      the wake after a task's answer, isolated and not (printed, not
//                asserted: timing belongs to benchmarks). E2E_WAKE_ROUNDS rounds;
//                E2E_WORKTREE_FILES=N: N more files in the project; E2E_WAKE_TRACE=1:
//                wake_trace.js loaded too, and the hops' medians printed.
// E2E_WORKTREE_CASES=latency,...: only those (denied, which starts the server, always).
//   parentDeleted an isolated task leaves a file uncommitted, and completes or
//                still runs; its launching session is deleted through the API:
//                the run is stopped, the folder goes, the file is committed on
//                the branch, which stays; the checkout is untouched; OpenCode
//                sets up no instance for the folder again.
//   deletedWhileDown the launching session of a completed isolated task is
//                deleted by a server that does not load ocbg: at the next start
//                with ocbg, the folder goes, the work committed on the branch.
//   hostileWriters with bash denied, two sub-agents only write files (OpenCode's
//                write tool): one points its .git at a repository of its own
//                whose config runs a command (core.fsmonitor) and writes a file
//                git ignores, the other points .git at the main checkout's.
//                After their reports and background_clear: no command of theirs
//                and none of the user's hooks ran, the main checkout's branch,
//                index and files are untouched, each task's work is on its own
//                branch, and the ignored file is kept and named in the answer.
//   restart      an isolated task cut short by a server restart: reconciled (it
//                ends in error, "interrupted"), its worktree and branch kept and
//                still named.
//   delegates    (max_depth 2) an isolated task launches its own with
//                background_task: that task's session is made in the worktree,
//                its notification wakes the isolated task, and the top parent is
//                notified of the isolated task once, after.
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e_worktree.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "./fake_model.mjs";
import {
  api, diag, events, fakeModelConfig, followEvents, gitRepoWithCommit, isIdle, isolatedEnv, messages, newSession, ocbgCopy, ok,
  provideConfigDeps, runSuite, say, secs, setBase, startServe, staysFalse, stopEvents, stopGroup, taskIds, textOf,
  toolEnded, toolParts, turnEnds, userMessage, userTexts, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), OCBG_DIR = opt("ocbg-dir"), WORK = opt("work");
if (!BIN || !NPM_DIR || !OCBG_DIR || !WORK) {
  console.error("usage: e2e_worktree.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR");
  process.exit(2);
}

// realpath: serve's cwd is the directory OpenCode compares paths with.
const ROOT = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "ocbg-worktree-"));
const PROJECT = path.join(ROOT, "project"), HOME = path.join(ROOT, "home");
const CONFIG = path.join(HOME, ".config");
const LOG = path.join(WORK, "opencode-worktree.log"), TRACE = path.join(WORK, "wake-trace.log");
// ocbg's data folders (one per project) in OpenCode's data directory.
const DATA = path.join(HOME, ".local/share/opencode/ocbg");
// OpenCode's external_directory rules: every folder allowed, or every one
// but those under ocbg's data folders, where the worktrees are made.
const ALLOW = "allow", DENY_WORKTREES = { "*": "allow", [`${DATA}/*`]: "deny" };
let server = null, fake = null, serverConfig = null, starts = 0;

async function stopAll() {
  stopEvents();
  if (server) await stopGroup(server, "SIGTERM", 5000);
  if (fake) { await fake.close(); fake = null; }
  try { fs.rmSync(ROOT, { recursive: true, force: true }); } catch {}
}

let git = null; // git(...args) in PROJECT, once made

function makeWorld() {
  ok(spawnSync("git", ["-C", ROOT, "rev-parse", "--git-dir"], { stdio: "ignore" }).status !== 0,
    `the project's parent ${ROOT} is in no git repository`);
  git = gitRepoWithCommit(PROJECT);
  // E2E_WORKTREE_FILES=N: N more files in the project (100 a folder, 40
  // lines each), to time the wake in a large repository.
  const files = Number(process.env.E2E_WORKTREE_FILES) || 0;
  for (let i = 0; i < files; i++) {
    const sub = path.join(PROJECT, `src${String(Math.floor(i / 100)).padStart(3, "0")}`);
    if (i % 100 === 0) fs.mkdirSync(sub, { recursive: true });
    fs.writeFileSync(path.join(sub, `file${i % 100}.c`), `int v${i} = 0; /* a line of code */\n`.repeat(40));
  }
  if (files) { git("add", "."); git("commit", "-q", "-m", "files"); }
  const dir = path.join(ROOT, "ocbg");
  ocbgCopy(dir, OCBG_DIR, NPM_DIR);
  provideConfigDeps(path.join(CONFIG, "opencode"), NPM_DIR);
  // E2E_WAKE_TRACE=1: wake_trace.js (bench-only) listed before ocbg, in every
  // instance: the child's hops in its worktree's, the parent's in the project's.
  const trace = process.env.E2E_WAKE_TRACE ? [[fileURLToPath(new URL("./wake_trace.js", import.meta.url)),
    { file: TRACE }]] : [];
  serverConfig = { ...fakeModelConfig(fake.port), snapshot: false, plugin: [...trace, [path.join(dir, "ocbg.js"), {}]] };
  // A sub-agent the delegates scenario's rules ask about (task: ask).
  serverConfig.agent = { ...serverConfig.agent,
    "e2e-wt-asked": { description: "A sub-agent the e2e permission rules ask about", mode: "subagent" } };
}

// Starts `opencode serve` in the project, its permission config's
// external_directory rule set to externalDirectory (nothing else differs).
async function startServer(externalDirectory = ALLOW, withOcbg = true, permission = {}, ocbgOptions = {}) {
  const cfg = { ...serverConfig,
    permission: { ...serverConfig.permission, ...permission, external_directory: externalDirectory } };
  // ocbg is listed last (E2E_WAKE_TRACE's plugin, when listed, comes before it)
  const [ocbg] = serverConfig.plugin.at(-1);
  cfg.plugin = withOcbg ? [...serverConfig.plugin.slice(0, -1), [ocbg, ocbgOptions]] : [];
  const s = await startServe({ bin: BIN, cwd: PROJECT, env: isolatedEnv(HOME, CONFIG, cfg), logPath: LOG,
    append: starts++ > 0 });
  server = s.proc;
  setBase(s.base);
  if (s.healthy) followEvents();
  diag(`opencode serve pid ${server.pid} (start ${starts}, log ${LOG}, ` +
    `external_directory ${JSON.stringify(externalDirectory)})`);
  return s.healthy;
}

async function restartServer(externalDirectory, withOcbg = true, permission = {}, ocbgOptions = {}) {
  await stopGroup(server, "SIGTERM", 15000);
  stopEvents();
  return startServer(externalDirectory, withOcbg, permission, ocbgOptions);
}

// Has the model of session sid call ocbg's tool `name` with args: the tool
// part's state once the call ended (null at the deadline).
async function tool(sid, name, args, timeoutMs = 30000) {
  const since = (await messages(sid)).length;
  await say(sid, `E2E ${name}${args !== undefined ? " " + JSON.stringify(args) : ""}`);
  return toolEnded(sid, name, since, timeoutMs);
}
// Launches one background task from session sid: the state of the call.
const launchState = (sid, args) => tool(sid, "background_task", { agent: "general", ...args }, 60000);
// Its launch answer (the tool part's output, or its error).
async function launch(sid, args) {
  const state = await launchState(sid, args);
  return state?.output || state?.error || "";
}

// The notification of task id in session sid (its text); null at the deadline.
async function notification(sid, id, timeoutMs = 60000) {
  const m = await userMessage(sid, `Background task completed: ${id}`, timeoutMs);
  return m ? textOf(m.msg) : null;
}

const wtRoot = () => {
  const base = path.join(HOME, ".local/share/opencode/ocbg");
  const projects = fs.existsSync(base) ? fs.readdirSync(base) : [];
  return projects.map((p) => path.join(base, p, "worktrees")).find((d) => fs.existsSync(d)) || null;
};
// OpenCode's log lines that set up an instance for directory dir.
const instancesFor = (dir) =>
  fs.readFileSync(LOG, "utf8").split("\n").filter((l) => l.includes("creating instance") && l.includes(dir)).length;
// Whether OpenCode set up each removed worktree folder's instance once (for
// its task's run), never again: a request about a removed folder would set up
// a bogus instance there. Stray requests are given 1.5 s to come.
const instanceOnlyForItsRun = async (dirs) =>
  await staysFalse(() => dirs.some((d) => instancesFor(d) > 1), 1500) && dirs.every((d) => instancesFor(d) === 1);
const hasBranch = (id) => git("rev-parse", "--verify", "-q", `refs/heads/ocbg/${id}`).status === 0;

async function twoWriters() {
  const sid = await newSession("writers");
  const append = (who) => `CHILD call bash ${JSON.stringify({ command: `echo from ${who} >> shared.txt && pwd`,
    description: `append ${who}` })}`;
  const a = await launch(sid, { description: "writer A", prompt: append("A"), isolation: "worktree" });
  const b = await launch(sid, { description: "writer B", prompt: append("B"), isolation: "worktree" });
  const [idA] = taskIds(a), [idB] = taskIds(b);
  ok(idA && idB && idA !== idB, `two isolated tasks launched (${idA}, ${idB})`, a.slice(0, 300));
  ok(/Worktree: \/\S+\/worktrees\/bg_\S+, on new branch ocbg\/bg_\S+ from [0-9a-f]{8}/.test(a),
    "the launch answer says where the worktree is and its branch", a);
  const nA = await notification(sid, idA), nB = await notification(sid, idB);
  ok(nA && nB, "both notifications arrived");
  for (const [id, n, who] of [[idA, nA, "A"], [idB, nB, "B"]]) {
    ok(n?.includes(`Branch: ocbg/${id} (from `), `${who}'s notification names its branch`, n);
    ok(/Uncommitted in \S+: 1 file changed, 1 insertion\(\+\); 0 untracked files/.test(n || ""),
      `${who}'s notification gives its diffstat`, n);
    ok(n?.includes("shared.txt | 1 +"), `${who}'s notification has the per-file stat`, n);
  }
  ok(fs.readFileSync(path.join(PROJECT, "shared.txt"), "utf8") === "base\n", "the main checkout's file is untouched");
  ok(git("status", "--porcelain").stdout === "", "the main checkout is clean");
  const root = wtRoot();
  ok(root && !root.startsWith(PROJECT), `the worktrees are outside the checkout (${root})`);
  for (const [id, who] of [[idA, "A"], [idB, "B"]]) {
    const text = root ? fs.readFileSync(path.join(root, id, "shared.txt"), "utf8") : "";
    ok(text === `base\nfrom ${who}\n`, `${who}'s worktree holds its own edit`, JSON.stringify(text));
  }
  const out = await tool(sid, "background_output", { task_id: idA });
  ok(out?.output?.includes(`Worktree: ${root}/${idA} (branch ocbg/${idA};`), "background_output names the worktree",
    out?.output);
  const cleared = await tool(sid, "background_clear", undefined, 60000);
  const c = cleared?.output || "";
  for (const [id, who] of [[idA, "A"], [idB, "B"]]) {
    ok(c.includes(`- ${id}: its worktree was removed; its work is on branch ocbg/${id} (what it left uncommitted was ` +
      "committed there first)."), `clear says ${who}'s work is on its branch`, c);
    ok(!fs.existsSync(path.join(root || "/nonexistent", id)), `${who}'s worktree folder is removed`);
    const shown = git("show", `ocbg/${id}:shared.txt`).stdout;
    ok(shown === `base\nfrom ${who}\n`, `${who}'s branch is kept, with its edit committed`, shown);
  }
  ok(await instanceOnlyForItsRun([`${root}/${idA}`, `${root}/${idB}`]),
    "OpenCode set up each worktree's instance once, never again after its removal");
}

// The wake after the answer: from the child's last assistant message's end
// to the notification's creation in the parent, isolated and not.
async function latency() {
  const sid = await newSession("latency");
  const res = { none: [], worktree: [] }, ROUNDS = Number(process.env.E2E_WAKE_ROUNDS) || 5;
  for (let r = 0; r < ROUNDS; r++) {
    for (const iso of ["none", "worktree"]) {
      const desc = `fast ${iso} ${r}`;
      const out = await launch(sid, { description: desc, prompt: `CHILD ${desc}`, isolation: iso });
      const [id] = taskIds(out);
      const n = await userMessage(sid, `Background task completed: ${id}`, 60000);
      if (!n) { ok(false, `${desc}: notified`); continue; }
      const children = (await api("GET", `/session/${sid}/children`)).json || [];
      const childId = children.find((s) => (s.title || "").startsWith(desc))?.id;
      const last = (await messages(childId)).filter((m) => m.info.role === "assistant").at(-1);
      if (last) res[iso].push(n.msg.info.time.created - last.info.time.completed);
      if (last && process.env.E2E_WAKE_TRACE) traceHops(iso, childId, sid, n.msg.info.time.created);
    }
  }
  if (process.env.E2E_WAKE_TRACE) printHops();
  ok(res.none.length === ROUNDS && res.worktree.length === ROUNDS,
    `${ROUNDS} tasks of each kind notified, each after its child's answer`);
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  diag(`notification after the child's answer (ms): checkout ${res.none.join(" ")}, worktree ${res.worktree.join(" ")}`);
  console.log(`# worktree_wake_ms: ${median(res.worktree)} ms median of ${ROUNDS} (same path, not isolated: ` +
    `${median(res.none)} ms)`);
}

// E2E_WAKE_TRACE: each round's hops from wake_trace.js's lines (server clock,
// 0.01 ms): the child's answer stored, its message completed, its session.idle
// (published in its own instance), ocbg's promptAsync of the notification,
// OpenCode's chat.message for it. Medians by kind, printed.
const hops = { none: [], worktree: [] };
function traceHops(iso, child, parent, createdMs) {
  let recs = [];
  try { recs = fs.readFileSync(TRACE, "utf8").split("\n").map((l) => l.split(" ")).filter((f) => f.length === 3); } catch {}
  const at = (hop, sid, pred = () => true) => recs.filter(([, h, s]) => h === hop && s === sid).map(([t]) => Number(t))
    .filter(pred);
  const answer = at("answer", child)[0], completed = at("completed", child)[0], idle = at("idle", child)[0];
  const call = at("pa_call", parent, (t) => t >= idle && t <= createdMs + 1)[0];
  const chat = at("chat", parent, (t) => t >= call)[0];
  const d = (a, b) => (a === undefined || b === undefined ? NaN : b - a);
  hops[iso].push({ answer_to_completed: d(answer, completed), completed_to_idle: d(completed, idle),
    idle_to_call: d(idle, call), call_to_chat: d(call, chat), completed_to_chat: d(completed, chat) });
}
function printHops() {
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  for (const iso of ["none", "worktree"]) {
    const keys = Object.keys(hops[iso][0] || {});
    diag(`wake hops, ${iso} (median ms): ` + keys.map((k) => `${k} ${median(hops[iso].map((h) => h[k])).toFixed(1)}`)
      .join(", "));
  }
}

// On a server whose only change is a deny rule for ocbg's data folders
// (DENY_WORKTREES): OpenCode's permission machinery refuses the folder at
// once (no question asked), ocbg answers with the rule OpenCode named, and
// makes nothing. Then the same launch, on a server without the rule, starts.
async function denied() {
  const sid = await newSession("denied");
  const from = events.length;
  const args = { description: "refused", prompt: "CHILD fast refused", isolation: "worktree" };
  const st = await launchState(sid, args);
  const [id] = taskIds(st?.error);
  // OpenCode's project id (the repository's first commit), which names ocbg's data folder.
  const project = fs.readFileSync(path.join(PROJECT, ".git/opencode"), "utf8").trim();
  const root = path.join(DATA, project, "worktrees");
  ok(st?.status === "error" && id, "the isolated launch is refused: the tool call ends in error", st);
  ok(st?.error === `Permission denied: making the task's git worktree in ${root}/${id}, outside the project ` +
    `(permission "external_directory"): OpenCode's permission rules deny it (external_directory "${DATA}/*": ` +
    "deny). No task was started.", "its text names OpenCode's deny rule and says no task was started", st?.error);
  const seen = events.slice(from);
  ok(seen.some((e) => e.type === "message.part.updated" && e.properties.part?.tool === "background_task" &&
    e.properties.part.state?.status === "error") && !seen.some((e) => e.type === "permission.asked"),
    "OpenCode asked nobody (its event stream has the refused call, no permission.asked): its rule refused");
  const made = fs.existsSync(root) ? fs.readdirSync(root) : [];
  ok(made.length === 0, "no folder under the data folder's worktrees/", made);
  ok(git("branch", "--list", "ocbg/*").stdout === "", "no ocbg/* branch in the repository",
    git("branch", "--list", "ocbg/*").stdout);
  ok(git("worktree", "list", "--porcelain").stdout.split("\n").filter((l) => l.startsWith("worktree ")).length === 1,
    "git knows no worktree but the checkout", git("worktree", "list").stdout);
  const kids = (await api("GET", `/session/${sid}/children`)).json;
  ok(Array.isArray(kids) && kids.length === 0, "no child session", kids);
  const list = await tool(sid, "background_list");
  ok(list?.output === "No background tasks found", "background_list lists no task", list);
  const out = await tool(sid, "background_output", { task_id: id });
  ok(out?.status === "error" && out.error === `Task not found: ${id}. Use background_list to see available tasks.`,
    "background_output knows no such task", out);
  // The same launch from the same session, the deny rule the only change.
  ok(await restartServer(ALLOW), "the server started again without the deny rule");
  const again = await launch(sid, args);
  const [id2] = taskIds(again);
  ok(id2 && again.includes(`Worktree: ${root}/${id2}, on new branch ocbg/${id2} from `),
    "without the rule, the same launch starts in its worktree", again);
  ok(await notification(sid, id2), "and completes");
}

// The launching session deleted through OpenCode's API, once with its task
// completed (as test_worktree.c's parent_deleted) and once with it still
// running (its file written, its model's next answer held at a gate): ocbg
// stops the run, lets go of the folder, commits what the task left
// uncommitted to its branch and removes the folder. The branch stays.
async function parentDeleted() {
  for (const running of [false, true]) await deletedCase(running);
}

async function deletedCase(running) {
  const tag = running ? "running" : "completed", file = `left-${tag}.txt`, gate = `deleted-${tag}`;
  const sid = await newSession(`deleted parent, ${tag}`);
  const bash = `bash ${JSON.stringify({ command: `echo ${tag} > ${file}`, description: "leave a file" })}`;
  const prompt = running ? `CHILD callgate ${gate} ${bash}` : `CHILD call ${bash}`;
  const [id] = taskIds(await launch(sid, { description: `orphan ${tag}`, prompt, isolation: "worktree" }));
  ok(id, `${tag}: an isolated task launched (${id})`);
  let held = null;
  if (running) {
    held = await waitFor("the child's model request after its bash call",
      () => fake.requests.find((r) => r.decision?.gate === gate), 30000);
    ok(held && !held.closed, `${tag}: it wrote ${file} and waits for its model's answer`);
  } else {
    const n = await notification(sid, id);
    ok(n?.includes(`Untracked:\n  ${file}`), `${tag}: it completed, leaving ${file} uncommitted`, n);
  }
  const root = wtRoot(), wt = path.join(root || "/nonexistent", id);
  ok(fs.readFileSync(path.join(wt, file), "utf8") === `${tag}\n`, `${tag}: the file is in its worktree`);
  // The parent's own turn (for a completed task, its answer to the
  // notification) ended first: deleting a busy session makes OpenCode fail to
  // store that turn.
  await waitFor("the parent's last turn stored and idle", async () => {
    const last = (await messages(sid)).at(-1);
    return last?.info.role === "assistant" && last.info.time.completed && await isIdle(sid);
  }, 30000);
  const del = await api("DELETE", `/session/${sid}`);
  ok(del.status === 200, `${tag}: DELETE /session/<parent>`, del.status);
  if (running)
    ok(await waitFor("the child's model stream closed", () => held?.closed, 15000),
      `${tag}: its run is stopped (its model stream closed)`);
  ok(await waitFor("the worktree folder removed", () => !fs.existsSync(wt), 30000),
    `${tag}: the launching session deleted, the worktree folder is removed`);
  ok(hasBranch(id), `${tag}: its branch stays`);
  const subject = git("log", "-1", "--format=%s", `ocbg/${id}`).stdout;
  ok(subject === `ocbg: uncommitted work of background task ${id}\n`,
    `${tag}: its tip is ocbg's commit of the work left uncommitted`, subject);
  const shown = git("show", `ocbg/${id}:${file}`);
  ok(shown.status === 0 && shown.stdout === `${tag}\n`, `${tag}: the branch's tip holds the child's file`,
    shown.stdout);
  const status = git("status", "--porcelain").stdout;
  ok(!fs.existsSync(path.join(PROJECT, file)) && status === "" &&
    fs.readFileSync(path.join(PROJECT, "shared.txt"), "utf8") === "base\n", `${tag}: the main checkout is untouched`,
    status);
  ok(!git("worktree", "list", "--porcelain").stdout.includes(wt), `${tag}: git no longer lists the worktree`);
  ok(await instanceOnlyForItsRun([wt]), `${tag}: OpenCode set up the folder's instance once, never again after its ` +
    "removal", instancesFor(wt));
  if (running) fake.openGate(gate);
}

// The launching session deleted while no ocbg runs (here: by a server that
// does not load it; as well, OpenCode killed before ocbg released the
// folder): at the next start ocbg finds the restored task's launching
// session gone and does what the deletion would have.
async function deletedWhileDown() {
  const sid = await newSession("deleted while down");
  const bash = `bash ${JSON.stringify({ command: "echo unseen > unseen.txt", description: "leave a file" })}`;
  const out = await launch(sid, { description: "unseen", prompt: `CHILD call ${bash}`, isolation: "worktree" });
  const [id] = taskIds(out);
  ok(id, `an isolated task launched (${id})`);
  const n = await notification(sid, id);
  ok(n?.includes("Untracked:\n  unseen.txt"), "it completed, leaving unseen.txt uncommitted", n);
  const wt = path.join(wtRoot() || "/nonexistent", id);
  await waitFor("the parent's last turn stored and idle", async () => {
    const last = (await messages(sid)).at(-1);
    return last?.info.role === "assistant" && last.info.time.completed && await isIdle(sid);
  }, 30000);
  ok(await restartServer(ALLOW, false), "the server started again, without ocbg");
  const del = await api("DELETE", `/session/${sid}`);
  ok(del.status === 200, "DELETE /session/<parent> with no ocbg loaded", del.status);
  ok(fs.existsSync(wt), "the worktree is still there");
  ok(await restartServer(ALLOW, true), "the server started again, with ocbg");
  ok(await waitFor("the worktree folder removed", () => !fs.existsSync(wt), 30000),
    "at the start, ocbg found the launching session gone: the worktree folder is removed");
  const shown = git("show", `ocbg/${id}:unseen.txt`);
  ok(shown.status === 0 && shown.stdout === "unseen\n", "the branch's tip holds the child's file", shown.stdout);
  ok(!git("worktree", "list", "--porcelain").stdout.includes(wt), "git no longer lists the worktree");
}

// The user's hooks that git runs on checkouts, ref updates and commits: each
// leaves its name in EVIDENCE when it runs.
const USER_HOOKS = ["post-checkout", "reference-transaction", "prepare-commit-msg", "pre-commit", "commit-msg",
  "post-commit", "post-index-change"];

async function hostileWriters() {
  const evidence = path.join(ROOT, "evidence"), hooks = path.join(PROJECT, ".git/hooks");
  fs.mkdirSync(evidence, { recursive: true });
  fs.writeFileSync(path.join(PROJECT, ".gitignore"), "secret.env\n");
  git("add", ".gitignore");
  git("commit", "-q", "-m", "ignore secret.env");
  const head = git("rev-parse", "HEAD").stdout.trim();
  ok(await restartServer(ALLOW, true, { bash: "deny" }), "the server started again, with bash denied");
  for (const h of USER_HOOKS)
    fs.writeFileSync(path.join(hooks, h), `#!/bin/sh\ntouch ${evidence}/${h}\n`, { mode: 0o755 });
  const write = (filePath, content) => ({ name: "write", args: { filePath, content } });
  const own = [
    write(".g/HEAD", "ref: refs/heads/x\n"), write(".g/refs/heads/x", `${head}\n`),
    write(".g/objects/info/alternates", `${PROJECT}/.git/objects\n`),
    write(".g/config", `[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ${evidence}/fsmonitor; false"\n`),
    write(".git", "gitdir: .g\n"), write("secret.env", "TOKEN=1\n"), write("made.txt", "w\n")];
  const main = [write(".git", `gitdir: ${PROJECT}/.git\n`), write("sneaky.txt", "sneaky\n")];
  const sid = await newSession("hostile writers");
  const [a] = taskIds(await launch(sid, { description: "own repo", prompt: `CHILD calls ${JSON.stringify(own)}`,
    isolation: "worktree" }));
  const [b] = taskIds(await launch(sid, { description: "main repo", prompt: `CHILD calls ${JSON.stringify(main)}`,
    isolation: "worktree" }));
  ok(a && b, `two isolated tasks that only write files launched (${a}, ${b})`);
  const nA = await notification(sid, a), nB = await notification(sid, b);
  ok(nA?.includes("; 5 untracked files") && nA.includes("  made.txt") && nB, "both completed; the report is of the worktree ocbg made", nA);
  const c = (await tool(sid, "background_clear", undefined, 60000))?.output || "";
  const root = wtRoot();
  ok(c.includes(`- ${a}: its worktree was removed; its work is on branch ocbg/${a} (what it left uncommitted was ` +
    `committed there first). 1 file that git ignores (8 B), which it does not commit, was moved to ${root}/${a}.ignored: ` +
    "secret.env. ocbg does not delete them: remove that folder when they are not needed."),
  "clear names the ignored file it kept, and where", c);
  ok(c.includes(`- ${b}: its worktree was removed; its work is on branch ocbg/${b}`), "and removed the other", c);
  const ran = fs.readdirSync(evidence);
  ok(ran.length === 0, "no command of the tasks' and no hook of the user's ran", ran.join(" "));
  for (const h of USER_HOOKS) fs.rmSync(path.join(hooks, h));
  ok(git("rev-parse", "HEAD").stdout.trim() === head, "the user's branch did not move");
  const status = git("status", "--porcelain").stdout;
  ok(status === "" && fs.readFileSync(path.join(PROJECT, "shared.txt"), "utf8") === "base\n",
    "the main checkout's index and files are untouched", status);
  ok(git("show", `ocbg/${b}:sneaky.txt`).stdout === "sneaky\n", "the work of the task that pointed at the main " +
    "checkout is on its own branch");
  ok(git("show", `ocbg/${a}:made.txt`).stdout === "w\n", "and the other's on its own");
  const kept = path.join(root || "/nonexistent", `${a}.ignored`, "secret.env");
  ok(fs.existsSync(kept) && fs.readFileSync(kept, "utf8") === "TOKEN=1\n", "the ignored file is whole where clear " +
    "said");
  ok(await restartServer(ALLOW), "the server started again, bash allowed");
}

async function restart() {
  const sid = await newSession("restart");
  const out = await launch(sid, { description: "held", prompt: "CHILD gate held-r", isolation: "worktree" });
  const [id] = taskIds(out);
  ok(id, `an isolated task is running (${id})`);
  await waitFor("the child's model request", () => fake.requests.some((r) => r.decision?.gate === "held-r"), 30000);
  ok(await restartServer(), "the server started again");
  const root = wtRoot();
  const m = await userMessage(sid, `Background task failed: ${id}`, 60000);
  ok(m && /interrupted/.test(textOf(m.msg)), "the task was reconciled: it failed, interrupted by the restart",
    m && textOf(m.msg));
  ok(m && textOf(m.msg).includes(`Worktree: ${root}/${id} (branch ocbg/${id};`), "its notification names its worktree");
  ok(root && fs.existsSync(path.join(root, id, "shared.txt")), "its worktree is kept");
  ok(hasBranch(id), "and its branch");
  fake.openGate("held-r");
}

// An isolated task delegates (max_depth 2, set by a restart): W, in its
// worktree, is offered ocbg's tools (the copy of ocbg OpenCode loads for the
// worktree's folder passes them to the instance that made it) and launches G
// with background_task, whose question (task: ask for G's agent) is asked
// in the worktree and answered there; G's session is a child of W's made in the worktree,
// where its bash runs; G's notification goes into W's session and wakes it;
// the top parent hears of W once, with its final answer, and nothing of G.
async function delegates() {
  const askG = { task: { "*": "allow", "e2e-wt-asked": "ask" } };
  ok(await restartServer(ALLOW, true, askG, { max_depth: 2 }), "the server started again, max_depth 2");
  const sid = await newSession("delegates");
  const before = fake.requests.length, logFrom = fs.statSync(LOG).size;
  const gArgs = { description: "grandchild", agent: "e2e-wt-asked",
    prompt: `CHILD call bash ${JSON.stringify({ command: "pwd > gc.txt && pwd", description: "where" })}` };
  const out = await launch(sid, { description: "delegating", prompt: `CHILD nest W ${JSON.stringify(gArgs)}`,
    isolation: "worktree" });
  const [w] = taskIds(out), root = wtRoot(), wt = root && w ? path.join(root, w) : "/nonexistent";
  ok(w && /Status: running/.test(out), `an isolated task that delegates was launched (${w})`, out.slice(0, 300));
  const children = async (s) => (await api("GET", `/session/${s}/children`)).json || [];
  const ws = await waitFor("W's session", async () => (await children(sid))[0]?.id, 30000);
  const wReq = await waitFor("W's background_task call", () => fake.requests.slice(before).find((r) =>
    r.decision.calls?.[0]?.name === "background_task" && JSON.stringify(r.body.messages).includes("CHILD nest W")),
  30000);
  ok((wReq?.body.tools || []).some((t) => t.function?.name === "background_task"),
    "W, isolated, is offered ocbg's tools in its worktree", (wReq?.body.tools || []).map((t) => t.function?.name));
  ok(fs.readFileSync(LOG, "utf8").slice(logFrom).includes(`ocbg: ${wt} is the folder of a task of the ocbg ` +
    "instance that made it: this copy passes its tool calls to that instance"), "the worktree's copy says so in the log");
  // W's launch of G asks OpenCode (task e2e-wt-asked: ask) with the worktree's
  // ToolContext: the question is the worktree's, as its own tools' are.
  const inWt = `?directory=${encodeURIComponent(wt)}`;
  const asked = await waitFor("W's question", async () =>
    ((await api("GET", `/permission${inWt}`)).json || []).find((p) => p.sessionID === ws), 30000);
  ok(asked?.permission === "task" && asked.patterns?.[0] === "e2e-wt-asked" &&
    !((await api("GET", "/permission")).json || []).some((p) => p.id === asked.id),
  "launching G asks in the worktree (GET /permission?directory=), not in the project's list", asked);
  ok(asked && (await api("POST", `/permission/${asked.id}/reply${inWt}`, { reply: "once" })).status === 200,
    "answered once, for the worktree");
  const wLaunch = await waitFor("W's launch answer", async () =>
    toolParts(await messages(ws), "background_task").at(-1)?.state?.output, 60000);
  const [g] = taskIds(wLaunch);
  ok(g && g !== w && /Status: running/.test(wLaunch), `W's own background_task call launched G (${g})`, wLaunch);
  const gs = await waitFor("G's session", async () => (await children(ws))[0]?.id, 30000);
  const gInfo = gs ? (await api("GET", `/session/${gs}`)).json : null;
  ok(gInfo?.directory === wt && gInfo.parentID === ws, "G's session is a child of W's, working in W's worktree", gInfo);
  const gNotice = await userMessage(ws, `[ocbg] Background task completed: ${g}`, 60000);
  ok(gNotice && textOf(gNotice.msg).includes("\nResult:\nchild reply bash"), "G's notification reached W's session",
    gNotice && textOf(gNotice.msg));
  ok(fs.existsSync(path.join(wt, "gc.txt")) && fs.readFileSync(path.join(wt, "gc.txt"), "utf8").trim() === wt &&
    !fs.existsSync(path.join(PROJECT, "gc.txt")), "G's bash ran in the worktree, not in the checkout");
  ok(await turnEnds(ws, "W final", 60000, gNotice ? gNotice.index : 0), "the notification woke W: it answered again");
  const wNotice = await userMessage(sid, `[ocbg] Background task completed: ${w}`, 60000);
  const wt1 = wNotice ? textOf(wNotice.msg) : "";
  ok(wt1.includes("\nResult:\nW final") && wt1.includes(`Branch: ocbg/${w} (from `) && wt1.includes("gc.txt"),
    "then the top parent was notified of W, with its final answer and its worktree's report (G's file)", wt1);
  const top = userTexts(await messages(sid));
  ok(top.filter((t) => t.includes(`Background task completed: ${w}`)).length === 1 &&
    !top.some((t) => t.startsWith("[ocbg]") && t.includes(g)), "the top parent heard of W once, of G never", top);
}

async function main() {
  fake = await startFakeModel();
  makeWorld();
  if (!(await startServer(DENY_WORKTREES))) { ok(false, "opencode serve became healthy"); return; }
  // E2E_WORKTREE_CASES=latency,restart: only those (the first, denied, starts the server either way).
  const only = process.env.E2E_WORKTREE_CASES?.split(",");
  for (const f of [denied, twoWriters, latency, parentDeleted, deletedWhileDown, hostileWriters, restart, delegates]) {
    if (only && f !== denied && !only.includes(f.name)) continue;
    diag(`---- ${f.name} (${secs()}s)`);
    try { await f(); } catch (e) { ok(false, `${f.name} threw`, e.stack); }
  }
}

await runSuite("e2e_worktree", main, { stop: stopAll });

// End-to-end: isolation "worktree" in real OpenCode (make e2e runs it after
// e2e_bash_perm.mjs; E2E_ONLY=worktree runs only it). A fresh git repository
// outside any other is the project; ocbg is listed in the global config (so
// OpenCode also loads a second copy of it for each worktree's folder, as it
// would for a user with ocbg installed globally); the fake model scripts the
// sub-agents (fake_model.mjs: "CHILD call bash {...}", "CHILD gate X").
//   twoWriters   two isolated tasks append to the same file, each in its own
//                worktree: the checkout is untouched, each notification names
//                its branch and diffstat, background_output shows it, and
//                background_clear removes both folders (their leftover work
//                committed) and keeps both branches; OpenCode never sets up an
//                instance for a removed folder again.
//   latency      the wake after a task's answer, isolated and not (printed, not
//                asserted: timing belongs to benchmarks).
//   restart      an isolated task cut short by a server restart: reconciled (it
//                ends in error, "interrupted"), its worktree and branch kept and
//                still named.
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e_worktree.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startFakeModel } from "./fake_model.mjs";
import {
  api, diag, fakeModelConfig, followEvents, freePort, gitRepoWithCommit, isolatedEnv, messages, newSession, ok,
  provideConfigDeps, say, secs, setBase, stopEvents, stopGroup, tap, taskIds, textOf, toolEnded, userMessage, waitFor
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
const LOG = path.join(WORK, "opencode-worktree.log");
let server = null, fake = null, serverEnv = null, starts = 0;

async function stopAll() {
  stopEvents();
  if (server) await stopGroup(server, "SIGTERM", 5000);
  if (fake) { await fake.close(); fake = null; }
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, async () => { await stopAll(); process.exit(1); });
process.on("exit", () => {
  if (server) try { process.kill(-server.pid, "SIGKILL"); } catch {}
  try { fs.rmSync(ROOT, { recursive: true, force: true }); } catch {}
});

let git = null; // git(...args) in PROJECT, once made

function makeWorld() {
  ok(spawnSync("git", ["-C", ROOT, "rev-parse", "--git-dir"], { stdio: "ignore" }).status !== 0,
    `the project's parent ${ROOT} is in no git repository`);
  git = gitRepoWithCommit(PROJECT);
  const dir = path.join(ROOT, "ocbg");
  fs.mkdirSync(dir, { recursive: true });
  for (const f of ["ocbg.js", "ocbg_options.mjs", "ocbg_opencode.node", "ocbg.so"])
    fs.copyFileSync(path.join(OCBG_DIR, f), path.join(dir, f));
  fs.symlinkSync(path.join(NPM_DIR, "node_modules"), path.join(dir, "node_modules"));
  provideConfigDeps(path.join(CONFIG, "opencode"), NPM_DIR);
  const cfg = { ...fakeModelConfig(fake.port), snapshot: false, plugin: [[path.join(dir, "ocbg.js"), {}]] };
  cfg.permission = { ...cfg.permission, external_directory: "allow" };
  serverEnv = isolatedEnv(HOME, CONFIG, cfg);
}

async function startServer() {
  const port = await freePort();
  setBase(`http://127.0.0.1:${port}`);
  const log = fs.openSync(LOG, starts++ === 0 ? "w" : "a");
  server = spawn(BIN, ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs", "--log-level", "INFO"],
    { cwd: PROJECT, env: serverEnv, detached: true, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  const healthy = await waitFor("health", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy,
    60000, 250);
  if (healthy) followEvents();
  diag(`opencode serve pid ${server.pid} (start ${starts}, log ${LOG})`);
  return !!healthy;
}

// Launches one background task from session sid and returns its launch
// answer (the tool part's output), once the call ended.
async function launch(sid, args) {
  const since = (await messages(sid)).length;
  await say(sid, `E2E background_task ${JSON.stringify({ agent: "general", ...args })}`);
  const state = await toolEnded(sid, "background_task", since, 60000);
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
  const child = (await messages(sid)).length;
  await say(sid, `E2E background_output ${JSON.stringify({ task_id: idA })}`);
  const out = await toolEnded(sid, "background_output", child, 30000);
  ok(out?.output?.includes(`Worktree: ${root}/${idA} (branch ocbg/${idA};`), "background_output names the worktree",
    out?.output);
  const before = (await messages(sid)).length;
  await say(sid, "E2E background_clear");
  const cleared = await toolEnded(sid, "background_clear", before, 60000);
  const c = cleared?.output || "";
  for (const [id, who] of [[idA, "A"], [idB, "B"]]) {
    ok(c.includes(`- ${id}: its worktree was removed; its work is on branch ocbg/${id} (what it left uncommitted was ` +
      "committed there first)."), `clear says ${who}'s work is on its branch`, c);
    ok(!fs.existsSync(path.join(root || "/nonexistent", id)), `${who}'s worktree folder is removed`);
    const shown = git("show", `ocbg/${id}:shared.txt`).stdout;
    ok(shown === `base\nfrom ${who}\n`, `${who}'s branch is kept, with its edit committed`, shown);
  }
  // A request about a removed folder would set up a bogus instance there.
  const t0 = Date.now();
  await waitFor("a moment for stray requests", async () => Date.now() - t0 > 1500, 3000, 500);
  ok(instancesFor(`${root}/${idA}`) <= 1 && instancesFor(`${root}/${idB}`) <= 1,
    "OpenCode set up each worktree's instance once, never again after its removal");
}

// The wake after the answer: from the child's last assistant message's end
// to the notification's creation in the parent, isolated and not.
async function latency() {
  const sid = await newSession("latency");
  const res = {};
  for (const iso of ["none", "worktree"]) {
    const out = await launch(sid, { description: `fast ${iso}`, prompt: `CHILD fast ${iso}`, isolation: iso });
    const [id] = taskIds(out);
    const n = await userMessage(sid, `Background task completed: ${id}`, 60000);
    ok(n, `${iso}: notified`);
    const children = (await api("GET", `/session/${sid}/children`)).json || [];
    const childId = children.find((s) => (s.title || "").startsWith(`fast ${iso}`))?.id;
    const last = (await messages(childId)).filter((m) => m.info.role === "assistant").at(-1);
    res[iso] = n && last ? n.msg.info.time.created - last.info.time.completed : NaN;
  }
  diag(`notification after the child's answer: ${res.none} ms in the checkout, ${res.worktree} ms in a worktree`);
  console.log(`# worktree_wake_ms: ${res.worktree} ms (same path, not isolated: ${res.none} ms)`);
}

async function restart() {
  const sid = await newSession("restart");
  const out = await launch(sid, { description: "held", prompt: "CHILD gate held-r", isolation: "worktree" });
  const [id] = taskIds(out);
  ok(id, `an isolated task is running (${id})`);
  await waitFor("the child's model request", () => fake.requests.some((r) => r.decision?.gate === "held-r"), 30000);
  await stopGroup(server, "SIGTERM", 15000);
  stopEvents();
  ok(await startServer(), "the server started again");
  const root = wtRoot();
  const m = await userMessage(sid, `Background task failed: ${id}`, 60000);
  ok(m && /interrupted/.test(textOf(m.msg)), "the task was reconciled: it failed, interrupted by the restart",
    m && textOf(m.msg));
  ok(m && textOf(m.msg).includes(`Worktree: ${root}/${id} (branch ocbg/${id};`), "its notification names its worktree");
  ok(root && fs.existsSync(path.join(root, id, "shared.txt")), "its worktree is kept");
  ok(git("rev-parse", "--verify", "-q", `refs/heads/ocbg/${id}`).status === 0, "and its branch");
  fake.openGate("held-r");
}

async function main() {
  fake = await startFakeModel();
  makeWorld();
  if (!(await startServer())) { ok(false, "opencode serve became healthy"); return; }
  for (const f of [twoWriters, latency, restart]) {
    diag(`---- ${f.name} (${secs()}s)`);
    try { await f(); } catch (e) { ok(false, `${f.name} threw`, e.stack); }
  }
}

main().then(stopAll, async (e) => { ok(false, "e2e_worktree threw", e.stack); await stopAll(); })
  .finally(() => { console.log(`1..${tap.n}`); process.exit(tap.failed ? 1 : 0); });

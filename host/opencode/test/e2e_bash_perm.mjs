// End-to-end, a differential test: the permission questions ocbg's `Bash`
// asks, against OpenCode's own `bash`, for every line of bash_corpus.json
// (make e2e runs it after e2e_config.mjs; E2E_ONLY=bashperm runs only it).
// The model (fake_model.mjs, "E2E <tool> <json>") calls each tool with the
// same {command, description}; the test answers OpenCode's permission.asked
// events as a user would and compares what the host published.
//   pass A  "permission": {"bash": "ask", "external_directory": "ask"}: every
//           question of a call ({permission, patterns, always}, in order);
//           external_directory answered "once", bash "reject" (nothing runs but
//           a line that only changes directory). Both lists must be equal.
//   pass B  {"bash": {"*": "allow", "rm *": "deny"}, "external_directory": "allow"}:
//           each line naming rm, with its marker files (*.mark, in the project)
//           made first: when OpenCode's bash refuses the line, ocbg's Bash must
//           refuse it too and every marker must still be there.
// The native side is also checked against tests/fixtures/bash_permissions.json
// (what the C unit test reads); --record FILE writes it instead. The project is
// a fresh `git init` outside any other repository, so OpenCode's worktree is
// the project itself (ocbg knows only the session directory).
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e_bash_perm.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR --corpus FILE
//                        (--fixture FILE | --record FILE) [--jobs N] [--pass A|B]
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startFakeModel } from "./fake_model.mjs";
import {
  apiAt, diag, fakeModelConfig, isolatedEnv, ocbgCopy, ok, provideConfigDeps, readEvents, runSuite, startServe, stopGroup,
  waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), OCBG_DIR = opt("ocbg-dir"), WORK = opt("work");
const CORPUS = opt("corpus"), FIXTURE = opt("fixture"), RECORD = opt("record");
const JOBS = Number(opt("jobs", "3")); // sessions at once, per pass
const PASSES = opt("pass", RECORD ? "A" : "AB");
if (!BIN || !NPM_DIR || !OCBG_DIR || !WORK || !CORPUS || !(FIXTURE || RECORD)) {
  console.error("usage: e2e_bash_perm.mjs --opencode BIN --npm-dir DIR --ocbg-dir DIR --work DIR --corpus FILE " +
    "(--fixture FILE | --record FILE) [--jobs N] [--pass A|B|AB]");
  process.exit(2);
}
const CALL_MS = 60000; // one tool call, asked and answered, to its session's idle

// ---- the world: outside /work and any git repository ----
// realpath: serve's cwd is the directory OpenCode compares paths with.
const ROOT = fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), "ocbg-bashperm-"));
const PROJECT = path.join(ROOT, "project"), HOME = path.join(ROOT, "home"); // pass A's HOME (the fixture's <home>)
const corpus = JSON.parse(fs.readFileSync(CORPUS, "utf8"));

// The two passes run at once, each on its own `opencode serve` (and HOME: its
// own database): OpenCode spends about one core, and the machine has two.
const servers = [];
let fake = null;
async function stopServer(srv) {
  srv.events.abort();
  await stopGroup(srv.proc, "SIGTERM", 5000);
}
async function stopAll() {
  for (const srv of servers.splice(0)) await stopServer(srv);
  if (fake) { await fake.close(); fake = null; }
}
process.on("exit", () => { try { fs.rmSync(ROOT, { recursive: true, force: true }); } catch {} });

function makeWorld() {
  // inside another repository OpenCode's worktree would be that one (a wider "inside" than ocbg's)
  ok(spawnSync("git", ["-C", ROOT, "rev-parse", "--git-dir"], { stdio: "ignore" }).status !== 0,
    `the project's parent ${ROOT} is in no git repository`);
  fs.mkdirSync(PROJECT, { recursive: true });
  const git = (...a) => spawnSync("git", ["-C", PROJECT, "-c", "user.name=e2e", "-c", "user.email=e2e@localhost", ...a]);
  git("init", "-q");
  fs.writeFileSync(path.join(PROJECT, "README"), "ocbg bash permission e2e\n");
  git("add", "README");
  git("commit", "-q", "-m", "init");
  fs.mkdirSync(path.join(PROJECT, "src"), { recursive: true }); // a directory some lines name
  const dir = path.join(ROOT, "ocbg"); // listed with options, outside the scanned folders
  return ocbgCopy(dir, OCBG_DIR, NPM_DIR);
}

// The HTTP API of one server (e2e_lib's api() serves one server at a time).
const http = (srv, ...args) => apiAt(srv.base, ...args);
// Its event stream, each event to onEvent, until srv.events.abort().
async function follow(srv, onEvent) {
  await readEvents(srv.base, srv.events.signal, (ev) => onEvent(srv, ev));
}

// Starts `opencode serve` in the project with these permission rules, HOME
// ROOT/<home>. The server, or null when it did not answer healthy.
async function startServer(pass, home, permission, ocbgJs) {
  const config = path.join(home, ".config");
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  const cfg = { ...fakeModelConfig(fake.port), snapshot: false, plugin: [[ocbgJs, { face_claude: true }]],
    permission: { edit: "allow", webfetch: "allow", task: "allow", ...permission } };
  const env = isolatedEnv(home, config, cfg);
  const logPath = path.join(WORK, `opencode-${pass}.log`);
  const started = await startServe({ bin: BIN, cwd: PROJECT, env, logPath });
  const srv = { pass, proc: started.proc, base: started.base, events: new AbortController() };
  servers.push(srv);
  const healthy = started.healthy;
  if (healthy) follow(srv, onEvent);
  diag(`pass ${pass}: opencode serve pid ${srv.proc.pid} ${healthy ? "healthy" : "NOT healthy"} (log: ${logPath})`);
  return healthy ? srv : null;
}

// ---- one tool call, followed through the event stream ----
// Per session: the open call's state, fed by onEvent.
const calls = new Map();
function onEvent(srv, ev) {
  const p = ev.properties || {};
  const sid = p.sessionID || p.part?.sessionID || p.info?.sessionID;
  const c = sid && calls.get(sid);
  if (!c) return;
  if (ev.type === "permission.asked") {
    c.asks.push(p);
    // as the user would (c.answer): e.g. outside directories once, bash rejected
    http(srv, "POST", `/permission/${p.id}/reply`, { reply: c.answer(p) }).catch(() => {});
  } else if (ev.type === "message.part.updated" && p.part?.type === "tool" && p.part.tool === c.tool &&
             !c.seen.has(p.part.callID) && (p.part.state?.status === "completed" || p.part.state?.status === "error")) {
    c.ended = p.part;
  } else if (c.ended && (ev.type === "session.idle" || (ev.type === "session.status" && p.status?.type === "idle"))) {
    c.idle = true;
  }
}

// Calls `tool` with the command in session s of srv (one call at a time per
// session): {asks: [{permission, patterns, always}], status, text, strays}.
// strays: questions of the session that named another call (none expected).
async function runCall(srv, s, tool, command, answer) {
  const c = { tool, asks: [], ended: null, idle: false, seen: s.callIDs, answer };
  calls.set(s.id, c);
  await http(srv, "POST", `/session/${s.id}/prompt_async`,
    { parts: [{ type: "text", text: `E2E ${tool} ${JSON.stringify({ command, description: "corpus line" })}` }] });
  const done = await waitFor(`${tool} in ${s.id} ended and idle`, () => c.ended && c.idle, CALL_MS, 20);
  calls.delete(s.id);
  if (!done) return { asks: null, status: "timeout", text: "", strays: [] };
  s.callIDs.add(c.ended.callID);
  s.used++;
  const mine = (a) => a.tool?.callID === c.ended.callID;
  return {
    asks: c.asks.filter(mine).map((a) => ({ permission: a.permission, patterns: a.patterns, always: a.always })),
    strays: c.asks.filter((a) => !mine(a)),
    status: c.ended.state.status,
    text: c.ended.state.status === "error" ? c.ended.state.error : c.ended.state.output,
  };
}

// A session per worker, renewed now and then so that histories stay short.
async function sessionFor(srv, w) {
  if (!w.s || w.s.used >= 24)
    w.s = { id: (await http(srv, "POST", "/session", { title: `bashperm ${srv.pass} ${w.n}` })).json?.id, used: 0, callIDs: new Set() };
  return w.s;
}

// Runs fn(item, worker) over the items with JOBS workers (sessions) at once.
async function pool(items, fn) {
  let next = 0;
  const worker = async (n) => {
    const w = { n, s: null };
    while (next < items.length) { const item = items[next++]; await fn(item, w); }
  };
  await Promise.all(Array.from({ length: Math.min(JOBS, items.length) }, (_, n) => worker(n)));
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// ---- pass A: the questions, native against ocbg ----
const answerA = (p) => (p.permission === "external_directory" ? "once" : "reject");
async function passA(srv, results) {
  await pool(corpus.map((e, i) => ({ ...e, i })), async (e, w) => {
    const native = await runCall(srv, await sessionFor(srv, w), "bash", e.command, answerA);
    const ocbg = await runCall(srv, await sessionFor(srv, w), "Bash", e.command, answerA);
    results[e.i] = { ...e, native, ocbg };
  });
  let differ = 0;
  const shapes = {};
  for (const r of results) {
    const good = r.native.asks && same(r.native.asks, r.ocbg.asks) && !r.native.strays.length && !r.ocbg.strays.length;
    if (!good) { differ++; shapes[r.shape] = (shapes[r.shape] || 0) + 1; }
    ok(good, `A ${r.shape}: ${JSON.stringify(r.command).slice(0, 120)}`,
      good ? undefined : { native: r.native.asks, ocbg: r.ocbg.asks, strays: [...r.native.strays, ...r.ocbg.strays] });
  }
  diag(`pass A: ${results.length - differ} of ${results.length} lines ask the same, ${differ} differ` +
    (differ ? ` (by shape: ${Object.entries(shapes).map(([k, v]) => `${k} ${v}`).join(", ")})` : ""));
}

// ---- the fixture: the native questions with the machine's paths replaced ----
function placeholders(s) {
  const subs = [[PROJECT, "<project>"], [HOME, "<home>"], [path.dirname(PROJECT), "<project-parent>"]]
    .sort((a, b) => b[0].length - a[0].length);
  for (const [from, to] of subs) s = s.split(from).join(to);
  return s;
}
const fixtureOf = (results) => results.map((r) => ({ command: r.command,
  asks: r.native.asks.map((a) => ({ permission: a.permission, patterns: a.patterns.map(placeholders),
    always: a.always.map(placeholders) })) }));

function checkFixture(results) {
  let want = null;
  try { want = JSON.parse(fs.readFileSync(FIXTURE, "utf8")); } catch (e) { ok(false, `the fixture ${FIXTURE} is readable`, String(e)); return; }
  const byCommand = new Map(want.map((w) => [w.command, w.asks]));
  const got = fixtureOf(results.filter((r) => r.native.asks));
  const wrong = got.filter((g) => !byCommand.has(g.command) || !same(byCommand.get(g.command), g.asks));
  diag(`fixture: OpenCode's bash asks as recorded on ${got.length - wrong.length} of ${got.length} lines ` +
    `(${want.length} recorded)`);
  ok(wrong.length === 0 && got.length === results.length && want.length === corpus.length,
    "OpenCode's own bash asks what tests/fixtures/bash_permissions.json says, for every corpus line",
    wrong.slice(0, 5).map((g) => ({ command: g.command, now: g.asks, recorded: byCommand.get(g.command) })));
}

// ---- pass B: the deny rule on rm ----
// A line's markers (its entry's `marks`) are files in the project it would
// remove; each line has its own, so lines can run at once.
// How each tool says a rule refused the call (OpenCode's PermissionDeniedError; ocbg's answer naming it).
const nativeRefused = (r) => r.status === "error" && /specified a rule which prevents/.test(r.text || "");
const ocbgRefused = (r) => r.status === "error" && /^Permission denied: [^]*permission rules deny it/.test(r.text || "");
async function passB(srv) {
  const lines = corpus.filter((e) => /\brm\b/.test(e.command));
  const out = [];
  await pool(lines, async (e, w) => {
    const marks = (e.marks || []).map((m) => path.join(PROJECT, m));
    const make = () => { for (const m of marks) fs.writeFileSync(m, "marker\n"); };
    const kept = () => marks.filter((m) => fs.existsSync(m)).length;
    make();
    const native = await runCall(srv, await sessionFor(srv, w), "bash", e.command, () => "reject");
    const nativeKept = kept();
    let ocbg = null, ocbgKept = 0;
    if (nativeRefused(native)) { // otherwise ocbg owes nothing here (pass A compares the questions)
      make();
      ocbg = await runCall(srv, await sessionFor(srv, w), "Bash", e.command, () => "reject");
      ocbgKept = kept();
    }
    for (const m of marks) fs.rmSync(m, { force: true });
    out.push({ e, native, ocbg, nativeKept, ocbgKept, marks: marks.length });
  });
  let refused = 0, missed = 0;
  for (const { e, native, ocbg, nativeKept, ocbgKept, marks } of out) {
    if (!ocbg) {
      diag(`B OpenCode's bash lets it run (${native.status}, markers kept ${nativeKept}/${marks}): ${JSON.stringify(e.command).slice(0, 100)}`);
      continue;
    }
    refused++;
    const good = ocbgRefused(ocbg) && ocbgKept === marks && nativeKept === marks && !native.asks?.length && !ocbg.asks?.length;
    if (!good) missed++;
    ok(good, `B ${e.shape}: OpenCode's bash refuses, so does ocbg's Bash: ${JSON.stringify(e.command).slice(0, 100)}`,
      good ? undefined : { ocbg: { status: ocbg.status, text: (ocbg.text || "").slice(0, 300), markersKept: `${ocbgKept}/${marks}` },
        native: { status: native.status, text: (native.text || "").slice(0, 120), markersKept: `${nativeKept}/${marks}` } });
  }
  diag(`pass B: ${lines.length} lines name rm; OpenCode's bash refuses ${refused}, ocbg's Bash lets ${missed} of those through`);
}

let recordedAll = false; // --record: whether the fixture was written (ocbg's differences do not fail a recording)
async function runA(ocbgJs) {
  const t0 = Date.now();
  const srv = await startServer("A", HOME, { bash: "ask", external_directory: "ask" }, ocbgJs);
  if (!ok(srv, "pass A: opencode serve is healthy")) return;
  const results = new Array(corpus.length);
  await passA(srv, results);
  await stopServer(srv);
  if (RECORD) {
    const recorded = fixtureOf(results.filter((r) => r.native.asks));
    recordedAll = ok(recorded.length === corpus.length, `record: every line's native questions (${recorded.length})`);
    if (recordedAll) fs.writeFileSync(RECORD, `[\n${recorded.map((r) => JSON.stringify(r)).join(",\n")}\n]\n`); // a line each
    diag(`recorded ${recordedAll ? recorded.length : 0} lines into ${RECORD}`);
  } else {
    checkFixture(results);
  }
  diag(`pass A: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function runB(ocbgJs) {
  const t0 = Date.now();
  const srv = await startServer("B", path.join(ROOT, "home-b"),
    { bash: { "*": "allow", "rm *": "deny" }, external_directory: "allow" }, ocbgJs);
  if (!ok(srv, "pass B: opencode serve is healthy")) return;
  await passB(srv);
  await stopServer(srv);
  diag(`pass B: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function main() {
  fs.mkdirSync(WORK, { recursive: true });
  const ocbgJs = makeWorld();
  fake = await startFakeModel();
  diag(`project ${PROJECT}, ${corpus.length} corpus lines, ${JOBS} sessions at once per pass`);
  await Promise.all([PASSES.includes("A") && runA(ocbgJs), PASSES.includes("B") && runB(ocbgJs)]);
}

// --record: the status says whether the fixture was written.
await runSuite("e2e_bash_perm", main, { stop: stopAll, status: (failed) => (RECORD ? (recordedAll ? 0 : 1) : failed) });

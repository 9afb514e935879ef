// End-to-end on a bare machine (make e2e-bare, e2e-bare-arm64): OpenCode's own
// pinned binary runs inside a bare Debian 11 (bullseye) root, made by
// debootstrap --variant=minbase (glibc 2.31, no compiler, no cJSON, no
// SQLite), and installs ocbg as users do: by name from a fake npm registry
// serving `make package`'s tarball. This harness (node), the fake model and
// the fake registry stay on the host, on 127.0.0.1: the root shares the
// host's network. The project and HOME live inside the root.
//   `unshare -m` (a mount namespace of its own: /proc mounted there goes with
//   it) + `chroot ROOT env -i -C /e2e/project ... opencode serve`.
// Asserts: the root holds no libcjson*/libsqlite3*; OpenCode runs there; ocbg
// loads (its tools are offered to the model, no "ocbg: ..." error toast); a
// background shell command (Claude face's Bash, run_in_background) and a
// background sub-agent (background_task) each run to their notification in
// the parent session. Prints TAP and the times it took.
//
// --engines RANGE: the package repacked with that engines.opencode first (for
// an OpenCode older than the package admits: the arm64 binary the registry has).
//
// node e2e_bare.mjs --root DIR --opencode BIN --package TGZ [--arch x64|arm64] [--engines RANGE]
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { startFakeModel } from "./fake_model.mjs";
import { packageJsonOf, startFakeRegistry } from "./fake_registry.mjs";
import {
  callTool, diag, events, fakeModelConfig, followEvents, idle, isolatedEnv, messages, newSession, ok, runSuite,
  sayTool, setApiTimeout, setBase, startServe, stopEvents, stopGroup, taskIds, textOf, toolEnded, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : undefined; };
const ROOT = opt("root") && path.resolve(opt("root")), BIN = opt("opencode"), ENGINES = opt("engines");
const ARCH = opt("arch") || "x64";
let TGZ = opt("package");
if (!ROOT || !BIN || !TGZ) {
  console.error("usage: e2e_bare.mjs --root DIR --opencode BIN --package TGZ [--arch x64|arm64]");
  process.exit(2);
}
// Slower under qemu-user (arm64 on an x64 machine): every deadline scaled.
const SLOW = ARCH === "arm64" && process.arch !== "arm64" ? 6 : 1;
setApiTimeout(15000 * SLOW);
const host = (p) => path.join(ROOT, p); // a path inside the root, seen from the host
if (TGZ && ENGINES) TGZ = withEngines(TGZ, ENGINES);
const PKG = packageJsonOf(fs.readFileSync(TGZ));
const SPEC = `${PKG.name}@${PKG.version}`;
const IN_ROOT = { bin: "/opt/opencode/bin/opencode", home: "/e2e/home", project: "/e2e/project" };
const PATH_IN_ROOT = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The tarball repacked with engines.opencode = range: its path (beside the root).
function withEngines(tgz, range) {
  const dir = `${ROOT}.repack`;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const tar = (...args) => {
    const r = spawnSync("tar", args, { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`tar ${args.join(" ")}: ${r.stderr}`);
  };
  tar("-xzf", tgz);
  const file = path.join(dir, "package/package.json"), pj = JSON.parse(fs.readFileSync(file, "utf8"));
  pj.engines = { ...pj.engines, opencode: range };
  fs.writeFileSync(file, JSON.stringify(pj, null, 2));
  tar("-czf", "package.tgz", "package");
  return path.join(dir, "package.tgz");
}

let server = null, fake = null, registry = null;
const LOG = host("/e2e/opencode.log");
async function stopAll() {
  stopEvents();
  await stopGroup(server, "SIGTERM", 5000);
  if (fake) { await fake.close(); fake = null; }
  if (registry) { await registry.close(); registry = null; }
}

// argv run inside the root, with env (an object) as its whole environment and
// cwd (in the root) as its directory; /proc mounted in a mount namespace of
// its own. The spawn options' stdio and detached apply.
function inRoot(argvIn, env, cwd, options) {
  const vars = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return spawn("unshare", ["-m", "--propagation", "private", "--", "sh", "-c",
    'root=$1; shift; mount -t proc proc "$root/proc" && exec chroot "$root" "$@"', "sh", ROOT,
    "/usr/bin/env", "-i", "-C", cwd, ...vars, ...argvIn], options);
}
function inRootSync(argvIn, timeoutMs) {
  return spawnSync("unshare", ["-m", "--propagation", "private", "--", "sh", "-c",
    'root=$1; shift; mount -t proc proc "$root/proc" && exec chroot "$root" "$@"', "sh", ROOT,
    "/usr/bin/env", "-i", `PATH=${PATH_IN_ROOT}`, "HOME=/root", ...argvIn], { encoding: "utf8", timeout: timeoutMs });
}

// Files of the root (not /proc, /sys, /dev, nor the test's own /e2e) whose
// names start with libcjson or libsqlite3.
function librariesInRoot() {
  const found = [];
  const walk = (dir) => {
    let ents = [];
    try { ents = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const e of ents) {
      const p = path.join(dir, e.name);
      if (/^(libcjson|libsqlite3)/.test(e.name)) found.push(p.slice(ROOT.length));
      if (e.isDirectory() && !["/proc", "/sys", "/dev", "/e2e"].includes(p.slice(ROOT.length))) walk(p);
    }
  };
  walk(ROOT);
  return found;
}

// OpenCode's binary into the root, copied again only when it changed.
function installOpencode() {
  const dst = host(IN_ROOT.bin), a = fs.statSync(BIN);
  let b = null;
  try { b = fs.statSync(dst); } catch {}
  if (!b || b.size !== a.size || b.mtimeMs < a.mtimeMs) {
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    fs.copyFileSync(BIN, dst);
    fs.chmodSync(dst, 0o755);
  }
}

async function startServer() {
  const env = isolatedEnv(IN_ROOT.home, `${IN_ROOT.home}/.config`, fakeModelConfig(fake.port),
    { PATH: PATH_IN_ROOT, TMPDIR: "/tmp" });
  const s = await startServe({ cwd: IN_ROOT.project, env, logPath: LOG, logLevel: "DEBUG", healthMs: 90000 * SLOW,
    // cwd and env apply inside the root, not to unshare
    launch: (args, { detached, stdio }) => inRoot([IN_ROOT.bin, ...args], env, IN_ROOT.project, { detached, stdio }) });
  server = s.proc;
  setBase(s.base);
  if (s.healthy) followEvents();
  diag(`opencode serve pid ${server.pid} in ${ROOT}: healthy after ${s.ms} ms (log: ${LOG})`);
  return s.healthy;
}
const logText = () => { try { return fs.readFileSync(LOG, "utf8"); } catch { return ""; } };
const ocbgErrors = () => events.filter((e) => e.type === "tui.toast.show" && /^ocbg: /.test(e.properties?.message || "") &&
  e.properties.variant === "error").map((e) => e.properties.message);

async function run() {
  const libs = librariesInRoot();
  ok(libs.length === 0, "the root holds no libcjson*/libsqlite3* file", libs);
  const glibc = inRootSync(["/usr/bin/ldd", "--version"], 30000).stdout.split("\n")[0];
  diag(`the root's C library: ${glibc}`);
  installOpencode();
  let t = Date.now();
  const v = inRootSync([IN_ROOT.bin, "--version"], 120000 * SLOW);
  if (!ok(v.status === 0 && /^\d+\.\d+\.\d+/.test(v.stdout.trim()),
    `OpenCode's own binary runs in the root: opencode --version (${Date.now() - t} ms)`,
    { status: v.status, signal: v.signal, stdout: v.stdout, stderr: v.stderr })) return;
  diag(`opencode --version in the root: ${v.stdout.trim()}`);

  for (const d of [IN_ROOT.home, IN_ROOT.project]) {
    fs.rmSync(host(d), { recursive: true, force: true });
    fs.mkdirSync(host(d), { recursive: true });
  }
  fs.writeFileSync(host(`${IN_ROOT.home}/.npmrc`), `registry=${registry.url}\n`);
  // face_claude: its Bash runs a shell command in the background
  fs.writeFileSync(host(`${IN_ROOT.project}/opencode.json`), JSON.stringify({ plugin: [[SPEC, { face_claude: true }]] }));
  fs.writeFileSync(host(`${IN_ROOT.project}/hello.txt`), "hello from the bare root\n");

  t = Date.now();
  if (!ok(await startServer(), "opencode serve is healthy inside the root")) return;
  const s = await newSession("ocbg in a bare root");
  const from = fake.requests.length;
  const since = await sayTool(s, "background_list", {});
  // the first model request of the turn: what the model is offered (a missing
  // ocbg fails here, not at the tool call's deadline)
  const tools = (await waitFor("a model request with tools", () => fake.requests.slice(from)
    .map((r) => (r.body.tools || []).map((x) => x.function?.name)).find((x) => x.length), 240000 * SLOW)) || [];
  const list = tools.includes("background_list") ? await toolEnded(s, "background_list", since, 60000 * SLOW) : null;
  await idle(s, 60000 * SLOW);
  const installed = host(`${IN_ROOT.home}/.cache/opencode/packages/${SPEC}/node_modules/${PKG.name}/package.json`);
  ok(fs.existsSync(installed) && registry.requests.some((r) => r.url.endsWith(`${PKG.version}.tgz`)),
    `OpenCode installed ${SPEC} from the registry into its cache in the root`, registry.requests);
  const errors = ocbgErrors();
  ok(list?.status === "completed" && tools.includes("background_task") && tools.includes("Bash") && errors.length === 0,
    `ocbg loaded: its tools are offered to the model, background_list answers (${Date.now() - t} ms from the start)`,
    { list, tools, errors, log: logText().split("\n").filter((l) => /ocbg/.test(l)).slice(-5) });
  if (errors.length) diag(`ocbg said: ${errors[0]}`);
  if (list?.status !== "completed") return;

  t = Date.now();
  const b = await callTool(s, "Bash", { command: "cat hello.txt; ldd --version | head -n 1", description: "in the root",
    run_in_background: true }, 60000 * SLOW);
  const bid = b?.status === "completed" ? taskIds(b.output)[0] : null;
  ok(bid, "Bash(run_in_background) returns a task id", b);
  const cmdNote = bid && await waitFor("the command's notice", async () => (await messages(s)).filter((m) => m.info.role === "user")
    .map(textOf).find((x) => x.includes(`[ocbg] Background command completed: ${bid}`)), 60000 * SLOW);
  ok(cmdNote && cmdNote.includes("hello from the bare root") && /GLIBC 2\.31/.test(cmdNote),
    `the command ran in the root (glibc 2.31) and its notice reached the parent session (${Date.now() - t} ms)`, cmdNote);
  await idle(s, 60000 * SLOW);

  t = Date.now();
  const a = await callTool(s, "background_task", { prompt: "CHILD fast bare" }, 60000 * SLOW);
  const aid = a?.status === "completed" ? taskIds(a.output)[0] : null;
  ok(aid, "background_task launched a sub-agent", a);
  const agentNote = aid && await waitFor("the sub-agent's notice", async () => (await messages(s)).filter((m) => m.info.role === "user")
    .map(textOf).find((x) => x.includes(`[ocbg] Background task completed: ${aid}`)), 60000 * SLOW);
  ok(agentNote && agentNote.includes("child reply bare"),
    `the sub-agent's notice reached the parent session, with its reply (${Date.now() - t} ms)`, agentNote);
  await idle(s, 60000 * SLOW);
}

async function main() {
  fs.mkdirSync(host("/e2e"), { recursive: true });
  registry = await startFakeRegistry([TGZ]);
  fake = await startFakeModel();
  if (ENGINES) diag(`the package repacked with engines.opencode "${ENGINES}"`);
  diag(`${ARCH} root ${ROOT}; fake registry ${registry.url}, fake model on 127.0.0.1:${fake.port}`);
  await run();
}

await runSuite(`e2e_bare (${ARCH})`, main, { stop: stopAll });

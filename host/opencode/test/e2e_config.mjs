// End-to-end, part two (make e2e runs it after e2e.mjs): ocbg installed and
// configured as OpenCode users do it, each in its own isolated HOME and
// `opencode serve` on 127.0.0.1, with the fake model and a fake npm registry
// (fake_registry.mjs) serving `make package`'s tarball, as registry.npmjs.org
// would once it is published:
//   byName   "plugin": [["ocbg@<version>", {face_claude: false, poll_interval_ms: 100, <an unknown key>}]]
//            in the project's opencode.json: OpenCode installs the package itself (into its cache);
//            no @opencode-ai/plugin anywhere (zod comes with the package); launch + notify.
//   scanned  `make install-opencode` into ~/.config/opencode/plugin/ (a scanned folder) and the
//            same file listed in ~/.config/opencode/opencode.json with {face_claude: true,
//            poll_interval_ms: 3000}: OpenCode loads it once, without options; ocbg finds them.
//   invalid  the package with {poll_interval_ms: -5}: no ocbg tools, and the user is told why; beside it
//            a package whose engines.opencode is ">=2": OpenCode skips it (what ocbg's engines field relies on).
//   nobinary the package repacked without its binary for this machine (linux-x64/, or the flat
//            ocbg_opencode.node of an older layout): OpenCode loads it, ocbg offers no tools and says so
//            in one sentence, a toast (tui.toast.show) and a line in OpenCode's log.
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e_config.mjs --opencode BIN --package TGZ --scanned-home DIR --work DIR
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual as same } from "node:util";
import { startFakeModel } from "./fake_model.mjs";
import { packageJsonOf, startFakeRegistry } from "./fake_registry.mjs";
import {
  callTool, diag, eq, events, fakeModelConfig, followEvents, idle, isolatedEnv, messages, newSession, ok, runSuite,
  say, setBase, startServe, stopEvents, stopGroup, taskIds, textOf, waitFor
} from "./e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : undefined; };
const BIN = opt("opencode"), TGZ = opt("package"), SCANNED_HOME = opt("scanned-home"), WORK = opt("work");
if (!BIN || !TGZ || !SCANNED_HOME || !WORK) {
  console.error("usage: e2e_config.mjs --opencode BIN --package TGZ --scanned-home DIR --work DIR");
  process.exit(2);
}
const PKG = packageJsonOf(fs.readFileSync(TGZ));
const SPEC = `${PKG.name}@${PKG.version}`;

let server = null, fake = null, registry = null, log = null;
async function stopServer() {
  stopEvents();
  await stopGroup(server, "SIGTERM", 5000);
}
async function stopAll() {
  await stopServer();
  if (fake) { await fake.close(); fake = null; }
  if (registry) { await registry.close(); registry = null; }
}

// The model and the rules every variant shares (no plugin: each variant lists its own in a file).
function baseConfig() {
  return fakeModelConfig(fake.port);
}

// An isolated world: HOME (npm pointed at the fake registry), a project dir
// (its own git repository: OpenCode would otherwise snapshot the ocbg checkout).
function world(name, home = path.join(WORK, name, "home")) {
  const project = path.join(WORK, name, "project");
  fs.mkdirSync(project, { recursive: true });
  spawnSync("git", ["init", "-q", project]);
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, ".npmrc"), `registry=${registry.url}\n`);
  return { name, home, project, config: path.join(home, ".config") };
}

// Starts `opencode serve` in w.project; its log is WORK/<name>.log. Whether healthy.
async function startServer(w) {
  log = path.join(WORK, `${w.name}.log`);
  const s = await startServe({ bin: BIN, cwd: w.project, env: isolatedEnv(w.home, w.config, baseConfig()), logPath: log,
    logLevel: "DEBUG" });
  server = s.proc;
  setBase(s.base);
  if (s.healthy) followEvents();
  diag(`${w.name}: opencode serve pid ${server.pid} healthy after ${s.ms} ms (log: ${log})`);
  return s.healthy;
}
const logText = () => { try { return fs.readFileSync(log, "utf8"); } catch { return ""; } };

const names = (tools) => tools.map((t) => t.function?.name);
const schemaOf = (tools, name) => tools.find((t) => t.function?.name === name)?.function?.parameters;

// ---- byName: installed by OpenCode from the registry, options from the entry ----
async function byName(w) {
  fs.writeFileSync(path.join(w.project, "opencode.json"), JSON.stringify({
    plugin: [[SPEC, { face_claude: false, poll_interval_ms: 100, e2e_option_from_the_future: 1 }]] }, null, 2));
  if (!ok(await startServer(w), "byName: opencode serve is healthy")) return;
  const s = await newSession("ocbg by name");
  const from = fake.requests.length;
  const list = await callTool(s, "background_list", {}, 120000);
  ok(list?.status === "completed", `byName: the model called background_list of ${SPEC}`, list);
  const installed = path.join(w.home, ".cache/opencode/packages", SPEC, "node_modules", PKG.name, "package.json");
  ok(fs.existsSync(installed) && registry.requests.some((r) => r.url === `/${PKG.name}`) &&
     registry.requests.some((r) => r.url.endsWith(`${PKG.version}.tgz`)),
  "byName: OpenCode installed the package from the registry into its cache", { installed, requests: registry.requests });
  const plugins = [path.join(w.config, "opencode"), path.join(w.project, ".opencode"), path.dirname(installed)]
    .filter((d) => fs.existsSync(path.join(d, "node_modules/@opencode-ai/plugin")));
  ok(plugins.length === 0, "byName: no @opencode-ai/plugin anywhere OpenCode would resolve it", plugins);
  const tools = fake.requests.slice(from).map((r) => r.body.tools || []).find((t) => t.length) || [];
  const n = names(tools);
  ok(n.includes("background_task") && n.includes("bash") && !n.includes("Bash") && !n.includes("Task"),
    "byName: face_claude:false from opencode.json: background_* offered, Bash/Task not", n);
  const bo = schemaOf(tools, "background_output");
  ok(same(bo?.required, ["task_id"]) && bo?.properties?.block?.type === "boolean",
    "byName: zod shipped in the package: background_output requires only task_id", bo);
  const bt = schemaOf(tools, "background_task");
  eq(bt?.required, ["prompt"], "byName: background_task requires only prompt");

  // the unknown key: a warning (a toast and the log), not a refusal
  const toast = await waitFor("the unknown-option toast", () => events.find((e) => e.type === "tui.toast.show" &&
    /e2e_option_from_the_future/.test(e.properties?.message || "")), 10000);
  ok(toast && toast.properties.variant === "warning", "byName: an unknown option key is a warning toast", toast?.properties);
  ok(/ignored unknown option '?e2e_option_from_the_future/.test(logText()), "byName: ... and a line in the log");

  // launch + notify through the package; background_output without `block`
  const started = await callTool(s, "background_task", { prompt: "CHILD gate byname" });
  const id = started?.status === "completed" ? taskIds(started.output)[0] : undefined;
  ok(id, "byName: background_task with only the prompt launched a task", started);
  fake.openGate("byname");
  const notice = await waitFor("the notice", async () =>
    (await messages(s)).filter((m) => m.info.role === "user").map(textOf)
      .find((t) => t.includes(`completed: ${id}`) || (t.includes(id) && /completed/.test(t))), 30000);
  ok(notice && notice.includes("child reply byname"), "byName: the parent was notified with the child's reply", notice);
  await idle(s);
  const out = await callTool(s, "background_output", { task_id: id });
  ok(out?.status === "completed" && out.output.includes("child reply byname"),
    "byName: background_output without block answers (block stays optional)", out);
  const ran = await timedOutAfter(s, "pollfast");
  await stopServer();
  return ran;
}

// How long a task with `timeout: 1` (second) ran before ocbg's guard stopped
// it, as the failure notice says ("ran for 3.0s"): the guards look at each
// poll (poll_interval_ms), so the stop comes at the first poll past 1 s.
async function timedOutAfter(sid, tag) {
  const st = await callTool(sid, "background_task", { prompt: `CHILD gate ${tag}`, timeout: 1 });
  const id = st?.status === "completed" ? taskIds(st.output)[0] : undefined;
  if (!id) return null;
  const notice = await waitFor(`${tag} stopped`, async () => (await messages(sid)).filter((m) => m.info.role === "user")
    .map(textOf).find((t) => t.includes(id) && /Stopped by its timeout/.test(t)), 30000);
  const m = notice && notice.match(/ran for (\d+\.\d)s/);
  await idle(sid);
  return m ? Number(m[1]) : null;
}

// ---- scanned: a source install in a scanned folder, options in opencode.json ----
async function scanned(w) {
  const dir = path.join(w.config, "opencode");
  ok(fs.existsSync(path.join(dir, "plugin/ocbg.js")), "scanned: make install-opencode put ocbg.js into ~/.config/opencode/plugin");
  fs.writeFileSync(path.join(dir, "opencode.json"), JSON.stringify({
    plugin: [["./plugin/ocbg.js", { face_claude: true, poll_interval_ms: 3000 }]] }, null, 2));
  if (!ok(await startServer(w), "scanned: opencode serve is healthy")) return;
  const s = await newSession("ocbg scanned");
  const from = fake.requests.length;
  const list = await callTool(s, "background_list", {}, 120000);
  ok(list?.status === "completed", "scanned: the model called background_list", list);
  const tools = fake.requests.slice(from).map((r) => r.body.tools || []).find((t) => t.length) || [];
  const n = names(tools);
  ok(n.includes("Bash") && n.includes("Task") && n.includes("background_task"),
    "scanned: face_claude:true from ~/.config/opencode/opencode.json reached the scanned copy", n);
  ok(n.filter((x) => x === "background_task").length === 1, "scanned: one ocbg");
  const loads = logText().match(/options from [^\s"]*opencode\.json/g) || [];
  ok(loads.length === 1, "scanned: loaded once, its options found in opencode.json (log)", loads);
  const bo = schemaOf(tools, "background_output");
  eq(bo?.required, ["task_id"], "scanned: zod beside ocbg.js: background_output requires only task_id");
  await requiredOnly(s, tools);
  const ran = await timedOutAfter(s, "pollslow");
  await stopServer();
  return ran;
}

// Every ocbg tool the model is offered, called with exactly the arguments its
// schema (as OpenCode sent it to the model) requires: a model that follows the
// schema must not fail. A value for each required argument, by its name; a
// task id is a finished task's. A refusal the tool owes (a message to a task
// that is not running) counts as working; an argument error never does.
const OCBG_TOOLS = ["background_task", "background_output", "background_list", "background_block", "background_send",
  "TaskOutput", "TaskStop", "Task", "Bash", "background_resume", "background_cancel", "background_clear",
  "background_monitor", "Monitor"];
const REFUSALS = { background_send: /is not running/, background_cancel: /Only running tasks can be cancelled/ };
async function requiredOnly(s, tools) {
  const offered = OCBG_TOOLS.filter((t) => schemaOf(tools, t));
  ok(offered.length === OCBG_TOOLS.length, "scanned: every ocbg tool is offered", names(tools));
  let id;
  const value = (name, prop) => {
    const v = { prompt: "CHILD fast required", message: "CHILD fast more", description: "required only",
      subagent_type: "general", command: "echo required-only", task_id: id }[name];
    if (name === "task_ids") return prop?.type === "array" ? [id] : id;
    return v;
  };
  for (const tool of offered) {
    const schema = schemaOf(tools, tool);
    const args = {};
    for (const r of schema.required || []) args[r] = value(r, schema.properties?.[r]);
    const missing = Object.keys(args).filter((k) => args[k] === undefined);
    if (!ok(missing.length === 0, `required only: a value for each of ${tool}'s required arguments`, { missing, schema })) continue;
    const st = await callTool(s, tool, args, 60000);
    const text = st?.status === "completed" ? st.output : st?.error;
    const works = st?.status === "completed" || (REFUSALS[tool] && REFUSALS[tool].test(text || ""));
    ok(works && !/missing required argument|invalid arguments|invalid_type|must be|expected/i.test(text || ""),
      `required only: ${tool}(${Object.keys(args).join(", ")}) works`, { args, st });
    if (tool === "background_task") {
      id = taskIds(st?.output || "")[0];
      await waitFor("the required-only task's notice", async () => (await messages(s)).filter((m) => m.info.role === "user")
        .map(textOf).find((t) => t.includes(id) && /completed/.test(t)), 30000);
      await idle(s);
    }
  }
}

// ---- invalid: a bad value keeps ocbg out, and the user is told ----
async function invalid(w) {
  fs.writeFileSync(path.join(w.project, "opencode.json"), JSON.stringify({
    plugin: [[SPEC, { poll_interval_ms: -5 }], "e2e-future-plugin@1.0.0", "e2e-now-plugin@1.0.0"] }, null, 2));
  if (!ok(await startServer(w), "invalid: opencode serve is healthy")) return;
  const s = await newSession("ocbg invalid");
  const from = fake.requests.length;
  await say(s, "hello");
  const tools = (await waitFor("a model request with tools", () =>
    fake.requests.slice(from).map((r) => r.body.tools || []).find((t) => t.length), 120000)) || [];
  ok(tools.length > 0 && !names(tools).some((x) => /^background_/.test(x)),
    "invalid: poll_interval_ms -5: ocbg's tools are not offered", names(tools));
  await idle(s);
  const toast = await waitFor("the refusal toast", () => events.find((e) => e.type === "tui.toast.show" &&
    /poll_interval_ms/.test(e.properties?.message || "")), 10000);
  ok(toast && toast.properties.variant === "error" && /refused to load/.test(toast.properties.message),
    "invalid: the user gets a toast saying why", toast?.properties);
  ok(/refused to load: .*poll_interval_ms/.test(logText()), "invalid: ... and the log says it");
  const cache = path.join(w.home, ".cache/opencode/packages");
  ok(fs.existsSync(path.join(WORK, "e2e-now-plugin.loaded")) && !fs.existsSync(path.join(WORK, "e2e-future-plugin.loaded")) &&
     fs.existsSync(path.join(cache, "e2e-future-plugin@1.0.0/node_modules/e2e-future-plugin/package.json")),
  "invalid: OpenCode checks engines.opencode: a package for >=2 is installed but not loaded, one for >=1.18.33 is",
  fs.readdirSync(WORK));
  await stopServer();
}

// ---- nobinary: no binary for this platform: one sentence, toast and log, no tools ----
async function nobinary(w, spec, others) {
  fs.writeFileSync(path.join(w.project, "opencode.json"), JSON.stringify({ plugin: [spec] }, null, 2));
  const ev0 = events.length; // this server's events only
  if (!ok(await startServer(w), "nobinary: opencode serve is healthy")) return;
  const platform = `${process.platform}-${process.arch}`;
  const want = `ocbg: this package has no binary for ${platform} (it has ${others.length ? others.join(", ") : "none"}); ` +
    "background tools are not available";
  const s = await newSession("ocbg without its binary");
  const from = fake.requests.length;
  await say(s, "hello");
  const tools = (await waitFor("a model request with tools", () =>
    fake.requests.slice(from).map((r) => r.body.tools || []).find((t) => t.length), 120000)) || [];
  ok(tools.length > 0 && !names(tools).some((x) => /^background_|^Task|^Bash$/.test(x)),
    `nobinary: ${spec} without a ${platform} binary: no ocbg tool is offered`, names(tools));
  await idle(s);
  const toasts = events.slice(ev0).filter((e) => e.type === "tui.toast.show" && /^ocbg: /.test(e.properties?.message || ""));
  ok(toasts.length >= 1 && toasts.every((t) => t.properties.message === want && t.properties.variant === "error"),
    "nobinary: the user gets one sentence as an error toast: " + want, toasts.map((t) => t.properties));
  ok(logText().includes(want), "nobinary: ... and OpenCode's log has it");
  ok(!/failed to load plugin/i.test(logText()), "nobinary: OpenCode itself reports no failed plugin (server() did not throw)");
  await stopServer();
}

// The package's tarball repacked as version <version>-nobinary without the
// binary for this machine (<platform>-<arch>/ and a flat ocbg_opencode.node
// and ocbg.so): {tgz, spec, others: the platform dirs it still has binaries for}.
function withoutBinary(tgz) {
  const dir = path.join(WORK, "nobinary-pkg"), platform = `${process.platform}-${process.arch}`;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const run = (cmd, args) => {
    const r = spawnSync(cmd, args, { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  };
  run("tar", ["-xzf", tgz]);
  const pkg = path.join(dir, "package");
  for (const f of [platform, "ocbg_opencode.node", "ocbg.so"]) fs.rmSync(path.join(pkg, f), { recursive: true, force: true });
  const pj = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8"));
  pj.version = `${pj.version}-nobinary`;
  fs.writeFileSync(path.join(pkg, "package.json"), JSON.stringify(pj, null, 2));
  const others = fs.readdirSync(pkg).filter((d) => /^[a-z0-9]+-[a-z0-9]+$/.test(d) &&
    fs.existsSync(path.join(pkg, d, "ocbg_opencode.node"))).sort();
  const out = path.join(WORK, `${pj.name}-${pj.version}.tgz`);
  run("tar", ["-czf", out, "package"]);
  return { tgz: out, spec: `${pj.name}@${pj.version}`, others };
}

// Two small packages whose server() writes WORK/<name>.loaded, one for
// engines.opencode ">=2" (an OpenCode that does not exist yet), one for
// ">=1.18.33": OpenCode must skip the first and load the second, as it would
// skip ocbg on a version its engines field excludes. Their tarballs' paths.
function enginePlugins() {
  return [["e2e-future-plugin", ">=2"], ["e2e-now-plugin", ">=1.18.33"]].map(([name, range]) => {
    const dir = path.join(WORK, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", type: "module",
      main: "./index.js", engines: { opencode: range } }));
    fs.writeFileSync(path.join(dir, "index.js"), `import fs from "node:fs";\nexport default { id: "${name}", ` +
      `server: async () => { fs.writeFileSync(${JSON.stringify(path.join(WORK, name + ".loaded"))}, ""); return {}; } };\n`);
    spawnSync("npm", ["pack", "--silent", "--pack-destination", WORK], { cwd: dir });
    return path.join(WORK, `${name}-1.0.0.tgz`);
  });
}

async function main() {
  fs.mkdirSync(WORK, { recursive: true });
  const bare = withoutBinary(TGZ);
  registry = await startFakeRegistry([TGZ, bare.tgz, ...enginePlugins()]);
  fake = await startFakeModel();
  diag(`fake registry ${registry.url}, fake model on 127.0.0.1:${fake.port}`);
  const pkgWorld = world("byname");
  const fast = await byName(pkgWorld);
  const slow = await scanned(world("scanned", SCANNED_HOME));
  diag(`a task with timeout 1 s stopped after ${fast} s at poll_interval_ms 100, ${slow} s at 3000`);
  ok(fast !== null && slow !== null && fast < 2 && slow >= 3,
    "poll_interval_ms from opencode.json sets the poll: a 1 s timeout stops at the first poll past it (100 ms: < 2 s; 3000 ms: >= 3 s)",
    { fast, slow });
  await invalid({ ...world("invalid", pkgWorld.home), name: "invalid" });
  await nobinary(world("nobinary"), bare.spec, bare.others);
}

await runSuite("e2e_config", main, { stop: stopAll });

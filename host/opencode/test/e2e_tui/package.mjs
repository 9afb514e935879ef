// e2e_tui.mjs's last scenario (with --package): make package's tarball installed by name
// from a fake registry; both entries load.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { packageJsonOf } from "../fake_registry.mjs";
import { api, fakeModelConfig, isolatedEnv, ok, provideConfigDeps, waitFor } from "../e2e_lib.mjs";
import { BIN, NPM_DIR, WORK, PACKAGE, fake, startTui, startRegistry } from "./world.mjs";

// The package (make package) by name, as a user installs it (README): `opencode
// plugin <spec>` first, which installs it into OpenCode's cache once (from the
// fake registry here) and lists it in the project's .opencode/opencode.json and
// .opencode/tui.json; then the first start loads both entries (the server
// part's tools are offered to the model, the panel writes its marker).
// Without that step, OpenCode's TUI and its server worker may install the
// spec at once and the server read a half-extracted package (docs/opencode.md).
export async function packageByName() {
  const pkg = packageJsonOf(fs.readFileSync(PACKAGE));
  const spec = `${pkg.name}@${pkg.version}`;
  const registry = await startRegistry([PACKAGE]);
  const w = path.join(WORK, "bypkg");
  const home = path.join(w, "home"), config = path.join(home, ".config"), project = path.join(w, "project");
  const marker = path.join(w, "tui-marker");
  fs.rmSync(w, { recursive: true, force: true });
  fs.mkdirSync(project, { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(path.join(home, ".npmrc"), `registry=${registry.url}\n`);
  provideConfigDeps(path.join(config, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(project, ".opencode"), NPM_DIR);
  spawnSync("git", ["init", "-q", project]);
  // Asynchronous: the fake registry answers from this process's event loop.
  const env = isolatedEnv(home, config, fakeModelConfig(fake.port), { TERM: "xterm-256color" });
  const cli = await new Promise((resolve) => {
    const p = spawn(BIN, ["plugin", spec], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    p.stdout.on("data", (d) => { out += d; });
    p.stderr.on("data", (d) => { out += d; });
    const timer = setTimeout(() => p.kill("SIGKILL"), 120000);
    p.on("exit", (code) => { clearTimeout(timer); resolve({ code, out }); });
  });
  const tuiJson = path.join(project, ".opencode/tui.json");
  let tcfg = null;
  try { tcfg = JSON.parse(fs.readFileSync(tuiJson, "utf8")); } catch {}
  if (!ok(cli.code === 0 && tcfg?.plugin?.some((p) => (Array.isArray(p) ? p[0] : p) === spec),
    `package: opencode plugin ${spec} installs it and lists it in .opencode/tui.json`, { cli, tcfg })) return;
  tcfg.plugin = tcfg.plugin.map((p) => ((Array.isArray(p) ? p[0] : p) === spec ? [spec, { marker }] : p));
  fs.writeFileSync(tuiJson, JSON.stringify(tcfg, null, 2));
  // The tools the model is offered in a new session of the running TUI.
  const offered = async (title) => {
    const sid = (await api("POST", "/session", { title })).json?.id;
    const from = fake.requests.length;
    await api("POST", `/session/${sid}/prompt_async`, { parts: [{ type: "text", text: "hello" }] });
    return waitFor("a model request with tools", () =>
      fake.requests.slice(from).map((r) => (r.body.tools || []).map((t) => t.function?.name)).find((n) => n.length), 60000);
  };
  if (!ok(await startTui(home, config, project, fakeModelConfig(fake.port)), "package: the TUI's HTTP API answers")) return;
  const loaded = await waitFor("the packaged panel's marker", () => fs.existsSync(marker) && fs.readFileSync(marker, "utf8"),
    120000, 200);
  ok(loaded === "loaded\n", `package: the first start loads the panel from the package's exports["./tui"]`, loaded);
  const tools = await offered("package, first start");
  ok(tools?.includes("background_task"), `package: the first start offers the server part's tools to the model`, tools);
}

// The world e2e_tui.mjs's scenarios share: the command line, the isolated HOME
// and project, the TUI in tmux (its own socket) and the helpers that read its
// screen and press its keys, the fake model and the fake server part's side of
// the channel (test/fake_view_plugin.js). Scenario modules import what they
// use; e2e_tui.mjs calls startWithFakePart() once and stopAll() at the end.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeModel } from "../fake_model.mjs";
import { startFakeRegistry } from "../fake_registry.mjs";
import {
  api, diag, fakeModelConfig, followEvents, freePort, isolatedEnv, ok, provideConfigDeps, setBase, stopEvents, waitFor
} from "../e2e_lib.mjs";

const argv = process.argv.slice(2);
const opt = (k, d) => { const i = argv.indexOf(`--${k}`); return i >= 0 ? argv[i + 1] : d; };
export const BIN = opt("opencode"), NPM_DIR = opt("npm-dir"), PROJECT = opt("project"), WORK = opt("work");
const KEEP = argv.includes("--keep");
export const PACKAGE = opt("package"); // make package's tarball: also load it by name from a fake registry
if (!BIN || !NPM_DIR || !PROJECT || !WORK) {
  console.error("usage: e2e_tui.mjs --opencode BIN --npm-dir DIR --project DIR --work DIR [--keep]");
  process.exit(2);
}
const TEST_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url))); // host/opencode/test
export const HOME = path.join(WORK, "home");
export const CONFIG = path.join(HOME, ".config");
export const MARKER = path.join(WORK, "tui-marker");
const FAKE_LOG = path.join(WORK, "fake-view.log");
export const SOCK = `ocbg-e2e-tui-${process.pid}`;
export const NAME = "tui";
export const WIDE = 160, NARROW = 110, ROWS = 45;
const SIDEBAR = 42; // the sidebar's columns, at the right of a wide screen

// ---- tmux ----
let tmuxUp = false;
export const tmux = (...args) => execFileSync("tmux", ["-L", SOCK, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
export const screen = () => tmux("capture-pane", "-p", "-t", NAME);
export const paneTitle = () => tmux("display-message", "-p", "-t", NAME, "#{pane_title}").trim();
export const keys = (...k) => tmux("send-keys", "-t", NAME, ...k);
export const type = (s) => tmux("send-keys", "-t", NAME, "-l", s);
function stopTmux() {
  if (!tmuxUp || KEEP) return;
  try { tmux("kill-server"); } catch {}
  tmuxUp = false;
}
// Ends the TUI's tmux session, if one runs (before the TUI starts again).
export function endTuiSession() {
  if (tmuxUp) { try { tmux("kill-session", "-t", NAME); } catch {} }
}

// The screen's text with runs of blanks made one space (a line the panel
// draws is found whole even where the terminal wrapped it).
export const flat = (s) => s.replace(/\s+/g, " ");
// The sidebar's column of the screen, flattened.
export const sidebar = (s) => flat(s.split("\n").map((r) => r.padEnd(WIDE).slice(WIDE - SIDEBAR)).join("\n"));
export const has = (text, want) => (typeof want === "string" ? text.includes(want) : want.test(text));
// Waits until the screen (through view) shows every one of wants; the screen at the deadline otherwise.
export async function shows(what, wants, view = flat, timeoutMs = 15000) {
  let last = "";
  const hit = await waitFor(what, () => { last = screen(); return wants.every((w) => has(view(last), w)); }, timeoutMs, 100);
  return { hit: !!hit, last };
}
export async function showsOk(name, wants, view = flat, timeoutMs = 15000) {
  const r = await shows(name, wants, view, timeoutMs);
  return ok(r.hit, name, { want: wants.map(String), screen: r.last });
}
export async function gone(name, unwanted, view = flat, timeoutMs = 15000) {
  let last = "";
  const hit = await waitFor(name, () => { last = screen(); return !has(view(last), unwanted); }, timeoutMs, 100);
  return ok(!!hit, name, { unwanted: String(unwanted), screen: last });
}

// Keeps the screen as WORK/screens/NAME.txt (for a look, and the README's pictures).
export const keepScreen = (name) => {
  fs.mkdirSync(path.join(WORK, "screens"), { recursive: true });
  fs.writeFileSync(path.join(WORK, "screens", `${name}.txt`), screen());
};

// ---- the server side of the channel (the fake server part) ----
export const publish = (command) => api("POST", "/tui/publish", { type: "tui.command.execute", properties: { command } });
export const setTasks = (session, tasks) => publish(`ocbgfake.set ${JSON.stringify({ session, tasks })}`);
export const requestsSeen = () => {
  try { return fs.readFileSync(FAKE_LOG, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)); } catch { return []; }
};

export let fake = null;
export let tuiBase = ""; // the running TUI's HTTP API
let registry = null;

// Starts the TUI in tmux (session NAME, WIDE x ROWS) in project, isolated in
// home, with --port for the test's HTTP client. Whether its API answered.
export async function startTui(home, config, project, opencodeConfig) {
  endTuiSession();
  spawnSync("git", ["init", "-q", project]); // its own repository: not the ocbg checkout around build/
  const port = await freePort();
  tuiBase = `http://127.0.0.1:${port}`;
  setBase(tuiBase);
  const env = isolatedEnv(home, config, opencodeConfig, { TERM: "xterm-256color", OPENCODE_FAST_BOOT: "1" });
  execFileSync("tmux", ["-L", SOCK, "-f", "/dev/null", "new-session", "-d", "-s", NAME, "-x", String(WIDE), "-y", String(ROWS),
    "-c", project, BIN, "--port", String(port), "--hostname", "127.0.0.1", "--log-level", "DEBUG"], { env, stdio: "ignore" });
  tmuxUp = true;
  diag(`the TUI runs in tmux -L ${SOCK} (attach: tmux -L ${SOCK} attach -t ${NAME})`);
  return !!await waitFor("the TUI's server", async () => (await api("GET", "/global/health", undefined, 2000)).json?.healthy, 60000, 250);
}

// The TUI started again with ocbg's own server part (the scanned copy, given
// options) and the fake model, bash asking for commands that name e2e-ask,
// permission's other rules from extra; the panel loaded, the event stream
// followed and a new session (title) on screen. The session's id, or null
// when a step failed (its check, named after label, says which).
export async function startWithOcbg(label, scanned, options, extra, title) {
  endTuiSession();
  stopEvents();
  fs.rmSync(MARKER, { force: true });
  const base = fakeModelConfig(fake.port);
  const config = { ...base, snapshot: false,
    permission: { ...base.permission, bash: { "*": "allow", "*e2e-ask*": "ask" }, ...extra },
    plugin: [[path.join(scanned, "ocbg.js"), options]] };
  if (!ok(await startTui(HOME, CONFIG, PROJECT, config), `${label}: the TUI with ocbg's server part answers`)) return null;
  ok(await waitFor("the marker", () => fs.existsSync(MARKER) && fs.readFileSync(MARKER, "utf8") === "loaded\n", 60000, 100),
    `${label}: the panel loaded`);
  followEvents();
  const sid = (await api("POST", "/session", { title })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  return sid;
}

// The TUI with the installed panel (its tui.json entry given the test's
// options) and the fake server part; ocbg's own scanned server plugin set
// aside. The folder it was set aside from (realOcbg puts it back), or null
// when a step failed (its check says which).
export async function startWithFakePart() {
  fs.rmSync(HOME, { recursive: true, force: true });
  fs.mkdirSync(HOME, { recursive: true });
  fs.rmSync(MARKER, { force: true });
  fs.rmSync(FAKE_LOG, { force: true });
  provideConfigDeps(path.join(CONFIG, "opencode"), NPM_DIR);
  provideConfigDeps(path.join(PROJECT, ".opencode"), NPM_DIR);

  // The installed entry, with the test's options added to it.
  const tuiJson = path.join(PROJECT, "tui.json");
  let cfg = null;
  try { cfg = JSON.parse(fs.readFileSync(tuiJson, "utf8")); } catch {}
  const entry = (cfg?.plugin || []).map((p) => (Array.isArray(p) ? p[0] : p)).find((p) => /ocbg_tui\.js$/.test(p));
  if (!ok(entry && fs.existsSync(entry), "install-opencode listed the installed TUI entry in the project's tui.json",
    { tuiJson: cfg, entry })) return null;
  cfg.plugin = cfg.plugin.map((p) => ((Array.isArray(p) ? p[0] : p) === entry ? [entry, { marker: MARKER, key: "<leader>j" }] : p));
  fs.writeFileSync(tuiJson, JSON.stringify(cfg, null, 2));
  // The server part here is the fake: ocbg's own (scanned) server plugin is set aside.
  const scanned = path.join(PROJECT, ".opencode/plugin");
  if (fs.existsSync(scanned)) fs.renameSync(scanned, path.join(PROJECT, ".opencode/plugin.off"));

  fake = await startFakeModel();
  const config = { ...fakeModelConfig(fake.port), plugin: [[path.join(TEST_DIR, "fake_view_plugin.js"), { log: FAKE_LOG }]] };
  const t0 = Date.now();
  if (!ok(await startTui(HOME, CONFIG, PROJECT, config), "the TUI's HTTP API answers")) return null;
  const loaded = await waitFor("the panel's marker", () => fs.existsSync(MARKER) && fs.readFileSync(MARKER, "utf8"), 60000, 100);
  if (!ok(loaded === "loaded\n", "the TUI entry loaded from the installed files (its marker says loaded)", loaded)) return null;
  diag(`the panel loaded ${Date.now() - t0} ms after launch`);
  // The fake server part is loaded at the first request to the project's instance; wait for its answer to a sync.
  await api("GET", "/session");
  const synced = await waitFor("the fake server part", async () => {
    await publish(`ocbg.ui ${JSON.stringify({ v: 1, id: "e2e-probe", action: "sync" })}`);
    return requestsSeen().some((r) => r.id === "e2e-probe");
  }, 30000, 500);
  if (!ok(synced, "the fake server part answers on the bus")) return null;
  return scanned;
}

// Starts the fake registry serving the tarballs (stopped by stopAll).
export async function startRegistry(tarballs) {
  registry = await startFakeRegistry(tarballs);
  return registry;
}

// A time ms ago (epoch ms), for the fake tasks' fields.
export const AGO = (ms) => Date.now() - ms;
// s as a regular expression's literal text.
export const reEscape = (s) => String(s).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

// The folder of task id's worktree (under ocbg's data directory), or undefined.
export function worktreeOf(id) {
  const data = path.join(HOME, ".local/share/opencode/ocbg");
  return (fs.existsSync(data) ? fs.readdirSync(data) : []).map((p) => path.join(data, p, "worktrees", id))
    .find((d) => fs.existsSync(d));
}

// The screen at the end into WORK/screen-at-end.txt, then tmux, the fake model and registry stopped.
export async function stopAll() {
  try { fs.writeFileSync(path.join(WORK, "screen-at-end.txt"), tmuxUp ? screen() : ""); } catch {}
  stopTmux();
  if (fake) { await fake.close(); fake = null; }
  if (registry) { await registry.close(); registry = null; }
}
process.on("exit", () => stopTmux());

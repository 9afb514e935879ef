// ocbg's options when OpenCode passed none: the entry for this module in the
// config files OpenCode 1.18.33 reads. Why: OpenCode keeps one entry per
// plugin file (the last one), and the scan of a `plugin/` folder comes after
// the config files, so a module that is both scanned and listed with options
// in opencode.json is loaded once, without them. (A .mjs file: OpenCode scans
// only `plugin/*.{ts,js}`, so this helper is never loaded as a plugin.)
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// OpenCode's config files, in the order it reads them (its Config.loadInstanceState):
// the global dir's config.json, opencode.json, opencode.jsonc; OPENCODE_CONFIG;
// opencode.json[c] from the worktree root down to the directory; each
// `.opencode` dir from the directory up (then ~/.opencode, OPENCODE_CONFIG_DIR):
// its opencode.json, opencode.jsonc; OPENCODE_CONFIG_CONTENT; /etc/opencode.
// Each is {file, text} or {file: null (inline), text, dir}.
function configSources(env, directory, worktree) {
  const out = [];
  const file = (f) => out.push({ file: f });
  const home = env.HOME || os.homedir();
  const global = path.join(env.XDG_CONFIG_HOME || path.join(home, ".config"), "opencode");
  for (const f of ["config.json", "opencode.json", "opencode.jsonc"]) file(path.join(global, f));
  if (env.OPENCODE_CONFIG) file(env.OPENCODE_CONFIG);
  const project = !env.OPENCODE_DISABLE_PROJECT_CONFIG;
  const up = upFrom(directory, worktree);
  if (project)
    for (const d of [...up].reverse()) for (const f of ["opencode.json", "opencode.jsonc"]) file(path.join(d, f));
  const dirs = [...(project ? up.map((d) => path.join(d, ".opencode")) : []), path.join(home, ".opencode")];
  if (env.OPENCODE_CONFIG_DIR) dirs.push(env.OPENCODE_CONFIG_DIR);
  for (const d of dirs) for (const f of ["opencode.json", "opencode.jsonc"]) file(path.join(d, f));
  if (env.OPENCODE_CONFIG_CONTENT) out.push({ file: null, text: env.OPENCODE_CONFIG_CONTENT, dir: process.cwd() });
  for (const f of ["opencode.json", "opencode.jsonc"]) file(path.join("/etc/opencode", f));
  return out;
}

// directory, its parent, … up to and including worktree (or the root).
function upFrom(directory, worktree) {
  const dirs = [];
  if (!directory) return dirs;
  for (let d = path.resolve(directory); ; d = path.dirname(d)) {
    dirs.push(d);
    if (d === worktree || path.dirname(d) === d) break;
  }
  return dirs;
}

// JSON with comments and trailing commas, read as OpenCode 1.18.33 reads its
// config files (its ConfigParse.jsonc): jsonc-parser, trailing commas allowed,
// any error refuses the whole text. Throws an Error naming the first error
// and its line and column in text. jsonc-parser is the copy shipped beside
// this file (node_modules/), required at the first call so that importing
// this module never fails; without it, every config is unreadable (the
// caller warns and goes on without options from config files).
let jsonc = null;
export function parseJsonc(text) {
  jsonc ??= createRequire(import.meta.url)("jsonc-parser");
  const errors = [];
  const value = jsonc.parse(text, errors, { allowTrailingComma: true });
  if (errors.length) {
    const { error, offset } = errors[0];
    const lines = text.slice(0, offset).split("\n");
    throw new Error(`${jsonc.printParseErrorCode(error)} at line ${lines.length}, column ${lines.at(-1).length + 1}`);
  }
  return value;
}

// The file a path-like spec names (OpenCode: file:// URLs, ./ ../ and
// absolute paths; a directory means its package's entry, or index.js), or
// null for a package spec.
function specFile(spec, baseDir) {
  if (spec.startsWith("file://")) return fileURLToPath(spec);
  if (spec.startsWith(".") || path.isAbsolute(spec)) return path.resolve(baseDir, spec);
  return null;
}

// A package spec's name: "ocbg", "ocbg@0.1.0", "@scope/name@^1".
function specPackage(spec) {
  const at = spec.indexOf("@", spec.startsWith("@") ? 1 : 0);
  return at < 0 ? spec : spec.slice(0, at);
}

function realpath(p) {
  try { return fs.realpathSync(p); } catch { return null; }
}

// The module's own file, as the names a spec may resolve to: the file, or
// its directory (a directory spec loads its entry).
function sameModule(candidate, self) {
  const real = realpath(candidate);
  if (!real) return false;
  return real === self.file || real === self.dir;
}

// Finds the last entry for this module (moduleUrl: import.meta.url) in the
// config files; `packageName` also matches package specs of that name.
// Returns {options, source} (options: the entry's object, or null when it
// has none), or null when no config lists this module. `warn(text)` hears
// about config files it could not read.
export function optionsFromConfig({ moduleUrl, packageName, directory, worktree, env = process.env, warn = () => {} }) {
  const file = realpath(fileURLToPath(moduleUrl));
  if (!file) return null;
  const self = { file, dir: path.dirname(file) };
  let found = null;
  for (const src of configSources(env, directory, worktree)) {
    let text = src.text;
    if (src.file) {
      try { text = fs.readFileSync(src.file, "utf8"); } catch { continue; }
    }
    let cfg;
    try {
      // OpenCode substitutes {env:NAME} before it parses
      cfg = parseJsonc(text.replace(/\{env:([^}]+)\}/g, (_, n) => env[n] || ""));
    } catch (e) {
      warn(`ocbg: could not read ${src.file || "OPENCODE_CONFIG_CONTENT"} (${e.message}) while looking for ocbg's options`);
      continue;
    }
    const base = src.file ? path.dirname(src.file) : src.dir;
    for (const entry of Array.isArray(cfg?.plugin) ? cfg.plugin : []) {
      const spec = Array.isArray(entry) ? entry[0] : entry;
      if (typeof spec !== "string") continue;
      const target = specFile(spec, base);
      const mine = target ? sameModule(target, self) : packageName && specPackage(spec) === packageName;
      if (!mine) continue;
      const opts = Array.isArray(entry) ? entry[1] : undefined;
      found = { options: opts && typeof opts === "object" ? opts : null, source: src.file || "OPENCODE_CONFIG_CONTENT" };
    }
  }
  return found;
}

// Adds the TUI entry to a tui.json "plugin" list, for make install-opencode:
// creates the file when absent, keeps everything else, never adds it twice
// (a string or a [path, options] tuple naming the same file counts). A
// tui.jsonc, or a tui.json that is not plain JSON, is left alone: the line to
// add is printed instead. With --remove (uninstall-opencode): takes the entry
// out again, keeping the rest.
//
// node tui_config.mjs [--remove] FILE ENTRY     (FILE: the tui.json, ENTRY: the path listed)
import fs from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const remove = args[0] === "--remove";
const [file, entry] = remove ? args.slice(1) : args;
if (!file || !entry) {
  console.error("usage: tui_config.mjs TUI_JSON ENTRY_PATH");
  process.exit(2);
}
const line = `"plugin": [${JSON.stringify(entry)}]`;
const jsonc = file.replace(/\.json$/, ".jsonc");
if (remove && !fs.existsSync(file)) process.exit(0);
if (fs.existsSync(jsonc) && !remove) {
  console.log(`ocbg: ${jsonc} exists: add the panel yourself, in its ${line}`);
  process.exit(0);
}
let cfg = {};
if (fs.existsSync(file)) {
  try {
    cfg = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    console.log(`ocbg: ${file} is not plain JSON: add the panel yourself, in its ${line}`);
    process.exit(0);
  }
  if (cfg === null || typeof cfg !== "object" || Array.isArray(cfg) ||
      (cfg.plugin !== undefined && !Array.isArray(cfg.plugin))) {
    console.log(`ocbg: ${file} has an unexpected shape: add the panel yourself, in its ${line}`);
    process.exit(0);
  }
}
const plugins = cfg.plugin || [];
const named = (p) => (Array.isArray(p) ? p[0] : p);
if (remove) {
  if (!plugins.some((p) => named(p) === entry)) process.exit(0);
  cfg.plugin = plugins.filter((p) => named(p) !== entry);
  fs.writeFileSync(file, JSON.stringify(cfg, null, 2) + "\n");
  console.log(`ocbg: the panel's entry removed from ${file}`);
  process.exit(0);
}
if (plugins.some((p) => named(p) === entry)) {
  console.log(`ocbg: ${file} already lists the panel`);
  process.exit(0);
}
cfg = { ...cfg, plugin: [...plugins, entry] };
fs.mkdirSync(path.dirname(file), { recursive: true });
fs.writeFileSync(file, JSON.stringify(cfg, null, 2) + "\n");
console.log(`ocbg: the panel is listed in ${file}`);

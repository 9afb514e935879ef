// ocbg for OpenCode: loads the Node-API addon beside this file, which loads
// ocbg.so (also beside it) and returns the plugin's hooks.
// - zod (for the tool argument schemas; without it OpenCode makes every
//   argument required): the copy shipped beside this file (node_modules/zod),
//   else @opencode-ai/plugin's tool.schema.
// - options: OpenCode's second argument; when it passed none (a copy in a
//   scanned plugin/ folder that opencode.json also lists), this module's own
//   entry in the config files (ocbg_options.mjs).
// - a refusal (a bad option value) is shown to the user as a toast, and logged.
import { createRequire } from "node:module";
import { optionsFromConfig } from "./ocbg_options.mjs";

const require = createRequire(import.meta.url);
const addon = require("./ocbg_opencode.node");

async function findZod() {
  try {
    return (await import("zod")).z;
  } catch {}
  try {
    return (await import("@opencode-ai/plugin")).tool.schema;
  } catch {}
  return null;
}
const zod = await findZod();

function packageName() {
  try {
    return require("./package.json").name;
  } catch {
    return null;
  }
}

// A log line, and for an error a toast: fire-and-forget, they must never
// hold up OpenCode.
function tell(client, level, message) {
  const signal = AbortSignal.timeout(10000);
  client?.app?.log?.({ body: { service: "ocbg", level, message }, signal })?.catch?.(() => {});
  if (level === "error")
    client?.tui?.showToast?.({ body: { title: "ocbg", message, variant: "error" }, signal })?.catch?.(() => {});
}

export default {
  id: "ocbg",
  server: async (input, options) => {
    if (options === undefined) {
      const found = optionsFromConfig({
        moduleUrl: import.meta.url, packageName: packageName(), directory: input?.directory, worktree: input?.worktree,
        warn: (text) => tell(input?.client, "warn", text),
      });
      if (found?.options) {
        options = found.options;
        tell(input?.client, "info", `ocbg: options from ${found.source} (this copy was loaded without them)`);
      }
    }
    try {
      return addon.init(input, options ?? null, zod);
    } catch (e) {
      // OpenCode logs a plugin's failure only in its own log: tell the user why.
      tell(input?.client, "error", String(e?.message ?? e));
      throw e;
    }
  },
};

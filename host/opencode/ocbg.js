// ocbg for OpenCode: loads the Node-API addon beside this file, which loads
// ocbg.so (also beside it) and returns the plugin's hooks. Tool argument
// schemas are built with zod from @opencode-ai/plugin (tool.schema).
import { createRequire } from "node:module";

const addon = createRequire(import.meta.url)("./ocbg_opencode.node");
let zod = null;
try {
  zod = (await import("@opencode-ai/plugin")).tool.schema;
} catch {}

export default {
  id: "ocbg",
  server: async (input, options) => addon.init(input, options ?? null, zod),
};

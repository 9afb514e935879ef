// A test-only server plugin for make e2e: it appends every tui.command.execute
// event its event hook sees (views and replies published by ocbg, requests a
// TUI would send) to the file its options name, one JSON line each. OpenCode's
// /event stream does not carry these; a plugin's event hook does.
import fs from "node:fs";

export default {
  id: "bus-recorder",
  server: async (_input, options) => ({
    event: async ({ event }) => {
      if (event?.type === "tui.command.execute" && options?.file)
        fs.appendFileSync(options.file, JSON.stringify(event.properties?.command ?? null) + "\n");
    },
  }),
};

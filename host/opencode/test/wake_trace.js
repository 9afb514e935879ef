// A bench-only OpenCode plugin for e2e_compare.mjs (never installed for users):
// timestamps on the hops of the wake (a child's last answer → its parent's next
// model request), inside the server, one line each appended to options.file:
// `<ms since the epoch, to 0.01 ms> <hop> <session id>`. Listed before ocbg, so
// that its event hook sees each event just before ocbg's (OpenCode calls every
// plugin's event hook in a row, synchronously, as the bus publishes the event).
//   answer     a turn-ending answer stored (message.updated: assistant, a finish
//              other than tool-calls, not yet completed)
//   completed  that message completed (after the step's snapshot, if any)
//   idle       session.idle
//   pa_call    the SDK client's session.promptAsync called (an ocbg notification
//              leaving the plugin: the client is every plugin's input.client),
//   pa_done    its answer (HTTP 204) back
//   chat       the chat.message hook: OpenCode making a prompt's user message
//   params     the chat.params hook: a step about to call the model
// With options.events, every event's type too (`ev:<type>`), but the streamed
// deltas. It changes nothing: the hooks only read, and promptAsync is wrapped
// only to take its times.
import fs from "node:fs";

const now = () => (performance.timeOrigin + performance.now()).toFixed(2);

export default {
  id: "ocbg-wake-trace",
  server: async (input, options) => {
    const file = options?.file;
    if (!file) return {};
    const put = (at, hop, sid) => { try { fs.appendFileSync(file, `${at} ${hop} ${sid ?? "-"}\n`); } catch {} };
    const session = input?.client?.session;
    const promptAsync = session?.promptAsync;
    if (typeof promptAsync === "function" && !promptAsync.traced) {
      const traced = function (...args) {
        const sid = args[0]?.path?.id;
        put(now(), "pa_call", sid);
        const p = promptAsync.apply(this, args);
        p?.then?.(() => put(now(), "pa_done", sid), () => put(now(), "pa_fail", sid));
        return p;
      };
      traced.traced = true;
      session.promptAsync = traced;
    }
    return {
      event: async ({ event }) => {
        const at = now(), p = event?.properties;
        if (event?.type === "session.idle") put(at, "idle", p?.sessionID);
        else if (event?.type === "message.updated" && p?.info?.role === "assistant" && p.info.finish &&
          !["tool-calls", "unknown"].includes(p.info.finish))
          put(at, p.info.time?.completed ? "completed" : "answer", p.info.sessionID);
        if (options.events && event?.type !== "message.part.delta")
          put(at, `ev:${event?.type}`, p?.sessionID ?? p?.info?.sessionID ?? p?.part?.sessionID);
      },
      "chat.message": async (i) => put(now(), "chat", i?.sessionID),
      "chat.params": async (i) => put(now(), "params", i?.sessionID),
    };
  },
};

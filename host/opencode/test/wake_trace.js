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
// deltas. With options.detail (e2e_compare_tui.mjs, which has no HTTP API to
// ask): `created:<parent id or ->` for each session made, `status:<type>` for
// each session.status, and at load `client:<how>`: `client:in-process` when the
// SDK client given to plugins fetches through OpenCode's own app (no server URL:
// the plain TUI, `opencode run`), `client:http` when through the global fetch.
// With options.fetch, the global fetch is wrapped to stamp each request to a
// `prompt_async` route: `f_call` (the SDK's interceptors done, the request
// leaving) and `f_head` (the response's head back), so that an in-process
// promptAsync shows a pa_call without an f_call; `s_req`: OpenCode's HTTP
// server (node:http) emitting that request to its handler; and `pa_tick`: the
// first macrotask (setImmediate) after each promptAsync call runs. It changes nothing: the hooks
// only read, and promptAsync and fetch are wrapped only to take their times.
import fs from "node:fs";
import http from "node:http";

const now = () => (performance.timeOrigin + performance.now()).toFixed(2);

export default {
  id: "ocbg-wake-trace",
  server: async (input, options) => {
    const file = options?.file;
    if (!file) return {};
    const put = (at, hop, sid) => { try { fs.appendFileSync(file, `${at} ${hop} ${sid ?? "-"}\n`); } catch {} };
    const session = input?.client?.session;
    if (options.detail) {
      // The SDK client's own fetch: OpenCode's P7 gives it `Server.Default().app.fetch` when
      // it has no server URL, else a wrapper of the global fetch.
      const own = input?.client?._client?.getConfig?.()?.fetch;
      put(now(), `client:${own && /app\.fetch/.test(String(own)) ? "in-process" : "http"}`, "-");
    }
    if (options.fetch && typeof globalThis.fetch === "function" && !globalThis.fetch.traced) {
      const f = globalThis.fetch;
      const traced = Object.assign(function (req, init) {
        const url = typeof req === "string" ? req : req?.url ?? String(req);
        const sid = /\/session\/([^/]+)\/prompt_async/.exec(url)?.[1];
        if (!sid) return f.call(this, req, init);
        put(now(), "f_call", sid);
        const p = f.call(this, req, init);
        p?.then?.(() => put(now(), "f_head", sid), () => {});
        return p;
      }, f, { traced: true });
      globalThis.fetch = traced;
      // the server's side: OpenCode's HTTP server is node:http's (Bun's), wrapped by Effect
      const emit = http.Server.prototype.emit;
      if (!emit.traced) {
        http.Server.prototype.emit = Object.assign(function (ev, req, ...rest) {
          const sid = ev === "request" ? /\/session\/([^/]+)\/prompt_async/.exec(req?.url ?? "")?.[1] : undefined;
          if (sid) put(now(), "s_req", sid);
          return emit.call(this, ev, req, ...rest);
        }, { traced: true });
      }
    }
    const promptAsync = session?.promptAsync;
    if (typeof promptAsync === "function" && !promptAsync.traced) {
      const traced = function (...args) {
        const sid = args[0]?.path?.id;
        put(now(), "pa_call", sid);
        // with options.fetch: when the JS thread next gets to a macrotask after the call (how
        // long what was queued before it holds the thread)
        if (options.fetch) setImmediate(() => put(now(), "pa_tick", sid));
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
        if (options.detail && event?.type === "session.created")
          put(at, `created:${p?.info?.parentID ?? "-"}`, p?.info?.id);
        else if (options.detail && event?.type === "session.status") put(at, `status:${p?.status?.type}`, p?.sessionID);
        if (options.events && event?.type !== "message.part.delta")
          put(at, `ev:${event?.type}`, p?.sessionID ?? p?.info?.sessionID ?? p?.part?.sessionID);
      },
      "chat.message": async (i) => put(now(), "chat", i?.sessionID),
      "chat.params": async (i) => put(now(), "params", i?.sessionID),
    };
  },
};

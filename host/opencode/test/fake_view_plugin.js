// A stand-in for ocbg's server part on the panel's channel (docs/panel.md), for
// e2e_tui.mjs: an OpenCode server plugin that keeps the tasks a test gives it
// and speaks ocbg.view / ocbg.ui / ocbg.reply as the real one does, so that the
// TUI entry is tested in the real TUI without the engine behind it.
//
// The test drives it over the same bus (POST /tui/publish, tui.command.execute):
//   "ocbgfake.set {session, tasks}"   replace the session's tasks (times relative: see below), publish its view
//   "ocbgfake.patch {session, id, fields}"  change one task's fields (null: remove the field), publish the view
// Task times given as negative numbers are milliseconds before now. Every
// ocbg.ui request it answers is appended to the file of its `log` option (one
// JSON line each), so the test can count stops and details.
import fs from "node:fs";

export default {
  id: "ocbg-fake-view",
  server: async (input, options) => {
    const client = input.client;
    const log = options?.log;
    const sessions = new Map(); // session -> {seq, tasks}
    const publish = (command) =>
      client.tui.publish({ body: { type: "tui.command.execute", properties: { command } } }).catch(() => {});
    const sendView = (session) => {
      const s = sessions.get(session);
      s.seq++;
      // answer and output are the detail's, not the view's
      const tasks = s.tasks.map(({ answer, output, ...t }) => t);
      publish(`ocbg.view ${JSON.stringify({ v: 1, session, seq: s.seq, now: Date.now(), tasks })}`);
    };
    const reply = (msg) => publish(`ocbg.reply ${JSON.stringify({ v: 1, ...msg })}`);
    const find = (id) => {
      for (const [session, s] of sessions) {
        const t = s.tasks.find((x) => x.id === id);
        if (t) return { session, t };
      }
      return null;
    };
    const absolute = (t) => {
      const out = { ...t };
      for (const k of ["created", "started", "ended"]) if (out[k] <= 0) out[k] = Date.now() + out[k];
      return out;
    };
    const onCommand = (command) => {
      const sp = command.indexOf(" ");
      const prefix = command.slice(0, sp);
      let msg;
      try { msg = JSON.parse(command.slice(sp + 1)); } catch { return; }
      if (prefix === "ocbgfake.set") {
        const s = sessions.get(msg.session) || { seq: 0, tasks: [] };
        s.tasks = msg.tasks.map(absolute);
        sessions.set(msg.session, s);
        sendView(msg.session);
        return;
      }
      if (prefix === "ocbgfake.patch") {
        const t = sessions.get(msg.session)?.tasks.find((x) => x.id === msg.id);
        if (!t) return;
        for (const [k, v] of Object.entries(absolute(msg.fields))) if (v === null) delete t[k]; else t[k] = v;
        sendView(msg.session);
        return;
      }
      if (prefix !== "ocbg.ui") return;
      if (log) fs.appendFileSync(log, JSON.stringify(msg) + "\n");
      if (msg.action === "sync") {
        for (const session of sessions.keys()) sendView(session);
        return;
      }
      const f = find(msg.task_id);
      if (!f) return reply({ id: msg.id, ok: false, error: "no such task" });
      if (msg.action === "stop") {
        if (!["pending", "running", "resumed"].includes(f.t.status))
          return reply({ id: msg.id, ok: false, error: "already ended" });
        Object.assign(f.t, { status: "cancelled", ended: Date.now(), stopped_by_user: true });
        delete f.t.waiting;
        reply({ id: msg.id, ok: true });
        sendView(f.session);
      } else if (msg.action === "detail") {
        const t = f.t;
        const detail = { id: t.id, status: t.status };
        for (const k of ["exit", "error", "waiting", "recent", "tokens", "cost", "answer", "output"])
          if (t[k] !== undefined) detail[k] = t[k];
        reply({ id: msg.id, ok: true, detail });
      }
    };
    return {
      event: async ({ event }) => {
        if (event?.type === "tui.command.execute" && typeof event.properties?.command === "string")
          onCommand(event.properties.command);
      },
    };
  },
};

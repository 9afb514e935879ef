// What ocbg costs OpenCode's event loop where it has nothing to do, measured
// in the adapter itself (ocbg.js + ocbg_opencode.node + ocbg.so), under node
// or Bun, with a fake SDK client:
//   host_cost_per_model_call_us  the messages.transform hook before a model
//                                call of a session ocbg did not fork, with the
//                                10 MB history of bench-data (goal <= 10,
//                                whatever the history's size)
//   host_cost_per_ignored_event_us  the event hook for an event type ocbg
//                                does not read (goal <= 2)
// and, for comparison, what the same work cost before ABI 1.3 (the history
// serialized on every model call): history_stringify_us.
// node bench_host_cost.mjs /abs/dir/ocbg.js /abs/history10mb.json.gz
import fs from "node:fs";
import zlib from "node:zlib";

const [modPath, historyPath] = process.argv.slice(2);
if (!modPath || !historyPath) {
  console.error("usage: bench_host_cost.mjs /abs/ocbg.js history.json.gz");
  process.exit(2);
}
const res = (data) => ({ data, response: { status: 200 } });
const client = {
  session: {
    create: async () => res({ id: "ses_bench" }), get: async () => res({}), messages: async () => res([]),
    promptAsync: async () => ({ data: {}, response: { status: 204 } }), abort: async () => res(true),
    status: async () => res({}), fork: async () => res({ id: "ses_benchfork" }),
  },
  tui: { showToast: async () => res(true) },
  app: { log: async () => res(true) },
};
const mod = (await import(modPath)).default;
const hooks = await mod.server({ client, directory: "/tmp" }, { store: false });
const transform = hooks["experimental.chat.messages.transform"];
const history = JSON.parse(zlib.gunzipSync(fs.readFileSync(historyPath)).toString("utf8"));
const sid = history[history.length - 1]?.info?.sessionID;
if (!Array.isArray(history) || history.length < 100 || !sid) throw new Error("unexpected history shape");

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const now = () => Number(process.hrtime.bigint()) / 1000; // µs

// The model call: the hook must leave a history it does not own unchanged.
const calls = [];
for (let i = 0; i < 200; i++) {
  const output = { messages: history };
  const first = history[0];
  const t = now();
  await transform({}, output);
  calls.push(now() - t);
  if (output.messages !== history || history[0] !== first || history.length < 100)
    throw new Error("the transform changed a history it does not own");
}
// What it cost before: the whole history serialized for each model call.
const strs = [];
for (let i = 0; i < 10; i++) {
  const t = now();
  const s = JSON.stringify(history);
  strs.push(now() - t);
  if (s.length < 5e6) throw new Error("history too small");
}
// Ignored events: a streaming text delta (OpenCode sends many per reply).
const ev = { event: { type: "message.part.delta", properties: { sessionID: sid, messageID: "msg_x", partID: "prt_x",
  field: "text", delta: "x".repeat(40) } } };
const rounds = [];
for (let r = 0; r < 7; r++) {
  const n = 20000, t = now();
  for (let i = 0; i < n; i++) await hooks.event(ev);
  rounds.push((now() - t) / n);
}
// A baseline: the same loop awaiting a no-op async function (what any hook costs).
const noop = async () => {};
const base = [];
for (let r = 0; r < 7; r++) {
  const n = 20000, t = now();
  for (let i = 0; i < n; i++) await noop(ev);
  base.push((now() - t) / n);
}
const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;
console.log(`# runtime: ${runtime}; history: ${history.length} messages`);
console.log(`host_cost_per_model_call_us: ${median(calls).toFixed(1)} us`);
console.log(`history_stringify_us: ${median(strs).toFixed(0)} us`);
console.log(`host_cost_per_ignored_event_us: ${median(rounds).toFixed(2)} us`);
console.log(`host_cost_async_noop_us: ${median(base).toFixed(2)} us`);
await hooks.dispose?.();
process.exit(0);

// e2e.mjs's scenarios: background_monitor (docs/tools.md#monitors), a command's lines as events that wake
// the parent, and a flood stopped with the advice.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import { callTool, idle, messages, newSession, ok, taskIds, userTexts, waitFor } from "../e2e_lib.mjs";
import { fake } from "./world.mjs";

// The newest user message a model call was sent (JSON text).
const lastUserOf = (r) => JSON.stringify([...(r.body.messages || [])].reverse().find((m) => m.role === "user") || {});

// A command printing a line a second for 5 s gives at most 5 events after
// coalescing, each a user message that wakes the parent once (one model call
// has it as its newest user message), then "stream ended" once.
export async function monitorEvents() {
  const s = await newSession("monitor ticks");
  const m = await callTool(s, "background_monitor", { command: "for i in 1 2 3 4 5; do echo tick $i; sleep 1; done",
    description: "ticks" }, 60000);
  const id = m?.output ? taskIds(m.output)[0] : null;
  ok(m?.status === "completed" && id && m.output.startsWith(`Monitor ${id} started: $ for i in`),
    "background_monitor starts a monitor", m);
  const ended = `[ocbg] Monitor ${id} "ticks": stream ended (exit code 0)`;
  const us = await waitFor("stream ended", async () => {
    const t = userTexts(await messages(s));
    return t.some((x) => x.includes(ended)) ? t : null;
  }, 60000);
  const evs = (us || []).filter((x) => x.includes(`[ocbg] Monitor ${id} "ticks", event `));
  ok(evs.length >= 1 && evs.length <= 5 && ["tick 1", "tick 5"].every((l) => evs.join("\n").includes(l)),
    "5 lines a second apart: at most 5 events, every line told", evs);
  ok((us || []).filter((x) => x.includes(ended)).length === 1, "stream ended, once", us);
  await idle(s);
  const woke = evs.map((_, i) => fake.requests.filter((r) => {
    const u = lastUserOf(r);
    return u.includes(id) && u.includes(`event ${i + 1}:`);
  }).length);
  ok(woke.length && woke.every((n) => n === 1), "each event woke the parent once (a model call per event)", woke);
}

// A flood (`yes`) under the default bounds: 12 events at most, then the watch
// stops with the advice to filter more precisely, and its command is stopped.
export async function monitorFlood() {
  const s = await newSession("monitor flood");
  const m = await callTool(s, "background_monitor", { command: "yes", description: "flood" }, 60000);
  const id = m?.output ? taskIds(m.output)[0] : null;
  ok(id, "a monitor on `yes`", m);
  const stop = `[ocbg] Monitor ${id} "flood" stopped: its lines came faster than 12 events a minute for 30.0s`;
  const us = await waitFor("the flood stop", async () => {
    const t = userTexts(await messages(s));
    return t.some((x) => x.includes(stop)) ? t : null;
  }, 90000);
  const note = (us || []).find((x) => x.includes(stop)) || "";
  ok(note.includes("Its command was stopped. Filter more precisely: a pattern that matches only the lines you must " +
    "react to, or a filter in the command"), "the flood is stopped with the advice", note);
  ok((us || []).filter((x) => x.includes(`[ocbg] Monitor ${id} "flood", event `)).length <= 12,
    "at most 12 events before it", us?.length);
  await idle(s);
}

// A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the
// e2e suite. The script is chosen by the last user message's text:
//   "E2E <tool> [json args]"  step 0: the model calls <tool>(args) (streamed
//                              tool_calls); after the tool results: "done <tool>"
//   "E2E launch2 A B"         two background_task calls at once (children "CHILD fast A/B")
//   "E2E launch2gated A B"    the same with children "CHILD gate A/B"
//   "CHILD fast X"            a child's reply: "child reply X"
//   "CHILD gate X"            "child reply X", once the test called openGate("X")
//   "CHILD slow"              streams nothing until the client goes away (max 120 s)
//   "CHILD partial X"         a first step that says "partial X" and calls bash (echo); after
//                              the tool result it streams nothing, like "CHILD slow" (a run
//                              cut short with a stored partial answer)
//   "CHILD error"             HTTP 400 with an error body (a non-retryable API error)
//   "CHILD callgate G <tool> <json>" the same, then "child reply G" once the test called
//                              openGate("G"): the task stays running after its tool call
//   "CHILD call <tool> <json>" the child calls <tool>(args) (e.g. OpenCode's own bash);
//                              after the tool result: "child reply <tool>"
//   "CHILD calls <json>"      the child makes every call of the array [{name, args}] in one step;
//                              after the tool results: "child reply calls"
//   "CHILD compact X [more] [gate]" "child reply X" with a usage of 7520 tokens: on a model with
//                              limit {context: 8000, output: 1000} OpenCode compacts after it;
//                              with "gate", the answer waits at gate "cx-X" (openGate)
//   "CHILD spend X P C [K [R]]" "child reply X" reporting a usage of P prompt tokens (K of them
//                              cached) and C completion tokens (R of them reasoning)
//   "CHILD spendcall X P C"   the child calls bash (echo) reporting that usage; after the tool
//                              result it streams nothing, like "CHILD slow" (a budget must stop it)
//   "CHILD ratelimit X"       the first request: HTTP 429 with retry-after-ms RATE_LIMIT_RETRY_MS;
//                              the retry: "child reply X"
//   "CHILD nest X <json>"     a task that launches one of its own: it calls background_task(args);
//                              after the tool result: "X first"; woken later by a message with no
//                              script line (its task's notification): "X final"
// OpenCode's compaction requests: the summary request (no tools, its last user message begins
// "Here is the conversation so far") gets "E2E SUMMARY of the conversation" and a line
// "compacted task: X [more]" for the "CHILD compact" line it summarizes. The turn after the
// synthetic "Continue if you have next steps…" message (the newest user message), with that
// summary in its history: for "more", a bash call (echo more X), then "continued X"; else the
// sign-off "Nothing more to do: the task is complete."; with no such summary, no text.
//   "CHILD after X MS"        "child reply X", streamed MS milliseconds after the request came
//   "E2E cmpbatch native|ocbg T N MS STEP"  the launch step of e2e_compare.mjs: N calls at once,
//                              to OpenCode's `task` with background: true (native) or to ocbg's
//                              background_task, children "CHILD after T-k MS+k*STEP"; after the
//                              tool results: "launched N"
//   "E2E cmpgated native|ocbg T N MS STEP"  as cmpbatch, but the last child is "CHILD gate T-(N-1)":
//                              it answers when the test opens that gate
//   "E2E busybatch T N"       N background_task calls at once, children "CHILD gate T-1" … "CHILD gate
//                              T-N" (descriptions "busy T-k"); after the tool results the parent's own
//                              last step waits at gate "T-parent" (its turn stays busy), then says "held T"
//   anything else              "ack" (e.g. a notification that woke the parent)
// Title requests (a system prompt about titles) get "E2E title".
//
// Usage: as OpenAI's API does, a streamed answer reports its usage only when the request asks
// for it (stream_options.include_usage, which OpenCode's openai-compatible provider always
// sets): one last chunk with no choices and {prompt_tokens, completion_tokens, total_tokens,
// prompt_tokens_details: {cached_tokens}, completion_tokens_details: {reasoning_tokens}}.
// The default is 10 prompt and 5 completion tokens. Each request's record keeps the usage it
// reported (null: none), when it arrived (at) and when its answer ended (doneAt).
import http from "node:http";

export const RATE_LIMIT_RETRY_MS = 3000;
const DEFAULT_USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

// OpenAI's usage object for P prompt (K cached) and C completion (R reasoning) tokens.
const usageOf = (p, c, k = 0, r = 0) => ({
  prompt_tokens: p, completion_tokens: c, total_tokens: p + c,
  prompt_tokens_details: { cached_tokens: k }, completion_tokens_details: { reasoning_tokens: r },
});

const textOf = (content) =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p && typeof p.text === "string" ? p.text : "")).join("\n")
      : "";

export function decide(body) {
  const msgs = body.messages || [];
  const lastUserText = textOf(msgs.filter((m) => m.role === "user").at(-1)?.content);
  if (!body.tools?.length && lastUserText.startsWith("Here is the conversation so far")) {
    const c = lastUserText.match(/CHILD compact (\S+)( more)?/);
    return { text: `E2E SUMMARY of the conversation${c ? `\ncompacted task: ${c[1]}${c[2] || ""}` : ""}` };
  }
  if (lastUserText.startsWith("Continue if you have next steps")) {
    const c = msgs.map((m) => textOf(m.content).match(/compacted task: (\S+)( more)?/)).find(Boolean);
    if (!c) return { text: "" };
    if (!c[2]) return { text: "Nothing more to do: the task is complete." };
    if (msgs.at(-1)?.role === "tool") return { text: `continued ${c[1]}` };
    return { calls: [{ name: "bash", args: { command: `echo more ${c[1]}`, description: "more" } }] };
  }
  const system = msgs.filter((m) => m.role === "system").map((m) => textOf(m.content)).join("\n");
  if (/title/i.test(system) && !/E2E|CHILD/.test(textOf(msgs.at(-1)?.content))) return { text: "E2E title" };
  // The script line: the newest user message holding an "E2E"/"CHILD" line.
  // A newer user message without one (a notification that arrived meanwhile)
  // as the very last message gets "ack".
  const lineOf = (m) => (textOf(m.content).split("\n").find((l) => /^(E2E|CHILD) /.test(l.trim())) || "").trim();
  const lastMsg = msgs.at(-1);
  if (lastMsg?.role === "user" && !lineOf(lastMsg)) {
    const scripted = msgs.filter((x) => x.role === "user" && lineOf(x)).at(-1);
    const nest = scripted && lineOf(scripted).match(/^CHILD nest (\S+)/);
    return { text: nest ? `${nest[1]} final` : "ack" };
  }
  let lastUser = -1;
  msgs.forEach((m, i) => { if (m.role === "user" && lineOf(m)) lastUser = i; });
  if (lastUser < 0) return { text: "ack" };
  const line = lineOf(msgs[lastUser]);
  const toolResults = msgs.slice(lastUser + 1).filter((m) => m.role === "tool");
  let m;
  if ((m = line.match(/^CHILD fast (\S+)/))) return { text: `child reply ${m[1]}` };
  if ((m = line.match(/^CHILD after (\S+) (\d+)/))) return { delayMs: +m[2], text: `child reply ${m[1]}` };
  if ((m = line.match(/^E2E cmpbatch (native|ocbg) (\S+) (\d+) (\d+) (\d+)/))) {
    if (toolResults.length) return { text: `launched ${m[3]}` };
    return { calls: Array.from({ length: +m[3] }, (_, k) => {
      const args = { description: `child ${k}`, prompt: `CHILD after ${m[2]}-${k} ${+m[4] + k * +m[5]}` };
      return m[1] === "native"
        ? { name: "task", args: { ...args, subagent_type: "general", background: true } }
        : { name: "background_task", args: { ...args, agent: "general" } };
    }) };
  }
  if ((m = line.match(/^E2E cmpgated (native|ocbg) (\S+) (\d+) (\d+) (\d+)/))) {
    if (toolResults.length) return { text: `launched ${m[3]}` };
    return { calls: Array.from({ length: +m[3] }, (_, k) => {
      const args = { description: `child ${k}`, prompt: k === +m[3] - 1 ? `CHILD gate ${m[2]}-${k}` : `CHILD after ${m[2]}-${k} ${+m[4] + k * +m[5]}` };
      return m[1] === "native"
        ? { name: "task", args: { ...args, subagent_type: "general", background: true } }
        : { name: "background_task", args: { ...args, agent: "general" } };
    }) };
  }
  if ((m = line.match(/^E2E busybatch (\S+) (\d+)/))) {
    if (toolResults.length) return { gate: `${m[1]}-parent`, text: `held ${m[1]}` };
    return { calls: Array.from({ length: +m[2] }, (_, k) => ({ name: "background_task",
      args: { description: `busy ${m[1]}-${k + 1}`, prompt: `CHILD gate ${m[1]}-${k + 1}`, agent: "general" } })) };
  }
  if ((m = line.match(/^CHILD compact (\S+)/))) {
    if (msgs.slice(lastUser + 1).some((x) => x.role === "assistant")) return { text: "" };
    return { text: `child reply ${m[1]}`, usage: { prompt_tokens: 7500, completion_tokens: 20, total_tokens: 7520 },
      ...(/ gate\b/.test(line) ? { gate: `cx-${m[1]}` } : {}) };
  }
  if ((m = line.match(/^CHILD spend (\S+) (\d+) (\d+)(?: (\d+))?(?: (\d+))?/)))
    return { text: `child reply ${m[1]}`, usage: usageOf(+m[2], +m[3], +(m[4] || 0), +(m[5] || 0)) };
  if ((m = line.match(/^CHILD spendcall (\S+) (\d+) (\d+)/))) {
    if (toolResults.length) return { hang: true };
    return { calls: [{ name: "bash", args: { command: `echo spent ${m[1]}`, description: "spend" } }],
      usage: usageOf(+m[2], +m[3]) };
  }
  if ((m = line.match(/^CHILD ratelimit (\S+)/)))
    return { rateLimitOnce: m[1], retryAfterMs: RATE_LIMIT_RETRY_MS, text: `child reply ${m[1]}` };
  if ((m = line.match(/^CHILD gate (\S+)/))) return { gate: m[1], text: `child reply ${m[1]}` };
  if ((m = line.match(/^CHILD nest (\S+)\s*(.*)$/))) {
    if (toolResults.length) return { text: `${m[1]} first` };
    let args = {};
    try { args = m[2] ? JSON.parse(m[2]) : {}; } catch { args = {}; }
    return { calls: [{ name: "background_task", args }] };
  }
  if (line.startsWith("CHILD slow")) return { hang: true };
  if ((m = line.match(/^CHILD partial (\S+)/))) {
    if (toolResults.length) return { hang: true, partial: m[1] };
    return { text: `partial ${m[1]}`, calls: [{ name: "bash", args: { command: `echo partial ${m[1]}`,
      description: "partial" } }] };
  }
  if (line.startsWith("CHILD error")) return { error: 400, message: "scripted model failure" };
  if ((m = line.match(/^CHILD callgate (\S+) (\S+)\s*(.*)$/))) {
    if (toolResults.length) return { gate: m[1], text: `child reply ${m[1]}` };
    let args = {};
    try { args = m[3] ? JSON.parse(m[3]) : {}; } catch { args = {}; }
    return { calls: [{ name: m[2], args }] };
  }
  if ((m = line.match(/^CHILD calls (.*)$/))) {
    if (toolResults.length) return { text: "child reply calls" };
    let calls = [];
    try { calls = JSON.parse(m[1]); } catch { calls = []; }
    return { calls };
  }
  if ((m = line.match(/^CHILD call (\S+)\s*(.*)$/))) {
    if (toolResults.length) return { text: `child reply ${m[1]}` };
    let args = {};
    try { args = m[2] ? JSON.parse(m[2]) : {}; } catch { args = {}; }
    return { calls: [{ name: m[1], args }] };
  }
  if ((m = line.match(/^E2E launch2(gated)? (\S+) (\S+)/))) {
    if (toolResults.length) return { text: "launched two" };
    const kind = m[1] ? "gate" : "fast";
    return {
      calls: [m[2], m[3]].map((x) => ({
        name: "background_task",
        args: { description: `${kind} ${x}`, prompt: `CHILD ${kind} ${x}`, agent: "general" },
      })),
    };
  }
  if ((m = line.match(/^E2E (\w+)\s*(.*)$/))) {
    if (toolResults.length) return { text: `done ${m[1]}` };
    let args = {};
    try { args = m[2] ? JSON.parse(m[2]) : {}; } catch { args = {}; }
    return { calls: [{ name: m[1], args }] };
  }
  return { text: "ack" };
}

export async function startFakeModel() {
  const requests = [];
  let seq = 0;
  const open = new Set();
  // Gates: name -> {opened, waiting: [fn]}; a gated answer waits for openGate(name).
  const gates = new Map();
  const limited = new Set(); // names of "CHILD ratelimit" already answered 429
  const gate = (name) => {
    if (!gates.has(name)) gates.set(name, { opened: false, waiting: [] });
    return gates.get(name);
  };
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      let body = {};
      try { body = JSON.parse(raw); } catch {}
      const d = decide(body);
      const rec = { body, decision: d, closed: false, done: false, at: Date.now(), status: 200, usage: null };
      requests.push(rec);
      if (d.rateLimitOnce && !limited.has(d.rateLimitOnce)) {
        limited.add(d.rateLimitOnce);
        rec.status = 429;
        res.writeHead(429, { "content-type": "application/json", "retry-after-ms": String(d.retryAfterMs),
          "retry-after": String(Math.ceil(d.retryAfterMs / 1000)) });
        res.end(JSON.stringify({ error: { message: "Rate limit reached for requests (scripted)", type: "requests",
          code: "rate_limit_exceeded" } }));
        rec.done = true;
        return;
      }
      if (d.error) {
        rec.status = d.error;
        res.writeHead(d.error, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: d.message, type: "invalid_request_error", code: "scripted" } }));
        rec.done = true;
        return;
      }
      const id = `chatcmpl-${++seq}`;
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000),
          model: body.model || "fake", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      open.add(res);
      res.on("close", () => { rec.closed = true; open.delete(res); });
      // The last chunk: the usage, when asked for (choices: [], as OpenAI sends it).
      const usageChunk = () => {
        if (!body.stream_options?.include_usage) return "";
        rec.usage = d.usage || DEFAULT_USAGE;
        return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000),
          model: body.model || "fake", choices: [], usage: rec.usage })}\n\n`;
      };
      if (d.gate && !gate(d.gate).opened) {
        res.write(chunk({ role: "assistant", content: "" }));
        const g = gate(d.gate);
        const go = () => { if (!rec.closed) answer(); };
        g.waiting.push(go);
        res.on("close", () => { g.waiting = g.waiting.filter((f) => f !== go); });
        return;
      }
      if (d.delayMs) {
        res.write(chunk({ role: "assistant", content: "" }));
        const t = setTimeout(() => { if (!rec.closed) answer(); }, d.delayMs);
        res.on("close", () => clearTimeout(t));
        return;
      }
      answer();
      function answer() {
        if (d.hang) {
          res.write(chunk({ role: "assistant", content: "" }));
          const t = setTimeout(() => res.end(), 120000);
          res.on("close", () => clearTimeout(t));
          return;
        }
        if (d.calls) {
          if (d.text) res.write(chunk({ role: "assistant", content: d.text }));
          d.calls.forEach((c, i) => {
            res.write(chunk({ role: "assistant", tool_calls: [{ index: i, id: `call_${seq}_${i}`, type: "function",
              function: { name: c.name, arguments: "" } }] }));
            res.write(chunk({ tool_calls: [{ index: i, function: { arguments: JSON.stringify(c.args) } }] }));
          });
          res.write(chunk({}, "tool_calls"));
        } else {
          res.write(chunk({ role: "assistant", content: "" }));
          if (d.text) res.write(chunk({ content: d.text }));
          res.write(chunk({}, "stop"));
        }
        res.write(usageChunk());
        res.end("data: [DONE]\n\n");
        rec.done = true;
        rec.doneAt = Date.now();
      }
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    port: server.address().port,
    requests,
    openGate: (name) => {
      const g = gate(name);
      g.opened = true;
      for (const f of g.waiting.splice(0)) f();
    },
    close: () =>
      new Promise((r) => {
        for (const res of open) res.destroy();
        server.close(() => r());
        server.closeAllConnections?.();
      }),
  };
}

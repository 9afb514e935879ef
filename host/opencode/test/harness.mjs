// The adapter (ocbg_opencode.node) with the stub plugin and a fake SDK client,
// no OpenCode server. Runs under node and under OpenCode's Bun
// (BUN_BE_BUN=1 opencode harness.mjs /abs/stub/ocbg.js). Prints TAP.
import { isDeepStrictEqual as same } from "node:util";
import { eq, ok, summary } from "./tap.mjs";

const modPath = process.argv[2];
if (!modPath) {
  console.error("usage: harness.mjs /abs/path/ocbg.js");
  process.exit(2);
}
const runtime = typeof Bun !== "undefined" ? `bun ${Bun.version}` : `node ${process.version}`;

const withTimeout = (p, ms, what) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`timeout: ${what}`)), ms))]);

const feeds = new Map(), dirStatus = new Map(); // the watcher's fake streams, status maps by directory
// A fake SDK client in OpenCode's result-tuple style ({data, response} or {error, response}).
const sessions = new Map();
const calls = [];
let nextId = 1;
const res = (data) => ({ data, response: { status: 200 } });
const notFound = (id) => ({
  error: { name: "NotFoundError", data: { message: `Session not found: ${id}` } },
  response: { status: 404 },
});
const later = (v) => new Promise((r) => setTimeout(() => r(v), 5));
const client = {
  session: {
    create: async (o) => {
      calls.push(["create", o]);
      const s = { id: `ses_fake${nextId++}`, parentID: o?.body?.parentID, title: o?.body?.title ?? "New session",
        directory: o?.query?.directory ?? "/tmp" };
      sessions.set(s.id, { info: s, messages: [] });
      return later(res(s));
    },
    get: async (o) => {
      calls.push(["get", o]);
      const s = sessions.get(o.path.id);
      return later(s ? res(s.info) : notFound(o.path.id));
    },
    messages: async (o) => {
      calls.push(["messages", o]);
      const s = sessions.get(o.path.id);
      return later(s ? res(s.messages) : notFound(o.path.id));
    },
    promptAsync: async (o) => {
      calls.push(["promptAsync", o]);
      const s = sessions.get(o.path.id);
      if (!s) return later(notFound(o.path.id));
      s.messages.push({ info: { id: `msg_${nextId++}`, role: "user", sessionID: o.path.id }, parts: o.body.parts });
      return later({ data: {}, response: { status: 204 } });
    },
    abort: async (o) => { calls.push(["abort", o]); return later(res(true)); },
    status: async (o) => {
      calls.push(["status", o]);
      if (!(o.signal instanceof AbortSignal)) throw new Error("no timeout signal on the request");
      return later(res(o?.query?.directory ? dirStatus.get(o.query.directory) ?? {} : {}));
    },
    fork: async (o) => later(res({ id: `ses_fork${nextId++}` })),
  },
  // /event?directory=: server.connected, then what feeds[dir].push() gives,
  // until the signal aborts it or feeds[dir].end() ends it
  event: {
    subscribe: async (o) => {
      const dir = o?.query?.directory;
      calls.push(["subscribe", { directory: dir }]);
      if (dir === "/nowhere") throw new Error("connection refused");
      const queue = [{ type: "server.connected", properties: {} }];
      let wake = null, ended = false;
      const feed = { push: (ev) => { queue.push(ev); wake?.(); }, end: () => { ended = true; wake?.(); } };
      feeds.set(dir, feed);
      o.signal?.addEventListener("abort", () => feed.end());
      async function* stream() {
        for (;;) {
          while (queue.length) yield queue.shift();
          if (ended) return;
          await new Promise((r) => { wake = r; });
        }
      }
      return { stream: stream() };
    },
  },
  instance: { dispose: async (o) => { calls.push(["dispose", o]); return later(res(true)); } },
  app: { log: async (o) => { calls.push(["log", o]); return res(true); } },
  tui: {
    showToast: async (o) => { calls.push(["toast", o]); return res(true); },
    publish: async (o) => { calls.push(["publish", o]); return later(res(true)); },
  },
};

console.log(`# runtime: ${runtime}`);
const mod = (await import(modPath)).default;
ok(mod && mod.id === "ocbg" && typeof mod.server === "function", "module exports {id, server}");

let refused = null;
try {
  await mod.server({ client, directory: "/tmp" }, { refuse: true });
} catch (e) {
  refused = String(e.message);
}
ok(refused && refused.includes("refused"), "refused options make the plugin fail to load", refused);
const toast = calls.find((c) => c[0] === "toast")?.[1]?.body;
ok(toast && toast.variant === "error" && toast.message === refused && toast.title === "ocbg",
  "... and the user is told why: a toast (error) with the reason", toast);
ok(calls.some((c) => c[0] === "log" && c[1]?.body?.level === "error" && c[1].body.message === refused),
  "... and the log has it", calls.filter((c) => c[0] === "log"));

const hooks = await mod.server({ client, directory: "/tmp", project: { id: "prj_harness" } }, { answer: 42 });
ok(hooks && hooks.tool && hooks.tool.stub_echo && hooks.tool.stub_block, "hooks have the plugin's tools");
ok(typeof hooks.event === "function" && typeof hooks.dispose === "function", "event and dispose hooks");
ok(typeof hooks["experimental.chat.messages.transform"] === "function", "messages.transform hook");

// Argument schemas: zod, optional stays optional, descriptions kept.
let z = null;
try {
  // the same package the module finds, through its directory's node_modules
  const dir = modPath.slice(0, modPath.lastIndexOf("/"));
  z = (await import(`${dir}/node_modules/@opencode-ai/plugin/dist/index.js`)).tool.schema;
} catch {}
ok(z !== null, "@opencode-ai/plugin resolvable from the plugin directory");
if (z) {
  const obj = z.object(hooks.tool.stub_echo.args);
  ok(obj.safeParse({ text: "x" }).success, "stub_echo: text alone is valid");
  ok(!obj.safeParse({}).success, "stub_echo: text is required");
  ok(!obj.safeParse({ text: "x", repeat: 1.5 }).success, "stub_echo: repeat must be an integer");
  const js = z.toJSONSchema(obj);
  eq(js.required, ["text"], "JSON Schema: only text required");
  ok(js.properties.repeat?.description === "How many times (optional)" &&
     js.properties.text?.description === "The text to echo", "JSON Schema: descriptions kept", js);
}

const ctx = (extra = {}) => ({
  sessionID: "ses_parent", messageID: "msg_1", agent: "build", callID: "call_1", directory: "/tmp",
  abort: new AbortController().signal, metadata() {}, ...extra,
});

const echo = JSON.parse(await hooks.tool.stub_echo.execute({ text: "hi" }, ctx()));
ok(echo.echo === "hi" && echo.repeat_given === false, "stub_echo runs on a worker and answers", echo);
ok(echo.session === "ses_parent" && echo.agent === "build" && echo.call === "call_1" && echo.directory === "/tmp",
   "call context reaches the plugin", echo);
ok(echo.options === '{"answer":42,"face_claude":false}' && echo.host === "opencode",
   "plugin options reach the plugin, with the Claude face off by default", echo);

// The data directory (ABI 1.2 data_dir): <XDG_DATA_HOME>/opencode/ocbg/<project id>,
// created 0700. make check-opencode points XDG_DATA_HOME at a fresh directory.
const XDG = process.env.XDG_DATA_HOME;
const fs = await import("node:fs");
const want = `${XDG}/opencode/ocbg/prj_harness`;
let mode = null;
try { mode = fs.statSync(want).mode; } catch {}
ok(XDG && echo.data_dir === want && mode !== null && (mode & 0o777) === 0o700 && (mode & 0o170000) === 0o040000,
   "data_dir: <XDG_DATA_HOME>/opencode/ocbg/<project id>, a directory created with mode 0700",
   { XDG, data_dir: echo.data_dir, mode: mode?.toString(8) });
const dataDirOf = async (input) => {
  const h = await mod.server({ client, directory: "/tmp", ...input }, undefined);
  const d = JSON.parse(await h.tool.stub_echo.execute({ text: "d" }, ctx())).data_dir;
  await h.dispose();
  return d;
};
ok(await dataDirOf({}) === null, "data_dir: none without a project id (the plugin still loads)");
ok(await dataDirOf({ project: { id: "../escape" } }) === null && !fs.existsSync(`${XDG}/opencode/escape`),
   "data_dir: none for a project id that is not a plain name; nothing created");
fs.writeFileSync(`${XDG}/opencode/ocbg/a-file`, "");
ok(await dataDirOf({ project: { id: "a-file" } }) === null,
   "data_dir: none when the path is taken by a file (it cannot be created)");

let err = null;
try {
  await hooks.tool.stub_echo.execute({}, ctx());
} catch (e) {
  err = e.message;
}
ok(err === "stub_echo: text is required", "a tool error rejects execute() with the plugin's text", err);

// Host calls from a plugin-owned thread through the thread-safe function.
const hr = JSON.parse(await withTimeout(hooks.tool.stub_host.execute({ title: "kid" }, ctx()), 10000, "stub_host"));
ok(hr.create.rc === 0 && hr.create.out.parentID === "ses_parent" && hr.create.out.title === "kid",
   "session_create from a plugin thread", hr.create);
ok(hr.prompt.rc === 0 && hr.prompt.out === undefined, "session_prompt (promptAsync) succeeds with no output", hr.prompt);
ok(hr.messages.rc === 0 && hr.messages.out.length === 1 && hr.messages.out[0].parts[0].text === "hello from stub",
   "session_messages sees the prompt", hr.messages);
ok(hr.get.rc === 0 && hr.get.out.id === hr.create.out.id, "session_get", hr.get);
ok(hr.status.rc === 0 && same(hr.status.out, {}), "session_status (with a timeout signal)", hr.status);
ok(hr.missing.enoent === true && /NotFoundError/.test(hr.missing.message), "404 NotFoundError becomes -ENOENT", hr.missing);

// Many at once: every plugin thread blocks only itself.
const many = await withTimeout(
  Promise.all(Array.from({ length: 16 }, (_, i) => hooks.tool.stub_host.execute({ title: `t${i}` }, ctx()))),
  20000, "16 stub_host");
ok(many.every((s) => JSON.parse(s).create.rc === 0), "16 concurrent tool calls with host calls");

// Cancellation: the AbortSignal becomes ctx->cancelled + tool_cancel.
const ac = new AbortController();
const t0 = Date.now();
const blocked = hooks.tool.stub_block.execute({}, ctx({ abort: ac.signal }));
let ticks = 0;
const ticker = setInterval(() => ticks++, 10); // the event loop keeps running meanwhile
setTimeout(() => ac.abort(), 300);
let cancelMsg = null;
try {
  await withTimeout(blocked, 5000, "stub_block");
} catch (e) {
  cancelMsg = e.message;
}
clearInterval(ticker);
ok(cancelMsg === "stub_block: cancelled", "abort signal cancels a blocked tool call", cancelMsg);
ok(ticks >= 10 && Date.now() - t0 < 3000, `the event loop ran while the tool blocked (${ticks} ticks)`);

// Already aborted before the call.
const ac2 = new AbortController();
ac2.abort();
let pre = null;
try {
  await withTimeout(hooks.tool.stub_block.execute({}, ctx({ abort: ac2.signal })), 5000, "pre-aborted");
} catch (e) {
  pre = e.message;
}
ok(pre === "stub_block: cancelled", "a call whose signal was already aborted", pre);

// Events.
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_x" } } });
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_x" } } });
await hooks.event({ event: { type: "message.updated", properties: {} } });

// Transform: replaced in place.
const msgs = [{ info: { id: "msg_a", sessionID: "ses_t", role: "user" },
                parts: [{ id: "prt_a", type: "text", text: "hello", sessionID: "ses_t", messageID: "msg_a" }] }];
const output = { messages: msgs };
await hooks["experimental.chat.messages.transform"]({}, output);
ok(output.messages === msgs && msgs[0].parts.length === 2 && msgs[0].parts[1].text === "STUB-MARKER",
   "transform replaces the message array in place", msgs);
const ev = JSON.parse(await hooks.tool.stub_events.execute({}, ctx()));
ok(ev.events["session.idle"] === 2 && ev.events["message.updated"] === 1, "events reach on_event", ev);
ok(ev.transforms === 1 && ev.transform_session === "ses_t", "transform gets the session id from the messages", ev);

// Edits (ABI 1.5 tool_before): tool.execute.before asks the plugin about edit, write and apply_patch only; a
// warning is appended to that call's output by tool.execute.after, a refusal is thrown.
const toolBefore = hooks["tool.execute.before"], toolAfter = hooks["tool.execute.after"];
ok(typeof toolBefore === "function" && typeof toolAfter === "function", "tool.execute.before and after are registered");
await toolBefore({ tool: "write", sessionID: "ses_w", callID: "call_w" }, { args: { filePath: "/a", content: "STUB-WARN" } });
await toolBefore({ tool: "edit", sessionID: "ses_w", callID: "call_e" }, { args: { filePath: "/a", oldString: "x" } });
const wOut = { title: "a", output: "Wrote file successfully.", metadata: {} };
await toolAfter({ tool: "write", sessionID: "ses_w", callID: "call_w", args: {} }, wOut);
ok(wOut.output === "Wrote file successfully.\n\nstub warning: write in ses_w", "a warning follows the output", wOut);
const eOut = { title: "a", output: "Edit applied successfully.", metadata: {} };
await toolAfter({ tool: "edit", sessionID: "ses_w", callID: "call_e", args: {} }, eOut);
ok(eOut.output === "Edit applied successfully.", "a call without a warning keeps its output", eOut);
let refusal = null;
try {
  await toolBefore({ tool: "apply_patch", sessionID: "ses_w", callID: "call_p" }, { args: { patchText: "STUB-REFUSE" } });
} catch (e) {
  refusal = e.message;
}
ok(refusal === "stub refusal: apply_patch", "a refusal is thrown with its text", refusal);
await toolBefore({ tool: "read", sessionID: "ses_w", callID: "call_r" }, { args: { filePath: "STUB-REFUSE" } });
await toolBefore({ tool: "bash", sessionID: "ses_w", callID: "call_b" }, { args: { command: "echo STUB-WARN" } });
const tb = JSON.parse(await hooks.tool.stub_events.execute({}, ctx()));
ok(tb.tool_befores === 3, "the plugin is asked about the three edits, not about read or bash", tb);
// ABI 1.5: a session in another directory, its events and statuses.
{
  const fs = await import("node:fs"), os = await import("node:os"), path = await import("node:path");
  const wt = fs.mkdtempSync(path.join(os.tmpdir(), "ocbg-harness-wt-"));
  const dir = async (args) => JSON.parse(await withTimeout(hooks.tool.stub_dir.execute(args, ctx()), 10000, `stub_dir ${args.op}`));
  const until = async (what, fn) => {
    const t = Date.now();
    while (Date.now() - t < 5000) { const v = await fn(); if (v) return v; await new Promise((r) => setTimeout(r, 10)); }
    return null;
  };
  const subs = () => calls.filter((c) => c[0] === "subscribe" && c[1].directory === wt).length;
  ok((await dir({ op: "watch", directory: wt })).rc === 0 && subs() === 1, "directory_watch 1: the directory's stream followed");
  ok((await dir({ op: "watch", directory: wt })).rc === 0 && subs() === 1, "directory_watch 1 again: one stream");
  ok((await dir({ op: "watch", directory: "/tmp" })).rc === 0 &&
     !calls.some((c) => c[0] === "subscribe" && c[1].directory === "/tmp"), "the instance's own directory: nothing to follow");
  ok((await dir({ op: "watch", directory: "/nowhere" })).rc === -5, "a stream that cannot connect: -EIO");
  const made = await dir({ op: "create_in", directory: wt, title: "in wt" });
  const kid = made.out?.id;
  ok(made.rc === 0 && made.out.directory === wt && made.out.parentID === "ses_parent" &&
     calls.some((c) => c[0] === "create" && c[1].query?.directory === wt), "session_create_in: ?directory=", made);
  // The copy loaded for the task's folder starts no plugin: its tools are the
  // owner's (a call reaches the owner's plugin, options 42, not 7), with its
  // own ToolContext; so is its edit hook; its event hook is the tap only
  // (it hands its instance's events to the copy watching the folder).
  const copy = await mod.server({ client, directory: wt, project: { id: "prj_harness" } }, { answer: 7 });
  ok(copy && Object.keys(copy.tool ?? {}).join() === Object.keys(hooks.tool).join() && typeof copy.event === "function" &&
     !copy["experimental.chat.messages.transform"],
     "the copy loaded for the task's folder offers the owner's tools, its event hook the tap", Object.keys(copy ?? {}));
  const viaCopy = JSON.parse(await withTimeout(copy.tool.stub_echo.execute({ text: "via copy" },
    ctx({ sessionID: kid, directory: wt, callID: "call_wt" })), 10000, "stub_echo through the copy"));
  ok(viaCopy.echo === "via copy" && viaCopy.session === kid && viaCopy.directory === wt && viaCopy.call === "call_wt" &&
     viaCopy.options === '{"answer":42,"face_claude":false}', "a tool call through it is the owner plugin's, with its context", viaCopy);
  let copyRefusal = null;
  try {
    await copy["tool.execute.before"]({ tool: "write", sessionID: kid, callID: "call_wr" }, { args: { filePath: "STUB-REFUSE" } });
  } catch (e) {
    copyRefusal = e.message;
  }
  ok(copyRefusal === "stub refusal: write", "its edit hook is the owner plugin's", copyRefusal);
  const inData = await mod.server({ client, directory: `${XDG}/opencode/ocbg/prj_harness/worktrees/bg_1`,
    project: { id: "prj_harness" } }, { answer: 42 });
  ok(inData && !inData.tool, "so does a copy loaded for a folder inside the project's data directory (ocbg's worktrees)");
  const feed = feeds.get(wt);
  const busy = { id: "evt_1", type: "session.status", properties: { sessionID: kid, status: { type: "busy" } } };
  const watched = (n) => until("the watched events", async () => {
    const e = JSON.parse(await hooks.tool.stub_events.execute({ session: kid }, ctx())).session_events;
    return e["session.idle"] === n ? e : null;
  });
  // While the copy there is live, its instance's events come through its
  // event hook (the tap), and the stream's copies of them are skipped.
  await copy.event({ event: busy });
  await copy.event({ event: busy }); // the same event twice: delivered once
  feed.push(busy);
  await copy.event({ event: { id: "evt_2", type: "server.heartbeat", properties: {} } });
  await copy.event({ event: { id: "evt_3", type: "session.idle", properties: { sessionID: kid } } });
  const seen = await watched(1);
  ok(seen && seen["session.status"] === 1 && seen["session.idle"] === 1 && !seen["server.heartbeat"],
     "the watched directory's events reach on_event through the tap, once each", seen);
  await copy.dispose?.(); // no copy there: the stream delivers
  feed.push({ id: "evt_4", type: "session.idle", properties: { sessionID: kid } });
  const streamed = await watched(2);
  ok(streamed && streamed["session.status"] === 1, "with no copy live there, the stream delivers them", streamed);
  dirStatus.set(wt, { [kid]: { type: "busy" } });
  const st = await dir({ op: "status" });
  ok(st.rc === 0 && st.out[kid]?.type === "busy", "session_status merges the watched directory's map", st);
  const pr = await dir({ op: "prompt", session: kid, title: '{"parts":[{"type":"text","text":"hi"}],"noReply":true}' });
  ok(pr.rc === 0 && calls.findLast((c) => c[0] === "promptAsync")?.[1]?.query?.directory === wt,
     "session_prompt names the session's directory", calls.findLast((c) => c[0] === "promptAsync"));
  await dir({ op: "abort", session: kid });
  ok(calls.findLast((c) => c[0] === "abort")?.[1]?.query?.directory === wt, "session_abort names the session's directory");
  feed.end(); // the stream ends while watched: opened again
  ok(await until("a new stream", () => subs() === 2), "a stream that ended is opened again", subs());
  const un = await dir({ op: "unwatch", directory: wt });
  const disposed = calls.filter((c) => c[0] === "dispose");
  ok(un.rc === 0 && disposed.length === 1 && disposed[0][1].query?.directory === wt,
     "directory_watch 0: the instance disposed (?directory=)", disposed);
  const before = calls.length;
  await dir({ op: "status" });
  ok(!calls.slice(before).some((c) => c[1]?.query?.directory === wt || c[1]?.directory === wt) && subs() === 2,
     "after directory_watch 0 nothing names the directory");
  fs.rmSync(wt, { recursive: true, force: true });
}

// Commands: config adds it, command.execute.before runs it.
const cfg = {};
await hooks.config(cfg);
ok(cfg.command?.stubcmd?.description === "Stub command: prints its arguments", "config hook registers /stubcmd", cfg);
const parts = [{ type: "text", text: "template" }];
await withTimeout(hooks["command.execute.before"]({ command: "stubcmd", sessionID: "ses_c", arguments: "a b" }, { parts }),
  5000, "command");
ok(parts.length === 1 && parts[0].text === "stubcmd ran in ses_c with arguments [a b]", "command output replaces the parts", parts);
const other = [{ type: "text", text: "x" }];
await hooks["command.execute.before"]({ command: "init", sessionID: "ses_c", arguments: "" }, { parts: other });
ok(other[0].text === "x", "other commands untouched");

// Permission questions (ABI 1.1 ask_permission -> ctx.ask). OpenCode rejects
// ctx.ask() with its own error classes; these are shaped like 1.18.33's.
const ocError = (tag, message, extra = {}) => Object.assign(new Error(message), { name: tag, _tag: tag, ...extra });
const askWith = (ask, extra = {}) => ctx({ ask, ...extra });
const stubAsk = async (args, c) => JSON.parse(await withTimeout(hooks.tool.stub_ask.execute(args, c), 5000, "stub_ask"));
let asked = [];
const recordAsk = (answer) => function (input) { asked.push({ input, self: this }); return answer(); };

const okCtx = askWith(recordAsk(() => Promise.resolve()));
let a = await stubAsk({ permission: "bash", patterns: ["git status", "rm -rf build"], always: ["git status *", "rm *"],
  metadata: { command: "git status; rm -rf build" } }, okCtx);
ok(a.rc === "0" && a.out === null, "ask: ctx.ask() fulfilled -> allowed (0)", a);
const in0 = asked[0]?.input;
ok(asked.length === 1 && asked[0].self === okCtx && in0.permission === "bash" &&
   same(in0.patterns, ["git status", "rm -rf build"]) && same(in0.always, ["git status *", "rm *"]) &&
   in0.metadata.command === "git status; rm -rf build", "ask: ctx.ask({permission, patterns, always, metadata}) got parsed values", asked);
asked = [];
a = await stubAsk({ permission: "task", patterns: ["general"] }, askWith(recordAsk(() => Promise.resolve())));
ok(a.rc === "0" && same(asked[0]?.input.always, ["general"]) && same(asked[0]?.input.metadata, {}),
   "ask: no always -> the patterns; no metadata -> {}", asked[0]?.input);

a = await stubAsk({ permission: "bash", patterns: ["rm -rf /"] },
  askWith(() => Promise.reject(ocError("PermissionDeniedError", "The user has specified a rule which prevents you ...",
    { ruleset: [{ permission: "*", pattern: "*", action: "allow" }, { permission: "bash", pattern: "*", action: "allow" },
      { permission: "bash", pattern: "rm *", action: "deny" }] }))));
ok(a.rc === "EACCES" && a.out === `OpenCode's permission rules deny it (bash "rm *": deny)`,
   "ask: PermissionDeniedError (a deny rule) -> -EACCES naming the rule", a);
a = await stubAsk({ permission: "bash", patterns: ["ls"] },
  askWith(() => Promise.reject(ocError("PermissionRejectedError", "The user rejected permission to use this specific tool call."))));
ok(a.rc === "EACCES" && a.out === "the user rejected it", "ask: PermissionRejectedError (reject) -> -EACCES", a);
a = await stubAsk({ permission: "bash", patterns: ["ls"] },
  askWith(() => Promise.reject(ocError("PermissionCorrectedError", "The user rejected ... feedback: use git ls-files",
    { feedback: "use git ls-files" }))));
ok(a.rc === "EACCES" && a.out === 'the user rejected it, saying: "use git ls-files"',
   "ask: PermissionCorrectedError (reject with a message) -> -EACCES with the user's words", a);
a = await stubAsk({ permission: "bash", patterns: ["ls"] }, askWith(() => Promise.reject(new TypeError("boom"))));
ok(a.rc === "EIO" && a.out === "OpenCode could not ask: TypeError: boom", "ask: any other rejection -> -EIO", a);
a = await stubAsk({ permission: "bash", patterns: ["ls"] }, askWith(() => { throw new Error("sync boom"); }));
ok(a.rc === "EIO" && /sync boom/.test(a.out), "ask: ctx.ask() throwing -> -EIO", a);

// A call that fails after the user's "reject" fails with OpenCode's own
// RejectedError object (its processor ends the turn on `instanceof`); other
// refusals fail with the plugin's text (the model takes another step).
const failedWith = async (err) => {
  try {
    await withTimeout(hooks.tool.stub_ask.execute({ permission: "bash", patterns: ["ls"], fail: true },
      askWith(() => Promise.reject(err))), 5000, "stub_ask fail");
    return null;
  } catch (e) { return e; }
};
const rejectedErr = ocError("PermissionRejectedError", "The user rejected permission to use this specific tool call.");
let thrown = await failedWith(rejectedErr);
ok(thrown === rejectedErr, "reject: the failed call rejects with the very error ctx.ask() rejected with", thrown);
const correctedErr = ocError("PermissionCorrectedError", "The user rejected ... feedback: no", { feedback: "no" });
thrown = await failedWith(correctedErr);
ok(thrown instanceof Error && thrown !== correctedErr && JSON.parse(thrown.message).out === 'the user rejected it, saying: "no"',
  "reject with a message: the call fails with the plugin's own text", thrown);
const deniedErr = ocError("PermissionDeniedError", "The user has specified a rule ...", { ruleset: [] });
thrown = await failedWith(deniedErr);
ok(thrown instanceof Error && thrown !== deniedErr && JSON.parse(thrown.message).rc === "EACCES",
  "a deny rule: the call fails with the plugin's own text", thrown);
a = await stubAsk({ permission: "bash", patterns: ["ls"] }, askWith(() => Promise.reject(rejectedErr)));
ok(a.rc === "EACCES", "reject, and the plugin answers anyway: the answer stands", a);

// Esc while the user is being asked: OpenCode never settles ctx.ask() after
// an abort, so the abort itself must end the wait.
const acAsk = new AbortController();
let askSeen = null;
const tAsk = Date.now();
const pendingAsk = stubAsk({ permission: "bash", patterns: ["sleep 1"] },
  askWith(() => { askSeen = Date.now(); return new Promise(() => {}); }, { abort: acAsk.signal }));
const askOpen = await withTimeout(new Promise((r) => { const t = setInterval(() => { if (askSeen) { clearInterval(t); r(true); } }, 5); }),
  5000, "ctx.ask called");
acAsk.abort();
const tEsc = Date.now();
a = await pendingAsk;
ok(askOpen && a.rc === "ECANCELED" && Date.now() - tEsc < 1000,
   `ask: Esc while asking -> -ECANCELED at once (${Date.now() - tEsc} ms after the abort, ${Date.now() - tAsk} ms in all)`, a);
const acPre = new AbortController();
acPre.abort();
asked = [];
a = await stubAsk({ permission: "bash", patterns: ["ls"] }, askWith(recordAsk(() => Promise.resolve()), { abort: acPre.signal }));
ok(a.rc === "ECANCELED" && asked.length === 0, "ask: a call already cancelled -> -ECANCELED, nobody asked", { a, asked: asked.length });

a = await stubAsk({ permission: "bash", patterns: ["ls"] }, ctx());
ok(a.rc === "0", "ask: a tool context without ask() (older OpenCode) -> allowed, as before ABI 1.1", a);
asked = [];
a = await stubAsk({ permission: "bash", raw_patterns: '["ls", 3]' }, askWith(recordAsk(() => Promise.resolve())));
ok(a.rc === "EINVAL" && /patterns_json/.test(a.out) && asked.length === 0, "ask: malformed patterns -> -EINVAL, nobody asked", a);

// The TUI panel's requests (tui.command.execute "ocbg.ui {…}", docs/panel.md) wait in a queue of 64 for one
// thread of the adapter's. A burst of 300 in one tick (the thread's first reply waits for this loop) starts
// that one thread, not 300; the queue's requests are answered, the others refused at once, every one by id.
{
  const fs = await import("node:fs");
  const threads = () => fs.readdirSync("/proc/self/task").length;
  const panel = (msg) => hooks.event({ event: { type: "tui.command.execute",
    properties: { command: `ocbg.ui ${JSON.stringify({ v: 1, ...msg })}` } } });
  const replies = () => calls.filter((c) => c[0] === "publish").map((c) => c[1]?.body?.properties?.command)
    .filter((c) => c?.startsWith("ocbg.reply ")).map((c) => JSON.parse(c.slice(11)));
  const busy = "ocbg is busy: 64 panel requests are waiting; try again";
  const waitReplies = async (ids) => {
    const t = Date.now();
    while (Date.now() - t < 10000) {
      const got = replies().filter((r) => ids.has(r.id));
      if (got.length >= ids.size) return got;
      await new Promise((r) => setTimeout(r, 10));
    }
    return replies().filter((r) => ids.has(r.id));
  };
  const before = threads();
  const ids = new Set();
  for (let i = 0; i < 300; i++) {
    ids.add(`b${i}`);
    panel({ id: `b${i}`, action: "detail", task_id: `stub_${i}` });
  }
  const during = threads();
  const got = await waitReplies(ids);
  const answered = got.filter((r) => r.ok === true && r.detail?.id === `stub_${r.id.slice(1)}`);
  const refused = got.filter((r) => r.ok === false && r.error === busy);
  ok(during <= before + 1 && threads() <= before + 1,
    `a burst of 300 panel requests starts one thread (threads: ${before} before, ${during} during)`);
  ok(got.length === 300 && new Set(got.map((r) => r.id)).size === 300 && answered.length + refused.length === 300,
    "every request of the burst gets one reply, by its id", { got: got.length, answered: answered.length, refused: refused.length });
  ok(answered.length >= 64 && answered.length <= 65 && refused.length === 300 - answered.length,
    `the queue's requests are answered (${answered.length}), the others refused: "${busy}"`, got.slice(-2));
  const again = new Set(["c1", "c2", "c3"]);
  for (const id of again) panel({ id, action: "stop", task_id: "stub_x" });
  const later3 = await waitReplies(again);
  ok(later3.length === 3 && later3.every((r) => r.ok === true) && threads() === during,
    "once the queue drained, requests are answered again, by the same thread", later3);
  panel({ action: "stop", task_id: "bg_x" }); // no id: nobody to answer
  panel({ id: "s1", action: "sync" });
  panel({ id: "t1", action: "toast", title: "A\x1b]2;PWNED\x07 title\n", text: "a\x1b[2J\x1b[Hb\u202ec\u009b31md\x1b]8;;http://x\x1b\\e\x1b]8;;\x1b\\ \x1bc\x07 f\r\ng\tz\x1b" });
  const toasts = async () => {
    const t = Date.now();
    while (Date.now() - t < 5000 && !calls.some((c) => c[0] === "toast" && c[1]?.body?.title?.startsWith("A")))
      await new Promise((r) => setTimeout(r, 10));
    return calls.filter((c) => c[0] === "toast").map((c) => c[1].body).at(-1);
  };
  const shown = await toasts();
  ok(shown?.title === "A title " && shown?.message === "ab\ufffdcde \ufffd f\ng z\ufffd",
    "a toast's title and text reach OpenCode without escape sequences or control characters", shown);
}

// The face_claude default: added unless the user chose.
const optsOf = async (options) => {
  const h = await mod.server({ client, directory: "/tmp" }, options);
  const o = JSON.parse(await h.tool.stub_echo.execute({ text: "o" }, ctx())).options;
  await h.dispose();
  return o;
};
// (the options' JSON text, as the plugin received it)
eq(await optsOf(undefined), '{"face_claude":false}', "no options -> {face_claude:false}");
eq(await optsOf({ face_claude: true, wake: "always" }), '{"face_claude":true,"wake":"always"}',
   "face_claude set by the user is kept");
eq(await optsOf({ face_opencode: false }), '{"face_opencode":false}',
   "face_opencode:false alone keeps the plugin's default (the Claude face stays)");

// Dispose while a tool call blocks: shutdown releases it, nothing deadlocks.
const pending = hooks.tool.stub_block.execute({}, ctx({ abort: new AbortController().signal }))
  .then(() => { throw new Error("resolved"); }, (e) => { throw e; });
pending.catch(() => {});
const pendingHost = hooks.tool.stub_host.execute({}, ctx());
pendingHost.catch(() => {});
let openAsked = false;
const openAsk = hooks.tool.stub_ask.execute({ permission: "bash", patterns: ["ls"] },
  askWith(() => { openAsked = true; return new Promise(() => {}); }));
await new Promise((r) => setTimeout(r, 100));
await withTimeout(hooks.dispose(), 10000, "dispose");
let sd = null;
try {
  await withTimeout(pending, 5000, "blocked after dispose");
} catch (e) {
  sd = e.message;
}
ok(sd === "stub_block: shutting down", "dispose releases a blocked tool call", sd);
const oa = JSON.parse(await withTimeout(openAsk, 5000, "open ask after dispose"));
ok(openAsked && oa.rc === "ECANCELED" && oa.out === "ocbg is shutting down", "dispose ends an open permission question", oa);
let after = null;
try {
  await hooks.tool.stub_echo.execute({ text: "late" }, ctx());
} catch (e) {
  after = e.message;
}
ok(after === "ocbg is shutting down", "calls after dispose are refused", after);
await pendingHost.catch(() => {});

// A second instance in the same process still works (own state).
const hooks2 = await mod.server({ client, directory: "/tmp" }, undefined);
const e2 = JSON.parse(await hooks2.tool.stub_echo.execute({ text: "again", repeat: 3 }, ctx()));
ok(e2.echo === "again" && e2.repeat === 3 && e2.options === '{"face_claude":false}', "a second instance, default options", e2);
await hooks2.dispose();

// The loader: copies of the stub's folder laid out as the package is
// (<platform>-<arch>/ocbg_opencode.node and its ocbg.so), without a binary for
// this platform, or with one that does not load. Each copy is its own module
// (its own URL), so each looks for its addon afresh.
{
  const fs = await import("node:fs"), os = await import("node:os"), path = await import("node:path");
  const stubDir = path.dirname(modPath), platform = `${process.platform}-${process.arch}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ocbg-loader-"));
  // a copy of the stub's folder without its binaries; dirs: {name: {file: content or a path to copy}}
  const copy = (name, dirs = {}) => {
    const d = path.join(tmp, name);
    fs.mkdirSync(d);
    for (const f of ["ocbg.js", "ocbg_options.mjs"]) fs.copyFileSync(path.join(stubDir, f), path.join(d, f));
    fs.symlinkSync(fs.realpathSync(path.join(stubDir, "node_modules")), path.join(d, "node_modules"));
    for (const [sub, files] of Object.entries(dirs)) {
      fs.mkdirSync(path.join(d, sub));
      for (const [f, v] of Object.entries(files))
        if (v instanceof Buffer) fs.writeFileSync(path.join(d, sub, f), v);
        else fs.copyFileSync(v, path.join(d, sub, f));
    }
    return path.join(d, "ocbg.js");
  };
  // server() of a copy: {hooks, thrown, toasts, logs} (only this call's)
  const load = async (file) => {
    const from = calls.length;
    let hooks = null, thrown = null;
    try {
      hooks = await (await import(file)).default.server({ client, directory: "/tmp", project: { id: "prj_loader" } }, {});
    } catch (e) {
      thrown = String(e?.message ?? e);
    }
    const mine = calls.slice(from);
    return { hooks, thrown, toasts: mine.filter((c) => c[0] === "toast").map((c) => c[1].body),
      logs: mine.filter((c) => c[0] === "log").map((c) => c[1].body) };
  };
  const told = (r, sentence) => r.toasts.length === 1 && r.toasts[0].message === sentence &&
    r.toasts[0].variant === "error" && r.toasts[0].title === "ocbg" &&
    r.logs.length === 1 && r.logs[0].message === sentence && r.logs[0].level === "error";
  const noTools = (r) => r.thrown === null && r.hooks && Object.keys(r.hooks.tool ?? {}).length === 0;

  const others = ["linux-arm64", "linux-x64", "darwin-arm64"].filter((p) => p !== platform);
  const fake = Buffer.from("\x7fELF not a binary");
  let r = await load(copy("none"));
  let want = `ocbg: this package has no binary for ${platform} (it has none); background tools are not available`;
  ok(told(r, want), "loader: no binary at all -> one sentence, as an error toast and a log line", { want, r });
  ok(noTools(r), "loader: ... server() does not throw and registers no tool", r.thrown ?? r.hooks);
  r = await load(copy("others", { [others[0]]: { "ocbg_opencode.node": fake }, [others[1]]: { "ocbg_opencode.node": fake },
    [platform]: { "ocbg.so": fake }, "empty-dir": {} }));
  want = `ocbg: this package has no binary for ${platform} (it has ${[others[0], others[1]].sort().join(", ")}); ` +
    "background tools are not available";
  ok(told(r, want) && noTools(r), "loader: binaries for other platforms only -> the sentence lists them, no tools",
    { want, r });
  const addon = fs.readFileSync(path.join(stubDir, "ocbg_opencode.node"));
  // cut within its ELF header's first 16 bytes: dlopen's own reason
  r = await load(copy("truncated", { [platform]: { "ocbg_opencode.node": addon.subarray(0, 10) } }));
  const prefix = `ocbg: cannot load its ${platform} binary: `, said = r.toasts[0]?.message ?? "";
  ok(said.startsWith(prefix) && /ocbg_opencode\.node: file too short$/.test(said) && told(r, said),
    "loader: a truncated binary for this platform -> 'cannot load' with the loader's reason, toast and log", r);
  ok(noTools(r), "loader: ... and no tools", r.thrown ?? r.hooks);
  console.log(`# loader: ${said}`);
  // cut past its program headers (dlopen would die of SIGBUS: node and Bun
  // alike, and OpenCode with them): ocbg.js finds it first; the addon, then
  // its ocbg.so
  const so = fs.readFileSync(path.join(stubDir, "ocbg.so"));
  for (const [name, files, cut] of [
    ["ocbg_opencode.node", { "ocbg_opencode.node": addon.subarray(0, 4096), "ocbg.so": so }, "ocbg_opencode.node"],
    ["ocbg.so", { "ocbg_opencode.node": addon, "ocbg.so": so.subarray(0, 4096) }, "ocbg.so"]]) {
    const dir = copy(`cut-${name}`, { [platform]: files });
    r = await load(dir);
    want = `${prefix}${path.join(path.dirname(dir), platform, cut)} is cut short (4096 of at least `;
    const text = r.toasts[0]?.message ?? "";
    ok(text.startsWith(want) && / bytes\); install ocbg again$/.test(text) && told(r, text) && noTools(r),
      `loader: ${name} cut short past its program headers -> 'cut short', no dlopen (no SIGBUS), no tools`, { want, r });
  }
  r = await load(copy("package", { [platform]: { "ocbg_opencode.node": path.join(stubDir, "ocbg_opencode.node"),
    "ocbg.so": path.join(stubDir, "ocbg.so") } }));
  ok(r.thrown === null && r.toasts.length === 0 && r.hooks?.tool?.stub_echo,
    `loader: the package layout (${platform}/ocbg_opencode.node beside its ocbg.so) loads, with its tools`, r);
  if (r.hooks?.tool?.stub_echo) {
    const e = JSON.parse(await r.hooks.tool.stub_echo.execute({ text: "pkg" }, ctx()));
    ok(e.echo === "pkg", "loader: ... and a tool of it answers", e);
    await r.hooks.dispose();
  }
  fs.rmSync(tmp, { recursive: true, force: true });
}

// ocbg_options.mjs: the options of a module OpenCode loaded without them,
// from its own entry in the config files (read in OpenCode's order, the last
// entry wins), in a throw-away HOME and project.
{
  const fs = await import("node:fs"), os = await import("node:os"), path = await import("node:path");
  const { pathToFileURL } = await import("node:url");
  const { optionsFromConfig, parseJsonc } = await import(new URL("ocbg_options.mjs", pathToFileURL(modPath)).href);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ocbg-opts-"));
  const home = path.join(tmp, "home"), global = path.join(home, ".config/opencode"), project = path.join(tmp, "project");
  fs.mkdirSync(path.join(global, "plugin"), { recursive: true });
  fs.mkdirSync(path.join(project, ".opencode"), { recursive: true });
  const file = path.join(tmp, "mod", "ocbg.js");
  fs.mkdirSync(path.dirname(file));
  fs.writeFileSync(file, "");
  fs.symlinkSync(file, path.join(global, "plugin/ocbg.js"));
  const env = { HOME: home };
  const find = (e = env, packageName = null) =>
    optionsFromConfig({ moduleUrl: pathToFileURL(file).href, packageName, directory: project, worktree: project, env: e });
  ok(find() === null, "options: no config lists the module -> null");
  fs.writeFileSync(path.join(global, "opencode.jsonc"),
    '{\n  // the scanned copy, listed\n  "plugin": [["./plugin/ocbg.js", {"poll_interval_ms": 500, "url": "http://x//y"}],],\n}');
  eq(find()?.options, { poll_interval_ms: 500, url: "http://x//y" },
    "options: a relative spec in ~/.config/opencode/opencode.jsonc (comments, trailing commas, a symlink)");
  fs.writeFileSync(path.join(project, ".opencode/opencode.json"),
    JSON.stringify({ plugin: ["other.js", [file, { face_claude: true }]] }));
  ok(same(find()?.options, { face_claude: true }) && find().source.endsWith(".opencode/opencode.json"),
    "options: a later config file's entry wins (OpenCode keeps the last)", find());
  const inline = { ...env, OPENCODE_CONFIG_CONTENT: JSON.stringify({ plugin: [[pathToFileURL(file).href, { wake: "never" }]] }) };
  eq(find(inline)?.options, { wake: "never" }, "options: OPENCODE_CONFIG_CONTENT, a file:// URL, comes last");
  const byName = { ...env, OPENCODE_CONFIG_CONTENT: JSON.stringify({ plugin: [["ocbg@0.1.0", { max_depth: 2 }]] }) };
  ok(same(find(byName, "ocbg")?.options, { max_depth: 2 }) && same(find(byName, null)?.options, { face_claude: true }),
    "options: a package spec matches only the package of that name", [find(byName, "ocbg"), find(byName, null)]);
  fs.writeFileSync(path.join(project, "opencode.json"), JSON.stringify({ plugin: [file] }));
  eq(find()?.options, { face_claude: true }, "options: project opencode.json comes before .opencode/");
  ok(same(parseJsonc('{"a": "// not a comment", /* b */ "c": [1,2,],}'), { a: "// not a comment", c: [1, 2] }) &&
     same(parseJsonc('{"s": "x, ]", "p": [1, // c\n ],\n}'), { s: "x, ]", p: [1] }),
    "options: JSONC: comments and trailing commas outside strings");
  // as OpenCode reads it (jsonc-parser): what it refuses is refused, the error at its line and column
  const refusal = (text) => { try { return parseJsonc(text) && "accepted"; } catch (e) { return e.message; } };
  eq([refusal('{"a": 1} /* open'), refusal('{"a": [,]}'), refusal('{\n  "a": 1 // one\n  "b": 2\n}')],
    ["UnexpectedEndOfComment at line 1, column 10", "ValueExpected at line 1, column 8", "CommaExpected at line 3, column 3"],
    "options: JSONC: an unclosed comment, a lone comma, a missing comma refused, with line and column");
  const warned = [];
  fs.writeFileSync(path.join(global, "opencode.jsonc"), '{\n  "plugin": [\n    "x"\n    "y"\n  ]\n}');
  optionsFromConfig({ moduleUrl: pathToFileURL(file).href, directory: project, worktree: project, env,
    warn: (t) => warned.push(t) });
  eq(warned, [`ocbg: could not read ${path.join(global, "opencode.jsonc")} (CommaExpected at line 4, column 5) ` +
    "while looking for ocbg's options"], "options: a config file OpenCode would refuse is skipped, with a warning");
  fs.rmSync(tmp, { recursive: true, force: true });
}

const failed = summary(runtime);
// No explicit exit: the process must end by itself (the thread-safe
// functions never keep the loop alive).
process.exitCode = failed;

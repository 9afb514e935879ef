// ocbg for OpenCode: loads the Node-API addon, which loads ocbg.so (beside
// it) and returns the plugin's hooks.
// - the addon (loadAddon, at the first server() call: importing this module
//   cannot fail on a missing or broken binary): <platform>-<arch>/ of the
//   package (linux-x64/, linux-arm64/), else ocbg_opencode.node beside this
//   file (a source install). None for this platform, or one that does not
//   load: one sentence as a toast and in the log, and no tools.
// - zod (for the tool argument schemas; without it OpenCode makes every
//   argument required): the copy shipped beside this file (node_modules/zod),
//   else @opencode-ai/plugin's tool.schema.
// - options: OpenCode's second argument; when it passed none (a copy in a
//   scanned plugin/ folder that opencode.json also lists), this module's own
//   entry in the config files (ocbg_options.mjs).
// - a refusal (a bad option value) is shown to the user as a toast, and logged.
// - the watcher (ABI 1.5 directory_watch): the event streams of other
//   directories' instances, fed into the same event hook (makeWatcher).
// - a tool call refused by the user's "reject" fails with OpenCode's own
//   rejection error, so that the turn ends as for OpenCode's tools
//   (endTurnOnReject).
import fs from "node:fs";
import { createRequire } from "node:module";
import { optionsFromConfig } from "./ocbg_options.mjs";

const require = createRequire(import.meta.url);

// The addon for this platform: {addon}, or {failure: the sentence for the
// user}. Looked up once (a failed dlopen would fail again the same way).
const ADDON = "ocbg_opencode.node";
let loaded = null;
function loadAddon() {
  if (loaded) return loaded;
  const dir = new URL(".", import.meta.url);
  const platform = `${process.platform}-${process.arch}`;
  const has = (rel) => { try { return fs.statSync(new URL(rel, dir)).isFile(); } catch { return false; } };
  const rel = [`./${platform}/${ADDON}`, `./${ADDON}`].find(has);
  if (!rel) {
    let present = [];
    try {
      present = fs.readdirSync(dir).filter((d) => /^[a-z0-9]+-[a-z0-9]+$/.test(d) && has(`./${d}/${ADDON}`)).sort();
    } catch {}
    return (loaded = { failure: `ocbg: this package has no binary for ${platform} (it has ` +
      `${present.length ? present.join(", ") : "none"}); background tools are not available` });
  }
  const short = [rel, rel.replace(ADDON, "ocbg.so")].map((f) => cutShort(new URL(f, dir))).find(Boolean);
  if (short) return (loaded = { failure: `ocbg: cannot load its ${platform} binary: ${short}` });
  try {
    return (loaded = { addon: require(rel) });
  } catch (e) {
    return (loaded = { failure: `ocbg: cannot load its ${platform} binary: ${String(e?.message ?? e)}` });
  }
}

// Why an ELF64 file (the addon, ocbg.so) is shorter than its headers say it
// is (an install or copy cut short), or null (whole, not ELF64, or unreadable:
// dlopen then says why). dlopen maps such a file and dies of SIGBUS reading
// past its end, taking OpenCode with it, instead of failing.
function cutShort(url) {
  let fd = -1;
  try {
    fd = fs.openSync(url, "r");
    const size = fs.fstatSync(fd).size, read = (len, at) => {
      const b = Buffer.alloc(len);
      return fs.readSync(fd, b, 0, len, at) === len ? b : null;
    };
    const h = read(64, 0);
    if (!h || h.readUInt32BE(0) !== 0x7f454c46 || h[4] !== 2 || (h[5] !== 1 && h[5] !== 2)) return null;
    const le = h[5] === 1, u16 = (b, o) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u64 = (b, o) => Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o));
    const phoff = u64(h, 0x20), phentsize = u16(h, 0x36), phnum = u16(h, 0x38);
    let need = Math.max(64, u64(h, 0x28) + u16(h, 0x3a) * u16(h, 0x3c), phoff + phentsize * phnum);
    const ph = need <= size && phentsize >= 56 ? read(phentsize * phnum, phoff) : null;
    for (let i = 0; ph && i < phnum; i++) // PT_LOAD: p_offset + p_filesz
      if ((le ? ph.readUInt32LE(i * phentsize) : ph.readUInt32BE(i * phentsize)) === 1)
        need = Math.max(need, u64(ph, i * phentsize + 8) + u64(ph, i * phentsize + 32));
    return size < need ? `${decodeURIComponent(url.pathname)} is cut short (${size} of at least ${need} bytes); ` +
      "install ocbg again" : null;
  } catch {
    return null;
  } finally {
    if (fd >= 0) fs.closeSync(fd);
  }
}

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

// Timings of the watcher: how long a watch waits for its stream's first
// event, and the reconnect backoff (first, most).
const WATCH_CONNECT_MS = 20000, RECONNECT_MS = 250, RECONNECT_MAX_MS = 10000;

// The event streams of other directories (OpenCode keeps an instance per
// directory, and /event carries only its own): watch({directory, watch: true})
// follows GET /event?directory=<dir> and resolves once the stream sent
// server.connected (OpenCode attaches its bus listener before it sends that
// event, so nothing published afterwards is missed); each event then goes to
// deliver(ev) (the event hook: the same type filter and on_event), the
// stream's own server.* events and repeated ids skipped. A stream that ends
// or fails while watched is opened again (backoff). watch({directory, watch:
// false}) stops it and resolves once its loop has ended: no request for the
// directory follows. Answers as the SDK does: {data} or {error}.
// The in-process tap: a watched directory's events straight from the copy of
// ocbg OpenCode loaded in that directory's instance (its event hook gets each
// event as the bus publishes it), not through /event, whose delivery to this
// same process lags by tens of ms (far more when the server is busy): a
// child's answer reaches the engine at once. Shared through globalThis, so
// every copy and module instance in the process sees one registry. While a
// copy there is live, the stream's events are skipped (the tap gave them
// first); with none (no copy loaded there, or it failed), the stream delivers.
const TAPS = (globalThis[Symbol.for("ocbg.taps.v1")] ??= { live: new Map(), listeners: new Map() });
export function tapForward(directory, ev) {
  for (const fn of TAPS.listeners.get(directory) ?? []) { try { fn(ev); } catch {} }
}
export function tapOpen(directory) {
  TAPS.live.set(directory, (TAPS.live.get(directory) ?? 0) + 1);
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    const n = (TAPS.live.get(directory) ?? 1) - 1;
    if (n > 0) TAPS.live.set(directory, n); else TAPS.live.delete(directory);
  };
}
const tapLive = (directory) => (TAPS.live.get(directory) ?? 0) > 0;
function tapListen(directory, fn) {
  let set = TAPS.listeners.get(directory);
  if (!set) TAPS.listeners.set(directory, (set = new Set()));
  set.add(fn);
  return () => { set.delete(fn); if (!set.size && TAPS.listeners.get(directory) === set) TAPS.listeners.delete(directory); };
}

export function makeWatcher(client, deliver) {
  const streams = new Map(); // directory -> {ac, done}
  const wait = (ms, signal) => new Promise((r) => {
    const t = setTimeout(r, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); r(); }, { once: true });
  });
  async function follow(directory, ac, connected) {
    const seen = new Set();
    const once = (ev) => {
      if (ev.id) {
        if (seen.has(ev.id)) return;
        seen.add(ev.id);
        if (seen.size > 2000) seen.delete(seen.values().next().value);
      }
      try { deliver(ev); } catch {}
    };
    const unlisten = tapListen(directory, (ev) => {
      if (!ac.signal.aborted && typeof ev?.type === "string" && !ev.type.startsWith("server.")) once(ev);
    });
    ac.signal.addEventListener("abort", unlisten, { once: true });
    let delay = RECONNECT_MS, first = true;
    while (!ac.signal.aborted) {
      let failure = null, up = false;
      try {
        const { stream } = await client.event.subscribe({ query: { directory }, signal: ac.signal, sseMaxRetryAttempts: 1 });
        for await (const ev of stream) {
          if (ac.signal.aborted) break;
          if (ev?.type === "server.connected") { up = true; first = false; delay = RECONNECT_MS; connected(null); continue; }
          if (typeof ev?.type !== "string" || ev.type.startsWith("server.") || tapLive(directory)) continue;
          once(ev);
        }
      } catch (e) { failure = e; }
      if (first && !up) { connected(failure ?? new Error("the event stream ended before it connected")); return; }
      if (ac.signal.aborted) return;
      await wait(delay, ac.signal);
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  }
  async function start(directory) {
    const ac = new AbortController();
    let settle;
    const ready = new Promise((r) => { settle = r; });
    const st = { ac, done: null };
    streams.set(directory, st);
    st.done = follow(directory, ac, (err) => settle(err));
    const timer = setTimeout(() => settle(new Error(`no server.connected within ${WATCH_CONNECT_MS} ms`)), WATCH_CONNECT_MS);
    const err = await ready;
    clearTimeout(timer);
    if (err) await stop(directory);
    return err;
  }
  async function stop(directory) {
    const st = streams.get(directory);
    if (!st) return;
    streams.delete(directory);
    st.ac.abort();
    await st.done.catch(() => {});
  }
  const fail = (e) => ({ error: { name: e?.name ?? "Error", message: String(e?.message ?? e) } });
  return {
    async watch(opts) {
      const directory = opts?.directory;
      if (typeof directory !== "string") return fail(new Error("no directory"));
      if (!opts.watch) { await stop(directory); return { data: true }; }
      if (streams.has(directory)) return { data: true };
      if (typeof client?.event?.subscribe !== "function") return fail(new Error("the SDK client has no event.subscribe"));
      const err = await start(directory);
      return err ? fail(err) : { data: true };
    },
    async close() { await Promise.all([...streams.keys()].map(stop)); },
  };
}

// OpenCode 1.18.33's session processor ends the turn (no further model step)
// when a tool fails with Permission's RejectedError (`instanceof`: the user's
// "reject" without a message); any other tool error, a reject with a message
// (CorrectedError) and a deny rule (DeniedError) included, lets the model take
// another step. ocbg's answer to a refusal is its own text, so a call that
// fails after ctx.ask() rejected with that class fails with the very object
// ctx.ask() rejected with: the processor then ends the turn as for its bash.
// A call that succeeds anyway keeps its answer.
const REJECTED = "PermissionRejectedError";
export function endTurnOnReject(tool) {
  const execute = tool?.execute;
  if (typeof execute !== "function") return tool;
  tool.execute = async function (args, ctx) {
    let rejected = null;
    const ask = ctx?.ask;
    const seen = typeof ask !== "function" ? ctx : Object.create(ctx, { ask: { enumerable: true, value(input) {
      const p = ask.call(ctx, input);
      if (typeof p?.then !== "function") return p;
      return p.then(undefined, (e) => {
        if ((e?._tag ?? e?.name) === REJECTED) rejected ??= e;
        throw e;
      });
    } } });
    try {
      return await execute.call(this, args, seen);
    } catch (e) {
      throw rejected ?? e;
    }
  };
  return tool;
}

// The hooks, with the watcher stopped before the plugin's own dispose, and
// every event of this instance's directory handed to the copies that watch
// it (the tap) before this copy's own hook (an idle copy in a task's folder
// has none).
function withWatcher(hooks, watcher, directory) {
  const dispose = hooks.dispose, event = hooks.event;
  const close = typeof directory === "string" ? tapOpen(directory) : () => {};
  hooks.event = (input) => {
    tapForward(directory, input?.event);
    return event?.(input);
  };
  hooks.dispose = async () => { close(); await watcher.close(); return dispose?.(); };
  return hooks;
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
    // No usable binary: say so and load with no tools. Not a throw: OpenCode
    // would only log it (its "failed to load plugin", a second copy of the
    // same reason); the sentence is in the toast and the log already.
    const { addon, failure } = loadAddon();
    if (failure) {
      tell(input?.client, "error", failure);
      return {};
    }
    try {
      let hooks = null;
      const watcher = makeWatcher(input?.client, (ev) => hooks?.event?.({ event: ev }));
      hooks = addon.init(input, options ?? null, zod, watcher);
      for (const tool of Object.values(hooks?.tool ?? {})) endTurnOnReject(tool);
      return withWatcher(hooks, watcher, input?.directory);
    } catch (e) {
      // OpenCode logs a plugin's failure only in its own log: tell the user why.
      tell(input?.client, "error", String(e?.message ?? e));
      throw e;
    }
  },
};

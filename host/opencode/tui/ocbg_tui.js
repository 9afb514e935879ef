// ocbg's TUI entry: the background-task panel in OpenCode's terminal UI (a
// sidebar section, a summary line, the /bgtasks page). It learns the tasks and
// asks for stops and details over the channel of docs/panel.md; the state
// logic is panel_state.mjs, whose parseCommand cleans every text of the
// server part's messages (screenText) before the panel keeps or draws it. Plain ES module, no build step: solid-js and
// @opentui/solid resolve to OpenCode's own instances, and reactivity comes
// from passing functions (no JSX compiler runs on an installed package).
import { createComponent, createElement, insert, setProp } from "@opentui/solid";
import { createRenderEffect, createSignal, For, onCleanup, Show } from "solid-js";
import * as S from "./panel_state.mjs";

const ROUTE = "ocbg.tasks";
const OPEN_CMD = "ocbg.tasks.open";
const STOP_TIMEOUT_MS = 10000;

// An element: props whose value is a function (but on* handlers) are tracked;
// children are strings, elements or functions (tracked), each appended.
function h(tag, props, ...children) {
  const el = createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (typeof v === "function" && !k.startsWith("on")) createRenderEffect((prev) => setProp(el, k, v(), prev));
    else setProp(el, k, v);
  }
  for (const c of children) if (c !== undefined && c !== null) insert(el, c, null);
  return el;
}

async function tui(api, options, meta) {
  const opts = options && typeof options === "object" ? options : {};
  const guard = (what, fn) => (...a) => {
    try { return fn(...a); } catch (e) { console.error(`[ocbg] ${what}: ${e?.stack || e}`); }
  };
  const theme = () => api.theme.current;

  // ---- state ----
  const views = S.createViews();
  const att = S.createAttention();
  const reqs = S.createRequests(`tui${Math.random().toString(36).slice(2, 8)}`);
  const [rev, setRev] = createSignal(0); // bumped on each view kept
  const [tick, setTick] = createSignal(Date.now()); // the clock for elapsed times, while something is live
  const [details, setDetails] = createSignal(new Map()); // task id -> the detail of its last reply
  const [sidebars, setSidebars] = createSignal(0); // sidebar sections on screen
  const localNow = () => { tick(); rev(); return Date.now(); };
  const parentOf = (id) => api.state.session.get(id)?.parentID;
  const entryFor = (sid) => { rev(); return sid ? S.viewFor(views, sid, parentOf) : null; };
  const routeSession = () => {
    const r = api.route.current;
    return r?.name === "session" ? r.params?.sessionID : r?.name === ROUTE ? r.params?.sessionID : undefined;
  };

  const publish = (command) =>
    Promise.resolve(api.client.tui.publish({ body: { type: "tui.command.execute", properties: { command } } }))
      .catch((e) => console.error(`[ocbg] publish: ${e}`));
  const send = (action, taskId) => {
    const r = S.request(reqs, action, taskId);
    publish(r.command);
    return r.id;
  };

  // The 1-second clock runs only while a kept view has a live task.
  let timer = null;
  const anyLive = () => [...views.values()].some((e) => e.view.tasks.some(S.isLive));
  const clock = () => {
    if (anyLive()) {
      if (!timer) timer = setInterval(guard("clock", () => { setTick(Date.now()); clock(); }), 1000);
    } else if (timer) { clearInterval(timer); timer = null; }
  };
  api.lifecycle.onDispose(() => { if (timer) clearInterval(timer); timer = null; });

  // ---- the page's selection and open detail (here: views re-request it) ----
  const [selected, setSelected] = createSignal(null); // task id
  const [shown, setShown] = createSignal(null); // task id whose detail is open
  const stopTimers = new Map(); // request id -> timer

  const onView = (view) => {
    const old = views.get(view.session)?.view;
    if (!S.applyView(views, view, Date.now())) return;
    setRev((n) => n + 1);
    clock();
    for (const n of S.attentionFor(att, view))
      Promise.resolve(api.attention.notify(n)).catch(() => {});
    const id = shown();
    if (id) {
      const before = old?.tasks.find((t) => t.id === id), now = view.tasks.find((t) => t.id === id);
      if (now && JSON.stringify(before) !== JSON.stringify(now)) send("detail", id);
    }
  };
  const onReply = (reply) => {
    const req = S.takeReply(reqs, reply);
    if (!req) return;
    // A refused detail (ocbg busy, the task gone) says why in place of the detail.
    if (req.action === "detail")
      setDetails((m) => new Map(m).set(req.task_id, reply.ok && reply.detail ? reply.detail
        : { unavailable: typeof reply.error === "string" ? reply.error : "refused" }));
    if (req.action === "stop") {
      clearTimeout(stopTimers.get(req.id));
      stopTimers.delete(req.id);
      if (!reply.ok) api.ui.toast({ variant: "error", title: "ocbg", message: `Could not stop ${req.task_id}: ${reply.error || "refused"}` });
    }
  };
  api.event.on("tui.command.execute", guard("event", (ev) => {
    const m = S.parseCommand(ev?.properties?.command);
    if (m?.kind === "view") onView(m.view);
    else if (m?.kind === "reply") onReply(m.reply);
  }));

  // ---- actions ----
  const doStop = (t) => {
    const id = send("stop", t.id);
    stopTimers.set(id, setTimeout(() => {
      stopTimers.delete(id);
      if (reqs.pending.delete(id))
        api.ui.toast({ variant: "error", title: "ocbg", message: `No answer to the stop of ${t.id}: is ocbg loaded?` });
    }, STOP_TIMEOUT_MS));
  };
  const stop = (t, now) => {
    if (!S.canStop(t)) {
      api.ui.toast({ variant: "info", title: "ocbg", message: `${t.description || t.id} has already ended` });
      return;
    }
    if (!S.needsConfirm(t, now)) return doStop(t);
    api.ui.dialog.replace(() => createComponent(api.ui.DialogConfirm, {
      title: "Stop background task",
      message: S.confirmText(t, now),
      onConfirm: () => { api.ui.dialog.clear(); doStop(t); },
      onCancel: () => api.ui.dialog.clear(),
    }));
  };
  // A question on the task's line, answered as OpenCode's own prompt does
  // (its three answers, to the question's folder): the ones asked below a
  // task the person's session launched show on no other screen.
  const answer = (t) => {
    const q = S.questionToAnswer(t);
    if (!q) {
      api.ui.toast({ variant: "info", title: "ocbg", message: `${t.description || t.id} asks nothing now` });
      return;
    }
    const projectDir = api.state.path?.directory;
    const reply = (value) => Promise.resolve(api.client.permission.reply(S.replyArgs(q, value, projectDir)))
      .then((r) => { if (r?.error) throw new Error(JSON.stringify(r.error)); })
      .catch((e) => api.ui.toast({ variant: "error", title: "ocbg", message: `Could not answer ${q.task}: ${e?.message || e}` }));
    api.ui.dialog.replace(() => createComponent(api.ui.DialogSelect, {
      title: S.answerTitle(q, projectDir),
      options: S.REPLIES.map((r) => ({ title: r.title, value: r.value,
        onSelect: () => { api.ui.dialog.clear(); reply(r.value); } })),
    }));
  };
  const openPage = () => {
    const r = api.route.current;
    api.route.navigate(ROUTE, { sessionID: routeSession(), back: r });
    api.ui.dialog.clear();
  };

  // ---- the sidebar section: a heading and one line per task ----
  const lineColor = (t) => {
    const c = theme();
    if (S.isWaiting(t)) return c.warning;
    return { running: c.info, resumed: c.info, completed: c.success, error: c.error }[t.status] || c.textMuted;
  };
  const taskLines = (entry) => createComponent(For, {
    get each() { return entry() ? entry().view.tasks : []; },
    children: (t) => {
      const rows = () => S.taskRows(t, S.serverNow(entry(), localNow()));
      return h("box", {},
        h("text", { fg: () => lineColor(t), wrapMode: "word" }, () => rows()[0]),
        h("text", { fg: () => theme().textMuted, wrapMode: "word", paddingLeft: 2 }, () => rows()[1]));
    },
  });
  const Sidebar = (props) => {
    setSidebars((n) => n + 1);
    onCleanup(() => setSidebars((n) => n - 1));
    const entry = () => entryFor(props.session_id);
    return createComponent(Show, {
      get when() { return entry()?.view.tasks.length > 0; },
      get children() {
        return h("box", {},
          h("text", { fg: () => theme().text }, h("b", {}, "Background tasks")),
          taskLines(entry));
      },
    });
  };

  // ---- the summary line, where the sidebar is not ----
  const Bottom = () => {
    const entry = () => (api.route.current?.name === "session" ? entryFor(routeSession()) : null);
    const text = () => S.summaryText(entry()?.view.tasks || []);
    return createComponent(Show, {
      get when() { return sidebars() === 0 && text() !== ""; },
      get children() {
        return h("box", { paddingLeft: 2, flexShrink: 0 },
          h("text", { fg: () => theme().textMuted }, () => `Background tasks: ${text()}`));
      },
    });
  };

  api.slots.register({
    order: 350,
    slots: {
      sidebar_content(ctx, props) { return createComponent(Sidebar, { get session_id() { return props.session_id; } }); },
      app_bottom() { return createComponent(Bottom, {}); },
    },
  });

  // ---- the page ----
  const Page = (props) => {
    onCleanup(api.mode.push(ROUTE));
    const sid = () => props.params?.sessionID;
    // Opened where no session is on screen: the view that came last.
    const entry = () => entryFor(sid()) || (rev(), [...views.values()].at(-1) || null);
    const list = () => S.pageTasks(entry()?.view.tasks || []);
    const now = () => (entry() ? S.serverNow(entry(), localNow()) : Date.now());
    const sel = () => list().find((t) => t.id === selected()) || list()[0];
    const detailOf = () => list().find((t) => t.id === shown());
    return h("box", { flexDirection: "column", flexGrow: 1, paddingLeft: 2, paddingRight: 2, paddingTop: 1 },
      h("text", { fg: () => theme().text }, h("b", {}, "Background tasks"),
        () => { const s = S.summaryText(entry()?.view.tasks || []); return s ? `  ${s}` : ""; }),
      createComponent(Show, {
        get when() { return !detailOf(); },
        get fallback() {
          return h("box", { flexDirection: "column", paddingTop: 1 },
            h("text", { fg: () => theme().text, wrapMode: "word" },
              () => (detailOf() ? S.detailText(detailOf(), details().get(shown()) || null, now()) : "")));
        },
        get children() {
          return h("box", { flexDirection: "column", paddingTop: 1 },
            createComponent(Show, {
              get when() { return list().length === 0; },
              get children() { return h("text", { fg: () => theme().textMuted }, "No background tasks in this session."); },
            }),
            createComponent(For, {
              get each() { return list(); },
              children: (t) => h("text", {
                fg: () => (sel()?.id === t.id ? theme().text : lineColor(t)),
                bg: () => (sel()?.id === t.id ? theme().backgroundElement : undefined),
                wrapMode: "word",
              }, () => `${sel()?.id === t.id ? "› " : "  "}${S.taskLine(t, now())}`),
            }));
        },
      }),
      h("box", { flexGrow: 1 }),
      h("text", { fg: () => theme().textMuted },
        () => S.pageKeys(detailOf() || sel(), !!detailOf())));
  };
  // The page's keys act on what it shows (they run only in its mode).
  const pageState = () => {
    const r = api.route.current;
    const sid = r?.params?.sessionID;
    const entry = entryFor(sid) || [...views.values()].at(-1) || null;
    const list = S.pageTasks(entry?.view.tasks || []);
    const sel = list.find((t) => t.id === (shown() || selected())) || list[0];
    return { r, entry, list, sel, now: entry ? S.serverNow(entry, Date.now()) : Date.now() };
  };
  const move = (d) => {
    const { list, sel } = pageState();
    if (!list.length || shown()) return;
    const i = Math.max(0, Math.min(list.length - 1, list.indexOf(sel) + d));
    setSelected(list[i].id);
  };
  const back = () => {
    if (shown()) { setShown(null); return; }
    const b = api.route.current?.params?.back;
    if (b?.name === "session") api.route.navigate("session", b.params);
    else api.route.navigate(b?.name && b.name !== ROUTE ? b.name : "home", b?.params);
  };
  api.route.register([{ name: ROUTE, render: (input) => createComponent(Page, { get params() { return input?.params; } }) }]);
  api.keymap.registerLayer({
    mode: ROUTE,
    commands: [],
    bindings: [
      { key: "escape", cmd: guard("back", back), desc: "Back" },
      { key: "k,up", cmd: guard("up", () => move(-1)), desc: "Previous task" },
      { key: "j,down", cmd: guard("down", () => move(1)), desc: "Next task" },
      { key: "return", cmd: guard("detail", () => {
        const { sel } = pageState();
        if (!sel) return;
        setSelected(sel.id);
        setShown(sel.id);
        send("detail", sel.id);
      }), desc: "Task detail" },
      { key: "a", cmd: guard("answer", () => { const { sel } = pageState(); if (sel) answer(sel); }), desc: "Answer its question" },
      { key: "s", cmd: guard("stop", () => { const { sel, now } = pageState(); if (sel) stop(sel, now); }), desc: "Stop task" },
      { key: "o", cmd: guard("open", () => {
        const { sel } = pageState();
        if (sel?.session) api.route.navigate("session", { sessionID: sel.session });
        else if (sel) api.ui.toast({ variant: "info", title: "ocbg", message: "A command task has no session to open" });
      }), desc: "Open the task's session" },
    ],
  });

  // ---- the commands: palette, /bgtasks, and the key from the options ----
  const key = typeof opts.key === "string" && opts.key ? opts.key : undefined;
  api.keymap.registerLayer({
    commands: [{ name: OPEN_CMD, title: "Background tasks (ocbg)", category: "ocbg", desc: "The session's background tasks",
      namespace: "palette", slashName: "bgtasks", run: guard("open page", openPage) }],
    bindings: key ? [{ key, cmd: OPEN_CMD, desc: "Background tasks" }] : [],
  });

  // Ask the server part for the views of every session with tasks (a TUI
  // opened after they began, or a second TUI).
  send("sync");
  return { meta };
}

async function entry(api, options, meta) {
  const marker = options && typeof options.marker === "string" ? options.marker : null;
  try {
    await tui(api, options, meta);
    if (marker) (await import("node:fs")).writeFileSync(marker, "loaded\n");
  } catch (e) {
    // The loader's errors show nowhere a person looks: say it here.
    console.error(`[ocbg] the TUI panel failed to start: ${e?.stack || e}`);
    if (marker) try { (await import("node:fs")).writeFileSync(marker, `error: ${e?.stack || e}\n`); } catch {}
    try { api.ui.toast({ variant: "error", title: "ocbg", message: `The task panel failed to start: ${e?.message || e}` }); } catch {}
  }
}

export default { id: "ocbg", tui: entry };

// e2e_tui.mjs's timing with ocbg's own server part: `panel_*` figures (never checks).
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import { execFile } from "node:child_process";
import { api, diag, eventWatchers, idle, ok, say, sleep, waitFor } from "../e2e_lib.mjs";
import { SOCK, NAME, screen, keys, type, flat, sidebar, has, showsOk, gone, fake } from "./world.mjs";

// ---- the panel, timed (docs/panel.md: a view within 250 ms of a task's status change) ----
// Figures, never checks (timing goals are for benchmarks): `name: value unit` lines. The screen is read
// with an asynchronous capture-pane every POLL_MS, so the event loop keeps timestamping the server's
// events (GET /event) while the harness looks; a sample ends when the first capture showing the change
// returns (a few ms late at most: panel_poll_ms is the time between two looks).
const POLL_MS = 10;
const capture = () => new Promise((resolve, reject) => execFile("tmux", ["-L", SOCK, "capture-pane", "-p", "-t", NAME],
  { encoding: "utf8" }, (e, out) => (e ? reject(e) : resolve(out))));
const looks = [];
// The time the first capture where view(screen) matches want returned; null at the deadline.
async function firstSeen(want, view, timeoutMs = 10000) {
  const start = Date.now();
  let prev = null;
  while (Date.now() - start < timeoutMs) {
    const s = await capture();
    const at = Date.now();
    if (prev !== null) looks.push(at - prev);
    prev = at;
    if (has(view(s), want)) return at;
    await sleep(POLL_MS);
  }
  return null;
}
// The server's events the figures need, as the harness's event stream got them: ocbg's views and the
// panel's requests (tui.command.execute) and sessions going idle.
const seen = [];
const watchTimed = (ev) => {
  const at = Date.now();
  if (ev.type === "session.idle") seen.push({ at, idle: ev.properties?.sessionID });
  const cmd = ev.type === "tui.command.execute" ? ev.properties?.command || "" : "";
  const sp = cmd.indexOf(" ");
  if (sp < 0) return;
  try {
    const body = JSON.parse(cmd.slice(sp + 1));
    if (cmd.startsWith("ocbg.view ")) seen.push({ at, view: body });
    else if (cmd.startsWith("ocbg.ui ")) seen.push({ at, ui: body });
  } catch {}
};
// The first view (after from) in which the task described desc has status.
const viewAt = (from, desc, status) => seen.find((e) => e.at >= from && e.view?.tasks?.some((t) =>
  t.description === desc && t.status === status));
const nearestRank = (xs, q) => [...xs].sort((a, b) => a - b)[Math.max(0, Math.ceil(q * xs.length) - 1)];
function figure(name, xs) {
  const nums = xs.filter((x) => typeof x === "number");
  if (!nums.length) return console.log(`${name}: none`);
  console.log(`${name}_p50: ${nearestRank(nums, 0.5)} ms`);
  console.log(`${name}_max: ${Math.max(...nums)} ms`);
}
const span = (a, b) => (a != null && b != null ? b - a : undefined);

// Launches a batch of n tasks in session sid ("busy T-k", children waiting at gate T-k); true once each
// child's model request waits.
async function launchGated(sid, t, n) {
  fake.openGate(`${t}-parent`); // the parent's own step after the launch answers at once
  await say(sid, `E2E busybatch ${t} ${n}`);
  const waiting = await waitFor(`${n} gated children`, () => fake.requests.filter((r) =>
    r.decision.gate?.startsWith(`${t}-`) && r.decision.gate !== `${t}-parent` && !r.done && !r.closed).length === n, 60000);
  await idle(sid);
  return !!waiting;
}

// Six tasks end one after the other (their children's gates opened a varying gap apart, so the changes
// fall at different points of the view thread's 1 s tick and the TUI's clock), then five are stopped
// with `s` on the page. A change's clock starts when the fake model wrote the end of the reply that
// ends the child's turn (rec.doneAt): the earliest moment of the change the harness sees, before
// OpenCode read it, ended the turn and sent session.idle, and before ocbg's completion check made the
// task completed and its view thread published the view. A stop's starts just before tmux send-keys s.
export async function realTimed() {
  eventWatchers.add(watchTimed);
  try {
    const change = [], replyToIdle = [], idleToView = [], viewToScreen = [];
    // Two batches of five (max_running_agents), each in a session of its own on screen.
    for (const t of ["tm", "tn"]) {
      const sid = (await api("POST", "/session", { title: `timed panel ${t}` })).json?.id;
      await api("POST", "/tui/select-session", { sessionID: sid });
      if (!ok(await launchGated(sid, t, 5), `timed: five tasks launched, each child's model request waiting (${t})`)) return;
      await showsOk(`timed: the five run in the sidebar (${t})`, [1, 2, 3, 4, 5].map((k) => `● running busy ${t}-${k}`),
        sidebar, 20000);
      for (let k = 1; k <= 5; k++) {
        await sleep(300 + 170 * k); // the gap between changes (not a wait for anything)
        const rec = fake.requests.find((r) => r.decision.gate === `${t}-${k}` && !r.done);
        fake.openGate(`${t}-${k}`);
        const t0 = rec?.doneAt;
        const shown = await firstSeen(new RegExp(`✓ done busy ${t}-${k} general`), sidebar);
        if (!ok(t0 && shown, `timed: ${t}-${k} ends and its sidebar line says done`, screen())) continue;
        const view = viewAt(t0, `busy ${t}-${k}`, "completed");
        const child = view?.view.tasks.find((x) => x.description === `busy ${t}-${k}`)?.session;
        const idleAt = seen.find((e) => e.at >= t0 && e.idle === child)?.at;
        change.push(shown - t0);
        replyToIdle.push(span(t0, idleAt));
        idleToView.push(span(idleAt, view?.at));
        viewToScreen.push(span(view?.at, shown));
      }
      await idle(sid);
    }
    const sid = (await api("POST", "/session", { title: "timed panel stops" })).json?.id;
    await api("POST", "/tui/select-session", { sessionID: sid });
    if (!ok(await launchGated(sid, "tc", 5), "timed: five more tasks launched, waiting")) return;
    type("/bgtasks");
    await showsOk("timed: /bgtasks is offered", ["/bgtasks"]);
    keys("Enter");
    await showsOk("timed: the page lists the five running", [1, 2, 3, 4, 5].map((k) => `● running busy tc-${k} ·`));
    for (let i = 0; i < 12; i++) keys("Up"); // the newest first: one of the five
    const cancel = [], keyToRequest = [], requestToView = [], cancelViewToScreen = [];
    let prev = null;
    for (let i = 0; i < 5; i++) {
      const sel = await waitFor("a running task selected", () => {
        const m = flat(screen()).match(/› ● running (busy tc-\d) ·/);
        return m && m[1] !== prev ? m[1] : null;
      }, 5000, 20);
      if (!ok(sel, `timed: stop ${i + 1}: a running task selected`, screen())) break;
      await sleep(300 + 170 * i);
      const t0 = Date.now();
      keys("s");
      const shown = await firstSeen(new RegExp(`› ■ cancelled ${sel} ·`), flat);
      if (!ok(shown, `timed: s stops ${sel}: its line says cancelled`, screen())) break;
      const req = seen.find((e) => e.at >= t0 && e.ui?.action === "stop");
      const view = viewAt(t0, sel, "cancelled");
      cancel.push(shown - t0);
      keyToRequest.push(span(t0, req?.at));
      requestToView.push(span(req?.at, view?.at));
      cancelViewToScreen.push(span(view?.at, shown));
      prev = sel;
      keys("Down");
    }
    // Each sample whole and in its hops (ms), for where the time went.
    diag(`changes: ${change.map((x, i) => `${x} (${replyToIdle[i]}+${idleToView[i]}+${viewToScreen[i]})`).join(", ")}`);
    diag(`stops: ${cancel.map((x, i) => `${x} (${keyToRequest[i]}+${requestToView[i]}+${cancelViewToScreen[i]})`).join(", ")}`);
    console.log(`panel_change_samples: ${change.length} changes`);
    figure("panel_change_ms", change);
    figure("panel_change_reply_to_idle_ms", replyToIdle);
    figure("panel_change_idle_to_view_ms", idleToView);
    figure("panel_change_view_to_screen_ms", viewToScreen);
    console.log(`panel_cancel_samples: ${cancel.length} stops`);
    figure("panel_cancel_ms", cancel);
    figure("panel_cancel_key_to_request_ms", keyToRequest);
    figure("panel_cancel_request_to_view_ms", requestToView);
    figure("panel_cancel_view_to_screen_ms", cancelViewToScreen);
    figure("panel_poll_ms", looks);
    await idle(sid);
    keys("Escape");
    await gone("timed: esc: back from the page", "↑↓ select · enter detail");
  } finally {
    eventWatchers.delete(watchTimed);
  }
}

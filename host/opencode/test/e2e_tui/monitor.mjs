// e2e_tui.mjs's scenario with ocbg's own server part: a monitor the model starts, on the
// real screen.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import fs from "node:fs";
import path from "node:path";
import { api, idle, messages, ok, sayTool, sleep, taskIds, textOf, toolEnded, waitFor } from "../e2e_lib.mjs";
import { PROJECT, screen, keys, type, flat, sidebar, has, shows, showsOk, gone, keepScreen, fake } from "./world.mjs";

// A monitor the model starts, on the real screen: background_monitor on a
// script that follows a file (`tail -F`) the test appends lines to. Its
// sidebar line and its /bgtasks page line show its command, its events so far
// and the time left, the count moving as each line arrives (each event wakes
// the parent once); the person stops it from the page (s, confirming if the
// page asks) and its line says cancelled, in the page and the sidebar, and its
// command's process is gone. No toast calls it failed (docs/behaviour.md: a
// cancelled task gives none): the screen is read every 50 ms throughout.
export async function realMonitor() {
  let failedToast = null;
  const poll = setInterval(() => {
    try {
      const f = flat(screen());
      if (!failedToast && f.includes("Background task failed")) failedToast = f;
    } catch {}
  }, 50);
  try {
    await watchMonitor();
  } finally {
    clearInterval(poll);
  }
  ok(!failedToast, "monitor: no toast said it failed", failedToast);
}
async function watchMonitor() {
  const sid = (await api("POST", "/session", { title: "real monitor" })).json?.id;
  await api("POST", "/tui/select-session", { sessionID: sid });
  await showsOk("monitor: a fresh session on screen", ["real monitor"]);
  const file = (f) => path.join(PROJECT, f);
  fs.writeFileSync(file("mon.log"), "");
  fs.rmSync(file("mon.pid"), { force: true });
  // exec: the shell's pid becomes tail's, the process the watch reads.
  fs.writeFileSync(file("mon.sh"), "echo $$ > mon.pid\nexec tail -n 0 -F mon.log\n");
  const since = await sayTool(sid, "background_monitor", { command: "sh mon.sh", description: "Watch log",
    timeout_ms: 600000 });
  const started = await toolEnded(sid, "background_monitor", since, 60000);
  const [id] = taskIds(started?.output);
  if (!ok(started?.status === "completed" && id && started.output.startsWith(`Monitor ${id} started: $ sh mon.sh`),
    "monitor: the model started a monitor", started)) return;
  await idle(sid);
  const pid = Number(await waitFor("its command's pid", () => {
    try { return fs.readFileSync(file("mon.pid"), "utf8").trim() || null; } catch { return null; }
  }, 10000));
  const alive = (p) => { try { process.kill(p, 0); return true; } catch (e) { return e.code === "EPERM"; } };
  ok(pid > 0 && alive(pid), "monitor: its command runs", pid);
  await showsOk("monitor: its sidebar line: its command, no event yet, the time left", [
    /● running Watch log sh mon\.sh · 0 events · 9m[45]\ds left · \d+s/], sidebar, 20000);
  for (const n of [1, 2, 3]) {
    fs.appendFileSync(file("mon.log"), `line ${n}\n`);
    const word = n === 1 ? "event" : "events";
    await showsOk(`monitor: line ${n} written: the sidebar says ${n} ${word}`, [
      new RegExp(`● running Watch log sh mon\\.sh · ${n} ${word} · 9m[45]\\ds left`)], sidebar, 20000);
    const told = await waitFor(`event ${n}'s notification`, async () => (await messages(sid)).find((m) =>
      m.info.role === "user" && textOf(m).includes(`[ocbg] Monitor ${id} "Watch log", event ${n}:`)), 20000);
    ok(told && textOf(told).includes(`line ${n}`), `monitor: event ${n} told the parent its line`, told && textOf(told));
    await idle(sid);
    const woke = fake.requests.filter((r) => {
      const u = JSON.stringify([...(r.body?.messages || [])].reverse().find((m) => m.role === "user") || {});
      return u.includes(id) && u.includes(`event ${n}:`);
    }).length;
    ok(woke === 1, `monitor: event ${n} woke the parent once (one model call has it as its newest message)`, woke);
  }
  keepScreen("real-monitor-sidebar");
  type("/bgtasks");
  await showsOk("monitor: /bgtasks is offered", ["/bgtasks"]);
  keys("Enter");
  await showsOk("monitor: the page line: its command, 3 events, the time left",
    [/› ● running Watch log · sh mon\.sh · 3 events · 9m[45]\ds left · \d+s/]);
  keepScreen("real-monitor-page");
  keys("s");
  // The page asks first for a task that ran 2 minutes or more (a slow machine).
  const asked = await shows("the stop, or its question", [/› ■ cancelled Watch log|Stop background task/], flat, 20000);
  if (has(flat(asked.last), "Stop background task")) keys("Enter");
  await showsOk("monitor: s stops it: the page line says cancelled, no time left",
    [/› ■ cancelled Watch log · sh mon\.sh · 3 events · \d+s/], flat, 20000);
  ok(!has(flat(screen()), /Watch log · sh mon\.sh · 3 events · \d+m\d+s left/), "monitor: no time left on a stopped monitor");
  ok(await waitFor("its command gone", () => !alive(pid), 15000), "monitor: its command's process is gone", pid);
  const notice = await waitFor("the stop's notification", async () => (await messages(sid))
    .find((m) => m.info.role === "user" && textOf(m).includes("stopped by the user") && textOf(m).includes(id)), 30000);
  ok(notice, "monitor: the parent is told the user stopped it", notice && textOf(notice));
  keys("Escape");
  await gone("monitor: esc: back from the page", "↑↓ select · enter detail");
  await showsOk("monitor: the sidebar line says cancelled", [/■ cancelled Watch log sh mon\.sh · 3 events · \d+s/],
    sidebar, 20000);
  keepScreen("real-monitor-stopped");
  await idle(sid);
  await sleep(1000); // a last look for a toast after the stop's notified turn
}

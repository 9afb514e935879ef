// e2e_tui.mjs's scenario with ocbg's own server part: a command ocbg runs has no controlling
// terminal.
// Each exported function is one scenario, run by e2e_tui.mjs in its order on one TUI.
import { idle, messages, ok, sayTool, sleep, taskIds, textOf, toolEnded, waitFor } from "../e2e_lib.mjs";
import { screen, flat, sidebar, showsOk, keepScreen } from "./world.mjs";

// A command ocbg runs has no controlling terminal: `Bash` (face_claude), in the
// background and in the foreground, runs a command that writes a mark to
// /dev/tty and reads from it. The TUI owns the terminal: were the command's
// its too, the mark would land on the screen (it did, in the prompt area) and
// its read would take the person's keys. The screen is read every 50 ms
// while the commands run: the mark never shows (the command line on screen
// spells it as $((6*7)), the mark itself is TTY42HIT); each command says
// /dev/tty could not be opened and its read failed, reading nothing. The
// background one's description has escape sequences: the toast ocbg sends
// when it ends, and its sidebar line, show it without them.
export async function realTty(sid) {
  const cmd = 'echo "TTY$((6*7))HIT" > /dev/tty; read x < /dev/tty; echo "read:$?:[$x]"';
  const toastText = "Background task completed: tty probe\ufffd!";
  // ocbg's toasts are rate-limited (one per 3 s): a task ending in the window of another's toast is
  // told in one summary with it ("2 background tasks: 2 completed"), which names no description, so
  // shows no sequence either. Every toast line seen is kept, for the diagnosis.
  let seen = null, polls = 0, toasted = false, merged = false, armed = false;
  const toasts = new Set();
  const poll = setInterval(() => {
    try {
      polls++;
      const s = screen();
      if (!seen && s.includes("TTY42HIT")) seen = s;
      const f = flat(s);
      toasted ||= f.includes(toastText);
      merged ||= armed && /\b\d+ background tasks: \d+ completed/.test(f);
      for (const m of f.matchAll(/(Background (?:task|command) \w+: .{0,40}|\d+ background tasks: [a-z0-9 ,]+)/g))
        toasts.add(m[1]);
    } catch {}
  }, 50);
  try {
    let since = await sayTool(sid, "Bash", { command: cmd, description: "tty probe\x1b]2;PWNED\x07\x1b[2J\u202e!",
      run_in_background: true });
    const launched = await toolEnded(sid, "Bash", since, 60000);
    armed = true; // from here on, a summary on the screen counts
    const [id] = taskIds(launched?.output);
    ok(launched?.status === "completed" && id, "tty: ocbg's Bash started the command in the background", launched);
    const notice = id && await waitFor("its notification", async () => (await messages(sid))
      .find((m) => m.info.role === "user" && textOf(m).includes(`Background command completed: ${id}`)), 30000);
    const out = notice ? textOf(notice) : "";
    ok(/\/dev\/tty: No such device or address/.test(out) && /^read:[1-9]\d*:\[\]$/m.test(out),
      "tty: in the background, /dev/tty cannot be opened (no controlling terminal), its read failed, read nothing", out);
    await showsOk("tty: its sidebar line shows its description without the sequences", [/✓ done tty probe\ufffd!/], sidebar);
    ok(await waitFor("the toast", () => toasted || merged, 10000),
      `tty: so does ocbg's toast: "${toastText}" (or a summary it is merged into)`, [...toasts]);
    await idle(sid);
    since = await sayTool(sid, "Bash", { command: cmd, description: "tty probe, foreground" });
    const fg = await toolEnded(sid, "Bash", since, 60000);
    ok(/\/dev\/tty: No such device or address/.test(fg?.output) && /^read:[1-9]\d*:\[\]$/m.test(fg?.output || ""),
      "tty: in the foreground the same", fg);
    await idle(sid);
    await sleep(500); // a last look after both ended
  } finally {
    clearInterval(poll);
  }
  ok(!seen && polls > 20, `tty: the mark a command wrote to /dev/tty never showed on the screen (${polls} looks)`, seen);
  keepScreen("real-tty");
}

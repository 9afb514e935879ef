// End-to-end: ocbg's TUI panel in the real OpenCode TUI (pinned, from npm),
// run headless in a detached tmux session of its own socket and read with
// `tmux capture-pane -p`: what a person sees is asserted on the screen. The
// TUI runs offline in an isolated HOME with the scripted fake model; its
// --port opens the HTTP API the test uses to make sessions and to play the
// server part's side of the channel (docs/panel.md).
//
// The panel's files are the installed ones (make install-opencode PROJECT=...:
// .opencode/ocbg-tui/ listed in the project's tui.json); the test only adds
// options to that entry (marker: the file the panel writes "loaded" to). The
// server side is test/fake_view_plugin.js, which speaks the channel as ocbg's
// server part does for the tasks the test gives it. Prints TAP; stops all it
// started, also on failure. With ocbg's own server part it also times the
// panel (realTimed): `panel_*` lines, `name: value unit`, figures only.
// The scenarios are in e2e_tui/*.mjs, by subject, with what they share in
// e2e_tui/world.mjs; this file runs them in order.
//
// node e2e_tui.mjs --opencode BIN --npm-dir DIR --project DIR --work DIR [--package TGZ] [--keep]
//   --project: where install-opencode PROJECT= put ocbg; --package: make package's tarball, then
//   installed by name (a fake registry) in opencode.json and tui.json; --keep: leave the TUI running (debugging)
import { runSuite } from "./e2e_lib.mjs";
import { hostileText } from "./e2e_tui/hostile.mjs";
import { realIsolated } from "./e2e_tui/isolated.mjs";
import { realMonitor } from "./e2e_tui/monitor.mjs";
import { realNestedAsk } from "./e2e_tui/nested.mjs";
import { packageByName } from "./e2e_tui/package.mjs";
import { openChild, pageDetail, pageOpens, pageStop, pageStopConfirm, sidebarLive, summaryNarrow } from "./e2e_tui/panel.mjs";
import { realOcbg } from "./e2e_tui/real.mjs";
import { realTimed } from "./e2e_tui/timed.mjs";
import { realTty } from "./e2e_tui/tty.mjs";
import { PACKAGE, startWithFakePart, stopAll } from "./e2e_tui/world.mjs";
import { realWorktreeNestedAsk } from "./e2e_tui/worktree_nested.mjs";

// With the fake server part, then ocbg's own (the TUI started again), then with
// max_depth 2 (again, twice), then the package by name (a TUI of its own), in this order.
async function main() {
  const scanned = await startWithFakePart();
  if (!scanned) return;
  for (const scenario of [sidebarLive, summaryNarrow, pageOpens, pageDetail, pageStop, pageStopConfirm, openChild,
    hostileText])
    await scenario();
  const real = await realOcbg(scanned);
  if (real) {
    await realIsolated(real.sid, real.git);
    await realTty(real.sid);
    await realTimed();
    await realMonitor();
  }
  await realNestedAsk(scanned);
  await realWorktreeNestedAsk(scanned);
  if (PACKAGE) await packageByName();
}

await runSuite("e2e_tui", main, { stop: stopAll });

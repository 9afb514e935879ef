// End-to-end: a real `opencode serve` (pinned, from npm) on 127.0.0.1 with an
// isolated HOME and offline settings, the scripted fake model of
// fake_model.mjs, ocbg installed with make install-opencode PROJECT=... and
// then moved out of the scanned folder to be listed in opencode.json with
// options {face_claude: true} (OpenCode 1.18.33 would load a scanned copy a
// second time, without options), and the stub plugin listed with options
// (e2e/world.mjs). The scenarios are in e2e/*.mjs, by subject; this file runs
// them in order on one server.
// Prints TAP; every process it starts is stopped at the end, also on failure.
//
// node e2e.mjs --opencode BIN --npm-dir DIR --stub-dir DIR --work DIR [--only stub|ocbg]
//              [--cases name,name]   (only these scenario functions, e.g. while working on one)
import fs from "node:fs";
import { diag, events, isLoopback, listeners, ok, runSuite } from "./e2e_lib.mjs";
import * as bounds from "./e2e/bounds.mjs";
import * as claude from "./e2e/claude.mjs";
import * as collision from "./e2e/collision.mjs";
import * as hostEvents from "./e2e/host_events.mjs";
import * as launch from "./e2e/launch.mjs";
import * as monitor from "./e2e/monitor.mjs";
import * as nesting from "./e2e/nesting.mjs";
import * as permission from "./e2e/permission.mjs";
import * as restart from "./e2e/restart.mjs";
import * as stub from "./e2e/stub.mjs";
import * as wake from "./e2e/wake.mjs";
import { CASES, LOG, ONLY, makeWorld, server, serverGone, startServer, stopAll } from "./e2e/world.mjs";

// The adapter with the stub plugin (--only stub), then ocbg (--only ocbg), in this order.
const STUB = [stub.stubToolCall, stub.stubHostCalls, stub.stubEventsAndTransform, stub.stubAbort, stub.stubCommand,
  stub.stubEdits, stub.stubWorktree];
const OCBG = [launch.launchAndNotify, launch.cancelSlow, launch.panelChannel, launch.failingChild, launch.resume,
  launch.fork, claude.claudeShell, claude.claudeAgent, claude.autoBackground, claude.tasksCommand,
  wake.silentThenWaking, wake.batchWhileBusy, permission.bashDenied, permission.bashAskedOnce, permission.monitorAskedOnce,
  permission.rejectLikeHost, permission.bashEscWhileAsking, permission.childAsksPermission, permission.taskDenied,
  hostEvents.deleteStopsChildren, hostEvents.compactedChild, hostEvents.compactedAfter, bounds.capTwoOfFour,
  bounds.usageNotified, bounds.tokenBudget, bounds.rateLimited, nesting.nestedTasks, nesting.nestedCancel,
  nesting.nestedRefused, collision.editCollision, restart.restartAfterNotify, restart.restartBeforeNotify,
  restart.restartMidTask, restart.endedTaskBusyAgain, monitor.monitorEvents, monitor.monitorFlood];
const chosen = (scenarios) => scenarios.filter((f) => !CASES.length || CASES.includes(f.name));

async function main() {
  const ocbgInstalled = await makeWorld();
  if (!ok(await startServer(), "opencode serve is healthy on 127.0.0.1")) return;
  if (ONLY !== "ocbg") for (const scenario of chosen(STUB)) await scenario();
  if (ONLY !== "stub" && !ocbgInstalled) {
    ok(false, "ocbg is installed in the project (make install-opencode PROJECT=...)");
  } else if (ONLY !== "stub") {
    for (const scenario of chosen(OCBG)) {
      const t0 = Date.now();
      await scenario();
      diag(`${scenario.name}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
  const listen = serverGone() ? [] : listeners(server.pid);
  ok(listen.length >= 1 && listen.every(isLoopback), "opencode listens on 127.0.0.1 only",
    serverGone() ? "opencode serve has exited" : listen);
  const types = new Set(events.map((e) => e.type));
  ok(types.has("session.idle") && types.has("message.part.updated"), "the event stream was followed", [...types]);
}

// After everything stopped: that serve did; on a failure, the log's lines about ocbg and errors.
function after() {
  ok(serverGone(), "opencode serve stopped");
}
function logTail() {
  try {
    const tail = fs.readFileSync(LOG, "utf8").split("\n").filter((l) => /ERROR|ocbg|plugin|panic|Segmentation/i.test(l)).slice(-30);
    for (const l of tail) console.log(`# log: ${l.slice(0, 300)}`);
  } catch {}
}

await runSuite("e2e", main, { stop: stopAll, after, status: (failed) => { if (failed) logTail(); return failed; } });

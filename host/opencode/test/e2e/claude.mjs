// e2e.mjs's scenarios: the Claude face (face_claude: true): Bash and Task in the background,
// auto-background, /tasks.
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import fs from "node:fs";
import path from "node:path";
import {
  api, callTool, groupMembers, idle, messages, newSession, ok, procStat, say, taskIds, textOf, toolParts, userTexts,
  waitFor
} from "../e2e_lib.mjs";
import { WORK, fake, shellGroups } from "./world.mjs";

const claude = { session: null, failed: null, stopped: null, agent: null };
export async function claudeShell() {
  const s = (claude.session = await newSession("claude face"));
  const b = await callTool(s, "Bash", { command: "echo e2e-shell-out; exit 3", description: "failing echo",
    run_in_background: true });
  const id = (claude.failed = b?.output ? taskIds(b.output)[0] : null);
  ok(b?.status === "completed" && id, "Bash(run_in_background=true) returns a task id", b);
  const offered = new Set(fake.requests.flatMap((r) => (r.body.tools || []).map((t) => t.function?.name)));
  ok(offered.has("Bash") && offered.has("bash") && offered.has("Task") && offered.has("task"),
    "with face_claude: true the model is offered Bash and bash, Task and task (why it is off by default)",
    [...offered].filter((n) => /^(bash|task)$/i.test(n)));
  const o = await callTool(s, "TaskOutput", { task_id: id });
  const out = o?.output || "";
  ok(out.includes("<status>failed</status>") && out.includes("<exit_code>3</exit_code>") && out.includes("e2e-shell-out"),
    "TaskOutput: status failed, exit code 3, the output", o);

  const dir = path.join(WORK, "pids");
  fs.mkdirSync(dir, { recursive: true });
  const shPid = path.join(dir, "sh.pid"), sleepPid = path.join(dir, "sleep.pid");
  const long = await callTool(s, "Bash", {
    command: `echo $$ > ${shPid}; sleep 300 & echo $! > ${sleepPid}; wait`, description: "long sleep",
    run_in_background: true });
  const lid = (claude.stopped = long?.output ? taskIds(long.output)[0] : null);
  ok(lid, "a long-running background Bash", long);
  const pids = await waitFor("pid files", () => {
    const a = Number(fs.readFileSync(shPid, "utf8")), z = Number(fs.readFileSync(sleepPid, "utf8"));
    return a && z ? [a, z] : null;
  }, 10000);
  const pgrp = pids ? procStat(pids[0])?.pgrp : null;
  if (pgrp) shellGroups.add(pgrp);
  ok(pgrp === pids?.[0] && procStat(pids[1])?.pgrp === pgrp && groupMembers(pgrp).length >= 2,
    "the command runs in its own process group (sh and sleep)", { pids, pgrp });
  const stop = await callTool(s, "TaskStop", { task_id: lid });
  ok(stop?.status === "completed" && stop.output.includes(`Stopped task ${lid}`), "TaskStop answers", stop);
  const gone = pgrp && await waitFor("the process group gone", () => groupMembers(pgrp).length === 0, 10000);
  ok(gone, "the command's whole process group is gone", pgrp && groupMembers(pgrp));
  if (gone) shellGroups.delete(pgrp);
}

// Long foreground work moves to the background (auto_background_ms, small in
// this suite): a foreground Task whose child waits at its gate, and a
// foreground Bash that sleeps past the limit, each return a task id with the
// face's background text, then notify once with their result.
export async function autoBackground() {
  const s = await newSession("auto background");
  const t = await callTool(s, "Task", { description: "auto bg agent", prompt: "CHILD gate autobg",
    subagent_type: "general" }, 60000);
  const tid = t?.output ? taskIds(t.output)[0] : null;
  ok(t?.status === "completed" && tid && t.output.startsWith("Still running after 2 s, so it was moved to the " +
    "background (auto_background_ms).\nAsync agent launched in the background.\ntask_id: " + tid),
    "a foreground Task past auto_background_ms returns its task id and the background text", t);
  const b = await callTool(s, "Bash", { command: "sleep 4; echo autobg-done", description: "slow echo" }, 60000);
  const bid = b?.output ? taskIds(b.output)[0] : null;
  ok(b?.status === "completed" && bid && b.output.includes("moved to the background") &&
    b.output.includes("Command running in the background.\ntask_id: " + bid),
    "a foreground Bash past auto_background_ms returns its task id and the background text", b);
  fake.openGate("autobg");
  const notes = await waitFor("both notified", async () => {
    const us = userTexts(await messages(s));
    const ta = us.filter((x) => x.includes(`[ocbg] Background task completed: ${tid}`));
    const ba = us.filter((x) => x.includes(`[ocbg] Background command completed: ${bid}`));
    return ta.length && ba.length ? { ta, ba } : null;
  }, 30000);
  ok(notes?.ta.length === 1 && notes.ta[0].includes("child reply autobg"),
    "the moved Task is notified once, with the sub-agent's reply", notes?.ta);
  ok(notes?.ba.length === 1 && notes.ba[0].includes("autobg-done"),
    "the moved Bash is notified once, with the command's output (it kept running)", notes?.ba);
  await idle(s);
  const again = userTexts(await messages(s)).filter((x) => x.includes(tid) || x.includes(bid));
  ok(again.length === 2, "and never again", again);
}

// Claude face, agent: Task(run_in_background) read with TaskOutput(block=true).
export async function claudeAgent() {
  const s = claude.session || (claude.session = await newSession("claude face"));
  const t = await callTool(s, "Task", { description: "claude agent", prompt: "CHILD gate claude",
    subagent_type: "general", run_in_background: true });
  const id = (claude.agent = t?.output ? taskIds(t.output)[0] : null);
  ok(t?.status === "completed" && id, "Task(run_in_background=true) returns a task id", t);
  // The child waits for its gate: TaskOutput really blocks until it answers.
  const since = (await messages(s)).length;
  await say(s, `E2E TaskOutput ${JSON.stringify({ task_id: id, block: true })}`);
  const blocked = await waitFor("TaskOutput running", async () =>
    toolParts((await messages(s)).slice(since), "TaskOutput").some((p) => p.state.status === "running"), 15000);
  ok(blocked, "TaskOutput(block=true) waits while the agent works");
  fake.openGate("claude");
  const o = await waitFor("TaskOutput ended", async () => {
    const p = toolParts((await messages(s)).slice(since), "TaskOutput").at(-1);
    return p && (p.state.status === "completed" || p.state.status === "error") ? p.state : null;
  }, 30000);
  ok(o?.output?.includes("<status>completed</status>") && o.output.includes("child reply claude"),
    "TaskOutput(block=true) returns the agent's reply", o);
  await idle(s);
}

// /tasks through OpenCode's command route: the listing is the prompt.
export async function tasksCommand() {
  const s = claude.session;
  const cmds = (await api("GET", "/command")).json || [];
  ok(cmds.some((c) => c.name === "tasks"), "OpenCode lists the /tasks command", cmds.map((c) => c.name));
  const cr = await api("POST", `/session/${s}/command`, { command: "tasks", arguments: "" }, 60000);
  ok(cr.status === 200, "POST /session/:id/command tasks", cr.status);
  const listing = userTexts(await messages(s)).find((t) => t.startsWith("Background tasks")) || "";
  const row = (id, type, status) => id && new RegExp(`^${id}\\s+${type}\\s+${status}\\s`, "m").test(listing);
  ok(/Task ID\s+Type\s+Status/.test(listing) && row(claude.failed, "shell", "failed") &&
     row(claude.stopped, "shell", "stopped") && row(claude.agent, "agent", "completed"),
    "the listing (Task ID / Type / Status) is in the session as the prompt", listing);
  const last = (await messages(s)).at(-1);
  ok(last?.info.role === "assistant" && textOf(last) === "ack", "the model answered the listing", last && textOf(last));
}

// Two tasks in one parent: the first notification is silent (noReply, no
// model turn), the second wakes the parent. Both children are gated, so the
// silence is checked while the second one surely still runs.

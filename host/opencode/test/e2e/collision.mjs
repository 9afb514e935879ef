// e2e.mjs's scenarios: without isolation, collisions are at least seen (ABI 1.5 tool_before).
// Each exported function is one scenario, run by e2e.mjs in its order on one server.
import fs from "node:fs";
import path from "node:path";
import { api, idle, messages, newSession, ok, toolParts, userMessage, waitFor } from "../e2e_lib.mjs";
import { SIDE, fake, launch } from "./world.mjs";

// The state of the newest `tool` part of session sid once it ended (completed or error), or null.
async function endedPart(sid, tool, timeoutMs = 30000) {
  return waitFor(`${tool} in ${sid}`, async () => {
    const st = toolParts(await messages(sid), tool).at(-1)?.state;
    return st && (st.status === "completed" || st.status === "error") ? st : null;
  }, timeoutMs);
}

// Two running tasks of one session (no isolation) write the same file with
// OpenCode's own write tool: the first is held open at a gate after its
// write; the second write's result, as the child session stores it, ends
// with ocbg's warning naming the first (tool.execute.before asked the
// plugin, tool.execute.after appended it). The file holds the second write.
export async function editCollision() {
  const parent = await newSession("ocbg edit collision");
  const file = path.join(SIDE, "collide.txt");
  const write = (content) => JSON.stringify({ filePath: file, content });
  const one = await launch(parent, { description: "writer one", agent: "general",
    prompt: `CHILD callgate col1 write ${write("one\n")}` });
  ok(one, "task one launched", one);
  const childNamed = async (title) => waitFor(`child ${title}`, async () =>
    ((await api("GET", `/session/${parent}/children`)).json || []).find((s) => s.title.startsWith(title))?.id, 30000);
  const oneSession = await childNamed("writer one");
  const first = oneSession && await endedPart(oneSession, "write");
  ok(first?.status === "completed" && !first.output.includes("[ocbg]"),
    "task one wrote the file, nothing to say (it is alone), and stays running at its gate", first);
  const two = await launch(parent, { description: "writer two", agent: "general",
    prompt: `CHILD call write ${write("two\n")}` });
  ok(two, "task two launched", two);
  const twoSession = await childNamed("writer two");
  const second = twoSession && await endedPart(twoSession, "write");
  const warning = `[ocbg] Warning: ${file} was also edited by background task ${one} ("writer one"), still running ` +
    `in this checkout; your edits may overwrite each other. Re-read the file before editing it again, or run ` +
    `parallel writers with isolation "worktree".`;
  ok(second?.status === "completed" && second.output.endsWith(`\n\n${warning}`) &&
     !second.output.startsWith("[ocbg]"),
    "task two's write ran, and its result (what its model read) ends with the warning naming task one", second);
  const answered = await waitFor("task two's next model call", () => fake.requests.some((r) =>
    JSON.stringify(r.body.messages).includes(`background task ${one} (\\"writer one\\")`)), 15000);
  ok(answered, "the model of task two was called with the warning in its context");
  ok(fs.readFileSync(file, "utf8") === "two\n", "the file holds the second write (a warning does not stop it)");
  fake.openGate("col1");
  const done = await userMessage(parent, `[ocbg] Background task completed: ${one}`, 30000);
  ok(done, "task one completes once its gate opens");
  await idle(parent);
}

/*
 * collide.h — without isolation, collisions are at least seen.
 *
 * Background tasks of one session work in the same checkout unless they were
 * launched with isolation "worktree". Two of them (or one and the session
 * that launched it) may then edit the same file and overwrite each other.
 * The host asks the plugin before each tool call that edits files (ABI 1.5
 * tool_before: OpenCode's edit, write and apply_patch); this module answers.
 *
 * What it keeps, per launching session L (a "group"): the files edited by
 * L's active tasks' sessions, and by L itself while it had active tasks. An
 * edit collides when another writer of the same group edited the same file
 * and is still at work:
 *   - another task of L, still active in the same run (a task's edits stop
 *     counting when its run ends);
 *   - L itself, when the editing task was already running at L's edit (an
 *     edit L made before the task started is what the task began from).
 * The edit is then answered with a warning naming the other writer (the
 * host appends it to the tool's result), or refused (on_collision
 * "refuse"; the host fails the call, nothing is recorded). A task with its
 * own worktree edits other files: it is neither checked nor recorded.
 *
 * Paths are compared as the tool was given them, normalised lexically ("."
 * and ".." segments, repeated slashes): OpenCode's edit and write take
 * absolute paths; a patch's relative paths match only the same relative
 * path. Files a shell command writes are not seen at all.
 *
 * Memory: an entry per file and writer. A task's entries are dropped when
 * an edit of its group meets them after its run ended; a launcher's group
 * at its next edit once none of its tasks is active; the rest at shutdown.
 *
 * Cost: a call whose tool edits nothing returns before the lock. A session
 * that is neither an active task's nor a launcher with active tasks costs the
 * lock and two hash lookups, before its arguments are parsed.
 */
#ifndef OCBG_COLLIDE_H
#define OCBG_COLLIDE_H

#include "base/face_guard.h"
#include "engine/engine.h"

/* ocp.h tool_before for session_id's call of `tool` with args_json. [event]
 * Takes the engine lock briefly, calls no host function but the clock,
 * never blocks. Returns 0 with *out NULL (nothing to say), 0 with *out = a
 * warning (malloc'd), or -EACCES with *out = the refusal (malloc'd). */
int collide_tool_before(engine *eng, const char *session_id, const char *tool, const char *args_json, char **out);

/* The files a call of `tool` with args_json edits, normalised, without
 * repeats: a NULL-terminated malloc'd array of malloc'd strings (free with
 * collide_paths_free), or NULL when the tool edits nothing or the arguments
 * name no file. Pure. */
char **collide_edited_paths(const char *tool, const char *args_json);
void collide_paths_free(char **paths);

/* Shutdown: free what the module keeps. */
void collide_free(engine *eng);

#endif

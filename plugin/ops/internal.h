/*
 * internal.h — what the operations (the files of plugin/ops/) share among themselves: finding
 * the caller's tasks, waiting for them, claiming them for a cancel, a resume
 * or a message, a foreground call's task, and taking a task_snap. A face never
 * includes this (it #errors under OCBG_FACE): it calls the verbs of ops.h.
 *
 * Threads: [worker] host worker threads (tool calls). Each function says
 * whether it takes the engine lock itself ("lock not held") or runs under it
 * ("[lock held]", and asserts it).
 */
#ifndef OCBG_OPS_INTERNAL_H
#define OCBG_OPS_INTERNAL_H

#include <stdbool.h>

#include "base/util.h"
#include "base/face_guard.h"
#include "engine/engine.h"
#include "engine/isolate.h"
#include "hooks/usage.h"
#include "ops/ops.h"

/* Claim active task t for cancelling (its completion checks wait while the
 * abort is in flight) and add it to items. [lock held]
 * (not asserted: t does not know its lock) */
void op_cancel_add(cancel_item **items, size_t *n, task *t);

/* Abort each agent item's session, then mark those still active cancelled;
 * a failed abort leaves its task running (rc, err say why). A command is
 * stopped (SIGTERM, then SIGKILL after the grace period) and waited for: its
 * exit ends it as cancelled. remove: cancelled tasks are also removed, in the
 * same lock hold, so a waiter sees them removed. Returns how many it removed.
 * [lock not held] */
size_t op_cancel_items(engine *eng, cancel_item *items, size_t n, bool remove);

/* Stop active command t (SIGTERM, then SIGKILL after the grace period) and
 * wait, up to the grace and 5 s more, for its exit, which ends it as
 * cancelled; ctx (NULL: none) can end the wait early. owner: the caller
 * returns the command's result itself (a foreground Bash), so the run ends
 * with no notification. [lock held] Released while waiting. The task after
 * the wait, NULL when it was removed meanwhile. */
task *op_stop_command(engine *eng, ocp_call_ctx *ctx, task *t, bool owner);

/* Task task_id if it is the caller's session's, else NULL (a session sees
 * only its own). [lock held] */
task *op_find_own(engine *eng, const char *task_id, const ocp_call_ctx *ctx);

/* The caller's session's tasks (NULL: none). [lock held] */
parent *op_parent_of(engine *eng, const ocp_call_ctx *ctx);

/* The wait predicate for one task: gone, or no longer active. arg: its id.
 * [lock held] */
bool op_task_settled(engine *eng, void *task_id);

/* Wait, as a caller that will return the result (no notification for a run
 * that ends meanwhile), until task `id` is settled or the deadline passes
 * (monotonic ms), ctx is cancelled or the plugin stops. owner: the caller
 * already counts as a result waiter (a foreground launch). *t: the task
 * after the wait, NULL when it was removed meanwhile. [lock held] */
wait_result op_await(engine *eng, ocp_call_ctx *ctx, const char id[TASK_ID_SIZE], int64_t deadline, bool owner,
                     task **t);

/* A call showed the model task t (its store row is marked for writing).
 * read: its completed result was read (retrieved_ms = now); delivered: the
 * call returned the outcome of t's current run, which then needs no
 * notification. [lock held] */
void op_shown(engine *eng, task *t, int64_t now, bool read, bool delivered);

/* Task id, after what it did in its worktree was read, if it is isolated
 * and its run has ended (engine/isolate.h isolate_settle). [lock held] Let
 * go while git runs. Returns the task as found again (NULL: gone). */
task *op_worktree_settle(engine *eng, const char *id);

/* ---- reading a task for a call ---------------------------------------- */

/* What a task_snap copies beyond its numbers (id, type, status, usage,
 * times, a command's exit). A snapshot for a text/ rendering alone (a list
 * line, a report) copies no strings: the text holds them. */
#define SNAP_STRINGS 1u /* description, command, session, asking, error */
#define SNAP_TEXTS 2u   /* those, and result, output, worktree, exit_how */
#define SNAP_REPORT 4u  /* text: format_report */
#define SNAP_LINE 8u    /* text: format_list_line */

/* Snapshot t into *s (zeroed first) as of now. [lock held] (not asserted:
 * t does not know its lock) */
void snap_take(task_snap *s, const task *t, int64_t now, unsigned what);

/* Task id made ready to be read whole: an isolated task's worktree report
 * read if its run has ended (op_worktree_settle), then its texts that only
 * the store holds copied in (persist_texts). [lock held] Let go while git
 * runs. The task, NULL when gone; op_read_done after reading it. */
task *op_read_begin(engine *eng, const char *id);

/* Drops what op_read_begin copied in. [lock held] */
void op_read_done(engine *eng, task *t);

/* op_launch_shell for a monitor (ops/monitor.h): a background command with
 * mon (taken, freed on a refusal) on its output from its first byte. */
struct shell_monitor;
int op_launch_monitor(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description,
                      struct shell_monitor *mon, launched *l, strbuf *out);

#endif

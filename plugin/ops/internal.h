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
#include "model/usage.h"
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
size_t op_cancel_items(engine *o, cancel_item *items, size_t n, bool remove);

/* Stop active command t (SIGTERM, then SIGKILL after the grace period) and
 * wait, up to the grace and 5 s more, for its exit, which ends it as
 * cancelled; ctx (NULL: none) can end the wait early. owner: the caller
 * returns the command's result itself (a foreground Bash), so the run ends
 * with no notification. [lock held] Released while waiting. The task after
 * the wait, NULL when it was removed meanwhile. */
task *op_stop_command(engine *o, ocp_call_ctx *ctx, task *t, bool owner);

/* Task task_id if it is the caller's session's, else NULL (a session sees
 * only its own). [lock held] */
task *op_find_own(engine *o, const char *task_id, const ocp_call_ctx *ctx);

/* The caller's session's tasks (NULL: none). [lock held] */
parent *op_parent_of(engine *o, const ocp_call_ctx *ctx);

/* The wait predicate for one task: gone, or no longer active. arg: its id.
 * [lock held] */
bool op_task_settled(engine *o, void *task_id);

/* Wait, as a caller that will return the result (no notification for a run
 * that ends meanwhile), until task `id` is settled or the deadline passes
 * (monotonic ms), ctx is cancelled or the plugin stops. owner: the caller
 * already counts as a result waiter (a foreground launch). *t: the task
 * after the wait, NULL when it was removed meanwhile. [lock held] */
wait_result op_await(engine *o, ocp_call_ctx *ctx, const char id[TASK_ID_SIZE], int64_t deadline, bool owner, task **t);

/* A call showed the model task t (its store row is marked for writing).
 * read: its completed result was read (retrieved_ms = now); delivered: the
 * call returned the outcome of t's current run, which then needs no
 * notification. [lock held] */
void op_shown(engine *o, task *t, int64_t now, bool read, bool delivered);

/* A foreground call's task (launch_req.foreground, op_launch_shell's
 * foreground): its caller waits for it, and no one else does. */

/* Remove task id if it is still a foreground call's and has ended: it was
 * never a background task. Wakes the waiters. [lock held] */
void op_foreground_drop(engine *o, const char *id);

/* Task id, after what it did in its worktree was read, if it is isolated
 * and its run has ended (engine/isolate.h isolate_settle). [lock held] Let
 * go while git runs. Returns the task as found again (NULL: gone). */
task *op_worktree_settle(engine *o, const char *id);

/* Foreground task t, still running when its call stops waiting, becomes a
 * background task: it ends with the usual notification, and the store
 * keeps it from now. Its run goes on untouched. [lock held] */
void op_to_background(engine *o, task *t);

/* Give task t its own runtime limit per run, ms (0: max_runtime_ms,
 * engine/guards.h). [lock held] (not asserted: t does not know its lock) */
void op_set_timeout(task *t, int64_t ms);

/* The call of foreground agent task t was cancelled (Esc) or the plugin is
 * stopping: nobody else waits for its sub-agent, so it stops. A pending
 * task just leaves the queue. A running one is claimed for cancelling (its
 * completion checks wait) and its session id returned, for
 * op_foreground_abort (owned); else NULL, nothing more to do. [lock held] */
char *op_foreground_esc(engine *o, task *t);

/* Abort session (from op_foreground_esc; freed here), then end task id as
 * cancelled whatever the abort answered, and drop it (op_foreground_drop).
 * [lock not held] */
void op_foreground_abort(engine *o, const char *id, char *session);

/* Claim task id for a follow-up. [lock held] RESUME_OK and *c filled, or a
 * refusal (nothing changed). */
resume_refusal op_resume_claim(engine *o, const ocp_call_ctx *ctx, const char *id, bool block, resume_claim *c);

/* Ask permission, check the session still exists, send the follow-up.
 * [lock not held] 0; -ESTALE: the session is gone (the claim given back,
 * the task completed as before); another negative errno with the answer in
 * out: refused (claim given back) or the send failed (the task in error). */
int op_resume_send(engine *o, const ocp_call_ctx *ctx, const resume_claim *c, const char *prompt, strbuf *out);

/* Wait for the claimed run to end (a blocking resume). *t: the task after,
 * NULL when removed. [lock held] */
wait_result op_resume_wait(engine *o, ocp_call_ctx *ctx, resume_claim *c, int64_t deadline, task **t);

/* Is task id a running agent task of the caller's session that can take a
 * message now? [lock held] SEND_OK and *c filled, or why not (c->status set
 * when found); nothing changes. */
send_refusal op_send_check(engine *o, const ocp_call_ctx *ctx, const char *id, send_claim *c);

/* Send `message` into the running task c names: the host's permission
 * ("task", the agent), the task checked again (it may have ended while the
 * user was asked), then the prompt queued into its busy session. The task
 * keeps its run and its one notification; its completion waits until the
 * host holds the message (model/followup.h). [lock not held] 0; or a
 * negative errno and the answer in out: refused (-EACCES, -ECANCELED, -EIO
 * from the permission; -EINVAL etc. with *why set when the task changed
 * meanwhile, out untouched) or the host's send failed (out says so). */
int op_send(engine *o, const ocp_call_ctx *ctx, send_claim *c, const char *message, send_refusal *why, strbuf *out);

/* ---- reading a task for a call ---------------------------------------- */

/* What a task_snap copies beyond its plain fields. */
#define SNAP_TEXTS 1u  /* result, error's full text, output, worktree, exit_how */
#define SNAP_REPORT 2u /* text: format_report */
#define SNAP_LINE 4u   /* text: format_list_line */

/* Snapshot t into *s (zeroed first) as of now. [lock held] (not asserted:
 * t does not know its lock) */
void snap_take(task_snap *s, const task *t, int64_t now, unsigned what);

/* Task id made ready to be read whole: an isolated task's worktree report
 * read if its run has ended (op_worktree_settle), then its texts that only
 * the store holds copied in (persist_texts). [lock held] Let go while git
 * runs. The task, NULL when gone; op_read_done after reading it. */
task *op_read_begin(engine *o, const char *id);

/* Drops what op_read_begin copied in. [lock held] */
void op_read_done(engine *o, task *t);

#endif

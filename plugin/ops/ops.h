/*
 * ops.h — the operations both faces share: launch, wait, cancel, list, clear,
 * resume, send, a foreground call's task, and finding a session's own tasks.
 * A face (face/) turns a tool's arguments into one of these and words the
 * answer; an operation decides what happens to tasks, asks the host's
 * permission where it must, and never leaves a half-made task behind. Every
 * change to a task or the engine is an operation: a face takes the engine
 * lock only to read tasks for its words, and calls the host never
 * (build-aux/face-check, run by make check, holds faces to it).
 *
 * Threads: [worker] host worker threads (tool calls). Each function says
 * whether it takes the engine lock itself ("lock not held") or runs under it
 * ("[lock held]", and asserts it). Texts an operation writes to `out` are the ones both faces
 * show alike (permission refusals, start failures).
 */
#ifndef OCBG_OPS_H
#define OCBG_OPS_H

#include <stdbool.h>

#include "base/util.h"
#include "engine/engine.h"
#include "engine/isolate.h"
#include "hooks/usage.h"

typedef struct launch_req {
    const char *description, *prompt, *agent;
    bool fork;           /* the child starts from a fork of the caller's context */
    bool foreground;     /* the caller waits for the result itself: no notification */
    int64_t timeout_ms;  /* the task's own runtime limit per run; 0: max_runtime_ms (engine/guards.h) */
    isolation isolation; /* its own git worktree, or none (engine/isolate.h) */
} launch_req;

/* What a launch made. */
typedef struct launched {
    char id[TASK_ID_SIZE];
    char batch[TASK_ID_SIZE];
    strbuf queued;   /* empty: it started; else it waits for a slot, and this line says why (sb_free it) */
    strbuf worktree; /* an isolated task's worktree, lines for the answer; else empty (sb_free it) */
} launched;

/* Launch an agent task of the caller's session: the host's permission, the
 * scheduler's admission (engine/sched.h), the task registered, and if a slot
 * is free its session created (or forked) and its prompt sent; else it is
 * pending and the worker starts it when a slot frees. [lock not held] 0 with
 * *l filled (out untouched); or a negative errno with the error in out
 * (-EAGAIN: every slot busy and the queue full): nothing remains unless the
 * session was created (the task then exists, in error). */
int op_launch_agent(engine *eng, const ocp_call_ctx *ctx, const launch_req *req, launched *l, strbuf *out);

/* Run `command` for the caller's session in its directory: permission, task,
 * process (a background command waits for a slot like an agent task; a
 * foreground one runs at once). [lock not held] 0 with *l; or a negative
 * errno and the error in out (a command that could not start is a task in
 * error; a foreground one is removed). */
int op_launch_shell(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description, bool foreground,
                    launched *l, strbuf *out);

/* op_launch_shell for a monitor (ops/monitor.h): a background command with
 * mon (taken, freed on a refusal) on its output from its first byte. */
struct shell_monitor;
int op_launch_monitor(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description,
                      struct shell_monitor *mon, launched *l, strbuf *out);

/* An active task being cancelled: its id, its session (NULL: a command), how
 * the abort went (rc, err). */
typedef struct cancel_item {
    char id[TASK_ID_SIZE];
    char *session;
    int rc;
    char *err;
} cancel_item;

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

void op_cancel_free(cancel_item *items, size_t n);

/* Stop active command t (SIGTERM, then SIGKILL after the grace period) and
 * wait, up to the grace and 5 s more, for its exit, which ends it as
 * cancelled; ctx (NULL: none) can end the wait early. owner: the caller
 * returns the command's result itself (a foreground Bash), so the run ends
 * with no notification. [lock held] Released while waiting. The task after
 * the wait, NULL when it was removed meanwhile. */
task *op_stop_command(engine *eng, ocp_call_ctx *ctx, task *t, bool owner);

/* What clearing a session's tasks did. */
typedef struct clear_result {
    size_t cleared;     /* tasks removed */
    size_t stopped;     /* running tasks aborted */
    strbuf kept;        /* a line per task whose abort failed (still running, kept); free with sb_free */
    strbuf worktrees;   /* a line per removed task's worktree: removed (its branch named) or kept (where,
                         * why); free with sb_free */
    bool worktree_kept; /* a worktree could not be removed without losing work: it is kept */
} clear_result;

/* Which tasks a listing shows (NULL fields: any). */
typedef struct list_filter {
    const char *status; /* a status name */
    const char *batch;  /* a batch id */
} list_filter;

/* Writes one task's line: a pure text function. [lock held] */
typedef void (*list_line_fn)(strbuf *out, const task *t, int64_t now);

/* The caller's session's tasks matching f (NULL: all), newest first, a line
 * each into lines for the first max_lines of them; counts[status] counts all
 * that match; *total (when not NULL) sums the usage of the tasks whose lines
 * are shown. Without a filter it costs O(max_lines), whatever the number of
 * tasks; with one, a walk of the session's tasks. [lock not held] Returns how
 * many match. */
unsigned op_list(engine *eng, const ocp_call_ctx *ctx, const list_filter *f, unsigned max_lines, list_line_fn line,
                 strbuf *lines, unsigned counts[TASK_STATUS_COUNT], usage *total);

/* Clear the caller's session's tasks: cancel the active ones, remove every
 * task that no longer runs. [lock not held] */
void op_clear(engine *eng, const ocp_call_ctx *ctx, clear_result *r);

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

/* A foreground call's task (launch_req.foreground, op_launch_shell's
 * foreground): its caller waits for it, and no one else does. */

/* Remove task id if it is still a foreground call's and has ended: it was
 * never a background task. Wakes the waiters. [lock held] */
void op_foreground_drop(engine *eng, const char *id);

/* Task id, after what it did in its worktree was read, if it is isolated
 * and its run has ended (engine/isolate.h isolate_settle). [lock held] Let
 * go while git runs. Returns the task as found again (NULL: gone). */
task *op_worktree_settle(engine *eng, const char *id);

/* Foreground task t, still running when its call stops waiting, becomes a
 * background task: it ends with the usual notification, and the store
 * keeps it from now. Its run goes on untouched. [lock held] */
void op_to_background(engine *eng, task *t);

/* Give task t its own runtime limit per run, ms (0: max_runtime_ms,
 * engine/guards.h). [lock held] (not asserted: t does not know its lock) */
void op_set_timeout(task *t, int64_t ms);

/* The call of foreground agent task t was cancelled (Esc) or the plugin is
 * stopping: nobody else waits for its sub-agent, so it stops. A pending
 * task just leaves the queue. A running one is claimed for cancelling (its
 * completion checks wait) and its session id returned, for
 * op_foreground_abort (owned); else NULL, nothing more to do. [lock held] */
char *op_foreground_esc(engine *eng, task *t);

/* Abort session (from op_foreground_esc; freed here), then end task id as
 * cancelled whatever the abort answered, and drop it (op_foreground_drop).
 * [lock not held] */
void op_foreground_abort(engine *eng, const char *id, char *session);

/* The person's requests through the host's UI (ocp.h ui_request), not the
 * model's: any task of any session, by id. */

/* Stop pending or running task id as the model's cancel does, marked
 * stopped by the user: it ends cancelled and its parent is notified as for
 * any ending (engine_finish). [lock not held] 0; or a negative errno and
 * the reason in out: -ENOENT no such task, -EINVAL it has ended or is being
 * stopped, -EIO the host could not abort it (it runs on, unmarked). */
int op_panel_stop(engine *eng, const char *id, strbuf *out);

/* Task id's detail for the UI, as JSON into out: id, status, and where they
 * apply answer, output (the last DETAIL_CHARS characters), exit, error,
 * waiting, recent, tools, tokens, cost (texts the store alone holds are read
 * back), worktree (an isolated task's, with the report of its ended run, read
 * now if nothing read it yet). [lock not held] 0; -ENOENT (out says so). */
#define DETAIL_CHARS 2000
int op_panel_detail(engine *eng, const char *id, strbuf *out);

/* Why a resume was refused before anything was sent. */
typedef enum resume_refusal {
    RESUME_OK,
    RESUME_NOT_FOUND,     /* not a task of the caller's session */
    RESUME_SHELL,         /* a command cannot be resumed */
    RESUME_BUSY,          /* already working on a follow-up */
    RESUME_NOT_COMPLETED, /* status (in the claim) is not completed */
    RESUME_EXPIRED,       /* its session is gone */
    RESUME_NO_SLOT,       /* no run slot is free (why: in the claim) */
} resume_refusal;

/* A task claimed for a follow-up: status resumed, a new run. */
typedef struct resume_claim {
    char id[TASK_ID_SIZE];
    unsigned run, resume_count;
    task_status status; /* the status found (for RESUME_NOT_COMPLETED) */
    bool block;         /* the caller will wait for the run's result */
    bool deny_tools;    /* the task is at max_depth: its follow-up gets no ocbg tools */
    int64_t old_completed, old_started;
    char *session, *agent; /* owned: op_resume_claim_free */
    char why[200];         /* RESUME_NO_SLOT: which cap, in words */
} resume_claim;

/* Claim task id for a follow-up. [lock held] RESUME_OK and *c filled, or a
 * refusal (nothing changed). */
resume_refusal op_resume_claim(engine *eng, const ocp_call_ctx *ctx, const char *id, bool block, resume_claim *c);

/* Ask permission, check the session still exists, send the follow-up.
 * [lock not held] 0; -ESTALE: the session is gone (the claim given back,
 * the task completed as before); another negative errno with the answer in
 * out: refused (claim given back) or the send failed (the task in error). */
int op_resume_send(engine *eng, const ocp_call_ctx *ctx, const resume_claim *c, const char *prompt, strbuf *out);

/* Wait for the claimed run to end (a blocking resume). *t: the task after,
 * NULL when removed. [lock held] */
wait_result op_resume_wait(engine *eng, ocp_call_ctx *ctx, resume_claim *c, int64_t deadline, task **t);

void op_resume_claim_free(resume_claim *c);

/* Why a message to a task (background_send) was refused, nothing sent. */
typedef enum send_refusal {
    SEND_OK,
    SEND_NOT_FOUND,   /* not a task of the caller's session */
    SEND_SHELL,       /* a command takes no messages */
    SEND_NOT_RUNNING, /* pending, completed, error or cancelled (the status: in the claim) */
    SEND_STARTING,    /* running, but its session is not ready for prompts yet */
    SEND_STOPPING,    /* being cancelled or stopped, or its session was deleted */
} send_refusal;

/* A running agent task a message is for. */
typedef struct send_claim {
    char id[TASK_ID_SIZE];
    unsigned run;       /* the run it goes into */
    unsigned number;    /* its follow-up number (op_send sets it) */
    task_status status; /* the status found */
    bool deny_tools;    /* the task is at max_depth: the prompt denies ocbg's tools, as its first did */
    char *session, *agent, *description; /* owned: op_send_claim_free */
} send_claim;

/* Is task id a running agent task of the caller's session that can take a
 * message now? [lock held] SEND_OK and *c filled, or why not (c->status set
 * when found); nothing changes. */
send_refusal op_send_check(engine *eng, const ocp_call_ctx *ctx, const char *id, send_claim *c);

/* Send `message` into the running task c names: the host's permission
 * ("task", the agent), the task checked again (it may have ended while the
 * user was asked), then the prompt queued into its busy session. The task
 * keeps its run and its one notification; its completion waits until the
 * host holds the message (model/followup.h). [lock not held] 0; or a
 * negative errno and the answer in out: refused (-EACCES, -ECANCELED, -EIO
 * from the permission; -EINVAL etc. with *why set when the task changed
 * meanwhile, out untouched) or the host's send failed (out says so). */
int op_send(engine *eng, const ocp_call_ctx *ctx, send_claim *c, const char *message, send_refusal *why, strbuf *out);

void op_send_claim_free(send_claim *c);

#endif

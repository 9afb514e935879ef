/*
 * ops.h — the operations the faces (face/) call: one per tool verb (launch,
 * output, foreground, cancel, list, block, clear, resume, send; the person's
 * stop and detail). Each takes the engine lock itself, makes its change to
 * tasks, asks the host's permission where it must, never leaves a half-made
 * task behind, and answers with plain data the caller owns: a task_snap per
 * task (copied strings and numbers, and texts text/ renders from the task),
 * which the face words without any lock. The engine stays opaque here: a
 * face compiled with OCBG_FACE (Makefile) cannot include engine/, store/,
 * run/, hostapi/, model/registry.h or ops/internal.h (each #errors).
 *
 * Threads: [worker] host worker threads (tool calls). Every function here
 * takes the engine lock itself ("lock not held"). Texts an operation writes
 * to `out` are the ones both faces show alike (permission refusals, start
 * failures, a budget's refusal).
 */
#ifndef OCBG_OPS_H
#define OCBG_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ocp.h"
#include "base/util.h"
#include "base/wait_result.h"
#include "model/task.h"
#include "hooks/usage.h"

typedef struct engine engine; /* engine/engine.h: opaque to a face */

/* worktree/worktree.h: the `isolation` argument's values, NULL-terminated. */
extern const char *const isolation_names[];

/* ---- one task, as a face words it ---------------------------------------- */

/* How much of a command's output a snapshot keeps (its tail). */
#define SNAP_OUTPUT_CHARS 30000

/* One task as the operation saw it, copied under the lock: the caller owns
 * it (task_snap_free). Strings are NULL when the task has none; result,
 * output and worktree only where the operation says it read them. Where an
 * operation renders `text` (a list line, a report), that text stands for
 * the strings, which it does not copy. */
typedef struct task_snap {
    char id[TASK_ID_SIZE];
    task_type type;
    task_status status;
    unsigned tool_calls;
    bool awaiting;    /* an agent waiting for the background tasks it launched */
    bool wake_parked; /* those have ended; it continues when a slot frees */
    bool has_usage;   /* use: what its model calls used (text/texts.h task_usage) */
    usage use;
    bool exited; /* a command's exit: code, or the signal that ended it */
    int exit_code, term_signal;
    char exit_how[96];  /* a command's exit in words (shell_describe_exit) */
    int64_t started_ms; /* wall clock */
    int64_t runtime_ms; /* task_runtime when it was taken */
    char *description;
    char *command; /* a command's line */
    char *session; /* an agent's session id */
    char *asking;  /* what its sub-agent waits for the user's permission for */
    char *error;
    char *result;   /* an agent's answer (read from the store if need be) */
    char *output;   /* a command's output, its last SNAP_OUTPUT_CHARS characters */
    char *worktree; /* an isolated task's lines (format_worktree) */
    char *text;     /* what text/ rendered when asked: a report or a list line */
    bool monitor;   /* a monitor's own command (model/monitor_task.h) */
} task_snap;

void task_snap_free(task_snap *s);

/* ---- launch --------------------------------------------------------------- */

typedef struct launch_req {
    const char *description, *prompt, *agent;
    bool fork;             /* the child starts from a fork of the caller's context */
    bool foreground;       /* the caller waits for the result itself: no notification */
    int64_t timeout_ms;    /* the task's own runtime limit per run; 0: max_runtime_ms (engine/guards.h) */
    const char *isolation; /* one of isolation_names; NULL: the isolation option */
} launch_req;

/* What a launch made. */
typedef struct launched {
    char id[TASK_ID_SIZE];
    char batch[TASK_ID_SIZE];
    strbuf queued;   /* empty: it started; else it waits for a slot, and this line says why (sb_free it) */
    strbuf worktree; /* an isolated task's worktree, lines for the answer; else empty (sb_free it) */
} launched;

/* Launch an agent task of the caller's session: the session's budget
 * (engine/guards.h guards_admit), the host's permission, the scheduler's
 * admission (engine/sched.h), the task registered, and if a slot is free its
 * session created (or forked) and its prompt sent; else it is pending and
 * the worker starts it when a slot frees. [lock not held] 0 with *l filled
 * (out untouched); or a negative errno with the error in out (-EAGAIN: every
 * slot busy and the queue full): nothing remains unless the session was
 * created (the task then exists, in error). */
int op_launch_agent(engine *eng, const ocp_call_ctx *ctx, const launch_req *req, launched *l, strbuf *out);

/* Run `command` for the caller's session in its directory: permission, task,
 * process (a background command waits for a slot like an agent task, with
 * its own runtime limit timeout_ms, 0: max_runtime_ms; a foreground one runs
 * at once). [lock not held] 0 with *l; or a negative errno and the error in
 * out (a command that could not start is a task in error; a foreground one
 * is removed). */
int op_launch_shell(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description, bool foreground,
                    int64_t timeout_ms, launched *l, strbuf *out);

/* ---- a foreground call: Task or Bash without run_in_background ---------- */

typedef enum foreground_end {
    FOREGROUND_ENDED,   /* its run ended (or a command was stopped, `wait` says why): snap, with its texts */
    FOREGROUND_MOVED,   /* still running at auto_background_ms: now a background task (snap) */
    FOREGROUND_STOPPED, /* an agent's call was cancelled or the plugin stops (`wait`): its sub-agent stopped */
    FOREGROUND_REMOVED, /* the task was removed while it ran (late: after its run completed) */
} foreground_end;

typedef struct foreground_result {
    foreground_end end;
    wait_result wait;
    bool late;              /* FOREGROUND_REMOVED after the run completed, while its worktree was read */
    int64_t moved_after_ms; /* FOREGROUND_MOVED: auto_background_ms */
    task_snap snap;         /* the task, when it remains (task_snap_free) */
} foreground_result;

/* Wait, as the only one who waits for it, for foreground task id (just
 * launched by this call) up to own_ms, or auto_background_ms when that comes
 * first (then it is moved to the background, a command with limit_ms as its
 * runtime limit). A command still running when the wait ends otherwise is
 * stopped and waited for; an agent's call cancelled (Esc) or a shutdown stops
 * its sub-agent. A completed agent's worktree report is read and its result
 * marked read. The task is dropped unless it went to the background.
 * [lock not held] Fills *r. */
void op_foreground(engine *eng, ocp_call_ctx *ctx, const char *id, int64_t own_ms, int64_t limit_ms,
                   foreground_result *r);

/* ---- output: background_output, TaskOutput -------------------------------- */

typedef struct output_req {
    bool block; /* wait, up to wait_ms, for an active task to end */
    int64_t wait_ms;
    bool report;           /* snap.text: its report (text/texts.h format_report) */
    bool read_agents_only; /* only an agent's completed result counts as read, and a call that
                            * neither read nor delivered a result marks nothing (TaskOutput) */
} output_req;

typedef enum output_end {
    OUTPUT_SHOWN,           /* snap, with its texts (or its report instead); `wait`: how a wait ended */
    OUTPUT_NOT_FOUND,       /* not a task of the caller's session */
    OUTPUT_REMOVED_WAITING, /* removed while the call waited (snap.id) */
    OUTPUT_WAIT_STOPPED,    /* the wait was cancelled or the plugin stops (`wait`): snap, no texts */
    OUTPUT_REMOVED,         /* removed before it could be read (snap.id) */
} output_end;

typedef struct output_result {
    output_end end;
    wait_result wait;
    bool was_active; /* it was active when found */
    task_snap snap;  /* task_snap_free */
} output_result;

/* Read the caller's task id: wait if asked, read an isolated task's
 * worktree report (once per run) and texts only the store holds, snapshot
 * it, and note what the call showed (a result read; a blocking call's
 * result replaces the notification). [lock not held] Fills *r. */
void op_output(engine *eng, ocp_call_ctx *ctx, const char *id, const output_req *req, output_result *r);

/* ---- cancel: background_cancel, TaskStop ---------------------------------- */

/* An active task being cancelled: its id, its session (NULL: a command), how
 * the abort went (rc, err). */
typedef struct cancel_item {
    char id[TASK_ID_SIZE];
    char *session;
    int rc;
    char *err;
} cancel_item;

void op_cancel_free(cancel_item *items, size_t n);

typedef enum cancel_end {
    CANCEL_DONE,      /* rc, err: how its abort went (rc 0: it ends cancelled; else it runs on) */
    CANCEL_NOT_FOUND, /* not a task of the caller's session */
    CANCEL_ENDED,     /* it is not active (snap.status) */
    CANCEL_ALREADY,   /* it is already being cancelled */
} cancel_end;

typedef struct cancel_result {
    cancel_end end;
    int rc; /* CANCEL_DONE: 0, or the abort's error (err says it, owned) */
    char *err;
    bool exited;    /* a command stopped by TaskStop has exited */
    task_snap snap; /* the task as found (no texts; task_snap_free) */
} cancel_result;

/* Cancel the caller's active task id: an agent's session is aborted and it
 * ends cancelled; a command is stopped (SIGTERM, then SIGKILL after the
 * grace period) and waited for. stop (TaskStop): a command is stopped even
 * when already being cancelled, and ctx can end the wait. [lock not held]
 * Fills *r (cancel_result_free). */
void op_cancel(engine *eng, ocp_call_ctx *ctx, const char *id, bool stop, cancel_result *r);

void cancel_result_free(cancel_result *r);

/* Cancel the active tasks of the caller's batch `batch` (those not already
 * being cancelled), as op_cancel does. [lock not held] *items (n of them,
 * op_cancel_free) with how each abort went; returns how many tasks the
 * batch has (0: no such batch). */
size_t op_cancel_batch(engine *eng, const ocp_call_ctx *ctx, const char *batch, cancel_item **items, size_t *n);

/* ---- list, block, clear ----------------------------------------------------- */

/* Which tasks a listing shows (NULL fields: any). */
typedef struct list_filter {
    const char *status; /* a status name */
    const char *batch;  /* a batch id */
} list_filter;

typedef struct task_list {
    task_snap *rows; /* newest first, `shown` of them (snap.text: its background_list line when asked) */
    unsigned shown;
    unsigned matched;                   /* how many match */
    unsigned counts[TASK_STATUS_COUNT]; /* of all that match, per status */
    usage total;                        /* the usage of the tasks shown */
} task_list;

/* The caller's session's tasks matching f (NULL: all), newest first, a
 * snapshot each (with its list line when lines) of the first max_rows.
 * Without a filter it costs O(max_rows), whatever the number of tasks; with
 * one, a walk of the session's tasks. [lock not held] Fills *l
 * (task_list_free). */
void op_list(engine *eng, const ocp_call_ctx *ctx, const list_filter *f, unsigned max_rows, bool lines, task_list *l);

void task_list_free(task_list *l);

typedef enum block_end {
    BLOCK_WAITED,    /* wait: how; rows: each task named */
    BLOCK_NOT_FOUND, /* `bad` is not a task of the caller's session */
    BLOCK_NO_BATCH,  /* `bad` is not a batch of the caller's session */
    BLOCK_EMPTY,     /* nothing named */
} block_end;

/* One task waited for: gone (removed meanwhile), or its snapshot with its
 * background_list line. */
typedef struct block_row {
    char id[TASK_ID_SIZE];
    bool gone;
    task_snap snap;
} block_row;

typedef struct block_result {
    block_end end;
    wait_result wait;
    const char *bad; /* one of names */
    block_row *rows;
    size_t n;
} block_result;

/* background_block: wait up to wait_ms until every task named (a batch id:
 * each of its tasks) has ended, or the call is cancelled. An unknown id or
 * batch is refused before any wait. [lock not held] Fills *r
 * (block_result_free). */
void op_block(engine *eng, ocp_call_ctx *ctx, const char *const *names, size_t n_names, int64_t wait_ms,
              block_result *r);

void block_result_free(block_result *r);

/* What clearing a session's tasks did. */
typedef struct clear_result {
    size_t cleared;     /* tasks removed */
    size_t stopped;     /* running tasks aborted */
    strbuf kept;        /* a line per task whose abort failed (still running, kept); free with sb_free */
    strbuf worktrees;   /* a line per removed task's worktree: removed (its branch named) or kept (where,
                         * why); free with sb_free */
    bool worktree_kept; /* a worktree could not be removed without losing work: it is kept */
} clear_result;

/* Clear the caller's session's tasks: cancel the active ones, remove every
 * task that no longer runs. [lock not held] */
void op_clear(engine *eng, const ocp_call_ctx *ctx, clear_result *r);

/* ---- resume and send -------------------------------------------------------- */

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

void op_resume_claim_free(resume_claim *c);

/* What a resume did. */
typedef struct resume_result {
    resume_refusal why; /* not RESUME_OK: refused, nothing sent (claim: what was found) */
    resume_claim claim;
    wait_result wait; /* block: how the wait for the follow-up's run ended */
    bool gone;        /* block: the task was removed meanwhile */
    bool same_run;    /* block: snap is the follow-up's run */
    task_snap snap;   /* block: the task after the wait, with its texts */
} resume_result;

/* Resume the caller's completed task id with `prompt`: the session's
 * budget, the claim, the host's permission, the send; with block, wait up
 * to wait_ms for the follow-up's run, whose result (or error) then replaces
 * the notification. [lock not held] 0 (r->why RESUME_OK: sent); r->why set:
 * refused; else a negative errno with the error in out (a budget, the
 * permission, the send). r: resume_result_free. */
int op_resume(engine *eng, ocp_call_ctx *ctx, const char *id, const char *prompt, bool block, int64_t wait_ms,
              resume_result *r, strbuf *out);

void resume_result_free(resume_result *r);

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

void op_send_claim_free(send_claim *c);

/* background_send: is task id a running agent task of the caller's session
 * that can take a message now; the session's budget (guards_admit_send);
 * then `message` sent into it: the host's permission ("task", the agent),
 * the task checked again (it may have ended while the user was asked), the
 * prompt queued into its busy session. The task keeps its run and its one
 * notification. [lock not held] 0; *why not SEND_OK: refused, nothing sent
 * (c->status set when found); else a negative errno and the answer in out
 * (a budget, the permission, the host's send). c: op_send_claim_free. */
int op_send_message(engine *eng, const ocp_call_ctx *ctx, const char *id, const char *message, send_claim *c,
                    send_refusal *why, strbuf *out);

/* ---- the person's requests through the host's UI (ocp.h ui_request) ------- */

/* Stop pending or running task id (any session's) as the model's cancel
 * does, marked stopped by the user: it ends cancelled and its parent is
 * notified as for any ending (engine_finish). [lock not held] 0; or a
 * negative errno and the reason in out: -ENOENT no such task, -EINVAL it
 * has ended or is being stopped, -EIO the host could not abort it (it runs
 * on, unmarked). */
int op_panel_stop(engine *eng, const char *id, strbuf *out);

/* Task id's detail for the UI, as JSON into out: id, status, and where they
 * apply answer, output (the last DETAIL_CHARS characters), exit, error,
 * waiting, recent, tools, tokens, cost (texts the store alone holds are read
 * back), worktree (an isolated task's, with the report of its ended run, read
 * now if nothing read it yet). [lock not held] 0; -ENOENT (out says so). */
#define DETAIL_CHARS 2000
int op_panel_detail(engine *eng, const char *id, strbuf *out);

#endif

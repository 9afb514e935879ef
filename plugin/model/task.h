/*
 * task.h — one background task: what it was asked, where it runs, how its
 * runs ended, what it has done so far; and the rules of its statuses.
 * Pure data: no threads, no host calls. The engine's lock guards every task.
 */
#ifndef OCBG_TASK_H
#define OCBG_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "model/answer.h"
#include "model/shell_state.h"

typedef enum task_status {
    TASK_PENDING, /* queued by a concurrency cap: no session or process yet */
    TASK_RUNNING,
    TASK_COMPLETED,
    TASK_ERROR,
    TASK_CANCELLED,
    TASK_RESUMED, /* a completed task working on a follow-up prompt */
} task_status;
#define TASK_STATUS_COUNT (TASK_RESUMED + 1)

typedef enum task_type {
    TASK_AGENT,
    TASK_SHELL
} task_type;

#define TASK_ID_SIZE 16 /* "bg_" + 8 hex + NUL, with room */
#define RECENT_TOOLS 5
#define RECENT_CALLS 8
#define TOOL_NAME_SIZE 24

/* A task's long texts, as bits of task.texts_stored and store_row.keep. */
#define TASK_TEXT_PROMPT 1u
#define TASK_TEXT_RESULT 2u
#define TASK_TEXT_ERROR 4u
#define TASK_TEXTS_ALL (TASK_TEXT_PROMPT | TASK_TEXT_RESULT | TASK_TEXT_ERROR)
#define TASK_TEXT_OUTPUT 8u /* a shell task's output (shell_output.stored_only once freed) */

typedef struct task task;
typedef struct parent parent;
typedef struct task_batch task_batch;
typedef struct lane lane;

/* What only an active task (pending, running or resumed) keeps: its places in
 * the active list and its lane's queue, the completion checks' and the
 * guards' state, its recent tool calls (progress reports), the host's open
 * permission question. Allocated by the registry when the task becomes
 * active, freed when it ends (task_end_run): a finished task does not pay for
 * it. Invariant: t->active != NULL exactly while task_status_active(t->status). */
typedef struct task_active {
    struct task *anext, *aprev; /* the registry's active list */
    struct task *qnext, *qprev; /* its lane's queue while pending (model/lanes.h) */
    uint64_t qseq;              /* its place in launch order while pending */
    /* completion checks (engine/worker.c, engine/poll.c) */
    uint64_t busy_tick;       /* the last poll tick that saw the session busy */
    int64_t next_check_mono;  /* a known-idle session's next check (monotonic ms) */
    unsigned idle_checks;     /* completion checks that found no finished answer */
    bool said;                /* its newest text part ended, no tool part after it: its turn may be over */
    bool map_idle;            /* the status map showed it idle while it was silent: a check is due */
    bool map_checked;         /* a check was made on the map's word, its finding not yet counted */
    int64_t gone_at_mono;     /* when its session's deletion was seen */
    char *permission_request; /* the host's open permission question in the task's session, or NULL */
    char *permission_what;    /* what it asks: "bash: rm -rf build" (set with permission_request) */
    /* progress reports */
    uint32_t recent_calls[RECENT_CALLS]; /* hashes of recently seen call ids */
    unsigned recent_calls_next;
    char recent_tools[RECENT_TOOLS][TOOL_NAME_SIZE]; /* ring, newest at recent_tools_next-1 */
    unsigned recent_tools_next;
    /* the guards (engine/guards.c) */
    char *guard_error;       /* a guard is stopping its command: the error its run ends with */
    int64_t run_start_mono;  /* when run guard_run started (monotonic ms) */
    int64_t progress_mono;   /* its last progress event: a part, usage, busy (monotonic ms) */
    unsigned guard_run;      /* the run the guards have seen start; 0: none yet */
    unsigned repeat_count;   /* how many times in a row it made call last_call */
    uint64_t last_call;      /* hash of its last tool call's tool and input */
    uint32_t repeat_seen[4]; /* call ids already counted by the repeat guard (hashes) */
    unsigned repeat_seen_next;
    event_answer answer;       /* its answer as the events tell it (model/answer.h) */
    unsigned followups_before; /* followups_sent when it became active: more since, and the events' answer may
                                * predate the newest follow-up (model/followup.h): the check reads */
} task_active;

/* An isolated task's git worktree (worktree/worktree.h); NULL for the
 * others. Kept by the store, so a restart neither leaks nor loses it. */
typedef struct task_worktree {
    char *path, *branch; /* the folder the task works in, and its branch (ocbg/<id>) */
    char *base;          /* the commit it started from */
    char *checkout;      /* the repository's top folder it was made from */
    char *report;        /* what the task did there as of run report_run's end (worktree_report); may be NULL */
    unsigned report_run;
    bool watched; /* the host follows the folder's events (directory_watch 1, not yet 0); not stored */
    /* The early report (engine/isolate.h: isolate_early), none of it stored: read while the run's answer
     * is being written, so that the run's end need not wait for git. It counts for the run's end only when
     * it began during the answer's own message (every tool call of the turn had ended: a step's tools end
     * before the next step's message) and no tool call changed state since (tool_gen the same). */
    char *early;                   /* the last one read; may be NULL */
    char *early_msg;               /* the message being written (begun, or its text) when it began */
    unsigned early_run, early_gen; /* the run and tool_gen it began at */
    char *text_msg;                /* the message of the last text part seen while the run goes on */
    unsigned asked_run, asked_gen; /* the last one asked for, when asked (not asked again for the same) */
    bool asked;
    unsigned tool_gen;      /* bumped at every update of a tool call of the task's session */
    unsigned early_pending; /* early reads asked for and not done */
    unsigned early_running; /* of them, begun (git running) */
} task_worktree;

/* Laid out for size (a registry may keep tens of thousands of finished
 * tasks): what only an active task needs is in task_active; statuses and kinds
 * are bytes, flags bits (the engine's lock guards them all: no two
 * threads write neighbouring bits at once). */
struct task {
    char id[TASK_ID_SIZE];
    task_batch *batch; /* the batch it was launched in (model/registry.h) */
    parent *parent;
    struct task *pnext, *pprev; /* the parent's list, newest first */
    task_active *active;        /* NULL unless active (see task_active) */
    /* description, session_id, result_message_id: one allocation, set
     * together (task_set_strings); each may be NULL. */
    const char *session_id;   /* the task's own (child) session; NULL for a shell task */
    char *parent_message;     /* the message that launched it, until it has a session; may be NULL */
    const char *parent_agent; /* the agent that launched it; may be NULL (base/intern.h: shared, not freed) */
    const char *description;
    char *prompt;
    const char *agent;             /* base/intern.h: shared, not freed */
    char *result;                  /* the last response text, once completed */
    char *error;                   /* why it ended in error */
    const char *result_message_id; /* the assistant message `result` came from */
    shell_state *shell;            /* shell tasks only */
    task_worktree *wt;             /* isolated agent tasks only */
    lane *lane;                    /* where it holds or waits for a run slot (model/lanes.h) */
    /* usage and guards (hooks/usage.h, engine/guards.c) */
    struct usage_tracker *usage; /* what its model calls used, all runs; NULL until the host reports any */
    int64_t timeout_ms;          /* its own runtime limit per run (the launch's timeout); 0: max_runtime_ms */
    int64_t created_ms, started_ms, completed_ms, last_update_ms, retrieved_ms; /* wall clock; 0 = never */
    int64_t notification_pushed_ms; /* when its notification's send began (host clock) */
    uint64_t seq;                   /* launch order in the store */
    unsigned run;                   /* 1 for the launch, +1 per resume */
    unsigned delivered_run;         /* the run whose result a blocking wait returned */
    unsigned result_waiters;        /* blocking calls that will return this run's result */
    unsigned resume_count;
    unsigned tool_calls;
    uint8_t depth; /* 1: launched by a session that is not a task's; else its launcher's + 1 */
    /* follow-ups into a running run (ops/send.c, model/followup.h) */
    unsigned followups_sent; /* messages background_send has begun to send, all runs: numbers them */
    unsigned followup_wait;  /* the newest one sent whose message the completion check has not seen; 0: none */
    /* durability (plugin/store/, engine/persist.c) */
    unsigned notification_run;          /* the run its notification is for */
    uint32_t dirty_slot;                /* its index in the registry's dirty_q, + 1; 0: not dirty */
    uint16_t notifications_unformatted; /* its notifications queued for the worker, text not yet formatted (engine.c) */
    uint8_t notification_state;         /* where its notification stands (store.h notification_state) */
    uint8_t type;                       /* task_type */
    uint8_t status;                     /* task_status */
    /* TASK_TEXT_* bits: texts the store holds as they are (a finished
     * task whose row was committed: engine/persist.h). Such a pointer is
     * the same text, or NULL once only the store has it (delivered), or a
     * copy read back for one call. Writing a text clears its bit. */
    uint8_t texts_stored;
    bool forked : 1;
    bool checking : 1;   /* a completion check is queued or running */
    bool recheck : 1;    /* an idle came during that check: it may have read too early */
    bool cancelling : 1; /* an abort is in flight: completion checks wait */
    bool inherited : 1;  /* a host's fork: its newest messages are the parent's until its first prompt is stored */
    bool session_gone : 1;
    bool recovering : 1;  /* restored from the store while running: its first check decides how the restart left it */
    bool retrying : 1;    /* its host retries a rate-limited call (counted in its lane) */
    bool awaiting : 1;    /* running, its session idle until its own tasks end: it holds no slot */
    bool wake_parked : 1; /* awaiting, its tasks ended: the notification that wakes it waits for a slot */
    bool woken : 1;       /* a waking notification went into its session; cleared when it is seen busy */
    bool notification_wake : 1; /* it wakes the parent */
    bool foreground : 1;        /* run by a foreground call: removed when it returns */
    bool compacted_after : 1;   /* completed, then its session was compacted: the turn after may add to its
                                 * result (engine/amend.h) */
    bool amend_queued : 1;      /* a check of that turn is queued or running */
    bool stopped_by_user : 1;   /* the person stopped it from the host's UI (ops/panel.c): cancelled, and
                                 * notified as an ending (its error says so: that is what the store keeps) */
};

/* The error a task the person stopped keeps (task.stopped_by_user). */
#define TASK_STOPPED_BY_USER "Stopped by the user."

const char *task_status_name(task_status s);
bool task_status_active(task_status s);   /* running or resumed (or pending) */
bool task_status_terminal(task_status s); /* completed, error, cancelled */

/* The newest tool names of active task t, newest first: at most max of them
 * into names (pointers into t, valid while it is unchanged). Returns how
 * many (0 for a task that is not active). */
unsigned task_recent_tools(const task *t, const char **names, unsigned max);

/* Record a tool part seen for t (progress); counts each call id once. A
 * part of a run that ended (a late event) is not counted: the run's calls
 * seen are forgotten. */
void task_note_tool(task *t, const char *call_id, const char *tool);

/* t became active: its task_active, zeroed (a resume starts afresh). */
void task_begin_active(task *t);

/* The host's open permission question in t's session and what it asks, or
 * NULL (none, or t is not active). */
const char *task_permission_request(const task *t);
const char *task_permission_what(const task *t);

/* The error a guard is stopping t's run with, or NULL. */
const char *task_guard_error(const task *t);

/* t's run ended: what only an active task keeps is freed. */
void task_end_run(task *t);

/* The task's state machine's invariants (DESIGN.md section 5), asserted:
 * active state exactly while active; a recheck only with a check under way;
 * awaiting only while running or resumed, and parked only while awaiting;
 * retrying only while active; an amend only of an agent; a command has no
 * session, no fork, no amend.
 * Called on every status change (registry_set_status) and awaiting change.
 * Pure; any thread. [lock held] (not asserted: t does not know its lock) */
void task_check(const task *t);

/* Set t's short strings, copied into one allocation (a finished task
 * keeps them: one chunk instead of three). Each may be NULL, and may point
 * into t's current ones: they are copied before those are freed. Pointers
 * to t's old strings are invalid afterwards (a map keyed by session_id
 * reads the key through the task: remove it before, put it after). */
void task_set_strings(task *t, const char *description, const char *session_id, const char *result_message_id);
void task_set_description(task *t, const char *description);
void task_set_session(task *t, const char *session_id);
void task_set_result_message(task *t, const char *message_id);

/* How long the task has run (until now, or until it finished). */
int64_t task_runtime(const task *t, int64_t now);

/* A new task_worktree for t (copies of the strings; NULL ones stay NULL),
 * replacing any it had. */
void task_set_worktree(task *t, const char *path, const char *branch, const char *base, const char *checkout);

/* Free a task and everything it owns (not its parent or batch). */
void task_free(task *t);

#endif

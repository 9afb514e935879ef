/*
 * task.h — one background task: what it was asked, where it runs, how its
 * runs ended, what it has done so far; and the rules of its statuses.
 * Pure data: no threads, no host calls. The engine's lock guards every task.
 */
#ifndef OCBG_TASK_H
#define OCBG_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include "model/shell_state.h"

typedef enum task_status {
    TASK_PENDING,   /* queued by a concurrency cap: no session or process yet */
    TASK_RUNNING,
    TASK_COMPLETED,
    TASK_ERROR,
    TASK_CANCELLED,
    TASK_RESUMED,   /* a completed task working on a follow-up prompt */
} task_status;
#define TASK_STATUS_COUNT (TASK_RESUMED + 1)

typedef enum task_type { TASK_AGENT, TASK_SHELL } task_type;

#define TASK_ID_SIZE 16 /* "bg_" + 8 hex + NUL, with room */
#define RECENT_TOOLS 5
#define RECENT_CALLS 8
#define TOOL_NAME_SIZE 24

/* A task's long texts, as bits of task.texts_stored and store_row.keep. */
#define TASK_TEXT_PROMPT 1u
#define TASK_TEXT_RESULT 2u
#define TASK_TEXT_ERROR 4u
#define TASK_TEXTS_ALL (TASK_TEXT_PROMPT | TASK_TEXT_RESULT | TASK_TEXT_ERROR)

/* What a running task's tool calls were lately (progress reports): only
 * while a run goes on, from its first tool call; freed when it ends. */
typedef struct task_progress {
    uint32_t recent_calls[RECENT_CALLS]; /* hashes of recently seen call ids */
    unsigned recent_calls_next;
    char recent_tools[RECENT_TOOLS][TOOL_NAME_SIZE]; /* ring, newest at recent_tools_next-1 */
    unsigned recent_tools_next;
} task_progress;

typedef struct parent parent;
typedef struct task_batch task_batch;
typedef struct lane lane;

typedef struct task {
    char id[TASK_ID_SIZE];
    task_batch *batch;           /* the batch it was launched in (model/registry.h) */
    task_type type;
    task_status status;
    char *session_id;       /* the task's own (child) session; NULL for a shell task */
    char *parent_message;   /* the message that launched it; may be NULL */
    char *parent_agent;     /* the agent that launched it; may be NULL */
    char *description;
    char *prompt;
    char *agent;
    char *result;           /* the last response text, once completed */
    char *error;            /* why it ended in error */
    char *result_message_id; /* the assistant message `result` came from */
    int64_t created_ms, started_ms, completed_ms, last_update_ms, retrieved_ms; /* wall clock; 0 = never */
    unsigned run;           /* 1 for the launch, +1 per resume */
    unsigned delivered_run; /* the run whose result a blocking wait returned */
    unsigned result_waiters; /* blocking calls that will return this run's result */
    unsigned resume_count;
    bool forked;
    bool finalizing;        /* a completion check is queued or running */
    bool recheck;           /* an idle came during that check: it may have read too early */
    bool cancelling;        /* an abort is in flight: completion checks wait */
    bool seen_busy;
    bool inherited;         /* a host's fork: its newest messages are the parent's until its first prompt is stored */
    bool session_gone;
    bool recovering;        /* restored from the store while running: its first check decides how the restart left it */
    unsigned idle_checks;   /* completion checks that found no finished answer */
    unsigned tool_calls;
    uint64_t busy_tick;     /* the last poll tick that saw the session busy */
    int64_t next_check_mono;
    int64_t gone_at_mono;   /* when its session's deletion was seen */
    task_progress *progress; /* this run's recent tool calls; NULL when it has made none, or ended */
    char *permission_request; /* the host's open permission question in the task's session, or NULL */
    char *permission_what;    /* what it asks: "bash: rm -rf build" (set with permission_request) */
    shell_state *shell;     /* shell tasks only */
    lane *lane;             /* where it holds or waits for a run slot (model/lanes.h) */
    struct task *qnext, *qprev; /* its lane's queue while pending */
    uint64_t qseq;          /* its place in launch order while pending */
    bool retrying;          /* its host retries a rate-limited call (counted in its lane) */
    bool awaiting;          /* running, its session idle until its own tasks end: it holds no slot */
    bool wake_parked;       /* awaiting, its tasks ended: the notice that wakes it waits for a slot */
    bool woken;             /* a waking notice went into its session; cleared when it is seen busy */
    unsigned depth;         /* 1: launched by a session that is not a task's; else its launcher's + 1 */
    /* follow-ups into a running run (ops/send.c, model/followup.h) */
    unsigned followups_sent; /* messages background_send has begun to send, all runs: numbers them */
    unsigned followup_wait; /* the newest one sent whose message the completion check has not seen; 0: none */
    /* usage and guards (model/usage.h, engine/guards.c) */
    struct usage_tracker *usage; /* what its model calls used, all runs; NULL until the host reports any */
    char *guard_error;      /* a guard is stopping its command: the error its run ends with */
    int64_t timeout_ms;     /* its own runtime limit per run (the launch's timeout); 0: max_runtime_ms */
    int64_t run_start_mono; /* when run guard_run started (monotonic ms) */
    int64_t progress_mono;  /* its last progress event: a part, usage, busy (monotonic ms) */
    unsigned guard_run;     /* the run the guards have seen start; 0: none yet */
    unsigned repeat_count;  /* how many times in a row it made call last_call */
    uint64_t last_call;     /* hash of its last tool call's tool and input */
    uint32_t repeat_seen[4]; /* call ids already counted by the repeat guard (hashes) */
    unsigned repeat_seen_next;
    /* durability (plugin/store/, engine/persist.c) */
    uint64_t seq;           /* launch order in the store */
    unsigned notice_state;  /* where its notification stands (store.h notice_state) */
    unsigned notice_run;    /* the run it is for */
    unsigned notices_unformatted; /* its notices queued for the worker, text not yet formatted (engine.c) */
    int64_t notice_pushed_ms; /* when its send began (host clock) */
    /* TASK_TEXT_* bits: texts the store holds as they are (a finished
     * task whose row was committed: engine/persist.h). Such a pointer is
     * the same text, or NULL once only the store has it (delivered), or a
     * copy read back for one call. Writing a text clears its bit. */
    unsigned char texts_stored;
    bool dirty;             /* changed since the store last copied it */
    bool notice_wake;       /* it wakes the parent */
    bool foreground;        /* run by a foreground call: removed when it returns */
    struct task *dnext, *dprev; /* the registry's dirty list */
    parent *parent;
    struct task *pnext, *pprev; /* the parent's list, newest first */
    struct task *anext, *aprev; /* the active list */
} task;

const char *task_status_name(task_status s);
bool task_status_active(task_status s);   /* running or resumed (or pending) */
bool task_status_terminal(task_status s); /* completed, error, cancelled */

/* Record a tool part seen for t (progress); counts each call id once. A
 * part of a run that ended (a late event) is not counted: the run's calls
 * seen are forgotten. */
void task_note_tool(task *t, const char *call_id, const char *tool);

/* t's run ended: what only a running task keeps is freed. */
void task_end_run(task *t);

/* How long the task has run (until now, or until it finished). */
int64_t task_runtime(const task *t, int64_t now);

/* Free a task and everything it owns (not its parent or batch). */
void task_free(task *t);

#endif

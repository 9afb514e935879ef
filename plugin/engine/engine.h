/*
 * engine.h — one plugin instance: the registry, the lock, the worker thread,
 * blocking waits, notifications.
 *
 * Locking: one mutex (`mu`) guards everything in struct engine, taken only with
 * engine_lock (base/lock.h). Host functions are never called with it held
 * (hostapi/ asserts it): a function that needs the host copies what it needs,
 * unlocks, calls, relocks and re-checks (the task may have changed or gone
 * meanwhile; tasks are always looked up again by id). DESIGN.md sections 3-5
 * draw the threads, the lock and a task's life.
 *
 * Threads (DESIGN.md has them all, the store's and the shell runner's too):
 *   - host worker threads run tool calls (face/, ops/); they may block in waits;
 *   - the host's event thread runs hooks/ (never blocks: records and queues);
 *   - one plugin worker thread runs queued jobs (completion checks, pushes of
 *     notifications, aborts) and the fallback poll. It sleeps on `work_cv` with
 *     no timeout while nothing is queued, nothing is to be retried and no task
 *     is active: an idle plugin has no wakeups and makes no host calls.
 */
#ifndef OCBG_ENGINE_H
#define OCBG_ENGINE_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ocp.h"
#include "base/lock.h"
#include "base/options.h"
#include "base/wait_result.h"
#include "hooks/events.h"
#include "hostapi/hostapi.h"
#include "model/registry.h"
#include "engine/jobs.h"
#include "engine/defer_state.h"
#include "engine/gitwork_state.h"
#include "engine/persist_state.h"
#include "engine/toast_state.h"
#include "engine/view_state.h"
#include "run/runner.h"

#define ENGINE_RUNNERS 2 /* TASK_AGENT, TASK_SHELL */

/* Opens one runner (run/runner.h) with what the engine lends it. */
typedef runner *(*runner_open_fn)(const runner_env *env, int *rc);

typedef struct waiter {
    pthread_cond_t cv;
    ocp_call_ctx *ctx; /* may be NULL */
    struct waiter *next, *prev;
} waiter;

typedef struct engine {
    hostapi api; /* the host's table, copied, and how to call it */
    options opt;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;  /* the worker's wake-up */
    pthread_cond_t drain_cv; /* shutdown waits here for calls to leave */
    pthread_t worker;
    bool worker_started;
    bool stopping;
    unsigned calls_in_flight;
    registry reg;
    job_queue q; /* the worker's jobs and retries (engine/jobs.h) */
    waiter *waiters;
    int64_t next_poll;      /* monotonic ms of the next poll tick; 0 = none */
    int64_t last_poll_mono; /* when the status map was last read (engine/poll.c) */
    int64_t poll_gap_ms;    /* how long the map may go unread while events show the tasks alive */
    unsigned check_budget;  /* the most completion checks one poll tick makes (engine/poll.c) */
    unsigned map_checks;    /* checks made on the status map's word, their findings not yet counted */
    bool sched_due;         /* a slot freed with tasks pending: the worker runs the scheduler */
    ocp_plugin table;
    runner *runners[ENGINE_RUNNERS]; /* by task_type: how a run is carried out */
    /* Counters for tests and benchmarks. */
    uint64_t worker_wakeups;
    uint64_t polls;
    map spend;            /* parent session id → what its tasks cost (engine/guards.c); kept through clears */
    notification *parked; /* waking notifications for awaiting tasks, until a slot frees (engine/sched.c); FIFO */
    persist ps;           /* the durable store and its thread (engine/persist.h) */
    toast_state toast;    /* toasts to the person, rate-limited (engine/toast.h) */
    defer_state defer;    /* silent notifications held while their parent is busy (engine/defer.h) */
    view_state view;      /* each session's tasks for the host's UI, and its thread (engine/view.h) */
    gitwork_state git;    /* git for isolated tasks, on a thread of its own (engine/gitwork.h) */
    struct collide_state *collide; /* files edited per launching session (engine/collide.h); NULL: none yet */
    struct monitor_list *monitors; /* the watched commands (engine/monitor.h); NULL: none yet */
} engine;

/* The engine lock (base/lock.h): the only way to take, release or wait on
 * eng->mu. A function whose contract says [lock held] asserts it with
 * ENGINE_ASSERT_LOCKED (build-aux/lock-check holds it to that). */

static inline void engine_lock(engine *eng)
{
    lock_acquire(&eng->mu);
}
static inline void engine_unlock(engine *eng)
{
    lock_release(&eng->mu);
}
static inline void engine_cond_wait(engine *eng, pthread_cond_t *cv)
{
    lock_wait(cv, &eng->mu);
}
static inline int engine_cond_timedwait(engine *eng, pthread_cond_t *cv, const struct timespec *deadline)
{
    return lock_timedwait(cv, &eng->mu, deadline);
}
#define ENGINE_ASSERT_LOCKED(eng) assert(lock_held(&(eng)->mu) && "[lock held] without the engine lock")

/* Apply a note to the task whose session it names (or, for a deletion, to
 * the tasks that session launched). [event] Takes the lock briefly; never
 * calls the host (work that needs it is queued for the worker). The note's
 * strings are borrowed for the call. */
void engine_note(engine *eng, const session_note *n);

/* Start the engine: its lock and registry, its two runners (opened with the
 * env the engine lends them: the runners never call the engine by name) and
 * its worker thread. eng->api and eng->opt are set. Returns 0 or an errno; on
 * failure nothing is left running. [entry] */
int engine_start(engine *eng, runner_open_fn open_agent, runner_open_fn open_shell);
/* Release every waiter, wait for tool calls in flight to leave, join the
 * worker, free every task and queued item. [shutdown] */
void engine_stop(engine *eng);

/* Wall-clock ms from the host's clock when it has one. [any] */
int64_t engine_now(engine *eng);

/* Start the run of registered task `task_id` with its type's runner. [worker,
 * lock NOT held] 0, or a negative errno and *err (malloc'd, a sentence); the
 * task is then left for the caller to end or remove. */
int engine_run_start(engine *eng, task_type type, const char *task_id, char **err);

/* ---- everything below is [lock held] (ENGINE_ASSERT_LOCKED), engine_cancel_wait aside ---- */

struct worktree_item;
/* Queue the removal of the worktrees of `list` (tasks that are gone) for
 * the worker, after the jobs already queued (their aborts): it runs
 * isolate_release (engine/isolate.h). Takes the list. [lock held] */
void engine_release_worktrees(engine *eng, struct worktree_item *list);
/* A task became active (launched or resumed): wake the worker, which may be
 * sleeping with no deadline, so the fallback poll covers it even if no event
 * for it ever arrives. [lock held] */
void engine_task_activated(engine *eng);

/* Wake every blocked waiter so it re-checks its condition. [lock held] */
void engine_wake_waiters(engine *eng);

/* End a task's current run: status s (completed, error or cancelled), the text
 * (result or error), the assistant message it came from. Queues the
 * notification (not for cancelled) and wakes waiters. [lock held] */
void engine_finish(engine *eng, task *t, task_status s, const char *text, const char *message_id);

/* Queue t's notification (its run ended, not cancelled): quiet while its
 * siblings run, waking for a failure or the last one. verify: a restart
 * may have cut its send short (look for it in the parent session first). [lock held] */
void engine_notify(engine *eng, task *t, bool verify);

/* Give n its text, formatted from t (the task it is about) as t is now;
 * no-op when it has one. The worker calls it when it takes n to push it,
 * before it unlocks. [lock held] */
void engine_notification_text(engine *eng, notification *n, const task *t);

/* The registry's on_revive (model/registry.h): t, ended, is about to run
 * again; its notifications still queued without a text take it now, from the
 * state its last run left. O(queued jobs), only while t has such notifications. [lock held] */
void engine_revive_notifications(void *engine_arg, task *t);

/* Ask the worker to check whether t's run has ended (after an idle event or a
 * poll that found its session idle). No-op while one is queued. [lock held] */
void engine_request_check(engine *eng, task *t);

/* The task's session asks the user a permission question (request_id, what:
 * "bash: rm -rf build"): shown in its status, and the parent is woken once
 * per question (not for a foreground call, whose caller is mid-call). [lock held] */
void engine_permission_asked(engine *eng, task *t, const char *request_id, const char *what);

/* The question was answered (or the run ended): the task shows running. [lock held] */
void engine_permission_replied(engine *eng, task *t, const char *request_id);

/* t's own session was deleted. A host may leave a deleted session's turn
 * running (OpenCode does, and retries its model calls): the session is
 * aborted at once. Hosts delete children before their parent, so the task's
 * ending waits a moment (DELETE_GRACE_MS, at the next poll tick): if the
 * parent's deletion follows, the task goes with it, silently; if not, it ends
 * in error and the parent is told. [lock held] */
void engine_session_deleted(engine *eng, task *t);

/* Ask the worker to abort a session. [lock held] */
void engine_request_abort(engine *eng, const char *session_id);

/* Queue a notification (owned from now) for the worker to push. [lock held] */
void engine_push_notification(engine *eng, notification *n);

/* Stop an active task at once, for removal: its runner's kill (an agent's
 * session aborted by the worker; a command's process group SIGKILLed). [lock held] */
void engine_stop_task_now(engine *eng, task *t);

/* Ask an active task's run to end (an agent's session aborted by the worker;
 * a command sent SIGTERM, SIGKILL after the grace period); the end comes
 * through engine_finish. [lock held] */
void engine_stop_task(engine *eng, task *t);

/* Remove a parent session's tasks (the parent was deleted), and the tasks
 * their sessions launched, to the bottom: running ones are aborted, waiters
 * on them are told. p is freed. [lock held] */
void engine_drop_parent(engine *eng, parent *p);
/* Remove what task t's session launched (t is being cleared), as above. [lock held] */
void engine_drop_descendants(engine *eng, const task *t);
/* A notification for session_id was pushed, dropped or kept for the parent's next
 * answer (it is no longer on its way). [lock held] */
void engine_notification_settled(engine *eng, const char *session_id);
/* Does t's session wait for tasks it launched (some still active, or their
 * notifications not yet pushed)? Then an answer of t's is not its result yet. [lock held] */
bool engine_launcher_waits(engine *eng, const task *t);

/* Block until done(o, arg) is true, the monotonic deadline passes, ctx is
 * cancelled or the plugin shuts down; done runs under the lock too. [lock held]
 * Released while waiting. */
wait_result engine_wait(engine *eng, ocp_call_ctx *ctx, int64_t deadline, bool (*done)(engine *eng, void *arg),
                        void *arg);

/* Wake the waiters of ctx (tool_cancel). Takes the lock itself. */
void engine_cancel_wait(engine *eng, ocp_call_ctx *ctx);

/* Take the notifications held for a session (undelivered by push), as text
 * to append to an answer, or NULL when there are none. [lock held] */
char *engine_take_held(engine *eng, const char *session_id);

/* A guard ends active task t's run in error with `text` (engine/guards.c
 * says which bound and the spend). An agent ends now and its session is
 * aborted by the worker; a command is stopped (SIGTERM, then SIGKILL) and its
 * exit ends it with that error. The parent is notified as for any failure.
 * [lock held] */
void engine_fail_task(engine *eng, task *t, const char *text);

#endif

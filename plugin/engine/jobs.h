/*
 * jobs.h — the engine's work queue: what the worker thread is to do, in
 * order (completion checks after the rest: see job_queue), and the
 * notification pushes to retry later, by time. A plain queue guarded by the
 * engine lock (the queue keeps a pointer to it, to assert it); nothing
 * blocks.
 */
#ifndef OCBG_JOBS_H
#define OCBG_JOBS_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/task.h"

typedef enum job_kind {
    JOB_CHECK,   /* read the task's messages and decide how its run ended */
    JOB_NOTIFY,  /* push a notification into the parent session */
    JOB_ABORT,   /* abort a session */
    JOB_START,   /* start the run of a task the scheduler admitted from the queue */
    JOB_CASCADE, /* a task's run ended: cancel what its session launched that still runs */
    JOB_AMEND,   /* a completed task's session was compacted: read what the turn after added (engine/amend.h) */
    JOB_RELEASE, /* remove the worktrees of tasks that are gone (engine/isolate.h) */
    JOB_ORPHANS, /* after a restore: drop isolated tasks whose launching session is gone (engine/isolate.h) */
    JOB_EARLY,   /* read an isolated task's report while its run goes on (engine/isolate.h: isolate_early) */
} job_kind;

typedef struct notification {
    char task_id[TASK_ID_SIZE];
    unsigned run;
    char *parent_session;
    char *agent;                      /* the parent's agent, to continue with; may be NULL */
    char *text;                       /* NULL until the worker pushes it: formatted then (engine_notification_text) */
    unsigned batch_done, batch_total; /* the batch's progress when the run ended */
    bool wake;                        /* false: noReply (joins the context silently) */
    bool released;                    /* it was held while its parent was busy (engine/defer.h): pushed as it is now */
    bool verify;                      /* a restart may have cut its send short: look in the parent session first */
    bool extra;               /* not the run's notification: what a run added after it (engine/amend.h); not stored */
    int64_t since_ms;         /* verify: a notification of the task created since then is this one (host clock) */
    char *permission_request; /* a "waiting for permission" notification: sent only while
                               * the task still waits on this question */
    int attempts;
    int64_t next_try; /* monotonic ms */
    struct notification *next;
} notification;

typedef struct job {
    job_kind kind;
    char task_id[TASK_ID_SIZE];
    unsigned run;
    char *session_id;              /* JOB_ABORT, JOB_CASCADE */
    notification *notification;    /* JOB_NOTIFY */
    struct worktree_item *release; /* JOB_RELEASE */
    struct job *next;
} job;

/* Two lines, each in its order: completion checks (JOB_CHECK), and the
 * rest, which go first. A check queues its task's notification, so the notification
 * is pushed before the next check reads another task's answer: a burst of
 * completions holds one task's result in memory at a time, not all of them
 * (a delivered task's texts leave memory at the next store commit). */
typedef struct job_queue {
    job *jobs, **jobs_tail;     /* notifications, aborts, starts, cascades */
    job *checks, **checks_tail; /* completion checks */
    notification *retries;      /* failed pushes waiting for their next try, by time */
    pthread_cond_t *wake;       /* signalled for every new job: the worker's wake-up */
    const pthread_mutex_t *mu;  /* the lock that guards the queue */
} job_queue;

/* [engine_start, lock not held] */
void jobs_init(job_queue *q, pthread_cond_t *wake, const pthread_mutex_t *mu);
/* Queue j (owned by the queue from now) at the end of its line (a check's,
 * or the rest's) and wake the worker. [lock held] */
void jobs_push(job_queue *q, job *j);
/* A new job of `kind` about the current run of task t (malloc'd; not
 * queued). [lock held] (not asserted: t does not know its lock) */
job *job_for_task(job_kind kind, const task *t);
/* Queue the chain first..last (linked by next; no checks) before every job
 * already queued, in its order. [lock held] */
void jobs_push_front(job_queue *q, job *first, job *last);
/* The next job (the caller's to free with job_free), or NULL: the rest's
 * line first, then the checks'. [lock held] */
job *jobs_pop(job_queue *q);
/* Take every queued job of `kind` (not JOB_CHECK) off the queue: a chain
 * in queue order linked by next (the caller frees each with job_free), or
 * NULL. [lock held] */
job *jobs_take(job_queue *q, job_kind kind);
void job_free(job *j);
void notification_free(notification *n);

/* Keep n (owned from now) for another try at n->next_try. [lock held] */
void jobs_retry_later(job_queue *q, notification *n);
/* Queue the retries that are due at `now` (monotonic ms). [lock held] */
void jobs_take_due_retries(job_queue *q, int64_t now);

/* Shutdown: free every queued job and retry. [shutdown, lock not held] */
void jobs_free_all(job_queue *q);

#endif

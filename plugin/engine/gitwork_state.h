/*
 * gitwork_state.h — what an engine keeps for its worktree thread (the type
 * only, held in struct engine; engine/gitwork.h has the functions).
 */
#ifndef OCBG_GITWORK_STATE_H
#define OCBG_GITWORK_STATE_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>

#include "engine/jobs.h"

#define GITWORK_THREADS 4 /* at most; each a slow git can hold */

typedef struct gitwork_state {
    job_queue q;             /* its jobs (the rest's line only) */
    pthread_cond_t cv;       /* the threads' wake-up, with the engine lock */
    pthread_cond_t early_cv; /* an early report done (engine/isolate.h), with the engine lock */
    pthread_t threads[GITWORK_THREADS];
    unsigned started;          /* threads running */
    unsigned busy;             /* of them, doing a job */
    unsigned queued;           /* jobs in q */
    unsigned long early_taken; /* run reports taken from an early one (isolate.h), for tests */
} gitwork_state;

#endif

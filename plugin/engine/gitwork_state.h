/*
 * gitwork_state.h — what an engine keeps for its worktree thread (the type
 * only, held in struct engine; engine/gitwork.h has the functions).
 */
#ifndef OCBG_GITWORK_STATE_H
#define OCBG_GITWORK_STATE_H

#include <pthread.h>
#include <stdbool.h>

#include "engine/jobs.h"

typedef struct gitwork_state {
    job_queue q;       /* its jobs (the rest's line only) */
    pthread_cond_t cv; /* its wake-up, with the engine lock */
    pthread_t thread;
    bool started;
} gitwork_state;

#endif

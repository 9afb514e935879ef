/*
 * jobs.h — the engine's work queue (private to engine/): what the worker
 * thread is to do, in order, and the pushes to retry later. Every function
 * runs with the engine lock held and never blocks.
 */
#ifndef OCBG_JOBS_H
#define OCBG_JOBS_H

#include "engine/engine.h"

/* Queue j (owned by the queue from now) and wake the worker. */
void jobs_push(ocbg *o, job *j);
/* The next job (the caller's to free with job_free), or NULL. */
job *jobs_pop(ocbg *o);
void job_free(job *j);
void notice_free(notice *n);

/* Keep n (owned from now) for another try at n->next_try. */
void jobs_retry_later(ocbg *o, notice *n);
/* Queue the retries that are due at `now` (monotonic ms). */
void jobs_take_due_retries(ocbg *o, int64_t now);

/* Shutdown: free every queued job and retry. */
void jobs_free_all(ocbg *o);

#endif

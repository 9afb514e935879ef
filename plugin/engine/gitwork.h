/*
 * gitwork.h — the worktree thread: git for isolated tasks (engine/isolate.h),
 * off the worker, so that a slow git (a huge repository, a network file
 * system, a filter) delays only its own task: never another task's
 * notification, a stop or a guard.
 *
 * The worker hands it three kinds of job (engine/jobs.h), each in the order
 * the worker reached it:
 *  - JOB_NOTIFY of an isolated task whose run's report is not read yet: the
 *    thread reads it (isolate_report) and gives the job back to the worker,
 *    which pushes the notification with the report in it;
 *  - JOB_RELEASE: remove worktrees (isolate_release), after the aborts the
 *    worker ran before it;
 *  - JOB_ORPHANS: the start-up check (isolate_drop_orphans);
 *  - JOB_EARLY: an isolated task's report read while its run goes on
 *    (isolate_early), so that its end need not wait for git.
 * A thread starts when a job comes and every thread is busy, up to
 * GITWORK_THREADS: a git that hangs (until its deadline, GIT_DEADLINE_MS)
 * holds one thread, and the others go on with other tasks' jobs. A plugin
 * without isolated tasks starts none; idle threads sleep without a timeout.
 */
#ifndef OCBG_GITWORK_H
#define OCBG_GITWORK_H

#include "base/face_guard.h"
#include "engine/gitwork_state.h"

struct engine;

/* [engine_start, before any job] */
void gitwork_init(struct engine *eng);

/* Hand j (owned from now) to a thread, starting one if every thread is
 * busy. When none can start, the job is run here, the lock released meanwhile (as the
 * worker did before the thread existed). [worker] [lock held] */
void gitwork_push(struct engine *eng, job *j);

/* Join the threads (eng->stopping is set): each ends after the job it is doing.
 * Jobs it had not reached stay queued: engine_stop releases the worktrees
 * of those; the rest go with gitwork_free. [engine_stop, lock not held] */
void gitwork_stop(struct engine *eng);

/* Free what is still queued and the state. [engine_stop, last] */
void gitwork_free(struct engine *eng);

#endif

/* gitwork.c — see gitwork.h. */
#include "engine/gitwork.h"

#include "base/util.h"
#include "engine/engine.h"
#include "engine/isolate.h"

/* One job, the lock not held. A notification's job goes back to the
 * worker (unless the engine stops: it is freed, as queued jobs are). */
static void run_git_job(engine *o, job *j)
{
    switch (j->kind) {
    case JOB_NOTIFY:
        isolate_report(o, j->notice->task_id);
        engine_lock(o);
        if (o->stopping)
            job_free(j);
        else
            jobs_push(&o->q, j);
        engine_unlock(o);
        return;
    case JOB_RELEASE:
        isolate_release(o, j->release, NULL);
        j->release = NULL;
        break;
    case JOB_ORPHANS:
        isolate_drop_orphans(o);
        break;
    default:
        break;
    }
    job_free(j);
}

static void *gitwork_main(void *arg)
{
    engine *o = arg;
    engine_lock(o);
    while (!o->stopping) {
        job *j = jobs_pop(&o->git.q);
        if (!j) {
            engine_cond_wait(o, &o->git.cv);
            continue;
        }
        o->git.queued--;
        o->git.busy++;
        engine_unlock(o);
        run_git_job(o, j);
        engine_lock(o);
        o->git.busy--;
    }
    engine_unlock(o);
    return NULL;
}

void gitwork_init(engine *o)
{
    cond_init_monotonic(&o->git.cv);
    jobs_init(&o->git.q, &o->git.cv, &o->mu);
}

void gitwork_push(engine *o, job *j)
{
    ENGINE_ASSERT_LOCKED(o);
    bool failed = false;
    /* A thread more when the idle ones are all spoken for. */
    if (o->git.queued >= o->git.started - o->git.busy && o->git.started < GITWORK_THREADS && !o->stopping) {
        failed = pthread_create(&o->git.threads[o->git.started], NULL, gitwork_main, o) != 0;
        o->git.started += !failed;
    }
    if (o->git.started) {
        o->git.queued++;
        jobs_push(&o->git.q, j);
        return;
    }
    engine_unlock(o);
    if (failed)
        hc_log(&o->api, OCP_LOG_WARN, "ocbg: could not start the worktree thread: git runs on the worker");
    run_git_job(o, j);
    engine_lock(o);
}

void gitwork_stop(engine *o)
{
    engine_lock(o);
    pthread_cond_broadcast(&o->git.cv);
    unsigned n = o->git.started;
    engine_unlock(o);
    for (unsigned i = 0; i < n; i++)
        pthread_join(o->git.threads[i], NULL);
    o->git.started = 0;
}

void gitwork_free(engine *o)
{
    jobs_free_all(&o->git.q);
    pthread_cond_destroy(&o->git.cv);
}

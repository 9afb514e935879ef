/* gitwork.c — see gitwork.h. */
#include "engine/gitwork.h"

#include "base/util.h"
#include "engine/engine.h"
#include "engine/isolate.h"

/* One job, the lock not held. A notification's job goes back to the
 * worker (unless the engine stops: it is freed, as queued jobs are). */
static void run_git_job(engine *eng, job *j)
{
    switch (j->kind) {
    case JOB_NOTIFY:
        isolate_report(eng, j->notification->task_id);
        engine_lock(eng);
        if (eng->stopping)
            job_free(j);
        else
            jobs_push(&eng->q, j);
        engine_unlock(eng);
        return;
    case JOB_RELEASE:
        isolate_release(eng, j->release, NULL);
        j->release = NULL;
        break;
    case JOB_ORPHANS:
        isolate_drop_orphans(eng);
        break;
    case JOB_EARLY:
        isolate_early(eng, j->task_id, j->run);
        break;
    default:
        break;
    }
    job_free(j);
}

static void *gitwork_main(void *arg)
{
    engine *eng = arg;
    engine_lock(eng);
    while (!eng->stopping) {
        job *j = jobs_pop(&eng->git.q);
        if (!j) {
            engine_cond_wait(eng, &eng->git.cv);
            continue;
        }
        eng->git.queued--;
        eng->git.busy++;
        engine_unlock(eng);
        run_git_job(eng, j);
        engine_lock(eng);
        eng->git.busy--;
    }
    engine_unlock(eng);
    return NULL;
}

void gitwork_init(engine *eng)
{
    cond_init_monotonic(&eng->git.cv);
    cond_init_monotonic(&eng->git.early_cv);
    jobs_init(&eng->git.q, &eng->git.cv, &eng->mu);
}

void gitwork_push(engine *eng, job *j)
{
    ENGINE_ASSERT_LOCKED(eng);
    bool failed = false;
    /* A thread more when the idle ones are all spoken for. */
    if (eng->git.queued >= eng->git.started - eng->git.busy && eng->git.started < GITWORK_THREADS && !eng->stopping) {
        failed = pthread_create(&eng->git.threads[eng->git.started], NULL, gitwork_main, eng) != 0;
        eng->git.started += !failed;
    }
    if (eng->git.started) {
        eng->git.queued++;
        jobs_push(&eng->git.q, j);
        return;
    }
    engine_unlock(eng);
    if (failed)
        hostapi_log(&eng->api, OCP_LOG_WARN, "ocbg: could not start the worktree thread: git runs on the worker");
    run_git_job(eng, j);
    engine_lock(eng);
}

void gitwork_stop(engine *eng)
{
    engine_lock(eng);
    pthread_cond_broadcast(&eng->git.cv);
    pthread_cond_broadcast(&eng->git.early_cv);
    unsigned n = eng->git.started;
    engine_unlock(eng);
    for (unsigned i = 0; i < n; i++)
        pthread_join(eng->git.threads[i], NULL);
    eng->git.started = 0;
}

void gitwork_free(engine *eng)
{
    jobs_free_all(&eng->git.q);
    pthread_cond_destroy(&eng->git.cv);
    pthread_cond_destroy(&eng->git.early_cv);
}

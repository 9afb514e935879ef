/* lifecycle.c — see engine.h: starting and stopping an engine, its runners
 * and its worker. */
#include <stdlib.h>

#include "base/util.h"
#include "engine/collide.h"
#include "engine/defer.h"
#include "engine/engine.h"
#include "engine/monitor.h"
#include "engine/persist.h"
#include "engine/sched.h"
#include "engine/toast.h"
#include "engine/view.h"
#include "engine/guards.h"
#include "engine/gitwork.h"
#include "engine/isolate.h"
#include "engine/worker.h"

static void runner_finished(void *engine_arg, task *t, task_status s, const char *text, const char *message_id)
{
    engine_finish(engine_arg, t, s, text, message_id);
}

static void runner_abort(void *engine_arg, const char *session_id)
{
    engine_request_abort(engine_arg, session_id);
}

static void close_runners(engine *eng)
{
    for (int i = 0; i < ENGINE_RUNNERS; i++) {
        if (eng->runners[i])
            eng->runners[i]->close(eng->runners[i]);
        eng->runners[i] = NULL;
    }
}

static void free_state(engine *eng)
{
    jobs_free_all(&eng->q);
    gitwork_free(eng);
    defer_free(eng);
    while (eng->parked) {
        notification *n = eng->parked;
        eng->parked = n->next;
        notification_free(n);
    }
    registry_free(&eng->reg);
    guards_free(eng);
    toast_free(eng);
    collide_free(eng);
    monitor_free(eng);
    pthread_cond_destroy(&eng->work_cv);
    pthread_cond_destroy(&eng->drain_cv);
    pthread_mutex_destroy(&eng->mu);
}

int engine_start(engine *eng, runner_open_fn open_agent, runner_open_fn open_shell)
{
    pthread_mutex_init(&eng->mu, NULL);
    cond_init_monotonic(&eng->work_cv);
    cond_init_monotonic(&eng->drain_cv);
    registry_init(&eng->reg);
    eng->reg.lanes.on_freed = sched_freed;
    eng->reg.lanes.on_freed_arg = eng;
    eng->reg.on_revive = engine_revive_notifications;
    eng->reg.on_revive_arg = eng;
    guards_init(eng);
    jobs_init(&eng->q, &eng->work_cv, &eng->mu);
    gitwork_init(eng);
    defer_init(eng);
    runner_env env = {&eng->mu, &eng->reg, &eng->api, &eng->opt, eng, runner_finished, runner_abort, monitor_wake};
    int rc = 0;
    eng->runners[TASK_AGENT] = open_agent(&env, &rc);
    if (rc == 0)
        eng->runners[TASK_SHELL] = open_shell(&env, &rc);
    bool persisting = false;
    if (rc == 0) {
        rc = persist_start(eng);
        persisting = true;
    }
    if (rc == 0)
        rc = worker_start(eng);
    if (rc == 0 && view_start(eng) != 0) /* the tools work without a view: say so, go on */
        hostapi_log(&eng->api, OCP_LOG_ERROR, "ocbg: could not start its view thread: the host's UI shows no tasks");
    if (rc != 0) {
        if (persisting)
            persist_stop(eng);
        close_runners(eng);
        free_state(eng);
    }
    return rc;
}

static void release_jobs(engine *eng, job *list)
{
    while (list) {
        job *j = list;
        list = j->next;
        isolate_release(eng, j->release, NULL);
        j->release = NULL;
        job_free(j);
    }
}

/* Worktree releases the worker had not reached when it stopped (a session
 * deleted just before the stop): done now, rather than at the next start's
 * check (engine/isolate.h), which a host killed meanwhile relies on.
 * [lock not held] */
static void release_left(engine *eng)
{
    engine_lock(eng);
    job *handed = jobs_take(&eng->git.q, JOB_RELEASE), *left = jobs_take(&eng->q, JOB_RELEASE);
    engine_unlock(eng);
    release_jobs(eng, handed); /* the worker handed these over before it reached the others */
    release_jobs(eng, left);
}

void engine_stop(engine *eng)
{
    engine_lock(eng);
    eng->stopping = true;
    engine_wake_waiters(eng);
    pthread_cond_broadcast(&eng->work_cv);
    while (eng->calls_in_flight > 0)
        engine_cond_wait(eng, &eng->drain_cv);
    engine_unlock(eng);
    worker_join(eng);
    gitwork_stop(eng);
    release_left(eng);
    view_stop(eng);
    /* What changed is written before the commands are killed: a command
     * still running is one the host's stop cut short, as a restart finds. */
    persist_stop(eng);
    close_runners(eng); /* kills and reaps every command still running */
    free_state(eng);
}

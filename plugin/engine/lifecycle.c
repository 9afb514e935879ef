/* lifecycle.c — see engine.h: starting and stopping an engine, its runners
 * and its worker. */
#include <stdlib.h>

#include "base/util.h"
#include "engine/collide.h"
#include "engine/defer.h"
#include "engine/engine.h"
#include "engine/persist.h"
#include "engine/sched.h"
#include "engine/toast.h"
#include "engine/view.h"
#include "engine/guards.h"
#include "engine/gitwork.h"
#include "engine/isolate.h"
#include "engine/worker.h"

static void runner_finished(void *eng, task *t, task_status s, const char *text, const char *message_id)
{
    engine_finish(eng, t, s, text, message_id);
}

static void runner_abort(void *eng, const char *session_id)
{
    engine_request_abort(eng, session_id);
}

static void close_runners(engine *o)
{
    for (int i = 0; i < ENGINE_RUNNERS; i++) {
        if (o->runners[i])
            o->runners[i]->close(o->runners[i]);
        o->runners[i] = NULL;
    }
}

static void free_state(engine *o)
{
    jobs_free_all(&o->q);
    gitwork_free(o);
    defer_free(o);
    while (o->parked) {
        notice *n = o->parked;
        o->parked = n->next;
        notice_free(n);
    }
    registry_free(&o->reg);
    guards_free(o);
    toast_free(o);
    collide_free(o);
    pthread_cond_destroy(&o->work_cv);
    pthread_cond_destroy(&o->drain_cv);
    pthread_mutex_destroy(&o->mu);
}

int engine_start(engine *o, runner_open_fn open_agent, runner_open_fn open_shell)
{
    pthread_mutex_init(&o->mu, NULL);
    cond_init_monotonic(&o->work_cv);
    cond_init_monotonic(&o->drain_cv);
    registry_init(&o->reg);
    o->reg.lanes.on_freed = sched_freed;
    o->reg.lanes.on_freed_arg = o;
    o->reg.on_revive = engine_revive_notices;
    o->reg.on_revive_arg = o;
    guards_init(o);
    jobs_init(&o->q, &o->work_cv, &o->mu);
    gitwork_init(o);
    defer_init(o);
    runner_env env = {&o->mu, &o->reg, &o->api, &o->opt, o, runner_finished, runner_abort};
    int rc = 0;
    o->runners[TASK_AGENT] = open_agent(&env, &rc);
    if (rc == 0)
        o->runners[TASK_SHELL] = open_shell(&env, &rc);
    bool persisting = false;
    if (rc == 0) {
        rc = persist_start(o);
        persisting = true;
    }
    if (rc == 0)
        rc = worker_start(o);
    if (rc == 0 && view_start(o) != 0) /* the tools work without a view: say so, go on */
        hc_log(&o->api, OCP_LOG_ERROR, "ocbg: could not start its view thread: the host's UI shows no tasks");
    if (rc != 0) {
        if (persisting)
            persist_stop(o);
        close_runners(o);
        free_state(o);
    }
    return rc;
}

static void release_jobs(engine *o, job *list)
{
    while (list) {
        job *j = list;
        list = j->next;
        isolate_release(o, j->release, NULL);
        j->release = NULL;
        job_free(j);
    }
}

/* Worktree releases the worker had not reached when it stopped (a session
 * deleted just before the stop): done now, rather than at the next start's
 * check (engine/isolate.h), which a host killed meanwhile relies on.
 * [lock not held] */
static void release_left(engine *o)
{
    engine_lock(o);
    job *handed = jobs_take(&o->git.q, JOB_RELEASE), *left = jobs_take(&o->q, JOB_RELEASE);
    engine_unlock(o);
    release_jobs(o, handed); /* the worker handed these over before it reached the others */
    release_jobs(o, left);
}

void engine_stop(engine *o)
{
    engine_lock(o);
    o->stopping = true;
    engine_wake_waiters(o);
    pthread_cond_broadcast(&o->work_cv);
    while (o->calls_in_flight > 0)
        engine_cond_wait(o, &o->drain_cv);
    engine_unlock(o);
    worker_join(o);
    gitwork_stop(o);
    release_left(o);
    view_stop(o);
    /* What changed is written before the commands are killed: a command
     * still running is one the host's stop cut short, as a restart finds. */
    persist_stop(o);
    close_runners(o); /* kills and reaps every command still running */
    free_state(o);
}

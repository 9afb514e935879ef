/*
 * runner.h — how a task's run is carried out, behind one small interface the
 * engine owns: start, stop, kill, close. Two runners exist: the agent runner
 * (a host session: run/agent_runner.c) and the shell runner (a process group:
 * run/shell_runner.c). A runner never calls the engine by name: it is given
 * the engine's lock, registry, host and a `finished` callback (runner_env).
 *
 * Threads and locking: `start` and `close` run without the engine lock (they
 * may call the host or join threads); `stop` and `kill` run with it held and
 * never block. A runner touches tasks only under env->mu, and looks them up
 * again by id after every unlock (a task may be removed meanwhile).
 */
#ifndef OCBG_RUNNER_H
#define OCBG_RUNNER_H

#include "base/face_guard.h"
#include <pthread.h>

#include "base/options.h"
#include "hostapi/hostapi.h"
#include "model/registry.h"

/* What the engine lends a runner; every pointer outlives the runner. */
typedef struct runner_env {
    pthread_mutex_t *mu; /* the engine lock: guards every task and the registry */
    registry *reg;
    hostapi *api;
    const options *opt;
    void *engine; /* the callbacks' first argument */
    /* [lock held] t's run ended with status s (completed, error, cancelled),
     * text (result or error, may be NULL), message_id (may be NULL). */
    void (*finished)(void *eng, task *t, task_status s, const char *text, const char *message_id);
    /* [lock held] have the engine's worker abort a session (never blocks). */
    void (*abort_session)(void *eng, const char *session_id);
    /* [lock held] a watched command's output made its watch due sooner
     * (model/monitor.h): wake the engine's worker (never blocks). */
    void (*watch_due)(void *eng);
} runner_env;

typedef struct runner runner;
struct runner {
    /* [worker, lock not held] Start the run of registered task `task_id`.
     * Returns 0, or a negative errno with *err (malloc'd, a sentence saying
     * what failed); the task is then left for the caller to end or remove. */
    int (*start)(runner *r, const char *task_id, char **err);
    /* [lock held] Ask t's run to end; the end comes later through `finished`. */
    void (*stop)(runner *r, task *t);
    /* [lock held] End t's run now: t is about to be removed. */
    void (*kill)(runner *r, task *t);
    /* [shutdown, lock not held] End every run, join threads, free the runner. */
    void (*close)(runner *r);
};

/* The agent runner: creates (or forks) the task's session, gives a forked
 * child its context, sends the prompt; stop and kill abort the session. */
runner *agent_runner_open(const runner_env *env, int *rc);

/* The shell runner (run/shell_runner.c). NULL and *rc (an errno) when its
 * thread cannot start. */
runner *shell_runner_open(const runner_env *env, int *rc);

#endif

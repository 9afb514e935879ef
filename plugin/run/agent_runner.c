/*
 * agent_runner.c — agent tasks: a host session per task. Start creates the
 * session (a child of the parent's, or for a fork the host's fork of it),
 * gives a forked child its context, then sends the prompt; stop and kill
 * have the engine abort the session. How a run ends is read from the
 * session's messages by the engine (model/outcome.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "base/lock.h"
#include "fork/fork.h"
#include "run/runner.h"

typedef struct agent_runner {
    runner base; /* first: the engine holds a runner * */
    runner_env env;
} agent_runner;

/* What start needs of the task, copied under the lock. */
typedef struct start_plan {
    char *parent_session, *parent_message, *description, *agent, *prompt;
    char *directory; /* the worktree its session works in (its own, or its launcher's); NULL: the host's folder */
    bool borrowed;   /* directory is its launcher's worktree, which that task has the host follow */
    bool fork;
    bool deny_tools; /* at max_depth: its session gets no ocbg tools */
} start_plan;

static void plan_free(start_plan *p)
{
    free(p->parent_session);
    free(p->parent_message);
    free(p->description);
    free(p->agent);
    free(p->prompt);
    free(p->directory);
}

static bool plan_of(agent_runner *r, const char *task_id, start_plan *p)
{
    lock_acquire(r->env.mu);
    task *t = registry_find(r->env.reg, task_id);
    if (t) {
        p->parent_session = xstrdup(t->parent->session_id);
        p->parent_message = xstrdup(t->parent_message);
        p->description = xstrdup(t->description);
        p->agent = xstrdup(t->agent);
        p->prompt = xstrdup(t->prompt);
        p->fork = t->forked;
        /* A task launched from a worktree works in that worktree too. */
        const task_worktree *wt = t->wt ? t->wt : registry_worktree_of(r->env.reg, t->parent->session_id);
        p->directory = wt ? xstrdup(wt->path) : NULL;
        p->borrowed = wt && !t->wt;
        p->deny_tools = t->depth >= (unsigned)r->env.opt->max_depth;
    }
    lock_release(r->env.mu);
    return t != NULL;
}

/* The child's session: a new child of the parent's session, or for a fork
 * the host's fork of it (messages before the calling message). A host that
 * cannot fork gets a new child and *inject set: the processed history is
 * then sent as a message. */
static int create_session(agent_runner *r, const char *task_id, const start_plan *p, bool *inject, char **session,
                          char **err)
{
    *inject = false;
    if (p->fork && !p->directory && hostapi_has_fork(r->env.api))
        return hostapi_session_fork(r->env.api, p->parent_session, p->parent_message, session, err);
    /* A host's fork stays in the parent's folder: an isolated fork is a new
     * session in its worktree, given the history as a message. */
    *inject = p->fork;
    char *title = xasprintf("%s (@%s background task)", p->description, p->agent);
    int rc;
    if (p->directory) {
        /* Followed before the session exists: none of its events is missed.
         * A borrowed folder is followed already: its task is active while
         * the tasks it launched run (they end with its run). */
        rc = p->borrowed ? 0 : hostapi_directory_watch(r->env.api, p->directory, true, err);
        if (rc == 0) {
            lock_acquire(r->env.mu);
            task *t = registry_find(r->env.reg, task_id);
            if (t && t->wt && !p->borrowed)
                t->wt->watched = true;
            lock_release(r->env.mu);
            rc = hostapi_session_create_in(r->env.api, p->parent_session, title, p->directory, session, err);
        }
    } else {
        rc = hostapi_session_create(r->env.api, p->parent_session, title, session, err);
    }
    free(title);
    return rc;
}

/* What a forked child is told before its task (noReply): the preamble, and
 * when injecting, the parent's processed history rendered after it. */
static int fork_context(agent_runner *r, const start_plan *p, bool inject, char **text, char **err)
{
    fork_limits lim = {(size_t)r->env.opt->fork_tool_chars, (size_t)r->env.opt->fork_max_tokens};
    char *preamble = fork_preamble(&lim);
    if (!inject) {
        *text = preamble;
        return 0;
    }
    char *history = NULL, *processed = NULL;
    int rc = hostapi_session_messages(r->env.api, p->parent_session, 0, &history, err);
    if (rc == 0 && fork_process(history, &lim, &processed, NULL) != 0) {
        *err = xstrdup("the parent's history is not a message list");
        rc = -EIO;
    }
    hostapi_free(r->env.api, history);
    if (rc == 0) {
        char *rendered = fork_render(processed);
        *text = xasprintf("%s\n\nThe parent conversation so far:\n\n%s", preamble, rendered);
        free(rendered);
    }
    free(processed);
    free(preamble);
    return rc;
}

/* *err = "<what>: <why>", the host's reason consumed. */
static int fail(int rc, const char *what, char **err)
{
    char *why = *err;
    *err = xasprintf("%s: %s", what, why ? why : "unknown error");
    free(why);
    return rc;
}

/* A fork's context is stored: its session's newest message is now its own,
 * and completion checks may read it. */
static void context_stored(agent_runner *r, const char *task_id)
{
    lock_acquire(r->env.mu);
    task *t = registry_find(r->env.reg, task_id);
    if (t)
        t->inherited = false;
    lock_release(r->env.mu);
}

/* Context (a fork) then the prompt, into the task's new session. */
static int send_prompts(agent_runner *r, const char *task_id, const start_plan *p, const char *session, bool inject,
                        char **err)
{
    if (p->fork) {
        char *context = NULL;
        int rc = fork_context(r, p, inject, &context, err);
        if (rc == 0)
            rc = hostapi_session_prompt(r->env.api, session, context, p->agent, true, false, err);
        free(context);
        context_stored(r, task_id);
        if (rc != 0)
            return fail(rc, "Failed to give the forked sub-agent its context", err);
    }
    int rc = hostapi_session_prompt(r->env.api, session, p->prompt, p->agent, false, p->deny_tools, err);
    return rc != 0 ? fail(rc, "Failed to send the prompt to the sub-agent", err) : 0;
}

static int agent_start(runner *base, const char *task_id, char **err)
{
    agent_runner *r = (agent_runner *)base;
    start_plan p = {0};
    if (!plan_of(r, task_id, &p)) {
        *err = xstrdup("the task is gone");
        return -ENOENT;
    }
    char *session = NULL;
    bool inject;
    int rc = create_session(r, task_id, &p, &inject, &session, err);
    if (rc != 0) {
        rc = fail(rc,
                  p.fork ? "Failed to fork this session for the background task"
                         : "Failed to create a session for the background task",
                  err);
        plan_free(&p);
        return rc;
    }
    /* The session is the task's before anything is sent to it, so its first
     * events always find the task. */
    lock_acquire(r->env.mu);
    task *t = registry_find(r->env.reg, task_id);
    if (t) {
        registry_set_session(r->env.reg, t, session);
        /* A host's fork holds the parent's messages, the newest perhaps a
         * finished answer: no completion check reads it before the fork's
         * own first message is stored. */
        t->inherited = p.fork && !inject;
    }
    bool live = t && task_status_active(t->status) && !t->cancelling;
    lock_release(r->env.mu);
    /* cancelled or removed while its session was being created: the new
     * session is left without a prompt (nothing runs in it) */
    rc = live ? send_prompts(r, task_id, &p, session, inject, err) : -ECANCELED;
    if (!live)
        *err = xstrdup("the task was stopped before it started");
    free(session);
    plan_free(&p);
    return rc;
}

static void agent_stop(runner *base, task *t)
{
    agent_runner *r = (agent_runner *)base;
    if (t->session_id)
        r->env.abort_session(r->env.engine, t->session_id);
}

static void agent_close(runner *base)
{
    free(base);
}

runner *agent_runner_open(const runner_env *env, int *rc)
{
    *rc = 0;
    agent_runner *r = xcalloc(1, sizeof *r);
    r->base = (runner){agent_start, agent_stop, agent_stop, agent_close};
    r->env = *env;
    return &r->base;
}

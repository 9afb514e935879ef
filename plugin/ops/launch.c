/* launch.c — see ops.h: launching an agent task or a command. The host's
 * consent comes first, then the task is registered, then its runner starts
 * it; a refusal or a failure before anything exists leaves nothing behind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ops/ops.h"
#include "ops/permission.h"

/* A task of the caller's session, registered with what both kinds share.
 * Lock held. */
static task *register_task(ocbg *o, const ocp_call_ctx *ctx, task_type type, const char *description,
                           bool foreground)
{
    task *t = registry_add(&o->reg, ctx->session_id, NULL, type, ocbg_now(o));
    engine_task_activated(o);
    t->description = xstrdup(description);
    t->parent_message = xstrdup(ctx->message_id);
    t->parent_agent = xstrdup(ctx->agent);
    t->foreground = foreground;
    /* A foreground call owns the result from the start: no notification. */
    t->result_waiters += foreground;
    return t;
}

/* The runner could not start task `id`: a task that never got a session is
 * removed (nothing was created); one that did ends in error. */
static int start_failed(ocbg *o, const char *id, char *err, int rc, strbuf *out)
{
    pthread_mutex_lock(&o->mu);
    task *t = registry_find(&o->reg, id);
    bool created = t && t->session_id;
    if (t && created) {
        engine_finish(o, t, TASK_ERROR, err, NULL);
    } else if (t) {
        parent *p = t->parent;
        registry_remove(&o->reg, t);
        if (p->count == 0)
            registry_remove_parent(&o->reg, p);
        engine_wake_waiters(o);
    }
    pthread_mutex_unlock(&o->mu);
    if (created)
        sb_printf(out, "Background task %s could not start. %s\nIts status is error.", id, err);
    else
        sb_puts(out, err);
    free(err);
    return rc;
}

int op_launch_agent(ocbg *o, const ocp_call_ctx *ctx, const launch_req *req, char id[TASK_ID_SIZE],
                    char batch[TASK_ID_SIZE], strbuf *out)
{
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to launch a task from.");
        return -EINVAL;
    }
    /* The host's consent first: a refusal leaves nothing behind. */
    int rc = permission_task(o, ctx, req->agent, req->description, out);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&o->mu);
    task *t = register_task(o, ctx, TASK_AGENT, req->description, req->foreground);
    t->prompt = xstrdup(req->prompt);
    t->agent = xstrdup(req->agent);
    t->forked = req->fork;
    t->timeout_ms = req->timeout_ms;
    memcpy(id, t->id, TASK_ID_SIZE);
    memcpy(batch, t->batch->id, TASK_ID_SIZE);
    pthread_mutex_unlock(&o->mu);

    char *err = NULL;
    rc = engine_run_start(o, TASK_AGENT, id, &err);
    return rc != 0 ? start_failed(o, id, err, rc, out) : 0;
}

int op_launch_shell(ocbg *o, const ocp_call_ctx *ctx, const char *command, const char *description,
                    bool foreground, char id[TASK_ID_SIZE], strbuf *out)
{
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to run a command for.");
        return -EINVAL;
    }
    /* The host's consent first: a refusal runs nothing and registers nothing. */
    int rc = permission_bash(o, ctx, command, description, out);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&o->mu);
    task *t = register_task(o, ctx, TASK_SHELL, description && !blank(description) ? description : command,
                            foreground);
    t->shell = shell_state_new(command, ctx->directory, (size_t)o->opt.shell_output_cap);
    memcpy(id, t->id, TASK_ID_SIZE);
    pthread_mutex_unlock(&o->mu);

    char *err = NULL;
    rc = engine_run_start(o, TASK_SHELL, id, &err);
    if (rc != 0) {
        char *why = xasprintf("Could not start the command: %s", err);
        pthread_mutex_lock(&o->mu);
        t = registry_find(&o->reg, id);
        if (t)
            engine_finish(o, t, TASK_ERROR, why, NULL);
        if (foreground && t)
            registry_remove(&o->reg, t);
        pthread_mutex_unlock(&o->mu);
        sb_puts(out, why);
        free(why);
        free(err);
    }
    return rc;
}

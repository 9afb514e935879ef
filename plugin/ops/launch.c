/* launch.c — see ops.h: launching an agent task or a command. The host's
 * consent comes first, then the task is registered, then its runner starts
 * it; a refusal or a failure before anything exists leaves nothing behind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/util.h"
#include "engine/guards.h"
#include "engine/sched.h"
#include "ops/internal.h"
#include "ops/permission.h"

/* Admit a new task of (type, agent): 0 with *s its first status, or
 * -EAGAIN with the refusal in out (every slot busy, the queue full).
 * [lock held] */
static int admit(engine *o, task_type type, const char *agent, task_status *s, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(o);
    admission a = sched_admission(o, type, agent);
    *s = a == ADMIT_NOW ? TASK_RUNNING : TASK_PENDING;
    if (a != ADMIT_FULL)
        return 0;
    sb_puts(out, "Not launched: ");
    sched_why_waiting(o, lanes_of(&o->reg.lanes, type, agent), out);
    sb_printf(out,
              ", and the queue is full (%u task%s waiting, max_queued %d). Wait for a task to finish, or "
              "cancel one, then launch again.",
              o->reg.lanes.queued, o->reg.lanes.queued == 1 ? "" : "s", o->opt.max_queued);
    return -EAGAIN;
}

/* The line a queued launch adds to its answer (t was just queued: every
 * pending task of its kind is ahead of it). [lock held] */
static void queued_note(engine *o, const task *t, strbuf *note)
{
    ENGINE_ASSERT_LOCKED(o);
    sb_puts(note, "Queued: ");
    sched_why_waiting(o, t->lane, note);
    sb_printf(note,
              "; it starts when a slot frees (%u ahead of it in the queue). Its status is pending until "
              "then.",
              lanes_queued_of(&o->reg.lanes, t->type) - 1);
}

/* How deep a task launched from the caller's session nests: 1 from a
 * session that is no task's, else its task's depth + 1. [lock held] */
static unsigned depth_of(engine *o, const ocp_call_ctx *ctx)
{
    ENGINE_ASSERT_LOCKED(o);
    task *launcher = registry_find_session(&o->reg, ctx->session_id);
    return launcher ? launcher->depth + 1 : 1;
}

/* A task's session may launch only above max_depth: 0, or -EPERM with the
 * refusal in out (nothing is asked or created). */
static int check_depth(engine *o, const ocp_call_ctx *ctx, strbuf *out)
{
    engine_lock(o);
    unsigned depth = depth_of(o, ctx);
    engine_unlock(o);
    if (depth <= (unsigned)o->opt.max_depth)
        return 0;
    sb_printf(out,
              "Not launched: this session is a background task at depth %u, and max_depth is %d, so it cannot start "
              "background tasks of its own. Do the work in this session instead.",
              depth - 1, o->opt.max_depth);
    return -EPERM;
}

/* A task of the caller's session, registered with what both kinds share.
 * [lock held] */
static task *register_task(engine *o, const ocp_call_ctx *ctx, task_type type, const char *agent, task_status s,
                           const char *description, bool foreground, const char *id)
{
    ENGINE_ASSERT_LOCKED(o);
    unsigned depth = depth_of(o, ctx);
    task *t = id[0] ? registry_add_as(&o->reg, id, ctx->session_id, type, agent, s, engine_now(o))
                    : registry_add(&o->reg, ctx->session_id, type, agent, s, engine_now(o));
    if (!t)
        return NULL;
    t->depth = depth;
    engine_task_activated(o);
    task_set_description(t, description);
    t->parent_message = xstrdup(ctx->message_id);
    t->parent_agent = intern(ctx->agent);
    t->foreground = foreground;
    /* A foreground call owns the result from the start: no notification. */
    t->result_waiters += foreground;
    return t;
}

/* An isolated launch's worktree, made before its task exists: the host's
 * consent to a folder outside the project, then git. 0 with *id (the
 * task's id to be) and *m; else the refusal in out, nothing made. */
static int make_worktree(engine *o, const ocp_call_ctx *ctx, isolation how, char id[TASK_ID_SIZE], worktree_made *m,
                         strbuf *out)
{
    char *root = NULL;
    int rc = isolate_root(o, &root, out);
    if (rc != 0)
        return rc;
    engine_lock(o);
    registry_new_id(&o->reg, id);
    engine_unlock(o);
    char *folder = xasprintf("%s/%s", root, id);
    rc = permission_folder(o, ctx, folder, root, out);
    if (rc == 0)
        rc = isolate_prepare(ctx->directory, root, how, id, m, out);
    free(folder);
    free(root);
    return rc;
}

/* Undo a worktree made for a task that never ran; out (may be NULL) is
 * told when something of it is left. [lock not held] */
static void discard_made(const char *checkout, const char *path, const char *branch, strbuf *out)
{
    char *left = NULL;
    if (worktree_discard(checkout, path, branch, &left) != 0 && out)
        sb_printf(out, " Undoing its worktree failed: %s.", left);
    free(left);
}

/* The runner could not start task `id`: a task that never got a session is
 * removed (nothing was created); one that did ends in error. */
static int start_failed(engine *o, const char *id, char *err, int rc, strbuf *out)
{
    engine_lock(o);
    task *t = registry_find(&o->reg, id);
    bool created = t && t->session_id, cancelled = t && t->cancelling;
    worktree_item *unmade = NULL;
    if (cancelled) {
        created = false; /* cancelled while it started: it ends as cancelled, not in error */
        engine_finish(o, t, TASK_CANCELLED, NULL, NULL);
        sb_printf(out, "Task %s was cancelled before it started.", id);
    } else if (t && created) {
        engine_finish(o, t, TASK_ERROR, err, NULL);
    } else if (t) {
        parent *p = t->parent;
        worktree_item_take(t, &unmade); /* it never ran: its worktree and branch go too */
        registry_remove(&o->reg, t);
        if (p->count == 0)
            registry_remove_parent(&o->reg, p);
        engine_wake_waiters(o);
    }
    engine_unlock(o);
    strbuf undo = {0};
    for (worktree_item *it = unmade; it; it = it->next) {
        if (it->watched)
            hc_directory_watch(&o->api, it->path, false, NULL);
        discard_made(it->checkout, it->path, it->branch, &undo);
    }
    if (unmade) { /* the folder and branch are gone: so may its row */
        engine_lock(o);
        registry_forget_row(&o->reg, unmade->id);
        engine_unlock(o);
    }
    worktree_items_free(unmade);
    if (created)
        sb_printf(out, "Background task %s could not start. %s\nIts status is error.", id, err);
    else if (!cancelled)
        sb_puts(out, err);
    if (undo.len)
        sb_puts(out, undo.buf);
    sb_free(&undo);
    free(err);
    return rc;
}

/* The launch's isolation: its name, or the isolation option's. */
static isolation isolation_of(engine *o, const char *name)
{
    for (int i = 0; name && isolation_names[i]; i++)
        if (strcmp(name, isolation_names[i]) == 0)
            return (isolation)i;
    return (isolation)o->opt.isolation;
}

int op_launch_agent(engine *o, const ocp_call_ctx *ctx, const launch_req *req, launched *l, strbuf *out)
{
    int rc = guards_admit(o, ctx->session_id, NULL, out); /* the session's budget, first */
    if (rc != 0)
        return rc;
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to launch a task from.");
        return -EINVAL;
    }
    /* Depth, then the host's consent: a refusal leaves nothing behind. */
    rc = check_depth(o, ctx, out);
    if (rc == 0)
        rc = permission_task(o, ctx, req->agent, req->description, out);
    if (rc != 0)
        return rc;
    /* Its worktree before the task: a refusal leaves nothing behind. */
    char id[TASK_ID_SIZE] = "";
    worktree_made wt = {0};
    isolation how = isolation_of(o, req->isolation);
    if (how != ISOLATION_NONE && (rc = make_worktree(o, ctx, how, id, &wt, out)) != 0)
        return rc;
    engine_lock(o);
    task_status s;
    rc = admit(o, TASK_AGENT, req->agent, &s, out);
    task *t = rc == 0 ? register_task(o, ctx, TASK_AGENT, req->agent, s, req->description, req->foreground, id) : NULL;
    if (!t) {
        engine_unlock(o);
        if (rc == 0)
            sb_printf(out, "Not launched: the task id %s was taken meanwhile; launch again.", id);
        if (wt.path)
            discard_made(wt.checkout, wt.path, wt.branch, out);
        worktree_made_free(&wt);
        return rc ? rc : -EAGAIN;
    }
    if (wt.path) {
        task_set_worktree(t, wt.path, wt.branch, wt.base, wt.checkout);
        isolate_describe(&wt, &l->worktree);
        worktree_made_free(&wt);
    }
    t->prompt = xstrdup(req->prompt);
    t->forked = req->fork;
    t->timeout_ms = req->timeout_ms;
    memcpy(l->id, t->id, TASK_ID_SIZE);
    memcpy(l->batch, t->batch->id, TASK_ID_SIZE);
    if (s == TASK_PENDING)
        queued_note(o, t, &l->queued);
    engine_unlock(o);
    if (s == TASK_PENDING)
        return 0; /* the worker starts it when a slot frees */

    char *err = NULL;
    rc = engine_run_start(o, TASK_AGENT, l->id, &err);
    return rc != 0 ? start_failed(o, l->id, err, rc, out) : 0;
}

int op_launch_shell(engine *o, const ocp_call_ctx *ctx, const char *command, const char *description, bool foreground,
                    int64_t timeout_ms, launched *l, strbuf *out)
{
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to run a command for.");
        return -EINVAL;
    }
    /* Depth (a background command is a task), then the host's consent: a
     * refusal runs nothing and registers nothing. */
    int rc = foreground ? 0 : check_depth(o, ctx, out);
    if (rc == 0)
        rc = permission_bash(o, ctx, command, description, out);
    if (rc != 0)
        return rc;
    engine_lock(o);
    /* A foreground command is the model's ordinary shell call: it runs at
     * once, as the host's own would; background ones take turns. */
    task_status s = TASK_RUNNING;
    rc = foreground ? 0 : admit(o, TASK_SHELL, NULL, &s, out);
    if (rc != 0) {
        engine_unlock(o);
        return rc;
    }
    task *t = register_task(o, ctx, TASK_SHELL, NULL, s, description && !blank(description) ? description : command,
                            foreground, "");
    t->shell = shell_state_new(command, ctx->directory, (size_t)o->opt.shell_output_cap);
    if (!foreground)
        t->timeout_ms = timeout_ms; /* a foreground one's is the call's (op_foreground) */
    memcpy(l->id, t->id, TASK_ID_SIZE);
    memcpy(l->batch, t->batch->id, TASK_ID_SIZE);
    if (s == TASK_PENDING)
        queued_note(o, t, &l->queued);
    engine_unlock(o);
    if (s == TASK_PENDING)
        return 0;

    char *err = NULL;
    const char *id = l->id;
    rc = engine_run_start(o, TASK_SHELL, id, &err);
    if (rc != 0) {
        char *why = xasprintf("Could not start the command: %s", err);
        engine_lock(o);
        t = registry_find(&o->reg, id);
        if (t)
            engine_finish(o, t, TASK_ERROR, why, NULL);
        if (foreground && t)
            registry_remove(&o->reg, t);
        engine_unlock(o);
        sb_puts(out, why);
        free(why);
        free(err);
    }
    return rc;
}

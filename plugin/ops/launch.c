/* launch.c — see ops.h: launching an agent task or a command. The host's
 * consent comes first, then the task is registered, then its runner starts
 * it; a refusal or a failure before anything exists leaves nothing behind. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/util.h"
#include "engine/guards.h"
#include "engine/monitor.h"
#include "engine/sched.h"
#include "ops/internal.h"
#include "ops/permission.h"

/* Admit a new task of (type, agent): 0 with *s its first status, or
 * -EAGAIN with the refusal in out (every slot busy, the queue full).
 * [lock held] */
static int admit(engine *eng, task_type type, const char *agent, task_status *s, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    admission a = sched_admission(eng, type, agent);
    *s = a == ADMIT_NOW ? TASK_RUNNING : TASK_PENDING;
    if (a != ADMIT_FULL)
        return 0;
    sb_puts(out, "Not launched: ");
    sched_why_waiting(eng, lanes_of(&eng->reg.lanes, type, agent), out);
    sb_printf(out,
              ", and the queue is full (%u task%s waiting, max_queued %d). Wait for a task to finish, or "
              "cancel one, then launch again.",
              eng->reg.lanes.queued, eng->reg.lanes.queued == 1 ? "" : "s", eng->opt.max_queued);
    return -EAGAIN;
}

/* The line a queued launch adds to its answer (t was just queued: every
 * pending task of its kind is ahead of it). [lock held] */
static void queued_note(engine *eng, const task *t, strbuf *note)
{
    ENGINE_ASSERT_LOCKED(eng);
    sb_puts(note, "Queued: ");
    sched_why_waiting(eng, t->lane, note);
    sb_printf(note,
              "; it starts when a slot frees (%u ahead of it in the queue). Its status is pending until "
              "then.",
              lanes_queued_of(&eng->reg.lanes, t->type) - 1);
}

/* How deep a task launched from the caller's session nests: 1 from a
 * session that is no task's, else its task's depth + 1. [lock held] */
static unsigned depth_of(engine *eng, const ocp_call_ctx *ctx)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *launcher = registry_find_session(&eng->reg, ctx->session_id);
    return launcher ? launcher->depth + 1 : 1;
}

/* A task's session may launch only above max_depth: 0, or -EPERM with the
 * refusal in out (nothing is asked or created). */
static int check_depth(engine *eng, const ocp_call_ctx *ctx, strbuf *out)
{
    engine_lock(eng);
    unsigned depth = depth_of(eng, ctx);
    engine_unlock(eng);
    if (depth <= (unsigned)eng->opt.max_depth)
        return 0;
    sb_printf(out,
              "Not launched: this session is a background task at depth %u, and max_depth is %d, so it cannot start "
              "background tasks of its own. Do the work in this session instead.",
              depth - 1, eng->opt.max_depth);
    return -EPERM;
}

/* A task of the caller's session, registered with what both kinds share.
 * [lock held] */
static task *register_task(engine *eng, const ocp_call_ctx *ctx, task_type type, const char *agent, task_status s,
                           const char *description, bool foreground, const char *id)
{
    ENGINE_ASSERT_LOCKED(eng);
    unsigned depth = depth_of(eng, ctx);
    task *t = id[0] ? registry_add_as(&eng->reg, id, ctx->session_id, type, agent, s, engine_now(eng))
                    : registry_add(&eng->reg, ctx->session_id, type, agent, s, engine_now(eng));
    if (!t)
        return NULL;
    t->depth = depth;
    engine_task_activated(eng);
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
static int make_worktree(engine *eng, const ocp_call_ctx *ctx, isolation how, char id[TASK_ID_SIZE], worktree_made *m,
                         strbuf *out)
{
    char *root = NULL;
    int rc = isolate_root(eng, &root, out);
    if (rc != 0)
        return rc;
    engine_lock(eng);
    registry_new_id(&eng->reg, id);
    engine_unlock(eng);
    char *folder = xasprintf("%s/%s", root, id);
    rc = permission_folder(eng, ctx, folder, root, out);
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
static int start_failed(engine *eng, const char *id, char *err, int rc, strbuf *out)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    bool created = t && t->session_id, cancelled = t && t->cancelling;
    worktree_item *unmade = NULL;
    if (cancelled) {
        created = false; /* cancelled while it started: it ends as cancelled, not in error */
        engine_finish(eng, t, TASK_CANCELLED, NULL, NULL);
        sb_printf(out, "Task %s was cancelled before it started.", id);
    } else if (t && created) {
        engine_finish(eng, t, TASK_ERROR, err, NULL);
    } else if (t) {
        parent *p = t->parent;
        worktree_item_take(t, &unmade); /* it never ran: its worktree and branch go too */
        registry_remove(&eng->reg, t);
        if (p->count == 0)
            registry_remove_parent(&eng->reg, p);
        engine_wake_waiters(eng);
    }
    engine_unlock(eng);
    strbuf undo = {0};
    for (worktree_item *it = unmade; it; it = it->next) {
        if (it->watched)
            hostapi_directory_watch(&eng->api, it->path, false, NULL);
        discard_made(it->checkout, it->path, it->branch, &undo);
    }
    if (unmade) { /* the folder and branch are gone: so may its row */
        engine_lock(eng);
        registry_forget_row(&eng->reg, unmade->id);
        engine_unlock(eng);
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

/* The launch's isolation: its name, or the isolation option's. A session
 * that works in a task's worktree launches into that worktree: a worktree
 * asked by name is refused (-EPERM, why in out, nothing asked or made), the
 * option's default is not applied. */
static int isolation_of(engine *eng, const ocp_call_ctx *ctx, const char *name, isolation *how, strbuf *out)
{
    *how = (isolation)eng->opt.isolation;
    for (int i = 0; name && isolation_names[i]; i++)
        if (strcmp(name, isolation_names[i]) == 0)
            *how = (isolation)i;
    engine_lock(eng);
    const task_worktree *wt = registry_worktree_of(&eng->reg, ctx->session_id);
    if (wt && *how != ISOLATION_NONE && name)
        sb_printf(out,
                  "Not launched: this session works in the worktree %s (branch %s), and the tasks it launches work "
                  "there too, so isolation \"%s\" is not available here. Launch without isolation: the task's work "
                  "lands in this worktree.",
                  wt->path, wt->branch, name);
    bool refused = wt && *how != ISOLATION_NONE && name;
    if (wt)
        *how = ISOLATION_NONE;
    engine_unlock(eng);
    return refused ? -EPERM : 0;
}

int op_launch_agent(engine *eng, const ocp_call_ctx *ctx, const launch_req *req, launched *l, strbuf *out)
{
    int rc = guards_admit(eng, ctx->session_id, NULL, out); /* the session's budget, first */
    if (rc != 0)
        return rc;
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to launch a task from.");
        return -EINVAL;
    }
    /* Depth and isolation, then the host's consent: a refusal leaves
     * nothing behind. */
    isolation how = ISOLATION_NONE;
    rc = check_depth(eng, ctx, out);
    if (rc == 0)
        rc = isolation_of(eng, ctx, req->isolation, &how, out);
    if (rc == 0)
        rc = permission_task(eng, ctx, req->agent, req->description, out);
    if (rc != 0)
        return rc;
    /* Its worktree before the task: a refusal leaves nothing behind. */
    char id[TASK_ID_SIZE] = "";
    worktree_made wt = {0};
    if (how != ISOLATION_NONE && (rc = make_worktree(eng, ctx, how, id, &wt, out)) != 0)
        return rc;
    engine_lock(eng);
    task_status s;
    rc = admit(eng, TASK_AGENT, req->agent, &s, out);
    task *t =
        rc == 0 ? register_task(eng, ctx, TASK_AGENT, req->agent, s, req->description, req->foreground, id) : NULL;
    if (!t) {
        engine_unlock(eng);
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
        queued_note(eng, t, &l->queued);
    engine_unlock(eng);
    if (s == TASK_PENDING)
        return 0; /* the worker starts it when a slot frees */

    char *err = NULL;
    rc = engine_run_start(eng, TASK_AGENT, l->id, &err);
    return rc != 0 ? start_failed(eng, l->id, err, rc, out) : 0;
}

/* op_launch_shell, and op_launch_monitor when mon is not NULL (taken: hung
 * on the task before its process starts, or freed when nothing is made). */
static int launch_shell(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description,
                        bool foreground, int64_t timeout_ms, shell_monitor *mon, launched *l, strbuf *out)
{
    if (!ctx->session_id) {
        sb_puts(out, "The call has no session to run a command for.");
        return -EINVAL;
    }
    /* Depth (a background command is a task), then the host's consent: a
     * refusal runs nothing and registers nothing. */
    int rc = foreground ? 0 : check_depth(eng, ctx, out);
    if (rc == 0)
        rc = permission_bash(eng, ctx, command, description, out);
    if (rc != 0) {
        shell_monitor_free(mon);
        return rc;
    }
    engine_lock(eng);
    /* A foreground command is the model's ordinary shell call: it runs at
     * once, as the host's own would; background ones take turns. */
    task_status s = TASK_RUNNING;
    rc = foreground ? 0 : admit(eng, TASK_SHELL, NULL, &s, out);
    if (rc != 0) {
        engine_unlock(eng);
        shell_monitor_free(mon);
        return rc;
    }
    task *t = register_task(eng, ctx, TASK_SHELL, mon ? MONITOR_AGENT : NULL, s,
                            description && !blank(description) ? description : command, foreground, "");
    t->shell = shell_state_new(command, ctx->directory, (size_t)eng->opt.shell_output_cap);
    if (!foreground)
        t->timeout_ms = timeout_ms; /* a foreground one's is the call's (op_foreground) */
    if (mon)
        monitor_attach(eng, t, mon); /* before its first byte of output */
    memcpy(l->id, t->id, TASK_ID_SIZE);
    memcpy(l->batch, t->batch->id, TASK_ID_SIZE);
    if (s == TASK_PENDING)
        queued_note(eng, t, &l->queued);
    engine_unlock(eng);
    if (s == TASK_PENDING)
        return 0;

    char *err = NULL;
    const char *id = l->id;
    rc = engine_run_start(eng, TASK_SHELL, id, &err);
    if (rc != 0) {
        char *why = xasprintf("Could not start the command: %s", err);
        engine_lock(eng);
        t = registry_find(&eng->reg, id);
        if (t)
            engine_finish(eng, t, TASK_ERROR, why, NULL);
        if (foreground && t)
            registry_remove(&eng->reg, t);
        engine_unlock(eng);
        sb_puts(out, why);
        free(why);
        free(err);
    }
    return rc;
}

int op_launch_shell(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description, bool foreground,
                    int64_t timeout_ms, launched *l, strbuf *out)
{
    return launch_shell(eng, ctx, command, description, foreground, timeout_ms, NULL, l, out);
}

int op_launch_monitor(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description,
                      shell_monitor *mon, launched *l, strbuf *out)
{
    return launch_shell(eng, ctx, command, description, false, 0, mon, l, out);
}

/* foreground.c — see ops.h: a foreground call's own task (Task or Bash
 * without run_in_background), which nobody else waits for: moved to the
 * background, stopped on Esc, dropped when the call returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ops/internal.h"

/* Remove task id if it is still a foreground call's and has ended: it was
 * never a background task. Wakes the waiters. [lock held] */
static void op_foreground_drop(engine *eng, const char *id)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = registry_find(&eng->reg, id);
    if (t && t->foreground && !task_status_active(t->status)) {
        /* Its worktree goes with it, its work kept on its branch. */
        worktree_item *wt = NULL;
        worktree_item_take(t, &wt);
        engine_release_worktrees(eng, wt);
        registry_remove(&eng->reg, t);
        engine_wake_waiters(eng);
    }
}

/* Foreground task t, still running when its call stops waiting, becomes a
 * background task: it ends with the usual notification, and the store
 * keeps it from now. Its run goes on untouched. [lock held] */
static void op_to_background(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    t->foreground = false;
    registry_touch(&eng->reg, t);
}

/* Give task t its own runtime limit per run, ms (0: max_runtime_ms,
 * engine/guards.h). [lock held] (not asserted: t does not know its lock) */
static void op_set_timeout(task *t, int64_t ms)
{
    t->timeout_ms = ms;
}

/* The call of foreground agent task t was cancelled (Esc) or the plugin is
 * stopping: nobody else waits for its sub-agent, so it stops. A pending
 * task just leaves the queue. A running one is claimed for cancelling (its
 * completion checks wait) and its session id returned, for
 * op_foreground_abort (owned); else NULL, nothing more to do. [lock held] */
static char *op_foreground_esc(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (t->status == TASK_PENDING) {
        engine_stop_task(eng, t); /* never started: it just leaves the queue */
        return NULL;
    }
    if (!task_status_active(t->status) || t->cancelling)
        return NULL;
    t->cancelling = true;
    return xstrdup(t->session_id);
}

/* Abort session (from op_foreground_esc; freed here), then end task id as
 * cancelled whatever the abort answered, and drop it (op_foreground_drop).
 * [lock not held] */
static void op_foreground_abort(engine *eng, const char *id, char *session)
{
    hostapi_session_abort(&eng->api, session, NULL);
    free(session);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    if (t)
        engine_finish(eng, t, TASK_CANCELLED, NULL, NULL);
    op_foreground_drop(eng, id);
    engine_unlock(eng);
}

/* An agent's foreground call ended its wait w on task t: how it ends. The
 * session to abort (op_foreground_abort) when Esc stops it. [lock held] */
static char *agent_end(engine *eng, const char *id, wait_result w, task *t, foreground_result *r)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        /* Esc (or shutdown) stops the sub-agent: nobody else waits for it. */
        r->end = FOREGROUND_STOPPED;
        return op_foreground_esc(eng, t);
    }
    if (t->status == TASK_COMPLETED) {
        /* Its answer, and for an isolated one what it did in its worktree
         * (which goes when the call returns; the branch stays). */
        t = op_worktree_settle(eng, id);
        if (!t) {
            r->end = FOREGROUND_REMOVED;
            r->late = true;
            return NULL;
        }
        op_shown(eng, t, engine_now(eng), true, false);
    }
    snap_take(&r->snap, t, engine_now(eng), SNAP_TEXTS);
    return NULL;
}

void op_foreground(engine *eng, ocp_call_ctx *ctx, const char *id, int64_t own_ms, int64_t limit_ms,
                   foreground_result *r)
{
    memset(r, 0, sizeof *r);
    char key[TASK_ID_SIZE];
    snprintf(key, sizeof key, "%s", id);
    /* The call's own limit, or auto_background_ms when that comes first
     * (0: it never does): then it goes to the background if still running. */
    int64_t auto_ms = eng->opt.auto_background_ms;
    bool moves = auto_ms > 0 && auto_ms < own_ms;
    int64_t deadline = mono_ms() + (moves ? auto_ms : own_ms);
    engine_lock(eng);
    task *t;
    wait_result w = op_await(eng, ctx, key, deadline, true, &t);
    r->wait = w;
    char *session = NULL;
    if (t && w == WAIT_TIMEOUT && moves && task_status_active(t->status)) {
        /* In the background a command's own timeout, when the call gave
         * one, is its runtime limit (from its start); else max_runtime_ms. */
        if (t->type == TASK_SHELL)
            op_set_timeout(t, limit_ms);
        op_to_background(eng, t); /* op_await gave its caller's claim back */
        r->end = FOREGROUND_MOVED;
        r->moved_after_ms = auto_ms;
        snap_take(&r->snap, t, engine_now(eng), SNAP_STRINGS);
    } else if (t && t->type == TASK_AGENT) {
        session = agent_end(eng, key, w, t, r);
    } else if (t) {
        /* Timed out or cancelled: a foreground command does not outlive its
         * call, whose result it still is. */
        if (w != WAIT_DONE && task_status_active(t->status))
            t = op_stop_command(eng, NULL, t, true);
        if (t)
            snap_take(&r->snap, t, engine_now(eng), SNAP_TEXTS);
    }
    if (!t)
        r->end = FOREGROUND_REMOVED;
    op_foreground_drop(eng, key);
    engine_unlock(eng);
    if (session)
        op_foreground_abort(eng, key, session);
}

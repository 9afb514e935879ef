/* foreground.c — see ops.h: a foreground call's own task (Task or Bash
 * without run_in_background), which nobody else waits for: moved to the
 * background, stopped on Esc, dropped when the call returns. */
#include <stdlib.h>

#include "base/util.h"
#include "ops/ops.h"

void op_foreground_drop(engine *o, const char *id)
{
    ENGINE_ASSERT_LOCKED(o);
    task *t = registry_find(&o->reg, id);
    if (t && t->foreground && !task_status_active(t->status)) {
        /* Its worktree goes with it, its work kept on its branch. */
        worktree_item *wt = NULL;
        worktree_item_take(t, &wt);
        engine_release_worktrees(o, wt);
        registry_remove(&o->reg, t);
        engine_wake_waiters(o);
    }
}

void op_to_background(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    t->foreground = false;
    registry_touch(&o->reg, t);
}

void op_set_timeout(task *t, int64_t ms)
{
    t->timeout_ms = ms;
}

char *op_foreground_esc(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    if (t->status == TASK_PENDING) {
        engine_stop_task(o, t); /* never started: it just leaves the queue */
        return NULL;
    }
    if (!task_status_active(t->status) || t->cancelling)
        return NULL;
    t->cancelling = true;
    return xstrdup(t->session_id);
}

void op_foreground_abort(engine *o, const char *id, char *session)
{
    hc_session_abort(&o->api, session, NULL);
    free(session);
    engine_lock(o);
    task *t = registry_find(&o->reg, id);
    if (t)
        engine_finish(o, t, TASK_CANCELLED, NULL, NULL);
    op_foreground_drop(o, id);
    engine_unlock(o);
}

task *op_worktree_settle(engine *o, const char *id)
{
    ENGINE_ASSERT_LOCKED(o);
    task *t = registry_find(&o->reg, id);
    if (!t || !t->wt || task_status_active(t->status) || t->wt->report_run == t->run)
        return t;
    engine_unlock(o);
    isolate_settle(o, id);
    engine_lock(o);
    return registry_find(&o->reg, id);
}

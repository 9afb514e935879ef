/* foreground.c — see ops.h: a foreground call's own task (Task or Bash
 * without run_in_background), which nobody else waits for: moved to the
 * background, stopped on Esc, dropped when the call returns. */
#include <stdlib.h>

#include "base/util.h"
#include "ops/ops.h"

void op_foreground_drop(engine *eng, const char *id)
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

void op_to_background(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    t->foreground = false;
    registry_touch(&eng->reg, t);
}

void op_set_timeout(task *t, int64_t ms)
{
    t->timeout_ms = ms;
}

char *op_foreground_esc(engine *eng, task *t)
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

void op_foreground_abort(engine *eng, const char *id, char *session)
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

task *op_worktree_settle(engine *eng, const char *id)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = registry_find(&eng->reg, id);
    if (!t || !t->wt || task_status_active(t->status) || t->wt->report_run == t->run)
        return t;
    engine_unlock(eng);
    isolate_settle(eng, id);
    engine_lock(eng);
    return registry_find(&eng->reg, id);
}

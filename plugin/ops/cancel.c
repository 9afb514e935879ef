/* cancel.c — see ops.h: cancelling active tasks (one, a batch, a clear). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ops/ops.h"

/* Claim an active task for cancelling: its completion checks wait while the
 * abort is in flight. [lock held] (not asserted: t does not know its lock) */
void op_cancel_add(cancel_item **items, size_t *n, task *t)
{
    t->cancelling = true;
    *items = xrealloc(*items, (*n + 1) * sizeof **items);
    cancel_item *it = &(*items)[(*n)++];
    memset(it, 0, sizeof *it);
    memcpy(it->id, t->id, sizeof it->id);
    it->session = xstrdup(t->session_id); /* NULL for a shell task */
}

typedef struct item_list {
    cancel_item *items;
    size_t n;
} item_list;

static bool items_settled(engine *eng, void *arg)
{
    item_list *l = arg;
    for (size_t i = 0; i < l->n; i++)
        if (!op_task_settled(eng, l->items[i].id))
            return false;
    return true;
}

/* Abort each agent item's session (no lock held), then mark those still
 * active cancelled; a failed abort leaves its task running. A shell item (no
 * session) is stopped (SIGTERM, then SIGKILL after the grace period) and
 * waited for: its exit ends it as cancelled. remove: a cancelled task is also
 * removed, under the same lock hold, so a waiter sees it removed rather than
 * cancelled. Returns how many it removed. */
size_t op_cancel_items(engine *eng, cancel_item *items, size_t n, bool remove)
{
    size_t removed = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i].session)
            items[i].rc = hostapi_session_abort(&eng->api, items[i].session, &items[i].err);
    engine_lock(eng);
    bool shells = false;
    for (size_t i = 0; i < n; i++) {
        task *t = registry_find(&eng->reg, items[i].id);
        if (!t)
            continue;
        if (!items[i].session) {
            engine_stop_task(eng, t);
            shells = true;
        } else if (items[i].rc == 0 || items[i].rc == -ENOENT) {
            engine_finish(eng, t, TASK_CANCELLED, NULL, NULL);
            if (remove) {
                engine_drop_descendants(eng, t);
                registry_remove(&eng->reg, t);
                removed++;
            }
        } else {
            t->cancelling = false;
            engine_request_check(eng, t); /* an idle ignored meanwhile */
        }
    }
    if (shells) {
        item_list l = {items, n};
        engine_wait(eng, NULL, mono_ms() + eng->opt.shell_kill_grace_ms + 5000, items_settled, &l);
        for (size_t i = 0; remove && i < n; i++) {
            task *t = items[i].session ? NULL : registry_find(&eng->reg, items[i].id);
            if (t && !task_status_active(t->status)) {
                engine_drop_descendants(eng, t);
                registry_remove(&eng->reg, t);
                removed++;
            }
        }
    }
    engine_unlock(eng);
    return removed;
}

void op_cancel_free(cancel_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i].session);
        free(items[i].err);
    }
    free(items);
}

task *op_stop_command(engine *eng, ocp_call_ctx *ctx, task *t, bool owner)
{
    ENGINE_ASSERT_LOCKED(eng);
    char key[TASK_ID_SIZE];
    memcpy(key, t->id, sizeof key);
    int64_t deadline = mono_ms() + eng->opt.shell_kill_grace_ms + 5000;
    if (owner)
        t->result_waiters++; /* op_await gives it back */
    engine_stop_task(eng, t);
    if (owner) {
        op_await(eng, ctx, key, deadline, true, &t);
        return t;
    }
    engine_wait(eng, ctx, deadline, op_task_settled, key);
    return registry_find(&eng->reg, key);
}

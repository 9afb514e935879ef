/* cancel.c — see ops.h: cancelling active tasks (one, a batch, a clear). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ops/internal.h"

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

void op_cancel(engine *eng, ocp_call_ctx *ctx, const char *id, bool stop, cancel_result *r)
{
    memset(r, 0, sizeof *r);
    engine_lock(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t) {
        engine_unlock(eng);
        r->end = CANCEL_NOT_FOUND;
        return;
    }
    snap_take(&r->snap, t, engine_now(eng), SNAP_STRINGS);
    if (!task_status_active(t->status) || (t->cancelling && !(stop && t->type == TASK_SHELL))) {
        r->end = task_status_active(t->status) ? CANCEL_ALREADY : CANCEL_ENDED;
        engine_unlock(eng);
        return;
    }
    if (stop && t->type == TASK_SHELL) {
        t = op_stop_command(eng, ctx, t, false);
        r->exited = t && !task_status_active(t->status);
        engine_unlock(eng);
        return;
    }
    cancel_item *item = NULL;
    size_t one = 0;
    op_cancel_add(&item, &one, t);
    engine_unlock(eng);
    op_cancel_items(eng, item, 1, false);
    r->rc = item->rc == -ENOENT ? 0 : item->rc;
    r->err = item->err;
    item->err = NULL;
    op_cancel_free(item, 1);
}

void cancel_result_free(cancel_result *r)
{
    free(r->err);
    task_snap_free(&r->snap);
}

size_t op_cancel_batch(engine *eng, const ocp_call_ctx *ctx, const char *batch, cancel_item **items, size_t *n)
{
    *items = NULL;
    *n = 0;
    size_t in_batch = 0;
    engine_lock(eng);
    parent *p = op_parent_of(eng, ctx);
    for (task *t = p ? p->head : NULL; t; t = t->pnext) {
        if (strcmp(t->batch->id, batch) != 0)
            continue;
        in_batch++;
        if (task_status_active(t->status) && !t->cancelling)
            op_cancel_add(items, n, t);
    }
    engine_unlock(eng);
    if (*n)
        op_cancel_items(eng, *items, *n, false);
    return in_batch;
}

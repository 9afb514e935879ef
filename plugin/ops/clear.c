/* clear.c — see ops.h: clearing the caller's session's tasks. */
#include <errno.h>
#include <string.h>

#include "engine/isolate.h"

#include "base/util.h"
#include "ops/internal.h"

/* Why item id's abort failed, or a default. */
static const char *kept_reason(const cancel_item *items, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(items[i].id, id) == 0 && items[i].err)
            return items[i].err;
    return "it is still running";
}

void op_clear(engine *eng, const ocp_call_ctx *ctx, clear_result *r)
{
    memset(r, 0, sizeof *r);
    /* Cancel what runs, then remove what no longer runs: a task whose abort
     * failed is still running and stays, still cancellable, rather than
     * becoming an orphan. */
    engine_lock(eng);
    parent *p = op_parent_of(eng, ctx);
    size_t n = 0;
    cancel_item *items = NULL;
    worktree_item *worktrees = NULL; /* of every task here: those that stay are taken out below */
    for (task *t = p ? p->head : NULL; t; t = t->pnext) {
        if (task_status_active(t->status) && !t->cancelling)
            op_cancel_add(&items, &n, t);
        worktree_item_take(t, &worktrees);
    }
    engine_unlock(eng);
    r->cleared = op_cancel_items(eng, items, n, true);

    engine_lock(eng);
    p = op_parent_of(eng, ctx);
    for (task *t = p ? p->head : NULL; t;) {
        task *next = t->pnext;
        if (task_status_active(t->status)) {
            sb_printf(&r->kept, "\n- %s: aborting its session failed (%s); it is still running and was kept.", t->id,
                      kept_reason(items, n, t->id));
        } else {
            engine_drop_descendants(eng, t); /* what it launched goes with it */
            registry_remove(&eng->reg, t);
            r->cleared++;
        }
        t = next;
    }
    if (p && p->count == 0)
        registry_remove_parent(&eng->reg, p);
    engine_wake_waiters(eng);
    for (worktree_item **it = &worktrees; *it;) {
        worktree_item *cur = *it;
        if (registry_find(&eng->reg, cur->id)) { /* still running: its worktree stays with it */
            *it = cur->next;
            cur->next = NULL;
            worktree_items_free(cur);
        } else {
            it = &cur->next;
        }
    }
    engine_unlock(eng);
    /* After the tasks are gone, outside the lock: git may take a while. */
    isolate_release(eng, worktrees, &r->worktrees);
    r->worktree_kept = strstr(r->worktrees.buf ? r->worktrees.buf : "", "was kept at") != NULL;
    for (size_t i = 0; i < n; i++)
        r->stopped += items[i].rc == 0 || items[i].rc == -ENOENT;
    op_cancel_free(items, n);
}

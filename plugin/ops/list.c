/* list.c — see ops.h: listing the caller's session's tasks, and waiting for
 * several of them (background_block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/internal.h"
#include "text/texts.h"

static bool matches(const task *t, const list_filter *f)
{
    return !f || ((!f->status || strcmp(task_status_name(t->status), f->status) == 0) &&
                  (!f->batch || strcmp(t->batch->id, f->batch) == 0));
}

void op_list(engine *eng, const ocp_call_ctx *ctx, const list_filter *f, unsigned max_rows, bool lines, task_list *l)
{
    bool all = !f || (!f->status && !f->batch);
    memset(l, 0, sizeof *l);
    engine_lock(eng);
    parent *p = op_parent_of(eng, ctx);
    int64_t now = engine_now(eng);
    if (p && all) {
        /* The whole list: its counts are kept, so only the rows shown are
         * walked, however many tasks wait in the queue. */
        memcpy(l->counts, p->by_status, sizeof p->by_status);
        l->matched = p->count;
    }
    for (task *t = p ? p->head : NULL; t && (!all || l->shown < max_rows); t = t->pnext) {
        if (!matches(t, f))
            continue;
        if (l->shown < max_rows) {
            if ((l->shown & (l->shown - 1)) == 0) /* 0, 1, 2, 4, ...: room doubles */
                l->rows = xrealloc(l->rows, (l->shown ? 2 * l->shown : 1) * sizeof *l->rows);
            snap_take(&l->rows[l->shown++], t, now, lines ? SNAP_LINE : SNAP_STRINGS);
            if (task_usage(t))
                usage_add(&l->total, task_usage(t));
        }
        if (!all) {
            l->counts[t->status]++;
            l->matched++;
        }
    }
    engine_unlock(eng);
}

void task_list_free(task_list *l)
{
    for (unsigned i = 0; i < l->shown; i++)
        task_snap_free(&l->rows[i]);
    free(l->rows);
    memset(l, 0, sizeof *l);
}

/* ---- background_block ---------------------------------------------------- */

static void add_row(block_result *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->rows[i].id, id) == 0)
            return;
    r->rows = xrealloc(r->rows, (r->n + 1) * sizeof *r->rows);
    block_row *row = &r->rows[r->n++];
    memset(row, 0, sizeof *row);
    snprintf(row->id, sizeof row->id, "%s", id);
}

static bool all_settled(engine *eng, void *arg)
{
    const block_result *r = arg;
    for (size_t i = 0; i < r->n; i++)
        if (!op_task_settled(eng, (void *)r->rows[i].id))
            return false;
    return true;
}

/* Every task named (a batch: each of its tasks), or why not. [lock held] */
static block_end resolve(engine *eng, const ocp_call_ctx *ctx, const char *const *names, size_t n_names,
                         block_result *r)
{
    ENGINE_ASSERT_LOCKED(eng);
    for (size_t k = 0; k < n_names; k++) {
        r->bad = names[k];
        if (strncmp(names[k], "batch_", 6) != 0) {
            if (!op_find_own(eng, names[k], ctx))
                return BLOCK_NOT_FOUND;
            add_row(r, names[k]);
            continue;
        }
        parent *p = op_parent_of(eng, ctx);
        bool any = false;
        for (task *t = p ? p->head : NULL; t; t = t->pnext) {
            if (strcmp(t->batch->id, names[k]) == 0) {
                add_row(r, t->id);
                any = true;
            }
        }
        if (!any)
            return BLOCK_NO_BATCH;
    }
    r->bad = NULL;
    return r->n ? BLOCK_WAITED : BLOCK_EMPTY;
}

void op_block(engine *eng, ocp_call_ctx *ctx, const char *const *names, size_t n_names, int64_t wait_ms,
              block_result *r)
{
    memset(r, 0, sizeof *r);
    engine_lock(eng);
    r->end = resolve(eng, ctx, names, n_names, r);
    if (r->end != BLOCK_WAITED) {
        engine_unlock(eng);
        return;
    }
    r->wait = all_settled(eng, r) ? WAIT_DONE : engine_wait(eng, ctx, mono_ms() + wait_ms, all_settled, r);
    int64_t now = engine_now(eng);
    for (size_t i = 0; i < r->n; i++) {
        task *t = registry_find(&eng->reg, r->rows[i].id);
        r->rows[i].gone = !t;
        if (t)
            snap_take(&r->rows[i].snap, t, now, SNAP_LINE);
    }
    engine_unlock(eng);
}

void block_result_free(block_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        task_snap_free(&r->rows[i].snap);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

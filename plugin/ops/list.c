/* list.c — see ops.h: listing the caller's session's tasks. */
#include <string.h>

#include "ops/ops.h"
#include "text/texts.h"

static bool matches(const task *t, const list_filter *f)
{
    return !f || ((!f->status || strcmp(task_status_name(t->status), f->status) == 0) &&
                  (!f->batch || strcmp(t->batch->id, f->batch) == 0));
}

unsigned op_list(engine *eng, const ocp_call_ctx *ctx, const list_filter *f, unsigned max_lines, list_line_fn line,
                 strbuf *lines, unsigned counts[TASK_STATUS_COUNT], usage *total)
{
    bool all = !f || (!f->status && !f->batch);
    unsigned matched = 0, shown = 0;
    memset(counts, 0, TASK_STATUS_COUNT * sizeof *counts);
    if (total)
        memset(total, 0, sizeof *total);
    engine_lock(eng);
    parent *p = op_parent_of(eng, ctx);
    int64_t now = engine_now(eng);
    if (p && all) {
        /* The whole list: its counts are kept, so only the lines shown are
         * walked, however many tasks wait in the queue. */
        memcpy(counts, p->by_status, sizeof p->by_status);
        matched = p->count;
    }
    for (task *t = p ? p->head : NULL; t && (!all || shown < max_lines); t = t->pnext) {
        if (!matches(t, f))
            continue;
        if (shown < max_lines) {
            line(lines, t, now);
            if (total && task_usage(t))
                usage_add(total, task_usage(t));
            shown++;
        }
        if (!all) {
            counts[t->status]++;
            matched++;
        }
    }
    engine_unlock(eng);
    return matched;
}

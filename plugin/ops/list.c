/* list.c — see ops.h: listing the caller's session's tasks. */
#include <string.h>

#include "ops/ops.h"
#include "text/texts.h"

unsigned op_list(ocbg *o, const ocp_call_ctx *ctx, const list_filter *f, list_line_fn line, strbuf *lines,
                 unsigned counts[TASK_STATUS_COUNT], usage *total)
{
    unsigned shown = 0;
    memset(counts, 0, TASK_STATUS_COUNT * sizeof *counts);
    if (total)
        memset(total, 0, sizeof *total);
    pthread_mutex_lock(&o->mu);
    parent *p = op_parent_of(o, ctx);
    int64_t now = ocbg_now(o);
    for (task *t = p ? p->head : NULL; t; t = t->pnext) {
        if (f && f->status && strcmp(task_status_name(t->status), f->status) != 0)
            continue;
        if (f && f->batch && strcmp(t->batch->id, f->batch) != 0)
            continue;
        line(lines, t, now);
        counts[t->status]++;
        if (total && task_usage(t))
            usage_add(total, task_usage(t));
        shown++;
    }
    pthread_mutex_unlock(&o->mu);
    return shown;
}

/* panel.c — see ops.h: what the person asks through the host's UI (stop a
 * task; its detail: ops/output.c), by the same paths as the model's tools. */
#include <errno.h>

#include "base/util.h"
#include "ops/internal.h"

int op_panel_stop(engine *eng, const char *id, strbuf *out)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    if (!t) {
        engine_unlock(eng);
        sb_printf(out, "No task %s.", id);
        return -ENOENT;
    }
    if (!task_status_active(t->status) || t->cancelling) {
        sb_printf(out, "Task %s %s.", id, t->cancelling ? "is already being stopped" : "has already ended");
        engine_unlock(eng);
        return -EINVAL;
    }
    t->stopped_by_user = true; /* before the abort: the ending it causes is the user's */
    cancel_item *items = NULL;
    size_t n = 0;
    op_cancel_add(&items, &n, t);
    engine_unlock(eng);
    op_cancel_items(eng, items, n, false);
    int rc = 0;
    if (items[0].rc != 0 && items[0].rc != -ENOENT) {
        engine_lock(eng);
        t = registry_find(&eng->reg, id);
        if (t && task_status_active(t->status))
            t->stopped_by_user = false; /* it runs on */
        engine_unlock(eng);
        sb_printf(out, "Could not stop %s: %s", id, items[0].err ? items[0].err : "the host could not abort it");
        rc = -EIO;
    }
    op_cancel_free(items, n);
    return rc;
}

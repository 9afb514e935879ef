/* toast.c — notices to the user (toast.h). */
#include "engine/toast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void toast_note(engine *o, const char *task_id, toast_kind kind, bool due)
{
    ENGINE_ASSERT_LOCKED(o);
    toast_state *ts = &o->toast;
    if (!o->api.host.notify_user)
        return;
    const task *t = registry_find(&o->reg, task_id);
    const char *what = t && t->description ? t->description : task_id;
    static const char *const lines[] = {[TOAST_COMPLETED] = "Background task completed",
                                        [TOAST_FAILED] = "Background task failed",
                                        [TOAST_WAITING] = "Background task waits for your permission"};
    static const int levels[] = {[TOAST_COMPLETED] = OCP_NOTICE_SUCCESS,
                                 [TOAST_FAILED] = OCP_NOTICE_ERROR,
                                 [TOAST_WAITING] = OCP_NOTICE_WARNING};
    if (!ts->first)
        ts->first = xasprintf("%s: %.*s%s", lines[kind], ECHO(what));
    ts->due |= due;
    if (levels[kind] > ts->level)
        ts->level = levels[kind];
    if (kind == TOAST_COMPLETED)
        ts->completed++;
    else if (kind == TOAST_FAILED)
        ts->failed++;
    else
        ts->waiting++;
}

void toast_note_notice(engine *o, const notice *n, bool woke)
{
    ENGINE_ASSERT_LOCKED(o);
    const task *t = registry_find(&o->reg, n->task_id);
    if (n->permission_request)
        toast_note(o, n->task_id, TOAST_WAITING, true);
    else if (t)
        toast_note(o, n->task_id, t->status == TASK_COMPLETED ? TOAST_COMPLETED : TOAST_FAILED, woke);
}

int64_t toast_due(const engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    const toast_state *ts = &o->toast;
    if (ts->warning) /* logged even when the host cannot show it */
        return 1;
    if (!o->api.host.notify_user || !ts->first || !ts->due)
        return 0;
    return ts->shown_mono ? ts->shown_mono + TOAST_INTERVAL_MS : 1;
}

/* "3 background tasks: 2 completed, 1 failed, 1 waits for your permission" */
static char *summary(const toast_state *ts)
{
    unsigned n = ts->completed + ts->failed + ts->waiting;
    if (n <= 1)
        return xstrdup(ts->first);
    strbuf sb = {0};
    sb_printf(&sb, "%u background tasks:", n);
    const char *sep = " ";
    if (ts->completed) {
        sb_printf(&sb, "%s%u completed", sep, ts->completed);
        sep = ", ";
    }
    if (ts->failed) {
        sb_printf(&sb, "%s%u failed", sep, ts->failed);
        sep = ", ";
    }
    if (ts->waiting)
        sb_printf(&sb, "%s%u wait%s for your permission", sep, ts->waiting, ts->waiting == 1 ? "s" : "");
    return sb_take(&sb);
}

void toast_flush(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    toast_state *ts = &o->toast;
    int64_t due = toast_due(o), now = mono_ms();
    if (due == 0 || now < due)
        return;
    char *message;
    int level;
    bool warned = ts->warning != NULL;
    if (warned) {
        message = ts->warning;
        ts->warning = NULL;
        level = OCP_NOTICE_WARNING;
    } else {
        message = summary(ts);
        level = ts->level;
        free(ts->first);
        ts->first = NULL;
        ts->completed = ts->failed = ts->waiting = 0;
        ts->level = 0;
        ts->due = false;
    }
    ts->shown_mono = now;
    ts->shown++;
    engine_unlock(o);
    if (warned)
        hc_log(&o->api, OCP_LOG_WARN, "%s", message);
    hc_notify_user(&o->api, (enum ocp_notice_level)level, message);
    free(message);
    engine_lock(o);
}

void toast_free(engine *o)
{
    free(o->toast.first);
    free(o->toast.warning);
    o->toast.first = o->toast.warning = NULL;
}

/* toast.c — toasts to the person (toast.h). */
#include "engine/toast.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void toast_note(engine *eng, const char *task_id, toast_kind kind, bool due)
{
    ENGINE_ASSERT_LOCKED(eng);
    toast_state *ts = &eng->toast;
    if (!hostapi_has_toasts(&eng->api))
        return;
    const task *t = registry_find(&eng->reg, task_id);
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

void toast_note_notification(engine *eng, const notification *n, bool woke)
{
    ENGINE_ASSERT_LOCKED(eng);
    const task *t = registry_find(&eng->reg, n->task_id);
    if (n->permission_request)
        toast_note(eng, n->task_id, TOAST_WAITING, true);
    else if (t && t->status != TASK_CANCELLED) /* the person or the model stopped it: nothing to tell them */
        toast_note(eng, n->task_id, t->status == TASK_COMPLETED ? TOAST_COMPLETED : TOAST_FAILED, woke);
}

int64_t toast_due(const engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    const toast_state *ts = &eng->toast;
    if (ts->warning) /* logged even when the host cannot show it */
        return 1;
    if (!hostapi_has_toasts(&eng->api) || !ts->first || !ts->due)
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

void toast_flush(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    toast_state *ts = &eng->toast;
    int64_t due = toast_due(eng), now = mono_ms();
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
    engine_unlock(eng);
    if (warned)
        hostapi_log(&eng->api, OCP_LOG_WARN, "%s", message);
    hostapi_notify_user(&eng->api, (enum ocp_notice_level)level, message);
    free(message);
    engine_lock(eng);
}

void toast_free(engine *eng)
{
    free(eng->toast.first);
    free(eng->toast.warning);
    eng->toast.first = eng->toast.warning = NULL;
}

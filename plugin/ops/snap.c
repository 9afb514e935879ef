/* snap.c — see ops.h and ops/internal.h: a task copied for a face to word
 * without the lock, and a task made ready to be read whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/persist.h"
#include "model/monitor_task.h"
#include "ops/internal.h"
#include "text/texts.h"

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void take_texts(task_snap *s, const task *t)
{
    s->result = dup_or_null(t->result);
    if (t->shell) {
        s->output = shell_output_text(t->shell, SNAP_OUTPUT_CHARS);
        shell_describe_exit(t->shell, s->exit_how, sizeof s->exit_how);
    }
    if (t->wt) {
        strbuf wt = {0};
        format_worktree(&wt, t);
        s->worktree = wt.buf ? wt.buf : xstrdup("");
    }
}

void snap_take(task_snap *s, const task *t, int64_t now, unsigned what)
{
    memset(s, 0, sizeof *s);
    memcpy(s->id, t->id, sizeof s->id);
    s->type = t->type;
    s->status = t->status;
    s->tool_calls = t->tool_calls;
    s->awaiting = t->awaiting;
    s->wake_parked = t->wake_parked;
    s->monitor = task_is_monitor(t);
    const usage *u = task_usage(t);
    if (u) {
        s->has_usage = true;
        s->use = *u;
    }
    if (t->shell) {
        s->exited = t->shell->exited;
        s->exit_code = t->shell->exit_code;
        s->term_signal = t->shell->term_signal;
        if (what & (SNAP_STRINGS | SNAP_TEXTS))
            s->command = xstrdup(t->shell->command);
    }
    s->started_ms = t->started_ms;
    s->runtime_ms = task_runtime(t, now);
    if (what & (SNAP_STRINGS | SNAP_TEXTS)) {
        s->description = dup_or_null(t->description);
        s->session = dup_or_null(t->session_id);
        s->asking = dup_or_null(task_permission_what(t));
        s->error = dup_or_null(t->error);
    }
    if (what & SNAP_TEXTS)
        take_texts(s, t);
    strbuf text = {0};
    if (what & SNAP_REPORT)
        format_report(&text, t, now);
    if (what & SNAP_LINE)
        format_list_line(&text, t, now);
    s->text = text.buf;
}

void task_snap_free(task_snap *s)
{
    free(s->description);
    free(s->command);
    free(s->session);
    free(s->asking);
    free(s->error);
    free(s->result);
    free(s->output);
    free(s->worktree);
    free(s->text);
    memset(s, 0, sizeof *s);
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

task *op_read_begin(engine *eng, const char *id)
{
    ENGINE_ASSERT_LOCKED(eng);
    char key[TASK_ID_SIZE];
    snprintf(key, sizeof key, "%s", id); /* id may be the task's own, which a settle can free */
    task *t = op_worktree_settle(eng, key);
    return t ? persist_texts(eng, t) : NULL; /* a finished task's texts may be in the store only */
}

void op_read_done(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    persist_drop_copies(eng, t);
}

/* user.c — see ops.h: what the person asks through the host's UI (stop a
 * task, read its detail), by the same paths as the model's tools. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/persist.h"
#include "ops/ops.h"
#include "text/texts.h"

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

/* The newest tool names of an active task, newest first (at most max). */
static void add_recent(cJSON *obj, const task *t, unsigned max)
{
    const char *names[RECENT_TOOLS];
    unsigned n = task_recent_tools(t, names, max < RECENT_TOOLS ? max : RECENT_TOOLS);
    if (n)
        cJSON_AddItemToObject(obj, "recent", cJSON_CreateStringArray(names, (int)n));
}

/* The last max characters of s. */
static void add_tail(cJSON *d, const char *name, const char *s, size_t max)
{
    size_t len = strlen(s), chars = utf8_count(s, len);
    cJSON_AddStringToObject(d, name, chars <= max ? s : s + utf8_offset(s, len, chars - max));
}

static void add_texts(cJSON *d, const task *t)
{
    if (t->type == TASK_SHELL && t->shell) {
        char *text = shell_output_text(t->shell, DETAIL_CHARS); /* already cut, with its note */
        cJSON_AddStringToObject(d, "output", text);
        free(text);
        if (t->shell->exited && !t->shell->term_signal)
            cJSON_AddNumberToObject(d, "exit", t->shell->exit_code);
    } else if (t->result && t->status != TASK_ERROR) {
        add_tail(d, "answer", t->result, DETAIL_CHARS);
    }
    if (t->error && (t->status == TASK_ERROR || t->status == TASK_CANCELLED))
        cJSON_AddStringToObject(d, "error", t->error);
    if (t->wt) {
        cJSON *w = cJSON_AddObjectToObject(d, "worktree");
        cJSON_AddStringToObject(w, "path", t->wt->path);
        cJSON_AddStringToObject(w, "branch", t->wt->branch);
        if (t->wt->report && !task_status_active(t->status))
            cJSON_AddStringToObject(w, "report", t->wt->report);
    }
}

int op_panel_detail(engine *eng, const char *id, strbuf *out)
{
    engine_lock(eng);
    /* An isolated task's report, read here if its notification job has not
     * read it yet: the view saying it ended can reach the UI first, and the
     * report's arrival changes no view to ask again on. */
    task *t = op_worktree_settle(eng, id);
    if (t)
        t = persist_texts(eng, t); /* a finished task's texts may be in the store only */
    if (!t) {
        engine_unlock(eng);
        sb_printf(out, "No task %s.", id);
        return -ENOENT;
    }
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "id", t->id);
    cJSON_AddStringToObject(d, "status", task_status_name(t->status));
    add_texts(d, t);
    const char *waiting = task_permission_what(t);
    if (waiting)
        cJSON_AddStringToObject(d, "waiting", waiting);
    add_recent(d, t, RECENT_TOOLS);
    if (t->tool_calls)
        cJSON_AddNumberToObject(d, "tools", t->tool_calls);
    const usage *u = task_usage(t);
    if (u) {
        cJSON_AddNumberToObject(d, "tokens", (double)usage_tokens(u));
        cJSON_AddNumberToObject(d, "cost", u->cost);
    }
    persist_drop_copies(eng, t);
    engine_unlock(eng);
    char *text = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    sb_puts(out, text);
    free(text);
    return 0;
}

/* output.c — see ops.h: reading one of the caller's tasks (background_output,
 * TaskOutput) and the person's detail of any task (ui_request detail). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops/internal.h"
#include "text/texts.h"

/* Wait, as op_output's caller, for active task *t: r says how it went when
 * the call ends here. [lock held] false: the call ends (r->end set). */
static bool output_wait(engine *eng, ocp_call_ctx *ctx, const output_req *req, task **t, output_result *r)
{
    ENGINE_ASSERT_LOCKED(eng);
    char key[TASK_ID_SIZE];
    memcpy(key, (*t)->id, sizeof key);
    r->wait = op_await(eng, ctx, key, mono_ms() + req->wait_ms, false, t);
    if (!*t) {
        memcpy(r->snap.id, key, sizeof key);
        r->end = OUTPUT_REMOVED_WAITING;
        return false;
    }
    if (r->wait == WAIT_CANCELLED || r->wait == WAIT_SHUTDOWN) {
        snap_take(&r->snap, *t, engine_now(eng), 0);
        r->end = OUTPUT_WAIT_STOPPED;
        return false;
    }
    return true;
}

void op_output(engine *eng, ocp_call_ctx *ctx, const char *id, const output_req *req, output_result *r)
{
    memset(r, 0, sizeof *r);
    engine_lock(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t) {
        engine_unlock(eng);
        r->end = OUTPUT_NOT_FOUND;
        return;
    }
    r->was_active = task_status_active(t->status);
    if (req->block && r->was_active && !output_wait(eng, ctx, req, &t, r)) {
        engine_unlock(eng);
        return;
    }
    char key[TASK_ID_SIZE];
    memcpy(key, t->id, sizeof key);
    t = op_read_begin(eng, key); /* an isolated task: what it did in its worktree, read once per run */
    if (!t) {
        engine_unlock(eng);
        memcpy(r->snap.id, key, sizeof key);
        r->end = OUTPUT_REMOVED;
        return;
    }
    int64_t now = engine_now(eng);
    snap_take(&r->snap, t, now, req->report ? SNAP_REPORT : SNAP_TEXTS); /* the report holds the texts */
    op_read_done(eng, t);
    /* A result read; a blocking call that returns the result replaces the
     * notification. */
    bool read = t->status == TASK_COMPLETED && (!req->read_agents_only || t->type != TASK_SHELL);
    bool delivered = req->block && !task_status_active(t->status);
    if (read || delivered || !req->read_agents_only)
        op_shown(eng, t, now, read, delivered);
    engine_unlock(eng);
    r->end = OUTPUT_SHOWN;
}

/* ---- the person's detail of a task ---- */

/* The newest tool names of a live task, newest first (at most max). */
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
    task *t = op_read_begin(eng, id);
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
    op_read_done(eng, t);
    engine_unlock(eng);
    char *text = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    sb_puts(out, text);
    free(text);
    return 0;
}

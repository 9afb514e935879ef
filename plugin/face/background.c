/* background.c — the OpenCode face: background_task, background_output,
 * background_cancel, background_list, background_clear */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "ops/ops.h"
#include "face/tools.h"

/* ---- background_task --------------------------------------------------- */

/* Launch mode needs a prompt; description and agent have defaults (the
 * schema says so: a model that sends only what it requires must succeed),
 * but given, they must not be blank. Resume mode words its own errors. */
static bool launch_args_ok(const cJSON *args, strbuf *out)
{
    static const char *const need[] = {"prompt", "description", "agent"};
    for (size_t i = 0; i < 3; i++) {
        const char *v = arg_str(args, need[i]);
        if (!v && i == 0) {
            sb_printf(out, "background_task: missing required argument '%s' (required when launching a task)", need[i]);
            return false;
        }
        if (v && blank(v)) {
            sb_printf(out, "background_task: argument '%s' must not be empty", need[i]);
            return false;
        }
    }
    return true;
}

/* A truthy resume: a non-empty string. */
static const char *resume_arg(const cJSON *args)
{
    const char *r = arg_str(args, "resume");
    return r && !blank(r) ? r : NULL;
}

/* The default description: the prompt's first line, at most
 * DEFAULT_DESCRIPTION_CHARS characters. malloc'd. */
#define DEFAULT_DESCRIPTION_CHARS 48
static char *default_description(const char *prompt)
{
    while (*prompt == ' ' || *prompt == '\n' || *prompt == '\t' || *prompt == '\r')
        prompt++;
    size_t line = strcspn(prompt, "\r\n");
    size_t keep = utf8_offset(prompt, line, DEFAULT_DESCRIPTION_CHARS);
    return xasprintf("%.*s%s", (int)keep, prompt, keep < line ? "…" : "");
}

static int launch(engine *eng, const cJSON *args, ocp_call_ctx *ctx, bool fork, strbuf *out)
{
    char *described = arg_str(args, "description") ? NULL : default_description(arg_str(args, "prompt"));
    const char *description = described ? described : arg_str(args, "description");
    const char *agent = arg_str(args, "agent") ? arg_str(args, "agent") : DEFAULT_AGENT;
    launched l = {0};
    launch_req req = {description, arg_str(args, "prompt"), agent, fork, false, 0, NULL};
    int rc = launch_in_budget(eng, args, "background_task", 1000, "seconds", ctx, &req, &l, out);
    if (rc != 0) {
        free(described);
        return rc;
    }
    sb_printf(out,
              "Background task launched%s.\nTask ID: %s%s\nBatch: %s\nDescription: %.*s%s\nAgent: %.*s%s\n"
              "Status: %s\n%s%s%s\nYou will be notified when it finishes; there is no need to poll. "
              "To check on it: background_output(task_id=\"%s\").",
              fork ? " with a fork of this conversation's context" : "", l.id, fork ? " (forked)" : "", l.batch,
              ECHO_TEXT(description), ECHO(agent), l.queued.len ? "pending" : "running",
              l.queued.len ? l.queued.buf : "", l.queued.len ? "\n" : "", l.worktree.len ? l.worktree.buf : "", l.id);
    sb_free(&l.queued);
    sb_free(&l.worktree);
    free(described);
    return 0;
}

int tool_background_task(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *resume = resume_arg(args);
    bool fork = arg_bool(args, "fork", false);
    if (resume && fork) {
        sb_puts(out, "background_task: fork and resume are mutually exclusive: fork starts a new task from this "
                     "conversation's context, resume continues a finished task. Use one of them.");
        return -EINVAL;
    }
    if (resume) {
        const char *warning = arg_str(args, "description") || arg_str(args, "agent")
                                  ? "Note: description and agent are ignored when resuming a task.\n"
                              : cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "timeout"))
                                  ? "Note: timeout is ignored when resuming a task: it keeps the one it was "
                                    "launched with.\n"
                                  : NULL;
        return resume_task(eng, resume, arg_str(args, "prompt"), false, 0, ctx, warning, out);
    }
    if (!launch_args_ok(args, out))
        return -EINVAL;
    return launch(eng, args, ctx, fork, out);
}

/* ---- background_output ------------------------------------------------- */

int tool_background_output(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    bool block = arg_bool(args, "block", false);
    double timeout;
    if (!wait_timeout_arg(args, "background_output", &timeout, out))
        return -EINVAL;
    output_req req = {block, (int64_t)(timeout * 1000), true, false};
    output_result r;
    op_output(eng, ctx, id, &req, &r);
    int rc = 0;
    switch (r.end) {
    case OUTPUT_NOT_FOUND:
        rc = task_not_found(out, id);
        break;
    case OUTPUT_REMOVED_WAITING:
        format_task_removed(out, r.snap.id, true);
        rc = -ENOENT;
        break;
    case OUTPUT_WAIT_STOPPED:
        sb_printf(out, "%s; task %s is still %s in the background.\n", wait_stopped_words(r.wait), r.snap.id,
                  task_status_name(r.snap.status));
        rc = -ECANCELED;
        break;
    case OUTPUT_REMOVED:
        if (r.wait == WAIT_TIMEOUT)
            sb_printf(out, "Timed out after waiting %gs: the task is still running.\n\n", timeout);
        format_task_removed(out, r.snap.id, false);
        rc = -ENOENT;
        break;
    case OUTPUT_SHOWN:
        if (r.wait == WAIT_TIMEOUT)
            sb_printf(out, "Timed out after waiting %gs: the task is still running.\n\n", timeout);
        sb_put_owned(out, r.snap.text); /* no copy when it is the whole answer */
        r.snap.text = NULL;
        break;
    }
    task_snap_free(&r.snap);
    return rc;
}

/* ---- background_cancel ------------------------------------------------- */

static int cancel_batch(engine *eng, const char *batch, ocp_call_ctx *ctx, strbuf *out)
{
    cancel_item *items;
    size_t n;
    size_t in_batch = op_cancel_batch(eng, ctx, batch, &items, &n);
    if (in_batch == 0) {
        sb_printf(out, "Batch not found: %.*s%s. Use background_list to see available tasks.", ECHO(batch));
        return -ENOENT;
    }
    if (n == 0) {
        sb_printf(out, "No running tasks in batch %s: all %zu of its tasks have already finished.", batch, in_batch);
        return -EINVAL;
    }
    size_t cancelled = 0;
    strbuf failures = {0};
    for (size_t i = 0; i < n; i++) {
        if (items[i].rc == 0 || items[i].rc == -ENOENT)
            cancelled++;
        else
            sb_printf(&failures, "\n- %s: could not abort its session (%s); it is still running.", items[i].id,
                      items[i].err);
    }
    sb_printf(out, "Cancelled %zu running task%s of batch %s:", cancelled, cancelled == 1 ? "" : "s", batch);
    for (size_t i = 0; i < n; i++)
        if (items[i].rc == 0 || items[i].rc == -ENOENT)
            sb_printf(out, " %s", items[i].id);
    if (failures.len)
        sb_puts(out, failures.buf);
    sb_free(&failures);
    int rc = cancelled ? 0 : items[0].rc;
    op_cancel_free(items, n);
    return rc;
}

int tool_background_cancel(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    if (strncmp(id, "batch_", 6) == 0)
        return cancel_batch(eng, id, ctx, out);
    cancel_result r;
    op_cancel(eng, ctx, id, false, &r);
    int rc = r.rc;
    switch (r.end) {
    case CANCEL_NOT_FOUND:
        rc = task_not_found(out, id);
        break;
    case CANCEL_ENDED:
        sb_printf(out, "Cannot cancel task %s: its status is %s. Only running tasks can be cancelled.", id,
                  task_status_name(r.snap.status));
        rc = -EINVAL;
        break;
    case CANCEL_ALREADY:
        sb_printf(out, "Task %s is already being cancelled.", id);
        rc = -EINVAL;
        break;
    case CANCEL_DONE:
        if (rc == 0)
            sb_printf(out, "Task %s cancelled: %.*s%s\n%s; status: cancelled.", id, ECHO_TEXT(r.snap.description),
                      r.snap.session ? "Its session was aborted" : "Its command was stopped");
        else
            sb_printf(out, "Could not cancel task %s: aborting its session failed (%s). It is still running.", id,
                      r.err);
        break;
    }
    cancel_result_free(&r);
    return rc;
}

/* ---- background_list --------------------------------------------------- */

int tool_background_list(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *status = arg_str(args, "status");
    const char *batch = arg_str(args, "batch_id");
    list_filter f = {status, batch};
    task_list l;
    op_list(eng, ctx, &f, LIST_MAX_LINES, true, &l);
    unsigned matched = l.matched;
    if (matched == 0) {
        sb_puts(out, "No background tasks found");
        if (status || batch)
            sb_printf(out, " (filter:%s%.*s%s%s%.*s%s)", status ? " status " : "", ECHO(status ? status : ""),
                      batch ? " batch " : "", ECHO(batch ? batch : ""));
        task_list_free(&l);
        return 0;
    }
    sb_puts(out, "Background tasks of this session (newest first):\n");
    for (unsigned i = 0; i < l.shown; i++)
        sb_puts(out, l.rows[i].text);
    if (matched > LIST_MAX_LINES)
        sb_printf(out, "… and %u older (the newest %d are shown; narrow with status or batch_id)\n",
                  matched - LIST_MAX_LINES, LIST_MAX_LINES);
    sb_printf(out, "\nTotal: %u task%s", matched, matched == 1 ? "" : "s");
    const char *sep = " (";
    for (int s = 0; s < TASK_STATUS_COUNT; s++) {
        if (l.counts[s]) {
            sb_printf(out, "%s%u %s", sep, l.counts[s], task_status_name((task_status)s));
            sep = ", ";
        }
    }
    sb_puts(out, ")");
    put_usage_total(out, &l.total);
    task_list_free(&l);
    return 0;
}

/* ---- background_clear -------------------------------------------------- */

int tool_background_clear(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    (void)args;
    clear_result r;
    op_clear(eng, ctx, &r);
    size_t cleared = r.cleared, stopped = r.stopped;
    strbuf kept = r.kept;
    int rc = 0;
    if (cleared == 0 && kept.len == 0) {
        sb_puts(out, "No background tasks to clear.");
    } else {
        sb_printf(out, "Cleared %zu background task%s of this session (%zu running task%s aborted).", cleared,
                  cleared == 1 ? "" : "s", stopped, stopped == 1 ? " was" : "s were");
        if (kept.len) {
            sb_puts(out, kept.buf);
            rc = -EIO;
        }
        if (r.worktrees.len)
            sb_printf(out, "\nWorktrees (ocbg never merges or deletes a branch: that is yours to do):%s",
                      r.worktrees.buf);
    }
    sb_free(&kept);
    sb_free(&r.worktrees);
    return rc;
}

/* format.c — see format.h. */
#include "text/texts.h"
#include "model/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/monitor_task.h"

static void put_markers(strbuf *out, const task *t)
{
    if (t->resume_count > 0)
        sb_puts(out, " (resumed)");
    if (t->forked)
        sb_puts(out, " (forked)");
}

static void put_progress(strbuf *out, const task *t, int64_t now)
{
    sb_printf(out, "Progress: %u tool call%s", t->tool_calls, t->tool_calls == 1 ? "" : "s");
    const task_active *p = t->active;
    unsigned n = !p ? 0 : p->recent_tools_next < RECENT_TOOLS ? p->recent_tools_next : RECENT_TOOLS;
    if (n) {
        sb_puts(out, "; recent: ");
        for (unsigned i = 0; i < n; i++) {
            unsigned slot = (p->recent_tools_next - 1 - i) % RECENT_TOOLS;
            sb_printf(out, "%s%s", i ? ", " : "", p->recent_tools[slot]);
        }
    }
    char ago[32], at[32];
    format_duration(ago, sizeof ago, now - t->last_update_ms);
    format_time(at, sizeof at, t->last_update_ms);
    sb_printf(out, "\nLast update: %s ago (%s)\n", ago, at);
}

char *format_permission_notification(const task *t)
{
    return xasprintf(
        "[ocbg] Background task %s \"%s\" (agent: %s) is waiting for permission: %s\n"
        "The user must answer the host's permission request (asked in the task's session %s); the task goes on "
        "when they do. Status: background_output(task_id=\"%s\").",
        t->id, t->description ? t->description : "", t->agent ? t->agent : "", task_permission_what(t),
        t->session_id ? t->session_id : "", t->id);
}

void format_count(char *out, size_t out_size, uint64_t n)
{
    char digits[24];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    size_t at = 0;
    for (int i = 0; i < len && at + 1 < out_size; i++) {
        if (i > 0 && (len - i) % 3 == 0 && at + 2 < out_size)
            out[at++] = ',';
        out[at++] = digits[i];
    }
    if (out_size)
        out[at < out_size ? at : out_size - 1] = '\0';
}

void format_task_removed(strbuf *out, const char *id, bool while_waiting)
{
    sb_printf(out, "Task %s was removed%s (cleared, or its parent session ended).", id,
              while_waiting ? " while waiting" : "");
}

const char *wait_stopped_words(wait_result w)
{
    return w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down";
}

void format_usd(char *out, size_t out_size, double usd)
{
    snprintf(out, out_size, usd < 1 ? "$%.4f" : "$%.2f", usd);
}

const usage *task_usage(const task *t)
{
    return t->usage && !usage_is_zero(&t->usage->total) ? &t->usage->total : NULL;
}

void format_usage(strbuf *out, const usage *u)
{
    char total[32], in[32], o[32], r[32], cr[32], cw[32], usd[48];
    format_count(total, sizeof total, usage_tokens(u));
    format_count(in, sizeof in, u->input);
    format_count(o, sizeof o, u->output);
    format_count(r, sizeof r, u->reasoning);
    format_count(cr, sizeof cr, u->cache_read);
    format_count(cw, sizeof cw, u->cache_write);
    format_usd(usd, sizeof usd, u->cost);
    sb_printf(out, "%s tokens (in %s, out %s, reasoning %s, cache read %s, write %s), %s", total, in, o, r, cr, cw,
              usd);
}

/* "Usage: <phrase>\n" when t has usage. */
static void put_usage_line(strbuf *out, const task *t)
{
    const usage *u = task_usage(t);
    if (!u)
        return;
    sb_puts(out, "Usage: ");
    format_usage(out, u);
    sb_puts(out, "\n");
}

void format_worktree(strbuf *out, const task *t)
{
    if (!t->wt)
        return;
    sb_printf(out, "Worktree: %s (branch %s; ocbg never merges it: review the branch, then merge it or not)\n",
              t->wt->path, t->wt->branch);
    if (t->wt->report && !task_status_active(t->status))
        sb_puts(out, t->wt->report);
}

void format_report(strbuf *out, const task *t, int64_t now)
{
    char dur[32];
    format_duration(dur, sizeof dur, task_runtime(t, now));
    sb_printf(out, "Task %s", t->id);
    put_markers(out, t);
    sb_printf(out, ": %s\nDescription: %s\n", task_status_name(t->status), t->description ? t->description : "");
    if (t->type == TASK_SHELL)
        sb_printf(out, "Command: %s\n", t->shell->command);
    else
        sb_printf(out, "Agent: %s\n", t->agent ? t->agent : "");
    sb_printf(out, "Batch: %s\n", t->batch->id);
    if (t->resume_count > 0)
        sb_printf(out, "Resumed: %u time%s\n", t->resume_count, t->resume_count == 1 ? "" : "s");
    if (t->type == TASK_SHELL && t->status == TASK_PENDING) {
        sb_puts(out, "Waiting for a free slot to start.\n");
        return;
    }
    put_usage_line(out, t);
    format_worktree(out, t);
    if (t->type == TASK_SHELL) {
        char how[96];
        shell_describe_exit(t->shell, how, sizeof how);
        char *text = shell_output_text(t->shell, SHELL_REPORT_CHARS);
        sb_printf(out, "%s: %s\nExit: %s\n", task_status_active(t->status) ? "Running for" : "Duration", dur, how);
        if (t->status == TASK_ERROR && t->error)
            sb_printf(out, "Error: %s\n", t->error);
        sb_printf(out, "\nOutput:\n%s\n", text);
        free(text);
        return;
    }
    switch (t->status) {
    case TASK_PENDING:
        sb_puts(out, "Waiting for a free slot to start.\n");
        break;
    case TASK_RUNNING:
    case TASK_RESUMED:
        sb_printf(out, "Running for: %s\n", dur);
        const char *asking = task_permission_what(t);
        if (asking)
            sb_printf(out, "Waiting for permission: %s (the user must answer it)\n", asking);
        if (t->wake_parked)
            sb_puts(out, "The background tasks it launched have ended; it continues when a slot frees.\n");
        else if (t->awaiting)
            sb_puts(out, "Waiting for the background tasks it launched to end.\n");
        put_progress(out, t, now);
        break;
    case TASK_COMPLETED:
        sb_printf(out, "Duration: %s\n\nResult:\n%s\n", dur, t->result ? t->result : "");
        break;
    case TASK_ERROR:
        sb_printf(out, "Duration: %s\n\nError: %s\n", dur, t->error ? t->error : "unknown error");
        break;
    case TASK_CANCELLED:
        sb_printf(out, "Cancelled after %s%s.\n", dur, t->stopped_by_user ? ", stopped by the user" : "");
        break;
    }
}

void format_list_line(strbuf *out, const task *t, int64_t now)
{
    char dur[32];
    format_duration(dur, sizeof dur, task_runtime(t, now));
    sb_printf(out, "- %s", t->id);
    put_markers(out, t);
    if (t->type == TASK_SHELL)
        sb_printf(out, " | %s | %s | %s | %s | %s", t->description ? t->description : "",
                  task_is_monitor(t) ? "monitor" : "shell", task_status_name(t->status), dur, t->batch->id);
    else {
        const char *asking = task_permission_what(t);
        sb_printf(out, " | %s | agent: %s | %s%s%s | %s | %s", t->description ? t->description : "",
                  t->agent ? t->agent : "", task_status_name(t->status), asking ? ", waiting for permission: " : "",
                  asking ? asking : "", dur, t->batch->id);
    }
    const usage *u = task_usage(t);
    if (u) {
        sb_puts(out, " | Usage: ");
        format_usage(out, u);
    }
    sb_puts(out, "\n");
}

/* body and a newline, cut to max_chars characters (never inside a UTF-8
 * sequence), saying how to get the rest. */
static void put_cut(strbuf *sb, const char *body, int max_chars, const char *id)
{
    size_t len = strlen(body), chars = utf8_count(body, len);
    if (chars <= (size_t)max_chars) {
        sb_puts(sb, body);
        sb_puts(sb, "\n");
    } else {
        sb_putn(sb, body, utf8_offset(body, len, (size_t)max_chars));
        sb_printf(sb, "\n\n[Cut at %d of %zu characters. The full text: background_output(task_id=\"%s\")]\n",
                  max_chars, chars, id);
    }
}

char *format_notification(const task *t, unsigned batch_done, unsigned batch_total, int64_t now, int max_chars)
{
    strbuf sb = {0};
    char dur[32];
    format_duration(dur, sizeof dur, task_runtime(t, now));
    const char *what = t->status == TASK_COMPLETED   ? "completed"
                       : t->status == TASK_CANCELLED ? "stopped by the user"
                                                     : "failed";
    sb_printf(&sb, "[ocbg] Background %s %s: %s", t->type == TASK_SHELL ? "command" : "task", what, t->id);
    put_markers(&sb, t);
    if (t->type == TASK_SHELL) {
        char how[96];
        shell_describe_exit(t->shell, how, sizeof how);
        sb_printf(&sb, " \"%s\" ($ %s; %s, %s)\n", t->description ? t->description : "", t->shell->command, how, dur);
    } else {
        sb_printf(&sb, " \"%s\" (agent: %s, %s)\n", t->description ? t->description : "", t->agent ? t->agent : "",
                  dur);
    }
    unsigned done = batch_done, total = batch_total;
    if (done == total)
        sb_printf(&sb, "Batch %s: all %u task%s done.\n", t->batch->id, total, total == 1 ? "" : "s");
    else
        sb_printf(&sb, "Batch %s: %u of %u tasks done, %u still running.\n", t->batch->id, done, total, total - done);
    put_usage_line(&sb, t);
    format_worktree(&sb, t);
    if (t->type == TASK_SHELL) {
        if (t->status == TASK_ERROR && t->error)
            sb_printf(&sb, "Error: %s\n", t->error);
        char *text = shell_output_text(t->shell, (size_t)max_chars);
        sb_printf(&sb, "\nOutput (the last part when long; all of it: TaskOutput or background_output):\n%s\n", text);
        free(text);
        return sb_take(&sb);
    }
    if (t->status == TASK_CANCELLED) {
        sb_printf(&sb,
                  "\nThe user stopped it from the task panel. What it did before: background_output(task_id=\"%s\")\n",
                  t->id);
        return sb_take(&sb);
    }
    const char *body = t->status == TASK_COMPLETED ? t->result : t->error;
    sb_puts(&sb, t->status == TASK_COMPLETED ? "\nResult:\n" : "\nError: ");
    put_cut(&sb, body ? body : "", max_chars, t->id);
    return sb_take(&sb);
}

char *format_continued_notification(const task *t, const char *added, int max_chars)
{
    strbuf sb = {0};
    sb_printf(&sb, "[ocbg] Background task %s", t->id);
    put_markers(&sb, t);
    sb_printf(&sb, " \"%s\" (agent: %s) went on after its result was reported. Its result now ends with:\n",
              t->description ? t->description : "", t->agent ? t->agent : "");
    put_cut(&sb, added, max_chars, t->id);
    return sb_take(&sb);
}

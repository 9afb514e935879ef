/* claude.c — the Claude-style face: Task and Bash, in the
 * foreground or in the background, TaskOutput and TaskStop. The same registry
 * as the OpenCode face: each face reads and stops the other's tasks. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "ops/ops.h"
#include "face/tools.h"

#define TASKOUTPUT_DEFAULT_MS 30000
#define TASKOUTPUT_MAX_MS 600000
#define BASH_DEFAULT_MS 120000
#define BASH_MAX_MS 600000
#define OUTPUT_MAX_CHARS 30000
/* A foreground Task has no timeout of its own: it ends when the sub-agent
 * does, or on Esc. */
#define FOREGROUND_TASK_MS (24LL * 3600 * 1000)

const char *claude_status(task_status s)
{
    switch (s) {
    case TASK_PENDING:
        return "pending";
    case TASK_RUNNING:
    case TASK_RESUMED:
        return "running";
    case TASK_COMPLETED:
        return "completed";
    case TASK_ERROR:
        return "failed";
    case TASK_CANCELLED:
        return "stopped";
    }
    return "unknown";
}

/* A millisecond timeout argument: default, capped at max; false (error in
 * out) when it is not a positive number. */
static bool ms_arg(const cJSON *args, const char *tool, double def, double max, double *ms, strbuf *out)
{
    double v = arg_num(args, "timeout", def);
    if (!(v > 0) || !isfinite(v)) {
        sb_printf(out, "%s: argument 'timeout' must be a positive number of milliseconds (at most %.0f)", tool, max);
        return false;
    }
    *ms = v > max ? max : v;
    return true;
}

static int not_found(strbuf *out, const char *id)
{
    sb_printf(out, "Task not found: %.*s%s. Use /tasks or background_list to see this session's tasks.", ECHO(id));
    return -ENOENT;
}

/* ---- moving a long foreground call to the background -------------------- */

/* A foreground call's task still running at auto_background_ms became a
 * background task (op_foreground): the answer says so. */
static void put_moved(strbuf *out, int64_t ms)
{
    if (ms % 1000 == 0)
        sb_printf(out, "Still running after %lld s, so it was moved to the background (auto_background_ms).\n",
                  (long long)(ms / 1000));
    else
        sb_printf(out, "Still running after %.1f s, so it was moved to the background (auto_background_ms).\n",
                  (double)ms / 1000);
}

/* A task moved to the background while its sub-agent waits on a question
 * to the user: asked while its caller waited, no notification told of it, so the
 * answer that hands the task over does. */
static void put_open_question(strbuf *out, const task_snap *t)
{
    if (t->asking)
        sb_printf(out,
                  "\nIt is waiting for permission: %s\nThe user must answer the host's permission request (asked in "
                  "the task's session %s); "
                  "the task goes on when they do.",
                  t->asking, t->session ? t->session : "");
}

/* Task's background answer: the id and how to follow it. */
static void put_task_launched(strbuf *out, const char *id, const char *description, const char *agent,
                              const char *queued)
{
    sb_printf(out,
              "Async agent launched in the background.\ntask_id: %s\nDescription: %.*s%s\nAgent: %.*s%s\n%s%s\n"
              "You will be notified when it finishes. To check on it: TaskOutput(task_id=\"%s\", block=false).",
              id, ECHO_TEXT(description), ECHO(agent), queued ? queued : "", queued ? "\n" : "", id);
}

/* Bash's background answer. */
static void put_bash_launched(strbuf *out, const char *id, const char *command, const char *queued)
{
    sb_printf(out,
              "Command %s in the background.\ntask_id: %s\nCommand: %.*s%s\n%s%s\n"
              "You will be notified when it exits. Its output so far: TaskOutput(task_id=\"%s\", block=false); "
              "to stop it: TaskStop(task_id=\"%s\").",
              queued ? "queued to run" : "running", id, ECHO_TEXT(command), queued ? queued : "", queued ? "\n" : "",
              id, id);
}

/* ---- Task ----------------------------------------------------------------- */

/* A foreground sub-agent's answer, and for an isolated one what it did in
 * its worktree (which goes when the call returns; the branch stays). */
static int put_agent_end(strbuf *out, const char *id, const foreground_result *r)
{
    const task_snap *t = &r->snap;
    if (r->end == FOREGROUND_REMOVED) {
        sb_printf(out, "The sub-agent's task %s was removed while it ran.", id);
        return r->late ? 0 : -ENOENT;
    }
    if (r->end == FOREGROUND_STOPPED) {
        sb_printf(out, "%s: the sub-agent was stopped.",
                  r->wait == WAIT_CANCELLED ? "Cancelled" : "ocbg is shutting down");
        return -ECANCELED;
    }
    if (t->status != TASK_COMPLETED) {
        sb_printf(out, "The sub-agent failed: %s", t->error ? t->error : task_status_name(t->status));
        return -EIO;
    }
    sb_puts(out, t->result ? t->result : "");
    if (t->worktree) {
        sb_puts(out, "\n\n");
        sb_puts(out, t->worktree);
        sb_puts(out, "Its worktree folder is removed now (its uncommitted work committed first); the branch stays.");
    }
    return 0;
}

int tool_claude_task(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *description = arg_str(args, "description");
    const char *prompt = arg_str(args, "prompt");
    const char *agent = arg_str(args, "subagent_type");
    bool background = arg_bool(args, "run_in_background", false);
    launched l = {0};
    launch_req req = {description, prompt, agent, false, !background, 0, NULL};
    int rc = launch_in_budget(eng, args, "Task", 1, "milliseconds", ctx, &req, &l, out);
    if (rc != 0)
        return rc;
    if (background) {
        put_task_launched(out, l.id, description, agent, l.queued.len ? l.queued.buf : NULL);
        if (l.worktree.len)
            sb_printf(out, "\n%s", l.worktree.buf);
    }
    sb_free(&l.queued); /* a foreground call waits through the queue */
    sb_free(&l.worktree);
    if (background)
        return 0;
    foreground_result r;
    op_foreground(eng, ctx, l.id, FOREGROUND_TASK_MS, 0, &r);
    if (r.end == FOREGROUND_MOVED) {
        put_moved(out, r.moved_after_ms);
        put_task_launched(out, l.id, description, agent,
                          r.snap.status == TASK_PENDING ? "Status: pending (it starts when a run slot frees)" : NULL);
        put_open_question(out, &r.snap);
    } else {
        rc = put_agent_end(out, l.id, &r);
    }
    task_snap_free(&r.snap);
    return rc;
}

/* ---- Bash ----------------------------------------------------------------- */

/* The command's exit and output, for the model, and why it was stopped. */
static int put_shell_end(strbuf *out, const foreground_result *r, double timeout_ms)
{
    if (r->end == FOREGROUND_REMOVED) {
        sb_puts(out, "The command's task was removed while it ran.");
        return -ENOENT;
    }
    const char *text = r->snap.output ? r->snap.output : "";
    sb_printf(out, "%s%s(%s)", text, *text && text[strlen(text) - 1] != '\n' ? "\n" : "", r->snap.exit_how);
    if (r->wait == WAIT_TIMEOUT) {
        sb_printf(out, "\nCommand timed out after %.0f ms and was stopped.", timeout_ms);
        return -ETIMEDOUT;
    }
    if (r->wait == WAIT_CANCELLED || r->wait == WAIT_SHUTDOWN) {
        sb_puts(out, r->wait == WAIT_SHUTDOWN ? "\nCommand stopped: ocbg is shutting down."
                                              : "\nCommand stopped: the call was cancelled.");
        return -ECANCELED;
    }
    return 0;
}

int tool_claude_bash(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *command = arg_str(args, "command");
    const char *description = arg_str(args, "description");
    bool background = arg_bool(args, "run_in_background", false);
    double timeout_ms;
    int64_t limit_ms; /* a background command's own runtime limit, when given */
    if (!ms_arg(args, "Bash", BASH_DEFAULT_MS, BASH_MAX_MS, &timeout_ms, out) ||
        !limit_arg(args, "Bash", 1, "milliseconds", &limit_ms, out))
        return -EINVAL;
    launched l = {0};
    int rc = op_launch_shell(eng, ctx, command, description, !background, limit_ms, &l, out);
    if (rc != 0)
        return rc;
    if (background) {
        put_bash_launched(out, l.id, command, l.queued.len ? l.queued.buf : NULL);
        sb_free(&l.queued);
        return 0;
    }
    foreground_result r;
    op_foreground(eng, ctx, l.id, (int64_t)timeout_ms, limit_ms, &r);
    if (r.end == FOREGROUND_MOVED) {
        put_moved(out, r.moved_after_ms);
        put_bash_launched(out, l.id, command, NULL);
    } else {
        rc = put_shell_end(out, &r, timeout_ms);
    }
    task_snap_free(&r.snap);
    return rc;
}

/* ---- TaskOutput ----------------------------------------------------------- */

static void tag(strbuf *out, const char *name, const char *value)
{
    sb_printf(out, "<%s>%s</%s>\n", name, value, name);
}

/* TaskOutput's tags for t. */
static void put_task_output(strbuf *out, const task_snap *t, const char *retrieval)
{
    tag(out, "retrieval_status", retrieval);
    tag(out, "task_id", t->id);
    tag(out, "task_type", t->type == TASK_SHELL ? "shell" : "agent");
    tag(out, "status", claude_status(t->status));
    tag(out, "description", t->description ? t->description : "");
    if (t->type == TASK_SHELL) {
        if (t->exited && !t->term_signal) {
            char code[16];
            snprintf(code, sizeof code, "%d", t->exit_code);
            tag(out, "exit_code", code);
        } else if (t->term_signal) {
            char sig[32];
            snprintf(sig, sizeof sig, "%d", t->term_signal);
            tag(out, "signal", sig);
        }
        const char *text = t->output ? t->output : "";
        size_t n = strlen(text);
        sb_printf(out, "<output>%s%s%s</output>\n", n ? "\n" : "", text, n && text[n - 1] != '\n' ? "\n" : "");
    } else if (t->status == TASK_COMPLETED) {
        size_t len = strlen(t->result ? t->result : ""), chars = utf8_count(t->result ? t->result : "", len);
        const char *from = t->result ? t->result : "";
        if (chars > OUTPUT_MAX_CHARS)
            from += utf8_offset(from, len, chars - OUTPUT_MAX_CHARS);
        sb_printf(out, "<output>\n%s%s\n</output>\n", chars > OUTPUT_MAX_CHARS ? "[... earlier output cut ...]\n" : "",
                  from);
    } else if (task_status_active(t->status)) {
        sb_printf(out, "<progress>%u tool calls so far</progress>\n", t->tool_calls);
        if (t->asking)
            tag(out, "waiting_for_permission", t->asking);
        if (t->awaiting)
            tag(out, "waiting_for_tasks",
                t->wake_parked ? "the background tasks it launched have ended; it continues when a slot frees"
                               : "the background tasks it launched are still running");
    }
    if (t->has_usage) {
        sb_puts(out, "<usage>");
        format_usage(out, &t->use);
        sb_puts(out, "</usage>\n");
    }
    if (t->status == TASK_ERROR)
        tag(out, "error", t->error ? t->error : "unknown error");
    if (t->worktree)
        sb_printf(out, "<worktree>\n%s</worktree>\n", t->worktree);
}

int tool_claude_task_output(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    bool block = arg_bool(args, "block", true);
    double timeout_ms;
    if (!ms_arg(args, "TaskOutput", TASKOUTPUT_DEFAULT_MS, TASKOUTPUT_MAX_MS, &timeout_ms, out))
        return -EINVAL;
    output_req req = {block, (int64_t)timeout_ms, false, true};
    output_result r;
    op_output(eng, ctx, id, &req, &r);
    int rc = 0;
    switch (r.end) {
    case OUTPUT_NOT_FOUND:
        rc = not_found(out, id);
        break;
    case OUTPUT_REMOVED_WAITING:
        format_task_removed(out, r.snap.id, true);
        rc = -ENOENT;
        break;
    case OUTPUT_WAIT_STOPPED:
        sb_printf(out, "%s; task %s continues in the background.", wait_stopped_words(r.wait), r.snap.id);
        rc = -ECANCELED;
        break;
    case OUTPUT_REMOVED:
        format_task_removed(out, r.snap.id, false);
        rc = -ENOENT;
        break;
    case OUTPUT_SHOWN:
        put_task_output(out, &r.snap,
                        r.was_active && !block   ? "not_ready"
                        : r.wait == WAIT_TIMEOUT ? "timeout"
                                                 : "success");
        break;
    }
    task_snap_free(&r.snap);
    return rc;
}

/* ---- TaskStop ------------------------------------------------------------- */

int tool_claude_task_stop(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    cancel_result r;
    op_cancel(eng, ctx, id, true, &r);
    int rc = r.rc;
    const task_snap *t = &r.snap;
    if (r.end == CANCEL_NOT_FOUND)
        rc = not_found(out, id);
    else if (r.end == CANCEL_ENDED)
        sb_printf(out, "Task %s is not running: it has already finished (status: %s).", id, claude_status(t->status));
    else if (r.end == CANCEL_ALREADY) {
        sb_printf(out, "Task %s is already being cancelled.", id);
        rc = -EINVAL;
    } else if (t->type == TASK_SHELL && r.exited)
        sb_printf(out, "Stopped task %s (shell): %.*s%s", t->id, ECHO_TEXT(t->command));
    else if (t->type == TASK_SHELL)
        sb_printf(out, "Stop requested for task %s (shell): %.*s%s; it has not exited yet.", t->id,
                  ECHO_TEXT(t->command));
    else if (rc == 0)
        sb_printf(out, "Stopped task %s (agent): its session was aborted.", t->id);
    else
        sb_printf(out, "Could not cancel task %s: aborting its session failed (%s). It is still running.", t->id,
                  r.err);
    cancel_result_free(&r);
    return rc;
}

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
#include "engine/persist.h"
#include "face/tools.h"

#define TASKOUTPUT_DEFAULT_MS 30000
#define TASKOUTPUT_MAX_MS 600000
#define BASH_DEFAULT_MS 120000
#define BASH_MAX_MS 600000
#define OUTPUT_MAX_CHARS 30000
/* A foreground Task has no timeout of its own: it ends when the sub-agent
 * does, or on Esc. */
#define FOREGROUND_TASK_MS (24LL * 3600 * 1000)

const char *claude_status(const task *t)
{
    switch (t->status) {
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

/* The foreground wait's deadline: the call's own limit, or auto_background_ms
 * when that comes first (0: it never does). *moves: the call goes to the
 * background if it is still running at the deadline. */
static int64_t foreground_deadline(engine *eng, int64_t own_ms, bool *moves)
{
    int64_t auto_ms = eng->opt.auto_background_ms;
    *moves = auto_ms > 0 && auto_ms < own_ms;
    return mono_ms() + (*moves ? auto_ms : own_ms);
}

/* A foreground call's task still running at auto_background_ms becomes a
 * background task (op_to_background): its caller no longer owns its result
 * (op_await gave its claim back). [lock held] */
static void move_to_background(engine *eng, task *t, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    op_to_background(eng, t);
    int64_t ms = eng->opt.auto_background_ms;
    if (ms % 1000 == 0)
        sb_printf(out, "Still running after %lld s, so it was moved to the background (auto_background_ms).\n",
                  (long long)(ms / 1000));
    else
        sb_printf(out, "Still running after %.1f s, so it was moved to the background (auto_background_ms).\n",
                  (double)ms / 1000);
}

/* A task moved to the background while its sub-agent waits on a question
 * to the user: asked while its caller waited, no notification told of it, so the
 * answer that hands the task over does. [lock held] (not asserted: t does not know its lock) */
static void put_open_question(strbuf *out, const task *t)
{
    const char *what = task_permission_what(t);
    if (what)
        sb_printf(out,
                  "\nIt is waiting for permission: %s\nThe user must answer the host's permission request (asked in "
                  "the task's session %s); "
                  "the task goes on when they do.",
                  what, t->session_id ? t->session_id : "");
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
 * its worktree (which goes when the call returns; the branch stays). Lock
 * held (let go while git reads the worktree). */
static void put_isolated_result(engine *eng, const char *id, strbuf *out)
{
    task *t = op_worktree_settle(eng, id);
    if (!t) {
        sb_printf(out, "The sub-agent's task %s was removed while it ran.", id);
        return;
    }
    sb_puts(out, t->result ? t->result : "");
    if (t->wt) {
        sb_puts(out, "\n\n");
        format_worktree(out, t);
        sb_puts(out, "Its worktree folder is removed now (its uncommitted work committed first); the branch stays.");
    }
    op_shown(eng, t, engine_now(eng), true, false);
}

int tool_claude_task(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *description = arg_str(args, "description");
    const char *prompt = arg_str(args, "prompt");
    const char *agent = arg_str(args, "subagent_type");
    bool background = arg_bool(args, "run_in_background", false);
    launched l = {0};
    launch_req req = {description, prompt, agent, false, !background, 0, ISOLATION_NONE};
    int rc = launch_in_budget(eng, args, "Task", 1, "milliseconds", ctx, &req, &l, out);
    if (rc != 0)
        return rc;
    const char *id = l.id;
    if (background) {
        put_task_launched(out, id, description, agent, l.queued.len ? l.queued.buf : NULL);
        if (l.worktree.len)
            sb_printf(out, "\n%s", l.worktree.buf);
        sb_free(&l.queued);
        sb_free(&l.worktree);
        return 0;
    }
    sb_free(&l.queued); /* a foreground call waits through the queue */
    sb_free(&l.worktree);
    bool moves;
    int64_t deadline = foreground_deadline(eng, FOREGROUND_TASK_MS, &moves);
    engine_lock(eng);
    task *t;
    wait_result w = op_await(eng, ctx, id, deadline, true, &t);
    char *session = NULL;
    if (!t) {
        sb_printf(out, "The sub-agent's task %s was removed while it ran.", id);
        rc = -ENOENT;
    } else if (w == WAIT_TIMEOUT && moves && task_status_active(t->status)) {
        move_to_background(eng, t, out);
        put_task_launched(out, id, description, agent,
                          t->status == TASK_PENDING ? "Status: pending (it starts when a run slot frees)" : NULL);
        put_open_question(out, t);
    } else if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        /* Esc (or shutdown) stops the sub-agent: nobody else waits for it. */
        session = op_foreground_esc(eng, t);
        sb_printf(out, "%s: the sub-agent was stopped.", w == WAIT_CANCELLED ? "Cancelled" : "ocbg is shutting down");
        rc = -ECANCELED;
    } else if (t->status == TASK_COMPLETED) {
        put_isolated_result(eng, id, out);
    } else {
        sb_printf(out, "The sub-agent failed: %s", t->error ? t->error : task_status_name(t->status));
        rc = -EIO;
    }
    op_foreground_drop(eng, id);
    engine_unlock(eng);
    if (session)
        op_foreground_abort(eng, id, session);
    return rc;
}

/* ---- Bash ----------------------------------------------------------------- */

/* Give launched task id its own runtime limit (engine/guards.h). */
static void set_timeout(engine *eng, const char *id, int64_t ms)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    if (t)
        op_set_timeout(t, ms);
    engine_unlock(eng);
}

/* The command's exit and output, for the model. [lock held] (not asserted: t does not know its lock) */
static void put_shell_result(strbuf *out, const task *t)
{
    char how[96];
    shell_describe_exit(t->shell, how, sizeof how);
    char *text = shell_output_text(t->shell, OUTPUT_MAX_CHARS);
    sb_printf(out, "%s%s(%s)", text, *text && text[strlen(text) - 1] != '\n' ? "\n" : "", how);
    free(text);
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
    int rc = op_launch_shell(eng, ctx, command, description, !background, &l, out);
    if (rc != 0)
        return rc;
    const char *id = l.id;
    if (background) {
        set_timeout(eng, id, limit_ms);
        put_bash_launched(out, id, command, l.queued.len ? l.queued.buf : NULL);
        sb_free(&l.queued);
        return 0;
    }
    bool moves;
    int64_t deadline = foreground_deadline(eng, (int64_t)timeout_ms, &moves);
    engine_lock(eng);
    task *t;
    wait_result w = op_await(eng, ctx, id, deadline, true, &t);
    if (t && w == WAIT_TIMEOUT && moves && task_status_active(t->status)) {
        /* In the background its own timeout, when the call gave one, is
         * its runtime limit (from its start); else max_runtime_ms. */
        op_set_timeout(t, limit_ms);
        move_to_background(eng, t, out);
        put_bash_launched(out, id, command, NULL);
        engine_unlock(eng);
        return 0;
    }
    if (t && w != WAIT_DONE && task_status_active(t->status)) {
        /* Timed out or cancelled: a foreground command does not outlive its
         * call, whose result it still is. */
        t = op_stop_command(eng, NULL, t, true);
    }
    if (!t) {
        sb_puts(out, "The command's task was removed while it ran.");
        rc = -ENOENT;
    } else {
        put_shell_result(out, t);
        if (w == WAIT_TIMEOUT) {
            sb_printf(out, "\nCommand timed out after %.0f ms and was stopped.", timeout_ms);
            rc = -ETIMEDOUT;
        } else if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
            sb_puts(out, w == WAIT_SHUTDOWN ? "\nCommand stopped: ocbg is shutting down."
                                            : "\nCommand stopped: the call was cancelled.");
            rc = -ECANCELED;
        }
    }
    op_foreground_drop(eng, id);
    engine_unlock(eng);
    return rc;
}

/* ---- TaskOutput ----------------------------------------------------------- */

static void tag(strbuf *out, const char *name, const char *value)
{
    sb_printf(out, "<%s>%s</%s>\n", name, value, name);
}

/* TaskOutput's tags for t. [lock held] (not asserted: t does not know its lock) */
static void put_task_output(strbuf *out, const task *t, const char *retrieval)
{
    tag(out, "retrieval_status", retrieval);
    tag(out, "task_id", t->id);
    tag(out, "task_type", t->type == TASK_SHELL ? "shell" : "agent");
    tag(out, "status", claude_status(t));
    tag(out, "description", t->description ? t->description : "");
    if (t->type == TASK_SHELL) {
        if (t->shell->exited && !t->shell->term_signal) {
            char code[16];
            snprintf(code, sizeof code, "%d", t->shell->exit_code);
            tag(out, "exit_code", code);
        } else if (t->shell->term_signal) {
            char sig[32];
            snprintf(sig, sizeof sig, "%d", t->shell->term_signal);
            tag(out, "signal", sig);
        }
        char *text = shell_output_text(t->shell, OUTPUT_MAX_CHARS);
        size_t n = strlen(text);
        sb_printf(out, "<output>%s%s%s</output>\n", n ? "\n" : "", text, n && text[n - 1] != '\n' ? "\n" : "");
        free(text);
    } else if (t->status == TASK_COMPLETED) {
        size_t len = strlen(t->result ? t->result : ""), chars = utf8_count(t->result ? t->result : "", len);
        const char *from = t->result ? t->result : "";
        if (chars > OUTPUT_MAX_CHARS)
            from += utf8_offset(from, len, chars - OUTPUT_MAX_CHARS);
        sb_printf(out, "<output>\n%s%s\n</output>\n", chars > OUTPUT_MAX_CHARS ? "[... earlier output cut ...]\n" : "",
                  from);
    } else if (task_status_active(t->status)) {
        sb_printf(out, "<progress>%u tool calls so far</progress>\n", t->tool_calls);
        const char *asking = task_permission_what(t);
        if (asking)
            tag(out, "waiting_for_permission", asking);
        if (t->awaiting)
            tag(out, "waiting_for_tasks",
                t->wake_parked ? "the background tasks it launched have ended; it continues when a slot frees"
                               : "the background tasks it launched are still running");
    }
    if (task_usage(t)) {
        sb_puts(out, "<usage>");
        format_usage(out, task_usage(t));
        sb_puts(out, "</usage>\n");
    }
    if (t->status == TASK_ERROR)
        tag(out, "error", t->error ? t->error : "unknown error");
    if (t->wt) {
        strbuf wt = {0};
        format_worktree(&wt, t);
        sb_printf(out, "<worktree>\n%s</worktree>\n", wt.buf);
        sb_free(&wt);
    }
}

int tool_claude_task_output(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    bool block = arg_bool(args, "block", true);
    double timeout_ms;
    if (!ms_arg(args, "TaskOutput", TASKOUTPUT_DEFAULT_MS, TASKOUTPUT_MAX_MS, &timeout_ms, out))
        return -EINVAL;
    engine_lock(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t) {
        engine_unlock(eng);
        return not_found(out, id);
    }
    const char *retrieval = "success";
    int rc = 0;
    if (task_status_active(t->status)) {
        if (!block) {
            retrieval = "not_ready";
        } else {
            char key[TASK_ID_SIZE];
            memcpy(key, t->id, sizeof key);
            wait_result w = op_await(eng, ctx, key, mono_ms() + (int64_t)timeout_ms, false, &t);
            if (!t) {
                engine_unlock(eng);
                sb_printf(out, "Task %s was removed while waiting (cleared, or its parent session ended).", key);
                return -ENOENT;
            }
            if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
                sb_printf(out, "%s; task %s continues in the background.",
                          w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down", key);
                engine_unlock(eng);
                return -ECANCELED;
            }
            if (w == WAIT_TIMEOUT)
                retrieval = "timeout";
        }
    }
    char key[TASK_ID_SIZE];
    memcpy(key, t->id, sizeof key);
    t = op_worktree_settle(eng, key); /* an isolated task: what it did in its worktree */
    if (t)
        t = persist_texts(eng, t); /* a finished task's result may be in the store only */
    if (!t) {
        engine_unlock(eng);
        sb_printf(out, "Task %s was removed (cleared, or its parent session ended).", key);
        return -ENOENT;
    }
    put_task_output(out, t, retrieval);
    persist_drop_copies(eng, t);
    /* An agent's result was read; a blocking call that returned the result
     * replaces the notification. */
    bool read = t->type != TASK_SHELL && t->status == TASK_COMPLETED;
    bool delivered = block && !task_status_active(t->status);
    if (read || delivered)
        op_shown(eng, t, engine_now(eng), read, delivered);
    engine_unlock(eng);
    return rc;
}

/* ---- TaskStop ------------------------------------------------------------- */

/* TaskStop of an agent task: background_cancel's operation, and its words
 * when the task cannot be stopped. [lock held] Released on
 * return. */
static int stop_agent(engine *eng, task *t, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    char id[TASK_ID_SIZE];
    memcpy(id, t->id, sizeof id);
    if (t->cancelling) {
        engine_unlock(eng);
        sb_printf(out, "Task %s is already being cancelled.", id);
        return -EINVAL;
    }
    cancel_item *item = NULL;
    size_t one = 0;
    op_cancel_add(&item, &one, t);
    engine_unlock(eng);
    op_cancel_items(eng, item, 1, false);
    int rc = item->rc == -ENOENT ? 0 : item->rc;
    if (rc == 0)
        sb_printf(out, "Stopped task %s (agent): its session was aborted.", id);
    else
        sb_printf(out, "Could not cancel task %s: aborting its session failed (%s). It is still running.", id,
                  item->err);
    op_cancel_free(item, 1);
    return rc;
}

int tool_claude_task_stop(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    engine_lock(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t) {
        engine_unlock(eng);
        return not_found(out, id);
    }
    if (!task_status_active(t->status)) {
        sb_printf(out, "Task %s is not running: it has already finished (status: %s).", id, claude_status(t));
        engine_unlock(eng);
        return 0;
    }
    if (t->type == TASK_AGENT)
        return stop_agent(eng, t, out);
    char key[TASK_ID_SIZE], *command = xstrdup(t->shell->command);
    memcpy(key, t->id, sizeof key);
    t = op_stop_command(eng, ctx, t, false);
    if (t && !task_status_active(t->status))
        sb_printf(out, "Stopped task %s (shell): %.*s%s", key, ECHO_TEXT(command));
    else
        sb_printf(out, "Stop requested for task %s (shell): %.*s%s; it has not exited yet.", key, ECHO_TEXT(command));
    engine_unlock(eng);
    free(command);
    return 0;
}

/* convert.c — see convert.h. */
#include "store/convert.h"

#include <stdint.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/util.h"
#include "model/registry.h"

void store_row_from_task(const task *t, store_row *row)
{
    memset(row, 0, sizeof *row);
    memcpy(row->id, t->id, sizeof row->id);
    memcpy(row->batch, t->batch->id, sizeof row->batch);
    row->seq = t->seq;
    row->parent_session = xstrdup(t->parent->session_id);
    row->type = t->type;
    row->status = t->status;
    row->session_id = xstrdup(t->session_id);
    row->parent_message = xstrdup(t->parent_message);
    row->parent_agent = xstrdup(t->parent_agent);
    row->description = xstrdup(t->description);
    /* A text kept only in the store is left there as it is. */
    row->keep = t->texts_stored;
    row->prompt = row->keep & TASK_TEXT_PROMPT ? NULL : xstrdup(t->prompt);
    row->agent = xstrdup(t->agent);
    row->result = row->keep & TASK_TEXT_RESULT ? NULL : xstrdup(t->result);
    row->error = row->keep & TASK_TEXT_ERROR ? NULL : xstrdup(t->error);
    row->result_message_id = xstrdup(t->result_message_id);
    row->created_ms = t->created_ms;
    row->started_ms = t->started_ms;
    row->completed_ms = t->completed_ms;
    row->last_update_ms = t->last_update_ms;
    row->retrieved_ms = t->retrieved_ms;
    row->timeout_ms = t->timeout_ms;
    row->run = t->run;
    row->delivered_run = t->delivered_run;
    row->resume_count = t->resume_count;
    row->followups_sent = t->followups_sent;
    row->depth = t->depth;
    row->forked = t->forked;
    if (t->usage)
        row->use = t->usage->total;
    row->notification = (notification_state)t->notification_state;
    row->notification_run = t->notification_run;
    row->notification_wake = t->notification_wake;
    row->notification_pushed_ms = t->notification_pushed_ms;
    if (t->wt) {
        row->wt_path = xstrdup(t->wt->path);
        row->wt_branch = xstrdup(t->wt->branch);
        row->wt_base = xstrdup(t->wt->base);
        row->wt_checkout = xstrdup(t->wt->checkout);
        row->wt_report = xstrdup(t->wt->report);
        row->wt_report_run = t->wt->report_run;
    }
    const shell_state *sh = t->shell;
    if (sh) {
        row->command = xstrdup(sh->command);
        row->directory = xstrdup(sh->directory);
        /* Its output once it ended (while it runs it changes by the byte;
         * a command does not outlive its host anyway), unless stored. */
        if (!task_status_active(t->status) && !(row->keep & TASK_TEXT_OUTPUT))
            row->output = shell_output_text(sh, SIZE_MAX);
        row->pid = sh->pid;
        row->pid_start = sh->pid_start;
        row->exited = sh->exited;
        row->exit_code = sh->exit_code;
        row->term_signal = sh->term_signal;
    }
}

/* A stored time (ms since the epoch) or length of time: one that no clock
 * gives (negative, or past the year 9999: a damaged row) reads as 0, "not
 * known", so that sums and differences of times cannot overflow. */
#define STORED_MS_MAX INT64_C(253402300799999)
static int64_t stored_ms(int64_t v)
{
    return v < 0 || v > STORED_MS_MAX ? 0 : v;
}

/* A stored pid: one no process can have (1 is init, whose group is no
 * command's; over 2^22 is past Linux's pid_max) reads as 0, none, so that
 * kill(-pid) can never reach init's group or, truncated, every process. */
#define STORED_PID_MAX 4194304
static pid_t stored_pid(int64_t v)
{
    return v <= 1 || v > STORED_PID_MAX ? 0 : (pid_t)v;
}

task *store_row_to_task(const store_row *row, size_t shell_output_cap)
{
    task *t = xcalloc(1, sizeof *t);
    memcpy(t->id, row->id, sizeof t->id);
    t->seq = row->seq;
    t->type = row->type;
    t->status = row->status;
    task_set_strings(t, row->description, row->session_id, row->result_message_id);
    t->parent_message = xstrdup(row->parent_message);
    t->parent_agent = intern(row->parent_agent);
    t->prompt = xstrdup(row->prompt);
    t->agent = intern(row->agent);
    t->result = xstrdup(row->result);
    t->error = xstrdup(row->error);
    t->stopped_by_user = row->status == TASK_CANCELLED && row->error && strcmp(row->error, TASK_STOPPED_BY_USER) == 0;
    t->created_ms = stored_ms(row->created_ms);
    t->started_ms = stored_ms(row->started_ms);
    t->completed_ms = stored_ms(row->completed_ms);
    t->last_update_ms = stored_ms(row->last_update_ms);
    t->retrieved_ms = stored_ms(row->retrieved_ms);
    t->timeout_ms = stored_ms(row->timeout_ms);
    t->run = row->run;
    t->delivered_run = row->delivered_run;
    t->resume_count = row->resume_count;
    t->followups_sent = row->followups_sent;
    t->depth = row->depth == 0 ? 1 : row->depth > UINT8_MAX ? UINT8_MAX : (uint8_t)row->depth;
    t->forked = row->forked;
    if (!usage_is_zero(&row->use)) {
        t->usage = xcalloc(1, sizeof *t->usage);
        t->usage->total = row->use;
        if (!(row->use.cost >= 0 && row->use.cost < 1e15)) /* inf, negative: damaged */
            t->usage->total.cost = 0;
    }
    t->notification_state = (int)row->notification >= 0 && row->notification <= NOTIFICATION_DONE
                                ? (unsigned)row->notification
                                : NOTIFICATION_NONE;
    t->notification_run = row->notification_run;
    t->notification_wake = row->notification_wake;
    t->notification_pushed_ms = stored_ms(row->notification_pushed_ms);
    if (row->wt_path && row->type == TASK_AGENT) {
        task_set_worktree(t, row->wt_path, row->wt_branch, row->wt_base, row->wt_checkout);
        t->wt->report = xstrdup(row->wt_report);
        t->wt->report_run = row->wt_report_run;
    }
    if (row->type == TASK_SHELL) {
        /* A queued command has printed nothing yet: it prints under this
         * start's cap. Else the stored text is all of it, already with its
         * note of what was left out: held as it is, in a buffer of its size. */
        bool queued = row->status == TASK_PENDING;
        t->shell = shell_state_new(row->command, row->directory, queued ? shell_output_cap : 0);
        if (!queued)
            shell_output_set_text(&t->shell->out, xstrdup(row->output ? row->output : ""));
        t->shell->pid = stored_pid(row->pid);
        t->shell->pid_start = t->shell->pid ? row->pid_start : 0;
        t->shell->exited = row->exited;
        t->shell->exit_code = row->exit_code;
        t->shell->term_signal = row->term_signal;
    }
    return t;
}

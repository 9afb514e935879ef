/* resume.c — resuming a completed task with a follow-up:
 * background_task(resume=…), background_resume; and background_block, the
 * explicit wait on several tasks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "ops/ops.h"
#include "face/tools.h"

/* A refused claim, worded as the spec says. */
static int refused(resume_refusal why, const char *id, const resume_claim *c, strbuf *out)
{
    task_status status = c->status;
    switch (why) {
    case RESUME_NOT_FOUND:
        return task_not_found(out, id);
    case RESUME_SHELL:
        sb_printf(out, "Only agent tasks can be resumed: %s is a shell command.", id);
        return -EINVAL;
    case RESUME_BUSY:
        sb_puts(out, "Task is currently being resumed. Wait for completion.");
        return -EBUSY;
    case RESUME_NOT_COMPLETED:
        sb_printf(out, "Only completed tasks can be resumed. Current status: %s", task_status_name(status));
        return -EINVAL;
    case RESUME_NO_SLOT:
        sb_printf(out, "Task %s cannot be resumed now: %s. Resume it when a running task finishes.", id, c->why);
        return -EAGAIN;
    case RESUME_EXPIRED:
    case RESUME_OK:
        break;
    }
    sb_printf(out, "Task session expired or no longer exists: %s. Start a new background_task instead.", id);
    return -ENOENT;
}

/* A blocking resume's answer: only the new response, which replaced the
 * notification. */
static int put_resumed_result(const resume_result *r, double timeout_s, strbuf *out)
{
    const resume_claim *c = &r->claim;
    const task_snap *t = &r->snap;
    if (r->gone) {
        format_task_removed(out, c->id, true);
        return -ENOENT;
    }
    if (r->wait == WAIT_CANCELLED || r->wait == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; task %s is still working on the follow-up in the background.", wait_stopped_words(r->wait),
                  c->id);
        return -ECANCELED;
    }
    if (r->wait == WAIT_TIMEOUT) {
        sb_printf(out,
                  "Timed out after waiting %gs: task %s is still working on the follow-up.\n"
                  "You will be notified when it responds.",
                  timeout_s, c->id);
    } else if (r->same_run && t->status == TASK_COMPLETED) {
        sb_puts(out, t->result ? t->result : "");
    } else if (r->same_run && t->status == TASK_ERROR) {
        sb_printf(out, "Task %s failed while working on the follow-up: %s", c->id, t->error);
        return -EIO;
    } else {
        sb_printf(out, "Task %s is %s.", c->id, task_status_name(t->status));
    }
    return 0;
}

int resume_task(engine *eng, const char *id, const char *prompt, bool block, double timeout_s, ocp_call_ctx *ctx,
                const char *warning, strbuf *out)
{
    if (blank(prompt)) {
        sb_puts(out, "Prompt is required when resuming a task");
        return -EINVAL;
    }
    resume_result r;
    int rc = op_resume(eng, ctx, id, prompt, block, (int64_t)(timeout_s * 1000), &r, out);
    if (r.why != RESUME_OK)
        rc = refused(r.why, id, &r.claim, out);
    if (rc == 0 && warning)
        sb_puts(out, warning);
    if (rc == 0 && !block) {
        sb_printf(out,
                  "Resumed task %s: the sub-agent is working on the follow-up, with its full history.\n"
                  "You will be notified when it responds.",
                  r.claim.id);
        if (r.claim.resume_count > 1)
            sb_printf(out, "\nResume count: %u", r.claim.resume_count);
    } else if (rc == 0) {
        rc = put_resumed_result(&r, timeout_s, out);
    }
    resume_result_free(&r);
    return rc;
}

int tool_background_resume(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    double timeout;
    if (!wait_timeout_arg(args, "background_resume", &timeout, out))
        return -EINVAL;
    return resume_task(eng, arg_str(args, "task_id"), arg_str(args, "message"), arg_bool(args, "block", false), timeout,
                       ctx, NULL, out);
}

/* ---- background_block -------------------------------------------------- */

/* background_block's answer: how the wait ended, then a line per task. */
static int put_blocked(const block_result *r, double timeout, strbuf *out)
{
    size_t finished = 0;
    strbuf lines = {0}, running = {0};
    for (size_t i = 0; i < r->n; i++) {
        const block_row *row = &r->rows[i];
        if (row->gone) {
            sb_printf(&lines, "- %s | removed (cleared, or its parent session ended)\n", row->id);
            finished++;
            continue;
        }
        sb_puts(&lines, row->snap.text);
        if (task_status_active(row->snap.status))
            sb_printf(&running, "%s%s", running.len ? ", " : "", row->snap.id);
        else
            finished++;
    }
    int rc = 0;
    if (r->wait == WAIT_CANCELLED || r->wait == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; the tasks go on in the background.\n", wait_stopped_words(r->wait));
        rc = -ECANCELED;
    } else if (finished == r->n) {
        sb_printf(out, "All %zu task%s finished.\n", r->n, r->n == 1 ? "" : "s");
    } else {
        sb_printf(out, "Timed out after waiting %gs: %zu of %zu tasks finished; still running: %s\n", timeout, finished,
                  r->n, running.buf);
    }
    sb_puts(out, lines.buf ? lines.buf : "");
    sb_free(&lines);
    sb_free(&running);
    return rc;
}

int tool_background_block(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    double timeout;
    if (!wait_timeout_arg(args, "background_block", &timeout, out))
        return -EINVAL;
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(args, "task_ids"), *item;
    size_t n = 0;
    const char **names = xcalloc((size_t)cJSON_GetArraySize(ids) + 1, sizeof *names);
    cJSON_ArrayForEach (item, ids)
        names[n++] = item->valuestring;
    block_result r;
    op_block(eng, ctx, names, n, (int64_t)(timeout * 1000), &r);
    int rc = 0;
    if (r.end == BLOCK_NOT_FOUND) {
        rc = task_not_found(out, r.bad);
    } else if (r.end == BLOCK_NO_BATCH) {
        sb_printf(out, "Batch not found: %.*s%s. Use background_list to see available tasks.", ECHO(r.bad));
        rc = -ENOENT;
    } else if (r.end == BLOCK_EMPTY) {
        sb_puts(out, "background_block: argument 'task_ids' must name at least one task");
        rc = -EINVAL;
    } else {
        rc = put_blocked(&r, timeout, out);
    }
    block_result_free(&r);
    free(names); /* after the words: r.bad is one of them */
    return rc;
}

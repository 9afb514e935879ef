/* resume.c — resuming a completed task with a follow-up:
 * background_task(resume=…), background_resume; and background_block, the
 * explicit wait on several tasks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "engine/guards.h"
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

/* A blocking resume's answer: only the new response, which replaces the
 * notification. [lock held] */
static int put_resumed_result(engine *eng, const resume_claim *c, wait_result w, task *t, double timeout_s, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!t) {
        sb_printf(out, "Task %s was removed while waiting (cleared, or its parent session ended).", c->id);
        return -ENOENT;
    }
    if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; task %s is still working on the follow-up in the background.",
                  w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down", c->id);
        return -ECANCELED;
    }
    if (w == WAIT_TIMEOUT) {
        sb_printf(out,
                  "Timed out after waiting %gs: task %s is still working on the follow-up.\n"
                  "You will be notified when it responds.",
                  timeout_s, c->id);
    } else if (t->run == c->run && t->status == TASK_COMPLETED) {
        sb_puts(out, t->result ? t->result : "");
        op_shown(eng, t, engine_now(eng), true, true);
    } else if (t->run == c->run && t->status == TASK_ERROR) {
        sb_printf(out, "Task %s failed while working on the follow-up: %s", c->id, t->error);
        op_shown(eng, t, 0, false, true);
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
    int rc = guards_admit(eng, ctx->session_id, id, out);
    if (rc != 0)
        return rc;
    resume_claim c = {0};
    engine_lock(eng);
    resume_refusal why = op_resume_claim(eng, ctx, id, block, &c);
    engine_unlock(eng);
    if (why != RESUME_OK)
        return refused(why, id, &c, out);
    rc = op_resume_send(eng, ctx, &c, prompt, out);
    if (rc == -ESTALE)
        rc = refused(RESUME_EXPIRED, id, &c, out);
    if (rc == 0 && warning)
        sb_puts(out, warning);
    if (rc == 0 && !block) {
        sb_printf(out,
                  "Resumed task %s: the sub-agent is working on the follow-up, with its full history.\n"
                  "You will be notified when it responds.",
                  c.id);
        if (c.resume_count > 1)
            sb_printf(out, "\nResume count: %u", c.resume_count);
    } else if (rc == 0) {
        engine_lock(eng);
        task *t;
        wait_result w = op_resume_wait(eng, ctx, &c, mono_ms() + (int64_t)(timeout_s * 1000), &t);
        rc = put_resumed_result(eng, &c, w, t, timeout_s, out);
        engine_unlock(eng);
    }
    op_resume_claim_free(&c);
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

typedef struct id_list {
    char (*ids)[TASK_ID_SIZE];
    size_t n;
} id_list;

static void add_id(id_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->ids[i], id) == 0)
            return;
    l->ids = xrealloc(l->ids, (l->n + 1) * sizeof *l->ids);
    snprintf(l->ids[l->n++], TASK_ID_SIZE, "%s", id);
}

static bool all_settled(engine *eng, void *arg)
{
    id_list *l = arg;
    for (size_t i = 0; i < l->n; i++)
        if (!op_task_settled(eng, l->ids[i]))
            return false;
    return true;
}

/* Every id named (a batch: each of its tasks), or an error before any
 * wait: an unknown id, an unknown batch, none at all. [lock held] */
static int resolve_ids(engine *eng, ocp_call_ctx *ctx, const cJSON *args, id_list *l, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    const cJSON *item;
    cJSON_ArrayForEach (item, cJSON_GetObjectItemCaseSensitive(args, "task_ids")) {
        const char *id = item->valuestring;
        if (strncmp(id, "batch_", 6) != 0) {
            if (!op_find_own(eng, id, ctx))
                return task_not_found(out, id);
            add_id(l, id);
            continue;
        }
        parent *p = op_parent_of(eng, ctx);
        bool any = false;
        for (task *t = p ? p->head : NULL; t; t = t->pnext) {
            if (strcmp(t->batch->id, id) == 0) {
                add_id(l, t->id);
                any = true;
            }
        }
        if (!any) {
            sb_printf(out, "Batch not found: %.*s%s. Use background_list to see available tasks.", ECHO(id));
            return -ENOENT;
        }
    }
    if (l->n == 0) {
        sb_puts(out, "background_block: argument 'task_ids' must name at least one task");
        return -EINVAL;
    }
    return 0;
}

int tool_background_block(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    double timeout;
    if (!wait_timeout_arg(args, "background_block", &timeout, out))
        return -EINVAL;
    id_list l = {0};
    engine_lock(eng);
    int rc = resolve_ids(eng, ctx, args, &l, out);
    if (rc != 0) {
        engine_unlock(eng);
        free(l.ids);
        return rc;
    }
    wait_result w = all_settled(eng, &l)
                        ? WAIT_DONE
                        : engine_wait(eng, ctx, mono_ms() + (int64_t)(timeout * 1000), all_settled, &l);
    int64_t now = engine_now(eng);
    size_t finished = 0;
    strbuf lines = {0}, running = {0};
    for (size_t i = 0; i < l.n; i++) {
        task *t = registry_find(&eng->reg, l.ids[i]);
        if (!t) {
            sb_printf(&lines, "- %s | removed (cleared, or its parent session ended)\n", l.ids[i]);
            finished++;
            continue;
        }
        format_list_line(&lines, t, now);
        if (task_status_active(t->status))
            sb_printf(&running, "%s%s", running.len ? ", " : "", t->id);
        else
            finished++;
    }
    engine_unlock(eng);
    if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; the tasks go on in the background.\n",
                  w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down");
        rc = -ECANCELED;
    } else if (finished == l.n) {
        sb_printf(out, "All %zu task%s finished.\n", l.n, l.n == 1 ? "" : "s");
    } else {
        sb_printf(out, "Timed out after waiting %gs: %zu of %zu tasks finished; still running: %s\n", timeout, finished,
                  l.n, running.buf);
    }
    sb_puts(out, lines.buf ? lines.buf : "");
    sb_free(&lines);
    sb_free(&running);
    free(l.ids);
    return rc;
}

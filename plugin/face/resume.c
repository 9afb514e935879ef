/* tools_resume.c — resuming a completed task with a follow-up (spec 003, 004):
 * background_task(resume=…), background_resume; and background_block, the
 * explicit wait on several tasks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "hostapi/hostcalls.h"
#include "ops/ops.h"
#include "ops/permission.h"
#include "face/tools.h"

/* Undo a resume claim that never reached the sub-agent. Lock held. */
static void unclaim(ocbg *o, task *t, int64_t completed_ms, int64_t started_ms)
{
    registry_set_status(&o->reg, t, TASK_COMPLETED, completed_ms);
    t->resume_count--;
    t->run--;
    t->started_ms = started_ms;
    engine_wake_waiters(o);
}

typedef struct run_key {
    char id[TASK_ID_SIZE];
    unsigned run;
} run_key;

/* A resume that never reached the sub-agent (refused, or its session is
 * gone): the task is completed again, as before the claim. */
static void give_back(ocbg *o, const run_key *key, bool block, int64_t old_completed, int64_t old_started,
                      bool session_gone)
{
    pthread_mutex_lock(&o->mu);
    task *t = registry_find(&o->reg, key->id);
    if (t && block)
        t->result_waiters--;
    if (t && t->run == key->run && t->status == TASK_RESUMED) {
        unclaim(o, t, old_completed, old_started);
        t->session_gone |= session_gone;
    }
    pthread_mutex_unlock(&o->mu);
}

/* The resumed run has ended (or the task is gone). */
static bool run_settled(ocbg *o, void *arg)
{
    run_key *k = arg;
    task *t = registry_find(&o->reg, k->id);
    return !t || t->run != k->run || !task_status_active(t->status);
}

int resume_task(ocbg *o, const char *id, const char *prompt, bool block, double timeout_s, ocp_call_ctx *ctx,
                const char *warning, strbuf *out)
{
    if (blank(prompt)) {
        sb_puts(out, "Prompt is required when resuming a task");
        return -EINVAL;
    }
    pthread_mutex_lock(&o->mu);
    task *t = op_find_own(o, id, ctx);
    if (!t) {
        pthread_mutex_unlock(&o->mu);
        return task_not_found(out, id);
    }
    if (t->type == TASK_SHELL) {
        pthread_mutex_unlock(&o->mu);
        sb_printf(out, "Only agent tasks can be resumed: %s is a shell command.", id);
        return -EINVAL;
    }
    if (t->status == TASK_RESUMED) {
        pthread_mutex_unlock(&o->mu);
        sb_puts(out, "Task is currently being resumed. Wait for completion.");
        return -EBUSY;
    }
    if (t->status != TASK_COMPLETED) {
        sb_printf(out, "Only completed tasks can be resumed. Current status: %s", task_status_name(t->status));
        pthread_mutex_unlock(&o->mu);
        return -EINVAL;
    }
    if (t->session_gone) {
        pthread_mutex_unlock(&o->mu);
        goto expired;
    }
    /* Claim it under the lock: of two racing resumes the first wins. */
    int64_t now = ocbg_now(o), old_completed = t->completed_ms, old_started = t->started_ms;
    registry_set_status(&o->reg, t, TASK_RESUMED, now);
    engine_task_activated(o);
    t->resume_count++;
    t->run++;
    t->started_ms = now;
    t->finalizing = false;
    t->recheck = false;
    t->seen_busy = false;
    t->idle_checks = 0;
    t->next_check_mono = 0;
    /* A blocking resume owns this run's result from the start, so a response
     * that comes back before it waits is not also pushed as a notification. */
    if (block)
        t->result_waiters++;
    run_key key;
    memcpy(key.id, t->id, sizeof key.id);
    key.run = t->run;
    unsigned count = t->resume_count;
    char *session = xstrdup(t->session_id), *agent = xstrdup(t->agent);
    engine_wake_waiters(o);
    pthread_mutex_unlock(&o->mu);

    /* The host's consent, as for a launch: a refusal gives the claim back. */
    int rc = permission_task(o, ctx, agent, NULL, out);
    if (rc != 0) {
        give_back(o, &key, block, old_completed, old_started, false);
        free(session);
        free(agent);
        return rc;
    }
    char *err = NULL;
    rc = hc_session_get(&o->api, session, NULL);
    if (rc == -ENOENT) {
        give_back(o, &key, block, old_completed, old_started, true);
        free(session);
        free(agent);
        goto expired;
    }
    rc = hc_session_prompt(&o->api, session, prompt, agent, false, true, &err);
    free(session);
    free(agent);
    if (rc != 0) {
        char *why = xasprintf("Failed to send the follow-up prompt to the sub-agent: %s", err);
        pthread_mutex_lock(&o->mu);
        t = registry_find(&o->reg, key.id);
        if (t && t->run == key.run)
            engine_finish(o, t, TASK_ERROR, why, NULL);
        if (t && block)
            t->result_waiters--;
        pthread_mutex_unlock(&o->mu);
        sb_printf(out, "Resuming task %s failed. %s\nIts status is error.", key.id, why);
        free(why);
        free(err);
        return rc;
    }
    if (warning)
        sb_puts(out, warning);
    if (!block) {
        sb_printf(out,
                  "Resumed task %s: the sub-agent is working on the follow-up, with its full history.\n"
                  "You will be notified when it responds.",
                  key.id);
        if (count > 1)
            sb_printf(out, "\nResume count: %u", count);
        return 0;
    }

    pthread_mutex_lock(&o->mu);
    wait_result w = engine_wait(o, ctx, mono_ms() + (int64_t)(timeout_s * 1000), run_settled, &key);
    t = registry_find(&o->reg, key.id);
    if (t)
        t->result_waiters--;
    rc = 0;
    if (!t) {
        sb_printf(out, "Task %s was removed while waiting (cleared, or its parent session ended).", key.id);
        rc = -ENOENT;
    } else if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; task %s is still working on the follow-up in the background.",
                  w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down", key.id);
        rc = -ECANCELED;
    } else if (w == WAIT_TIMEOUT) {
        sb_printf(out,
                  "Timed out after waiting %gs: task %s is still working on the follow-up.\n"
                  "You will be notified when it responds.",
                  timeout_s, key.id);
    } else if (t->run == key.run && t->status == TASK_COMPLETED) {
        /* Only the new response, and it replaces the notification. */
        sb_puts(out, t->result ? t->result : "");
        t->delivered_run = key.run;
        t->retrieved_ms = ocbg_now(o);
    } else if (t->run == key.run && t->status == TASK_ERROR) {
        sb_printf(out, "Task %s failed while working on the follow-up: %s", key.id, t->error);
        t->delivered_run = key.run;
        rc = -EIO;
    } else {
        sb_printf(out, "Task %s is %s.", key.id, task_status_name(t->status));
    }
    pthread_mutex_unlock(&o->mu);
    return rc;

expired:
    sb_printf(out, "Task session expired or no longer exists: %s. Start a new background_task instead.", id);
    return -ENOENT;
}

int tool_background_resume(ocbg *o, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    double timeout;
    if (!wait_timeout_arg(args, "background_resume", &timeout, out))
        return -EINVAL;
    return resume_task(o, arg_str(args, "task_id"), arg_str(args, "message"), arg_bool(args, "block", false),
                       timeout, ctx, NULL, out);
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

static bool all_settled(ocbg *o, void *arg)
{
    id_list *l = arg;
    for (size_t i = 0; i < l->n; i++)
        if (!op_task_settled(o, l->ids[i]))
            return false;
    return true;
}

int tool_background_block(ocbg *o, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    double timeout;
    if (!wait_timeout_arg(args, "background_block", &timeout, out))
        return -EINVAL;
    id_list l = {0};
    pthread_mutex_lock(&o->mu);
    /* Resolve every id first: an unknown one is an error before any wait. */
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(args, "task_ids"))
    {
        const char *id = item->valuestring;
        if (strncmp(id, "batch_", 6) == 0) {
            parent *p = op_parent_of(o, ctx);
            bool any = false;
            for (task *t = p ? p->head : NULL; t; t = t->pnext) {
                if (strcmp(t->batch->id, id) == 0) {
                    add_id(&l, t->id);
                    any = true;
                }
            }
            if (!any) {
                pthread_mutex_unlock(&o->mu);
                free(l.ids);
                sb_printf(out, "Batch not found: %s. Use background_list to see available tasks.", id);
                return -ENOENT;
            }
        } else if (op_find_own(o, id, ctx)) {
            add_id(&l, id);
        } else {
            pthread_mutex_unlock(&o->mu);
            free(l.ids);
            return task_not_found(out, id);
        }
    }
    if (l.n == 0) {
        pthread_mutex_unlock(&o->mu);
        sb_puts(out, "background_block: argument 'task_ids' must name at least one task");
        return -EINVAL;
    }
    wait_result w = all_settled(o, &l) ? WAIT_DONE
                                       : engine_wait(o, ctx, mono_ms() + (int64_t)(timeout * 1000), all_settled, &l);
    int64_t now = ocbg_now(o);
    size_t finished = 0;
    strbuf lines = {0}, running = {0};
    for (size_t i = 0; i < l.n; i++) {
        task *t = registry_find(&o->reg, l.ids[i]);
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
    pthread_mutex_unlock(&o->mu);
    int rc = 0;
    if (w == WAIT_CANCELLED || w == WAIT_SHUTDOWN) {
        sb_printf(out, "%s; the tasks go on in the background.\n",
                  w == WAIT_CANCELLED ? "Wait cancelled" : "ocbg is shutting down");
        rc = -ECANCELED;
    } else if (finished == l.n) {
        sb_printf(out, "All %zu task%s finished.\n", l.n, l.n == 1 ? "" : "s");
    } else {
        sb_printf(out, "Timed out after waiting %gs: %zu of %zu tasks finished; still running: %s\n", timeout,
                  finished, l.n, running.buf);
    }
    sb_puts(out, lines.buf ? lines.buf : "");
    sb_free(&lines);
    sb_free(&running);
    free(l.ids);
    return rc;
}

/* send.c — see ops.h: a message into a running agent task's session, where
 * the host queues it behind the step under way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/guards.h"
#include "model/followup.h"
#include "ops/internal.h"
#include "ops/permission.h"

/* Is task id a running agent task of the caller's session that can take a
 * message now? [lock held] SEND_OK and *c filled, or why not (c->status set
 * when found); nothing changes. */
static send_refusal op_send_check(engine *eng, const ocp_call_ctx *ctx, const char *id, send_claim *c)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t)
        return SEND_NOT_FOUND;
    c->status = t->status;
    if (t->type == TASK_SHELL)
        return SEND_SHELL;
    if (t->status != TASK_RUNNING && t->status != TASK_RESUMED)
        return SEND_NOT_RUNNING;
    if (t->cancelling || task_guard_error(t) || t->session_gone)
        return SEND_STOPPING;
    /* No session yet, or a fork whose own first message is not stored: a
     * message now could come before the task's prompt. A task restored from
     * the store is first checked against its session. */
    if (!t->session_id || t->inherited || t->recovering)
        return SEND_STARTING;
    memcpy(c->id, t->id, sizeof c->id);
    c->run = t->run;
    c->deny_tools = t->depth >= (unsigned)eng->opt.max_depth;
    free(c->session);
    free(c->agent);
    free(c->description);
    c->session = xstrdup(t->session_id);
    c->agent = xstrdup(t->agent);
    c->description = xstrdup(t->description);
    return SEND_OK;
}

/* The host refused follow-up c->number: the completion check stops waiting
 * for it (an earlier one still awaited is waited for no longer either: the
 * task's next idle decides, as without follow-ups). Lock not held. */
static void send_failed(engine *eng, const send_claim *c)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, c->id);
    if (t && t->run == c->run && t->followup_wait == c->number)
        t->followup_wait = 0;
    engine_unlock(eng);
}

/* Send `message` into the running task c names: the host's permission
 * ("task", the agent), the task checked again (it may have ended while the
 * user was asked), then the prompt queued into its busy session. The task
 * keeps its run and its one notification; its completion waits until the
 * host holds the message (model/followup.h). [lock not held] 0; or a
 * negative errno and the answer in out: refused (-EACCES, -ECANCELED, -EIO
 * from the permission; -EINVAL etc. with *why set when the task changed
 * meanwhile, out untouched) or the host's send failed (out says so). */
static int op_send(engine *eng, const ocp_call_ctx *ctx, send_claim *c, const char *message, send_refusal *why,
                   strbuf *out)
{
    *why = SEND_OK;
    int rc = permission_send(eng, ctx, c->agent, c->description, out);
    if (rc != 0)
        return rc;
    /* Checked again: the task may have ended while the user was asked. From
     * here its completion waits for this message (model/followup.h). */
    engine_lock(eng);
    unsigned run = c->run;
    *why = op_send_check(eng, ctx, c->id, c);
    task *t = *why == SEND_OK && c->run == run ? registry_find(&eng->reg, c->id) : NULL;
    if (*why == SEND_OK && !t)
        *why = SEND_NOT_RUNNING; /* it ended and was resumed meanwhile: a new run */
    if (t) {
        c->number = ++t->followups_sent;
        t->followup_wait = c->number;
        registry_touch(&eng->reg, t); /* the numbering is stored: a restart goes on from it */
    }
    engine_unlock(eng);
    if (!t)
        return -EINVAL;
    char *text = followup_text(c->id, c->number, message), *err = NULL;
    rc = hostapi_session_prompt(&eng->api, c->session, text, c->agent, false, c->deny_tools, &err);
    free(text);
    if (rc != 0) {
        send_failed(eng, c);
        sb_printf(out, "Could not send the message to task %s: %s. The task goes on without it.", c->id,
                  err ? err : "the host refused it");
        free(err);
    }
    return rc;
}

void op_send_claim_free(send_claim *c)
{
    free(c->session);
    free(c->agent);
    free(c->description);
    c->session = c->agent = c->description = NULL;
}

int op_send_message(engine *eng, const ocp_call_ctx *ctx, const char *id, const char *message, send_claim *c,
                    send_refusal *why, strbuf *out)
{
    memset(c, 0, sizeof *c);
    engine_lock(eng);
    *why = op_send_check(eng, ctx, id, c);
    engine_unlock(eng);
    if (*why != SEND_OK)
        return 0;
    int rc = guards_admit_send(eng, ctx->session_id, out);
    return rc != 0 ? rc : op_send(eng, ctx, c, message, why, out);
}

/* resume.c — see ops.h: a completed agent task takes a follow-up prompt in
 * its own session, with its full history. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/guards.h"
#include "engine/sched.h"
#include "ops/internal.h"
#include "ops/permission.h"

/* Claim task id for a follow-up. [lock held] RESUME_OK and *c filled, or a
 * refusal (nothing changed). */
static resume_refusal op_resume_claim(engine *eng, const ocp_call_ctx *ctx, const char *id, bool block, resume_claim *c)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = op_find_own(eng, id, ctx);
    if (!t)
        return RESUME_NOT_FOUND;
    if (t->type == TASK_SHELL)
        return RESUME_SHELL;
    if (t->status == TASK_RESUMED)
        return RESUME_BUSY;
    c->status = t->status;
    if (t->status != TASK_COMPLETED)
        return RESUME_NOT_COMPLETED;
    if (t->session_gone)
        return RESUME_EXPIRED;
    /* A follow-up is a run like a launch: it needs a free slot. It is not
     * queued (a resume's claim and send happen in one call). */
    if (sched_admission(eng, TASK_AGENT, t->agent) != ADMIT_NOW) {
        strbuf why = {0};
        sched_why_waiting(eng, t->lane, &why);
        snprintf(c->why, sizeof c->why, "%s", why.buf);
        sb_free(&why);
        return RESUME_NO_SLOT;
    }
    /* Claimed under the lock: of two racing resumes the first wins. */
    int64_t now = engine_now(eng);
    c->old_completed = t->completed_ms;
    c->old_started = t->started_ms;
    registry_set_status(&eng->reg, t, TASK_RESUMED, now);
    engine_task_activated(eng);
    t->resume_count++;
    t->run++;
    t->started_ms = now;
    t->checking = t->recheck = false;
    t->followup_wait = 0; /* a message sent into the run before is no part of this one */
    /* A blocking resume owns this run's result from the start, so a response
     * that comes back before it waits is not also pushed as a notification. */
    c->block = block;
    t->result_waiters += block;
    memcpy(c->id, t->id, sizeof c->id);
    c->run = t->run;
    c->resume_count = t->resume_count;
    c->session = xstrdup(t->session_id);
    c->agent = xstrdup(t->agent);
    c->deny_tools = t->depth >= (unsigned)eng->opt.max_depth;
    engine_wake_waiters(eng);
    return RESUME_OK;
}

/* A resume that never reached the sub-agent (refused, or its session is
 * gone): the task is completed again, as before the claim. Lock not held. */
static void give_back(engine *eng, const resume_claim *c, bool session_gone)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, c->id);
    if (t && c->block)
        t->result_waiters--;
    if (t && t->run == c->run && t->status == TASK_RESUMED) {
        registry_set_status(&eng->reg, t, TASK_COMPLETED, c->old_completed);
        t->resume_count--;
        t->run--;
        t->started_ms = c->old_started;
        t->session_gone |= session_gone;
        /* A check of the run given back is moot (its job sees another run
         * and leaves the task be): nothing of it may hold the texts. */
        t->checking = t->recheck = false;
        engine_wake_waiters(eng);
    }
    engine_unlock(eng);
}

/* The follow-up could not be sent: the resumed run ends in error. */
static void send_failed(engine *eng, const resume_claim *c, const char *why)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, c->id);
    if (t && t->run == c->run)
        engine_finish(eng, t, TASK_ERROR, why, NULL);
    if (t && c->block)
        t->result_waiters--;
    engine_unlock(eng);
}

/* Ask permission, check the session still exists, send the follow-up.
 * [lock not held] 0; -ESTALE: the session is gone (the claim given back,
 * the task completed as before); another negative errno with the answer in
 * out: refused (claim given back) or the send failed (the task in error). */
static int op_resume_send(engine *eng, const ocp_call_ctx *ctx, const resume_claim *c, const char *prompt, strbuf *out)
{
    /* The host's consent, as for a launch: a refusal gives the claim back. */
    int rc = permission_task(eng, ctx, c->agent, NULL, out);
    if (rc != 0) {
        give_back(eng, c, false);
        return rc;
    }
    /* An isolated task works in its worktree again: the host follows it. */
    char *werr = NULL;
    if ((rc = isolate_watch(eng, c->id, &werr)) != 0) {
        give_back(eng, c, false);
        sb_printf(out, "Not resumed: %s. Start a new background_task instead.", werr);
        free(werr);
        return rc;
    }
    if (hostapi_session_get(&eng->api, c->session, NULL) == -ENOENT) {
        give_back(eng, c, true);
        return -ESTALE;
    }
    char *err = NULL;
    rc = hostapi_session_prompt(&eng->api, c->session, prompt, c->agent, false, c->deny_tools, &err);
    if (rc != 0) {
        char *why = xasprintf("Failed to send the follow-up prompt to the sub-agent: %s", err);
        send_failed(eng, c, why);
        sb_printf(out, "Resuming task %s failed. %s\nIts status is error.", c->id, why);
        free(why);
        free(err);
    }
    return rc;
}

/* The resumed run has ended (or the task is gone). */
static bool run_settled(engine *eng, void *arg)
{
    const resume_claim *c = arg;
    task *t = registry_find(&eng->reg, c->id);
    return !t || t->run != c->run || !task_status_active(t->status);
}

/* Wait for the claimed run to end (a blocking resume). *t: the task after,
 * NULL when removed. [lock held] */
static wait_result op_resume_wait(engine *eng, ocp_call_ctx *ctx, resume_claim *c, int64_t deadline, task **t)
{
    ENGINE_ASSERT_LOCKED(eng);
    wait_result w = engine_wait(eng, ctx, deadline, run_settled, c);
    *t = registry_find(&eng->reg, c->id);
    if (*t)
        (*t)->result_waiters--;
    return w;
}

void op_resume_claim_free(resume_claim *c)
{
    free(c->session);
    free(c->agent);
    c->session = c->agent = NULL;
}

/* A blocking resume's wait for the claimed run, and what it ended with:
 * a result it returns replaces the notification. [lock not held] */
static void resume_block(engine *eng, ocp_call_ctx *ctx, int64_t wait_ms, resume_result *r)
{
    engine_lock(eng);
    task *t;
    r->wait = op_resume_wait(eng, ctx, &r->claim, mono_ms() + wait_ms, &t);
    r->gone = !t;
    if (t) {
        r->same_run = t->run == r->claim.run;
        if (r->wait == WAIT_DONE && r->same_run && t->status == TASK_COMPLETED)
            op_shown(eng, t, engine_now(eng), true, true);
        else if (r->wait == WAIT_DONE && r->same_run && t->status == TASK_ERROR)
            op_shown(eng, t, 0, false, true);
        snap_take(&r->snap, t, engine_now(eng), SNAP_TEXTS);
    }
    engine_unlock(eng);
}

int op_resume(engine *eng, ocp_call_ctx *ctx, const char *id, const char *prompt, bool block, int64_t wait_ms,
              resume_result *r, strbuf *out)
{
    memset(r, 0, sizeof *r);
    int rc = guards_admit(eng, ctx->session_id, id, out);
    if (rc != 0)
        return rc;
    engine_lock(eng);
    r->why = op_resume_claim(eng, ctx, id, block, &r->claim);
    engine_unlock(eng);
    if (r->why != RESUME_OK)
        return 0;
    rc = op_resume_send(eng, ctx, &r->claim, prompt, out);
    if (rc == -ESTALE) {
        r->why = RESUME_EXPIRED;
        return 0;
    }
    if (rc == 0 && block)
        resume_block(eng, ctx, wait_ms, r);
    return rc;
}

void resume_result_free(resume_result *r)
{
    op_resume_claim_free(&r->claim);
    task_snap_free(&r->snap);
}

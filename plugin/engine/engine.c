/* engine.c — see engine.h. The worker thread, jobs, the poll, waits. */
#include "engine/engine.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "hostapi/hostcalls.h"
#include "run/shell.h"
#include "model/outcome.h"
#include "base/util.h"

/* How many newest messages a completion check reads: the answer is the last
 * one; a few more let it walk back over a turn's tool-only messages. */
#define FINALIZE_MESSAGE_LIMIT 20
/* How long a task whose session was deleted waits for its parent's deletion
 * (which a host sends right after its children's) before it ends in error. */
#define DELETE_GRACE_MS 500

int64_t ocbg_now(ocbg *o)
{
    return o->api.host.now_ms ? o->api.host.now_ms(o->api.host.userdata) : wall_ms();
}

/* ---- jobs (locked) ----------------------------------------------------- */

static void push_job(ocbg *o, job *j)
{
    j->next = NULL;
    *o->jobs_tail = j;
    o->jobs_tail = &j->next;
    pthread_cond_signal(&o->work_cv);
}

static job *pop_job(ocbg *o)
{
    job *j = o->jobs;
    if (j) {
        o->jobs = j->next;
        if (!o->jobs)
            o->jobs_tail = &o->jobs;
    }
    return j;
}

static void free_notice(notice *n)
{
    if (!n)
        return;
    free(n->permission_request);
    free(n->parent_session);
    free(n->agent);
    free(n->text);
    free(n);
}

static void free_job(job *j)
{
    free(j->session_id);
    free_notice(j->notice);
    free(j);
}

void engine_task_activated(ocbg *o)
{
    pthread_cond_signal(&o->work_cv);
}

void engine_wake_waiters(ocbg *o)
{
    for (waiter *w = o->waiters; w; w = w->next)
        pthread_cond_signal(&w->cv);
}

void engine_request_finalize(ocbg *o, task *t)
{
    if (t->type == TASK_SHELL || t->cancelling || !task_status_active(t->status))
        return;
    if (t->finalizing) {
        /* The check under way may have read the messages before this idle's
         * answer was stored: it runs again at once if it finds nothing. */
        t->recheck = true;
        return;
    }
    t->finalizing = true;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_FINALIZE;
    memcpy(j->task_id, t->id, sizeof j->task_id);
    j->run = t->run;
    push_job(o, j);
}

void engine_request_abort(ocbg *o, const char *session_id)
{
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_ABORT;
    j->session_id = xstrdup(session_id);
    push_job(o, j);
}

static void push_notice(ocbg *o, notice *n)
{
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notice = n;
    push_job(o, j);
}

void engine_permission_asked(ocbg *o, task *t, const char *request_id, const char *what)
{
    if (!task_status_active(t->status) ||
        (t->permission_request && strcmp(t->permission_request, request_id) == 0))
        return; /* one notice per question, however often the host says it */
    free(t->permission_request);
    free(t->permission_what);
    t->permission_request = xstrdup(request_id);
    t->permission_what = xstrdup(what);
    t->last_update_ms = ocbg_now(o);
    engine_wake_waiters(o);
    if (t->foreground)
        return;
    notice *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    n->text = format_permission_notice(t);
    n->wake = true;
    n->permission_request = xstrdup(request_id);
    push_notice(o, n);
}

void engine_permission_replied(ocbg *o, task *t, const char *request_id)
{
    if (!t->permission_request || (request_id && strcmp(t->permission_request, request_id) != 0))
        return;
    free(t->permission_request);
    free(t->permission_what);
    t->permission_request = t->permission_what = NULL;
    t->last_update_ms = ocbg_now(o);
    engine_wake_waiters(o);
}

static void queue_notice(ocbg *o, task *t, int64_t now)
{
    notice *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    n->text = format_notification(t, now, o->opt.notify_max_chars);
    /* Quiet while siblings still run; a failure or the last one wakes. */
    n->wake = o->opt.wake == WAKE_ALWAYS || t->status == TASK_ERROR || t->parent->active == 0;
    push_notice(o, n);
}

void engine_finish(ocbg *o, task *t, task_status s, const char *text, const char *message_id)
{
    if (!task_status_active(t->status))
        return;
    int64_t now = ocbg_now(o);
    if (s == TASK_COMPLETED) {
        free(t->result);
        t->result = xstrdup(text ? text : "");
        free(t->result_message_id);
        t->result_message_id = xstrdup(message_id);
        free(t->error);
        t->error = NULL;
    } else if (s == TASK_ERROR) {
        free(t->error);
        t->error = xstrdup(text ? text : "unknown error");
        if (message_id) {
            free(t->result_message_id);
            t->result_message_id = xstrdup(message_id);
        }
    }
    registry_set_status(&o->reg, t, s, now);
    engine_permission_replied(o, t, NULL); /* a question of an ended run is moot */
    t->finalizing = false;
    t->recheck = false;
    t->cancelling = false;
    /* A blocking call waiting for this result returns it instead of a
     * notification: waits test "done" before cancellation and timeout, so a
     * registered waiter always returns a run that ended. */
    if (t->result_waiters > 0)
        t->delivered_run = t->run;
    else if (s != TASK_CANCELLED)
        queue_notice(o, t, now);
    engine_wake_waiters(o);
}

void engine_session_deleted(ocbg *o, task *t)
{
    bool first = !t->session_gone;
    t->session_gone = true;
    if (!task_status_active(t->status) || !first)
        return;
    if (!t->cancelling)
        engine_request_abort(o, t->session_id);
    t->cancelling = true; /* its idles and errors now come from the abort */
    t->gone_at_mono = mono_ms();
}

void engine_stop_task_now(ocbg *o, task *t)
{
    if (!task_status_active(t->status) || (t->session_gone && t->cancelling))
        return; /* ended, or its abort is already on its way */
    if (t->type == TASK_SHELL)
        shell_kill(t);
    else
        engine_request_abort(o, t->session_id);
}

void engine_drop_parent(ocbg *o, parent *p)
{
    for (task *t = p->head; t; t = t->pnext)
        engine_stop_task_now(o, t);
    registry_remove_parent(&o->reg, p);
    engine_wake_waiters(o);
}

char *engine_take_held(ocbg *o, const char *session_id)
{
    parent *p = registry_parent(&o->reg, session_id);
    if (!p || !p->held)
        return NULL;
    strbuf sb = {0};
    sb_puts(&sb, "\n\n[ocbg] Notifications that could not be delivered earlier:\n");
    for (held_notice *h = p->held; h;) {
        held_notice *next = h->next;
        sb_printf(&sb, "\n%s", h->text);
        free(h->text);
        free(h);
        h = next;
    }
    p->held = NULL;
    p->held_tail = &p->held;
    return sb_take(&sb);
}

/* ---- waits ------------------------------------------------------------- */

wait_result engine_wait(ocbg *o, ocp_call_ctx *ctx, int64_t deadline, bool (*done)(ocbg *o, void *arg),
                        void *arg)
{
    waiter w = {.ctx = ctx};
    cond_init_monotonic(&w.cv);
    w.next = o->waiters;
    if (o->waiters)
        o->waiters->prev = &w;
    o->waiters = &w;
    wait_result r;
    for (;;) {
        if (done(o, arg)) {
            r = WAIT_DONE;
            break;
        }
        if (ctx && __atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST)) {
            r = WAIT_CANCELLED;
            break;
        }
        if (o->stopping) {
            r = WAIT_SHUTDOWN;
            break;
        }
        if (mono_ms() >= deadline) {
            r = WAIT_TIMEOUT;
            break;
        }
        struct timespec ts;
        mono_deadline(&ts, deadline);
        pthread_cond_timedwait(&w.cv, &o->mu, &ts);
    }
    if (w.prev)
        w.prev->next = w.next;
    else
        o->waiters = w.next;
    if (w.next)
        w.next->prev = w.prev;
    pthread_cond_destroy(&w.cv);
    return r;
}

void engine_cancel_wait(ocbg *o, ocp_call_ctx *ctx)
{
    pthread_mutex_lock(&o->mu);
    for (waiter *w = o->waiters; w; w = w->next)
        if (w->ctx == ctx)
            pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&o->mu);
}

/* ---- the worker's jobs (entered and left with the lock held) ----------- */

static void run_finalize(ocbg *o, job *j)
{
    task *t = registry_find(&o->reg, j->task_id);
    if (!t || t->run != j->run || !task_status_active(t->status) || t->cancelling) {
        if (t && t->run == j->run)
            t->finalizing = false;
        return;
    }
    char *session = xstrdup(t->session_id);
    char *prev = xstrdup(t->result_message_id);
    pthread_mutex_unlock(&o->mu);

    char *json = NULL, *err = NULL;
    int rc = hc_session_messages(&o->api, session, FINALIZE_MESSAGE_LIMIT, &json, &err);
    outcome out = {0};
    if (rc == 0)
        outcome_from_messages(json, prev, &out);
    hc_free(&o->api, json);

    pthread_mutex_lock(&o->mu);
    t = registry_find(&o->reg, j->task_id);
    if (t && t->run == j->run && task_status_active(t->status) && !t->cancelling) {
        if (rc == -ENOENT) {
            engine_finish(o, t, TASK_ERROR, "The task's session no longer exists.", NULL);
        } else if (out.kind == OUTCOME_COMPLETED) {
            engine_finish(o, t, TASK_COMPLETED, out.text, out.message_id);
        } else if (out.kind == OUTCOME_ERROR) {
            engine_finish(o, t, TASK_ERROR, out.text, out.message_id);
        } else if (t->recheck && rc == 0) {
            t->finalizing = false;
            t->recheck = false;
            engine_request_finalize(o, t);
        } else {
            /* Not finished (a stale idle) or the host failed: the poll looks
             * again, less often each time it finds nothing. */
            t->finalizing = false;
            t->recheck = false;
            t->idle_checks++;
            unsigned shift = t->idle_checks < 5 ? t->idle_checks : 5;
            t->next_check_mono = mono_ms() + ((int64_t)o->opt.poll_interval_ms << shift);
        }
    } else if (t && t->run == j->run) {
        t->finalizing = false;
    }
    outcome_free(&out);
    free(err);
    free(session);
    free(prev);
}

/* Insert into the retry list, ordered by next_try. */
static void schedule_retry(ocbg *o, notice *n)
{
    notice **p = &o->retries;
    while (*p && (*p)->next_try <= n->next_try)
        p = &(*p)->next;
    n->next = *p;
    *p = n;
}

static void run_notify(ocbg *o, job *j)
{
    notice *n = j->notice;
    task *t = registry_find(&o->reg, n->task_id);
    /* Gone (cleared, parent deleted) or already returned by a blocking wait. */
    if (!t || o->stopping)
        return;
    if (n->permission_request) {
        /* A question answered before its notice went out needs no notice. */
        if (!t->permission_request || strcmp(t->permission_request, n->permission_request) != 0)
            return;
    } else if (t->delivered_run == n->run) {
        return;
    }
    char *session = xstrdup(n->parent_session), *agent = xstrdup(n->agent), *text = xstrdup(n->text);
    bool wake = n->wake;
    pthread_mutex_unlock(&o->mu);
    char *err = NULL;
    int rc = hc_session_prompt(&o->api, session, text, agent, !wake, false, &err);
    pthread_mutex_lock(&o->mu);
    free(session);
    free(agent);
    free(text);
    if (rc == 0 || rc == -ENOENT) { /* delivered, or the parent is gone */
        free(err);
        return;
    }
    free(err);
    if (n->attempts < o->opt.notify_retries) {
        n->next_try = mono_ms() + ((int64_t)o->opt.notify_retry_ms << n->attempts);
        n->attempts++;
        j->notice = NULL;
        schedule_retry(o, n);
        return;
    }
    /* Out of retries: hold it for the parent's next ocbg answer (a question
     * will be stale by then: the task's status shows it). */
    if (n->permission_request)
        return;
    parent *p = registry_parent(&o->reg, n->parent_session);
    if (p && registry_find(&o->reg, n->task_id)) {
        held_notice *h = xcalloc(1, sizeof *h);
        h->text = n->text;
        n->text = NULL;
        *p->held_tail = h;
        p->held_tail = &h->next;
    }
}

static void run_abort(ocbg *o, job *j)
{
    pthread_mutex_unlock(&o->mu);
    hc_session_abort(&o->api, j->session_id, NULL);
    pthread_mutex_lock(&o->mu);
}

static void run_job(ocbg *o, job *j)
{
    switch (j->kind) {
    case JOB_FINALIZE:
        run_finalize(o, j);
        break;
    case JOB_NOTIFY:
        run_notify(o, j);
        break;
    case JOB_ABORT:
        run_abort(o, j);
        break;
    }
    free_job(j);
}

/* One fallback poll: one status-map call for all active tasks. A task whose
 * session is not busy gets a completion check (its idle event may be lost). */
static void poll_tick(ocbg *o)
{
    pthread_mutex_unlock(&o->mu);
    char *json = NULL;
    int rc = hc_session_status(&o->api, &json, NULL);
    cJSON *status_map = rc == 0 ? cJSON_Parse(json) : NULL;
    hc_free(&o->api, json);
    pthread_mutex_lock(&o->mu);
    uint64_t tick = ++o->polls;
    if (!cJSON_IsObject(status_map)) {
        cJSON_Delete(status_map);
        return;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, status_map)
    {
        task *t = registry_find_session(&o->reg, item->string);
        if (t)
            t->busy_tick = tick;
    }
    cJSON_Delete(status_map);
    int64_t now = mono_ms();
    for (task *t = o->reg.active, *next; t; t = next) {
        next = t->anext;
        if (t->type == TASK_SHELL)
            continue;
        if (t->session_gone && t->cancelling) {
            /* deleted alone (its parent lives on): the parent is told */
            if (now - t->gone_at_mono >= DELETE_GRACE_MS)
                engine_finish(o, t, TASK_ERROR, "The task's session was deleted.", NULL);
            continue;
        }
        if (t->busy_tick == tick) {
            t->seen_busy = true;
            t->idle_checks = 0;
            t->next_check_mono = 0;
        } else if (now >= t->next_check_mono) {
            engine_request_finalize(o, t);
        }
    }
}

static void *worker_main(void *arg)
{
    ocbg *o = arg;
    pthread_mutex_lock(&o->mu);
    while (!o->stopping) {
        int64_t now = mono_ms();
        while (o->retries && o->retries->next_try <= now) {
            notice *n = o->retries;
            o->retries = n->next;
            job *j = xcalloc(1, sizeof *j);
            j->kind = JOB_NOTIFY;
            j->notice = n;
            push_job(o, j);
        }
        job *j = pop_job(o);
        if (j) {
            run_job(o, j);
            continue;
        }
        if (o->reg.active_agents == 0) {
            o->next_poll = 0;
        } else if (o->next_poll == 0) {
            o->next_poll = now + o->opt.poll_interval_ms;
        } else if (now >= o->next_poll) {
            o->next_poll = now + o->opt.poll_interval_ms;
            poll_tick(o);
            continue;
        }
        int64_t deadline = o->next_poll;
        if (o->retries && (deadline == 0 || o->retries->next_try < deadline))
            deadline = o->retries->next_try;
        if (deadline == 0) {
            pthread_cond_wait(&o->work_cv, &o->mu);
        } else {
            struct timespec ts;
            mono_deadline(&ts, deadline);
            pthread_cond_timedwait(&o->work_cv, &o->mu, &ts);
        }
        o->worker_wakeups++;
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

int engine_start(ocbg *o)
{
    pthread_mutex_init(&o->mu, NULL);
    cond_init_monotonic(&o->work_cv);
    cond_init_monotonic(&o->drain_cv);
    registry_init(&o->reg);
    o->jobs = NULL;
    o->jobs_tail = &o->jobs;
    int rc = pthread_create(&o->worker, NULL, worker_main, o);
    if (rc != 0) {
        registry_free(&o->reg);
        pthread_cond_destroy(&o->work_cv);
        pthread_cond_destroy(&o->drain_cv);
        pthread_mutex_destroy(&o->mu);
        return rc;
    }
    o->worker_started = true;
    rc = shell_start(o);
    if (rc != 0) {
        pthread_mutex_lock(&o->mu);
        o->stopping = true;
        pthread_cond_broadcast(&o->work_cv);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->worker, NULL);
        registry_free(&o->reg);
        pthread_cond_destroy(&o->work_cv);
        pthread_cond_destroy(&o->drain_cv);
        pthread_mutex_destroy(&o->mu);
        return rc;
    }
    return 0;
}

void engine_stop(ocbg *o)
{
    pthread_mutex_lock(&o->mu);
    o->stopping = true;
    engine_wake_waiters(o);
    pthread_cond_broadcast(&o->work_cv);
    while (o->calls_in_flight > 0)
        pthread_cond_wait(&o->drain_cv, &o->mu);
    pthread_mutex_unlock(&o->mu);
    if (o->worker_started)
        pthread_join(o->worker, NULL);
    o->worker_started = false;
    shell_stop(o); /* kills and reaps every command still running */
    for (job *j; (j = pop_job(o));)
        free_job(j);
    while (o->retries) {
        notice *n = o->retries;
        o->retries = n->next;
        free_notice(n);
    }
    registry_free(&o->reg);
    pthread_cond_destroy(&o->work_cv);
    pthread_cond_destroy(&o->drain_cv);
    pthread_mutex_destroy(&o->mu);
}

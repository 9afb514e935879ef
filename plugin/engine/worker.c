/* worker.c — the engine's worker thread: jobs (completion checks, pushes of notifications, aborts), retries
 * of failed pushes, the tick (the fallback poll in poll.c, the guards), the watches (monitor.c). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/amend.h"
#include "engine/defer.h"
#include "engine/gitwork.h"
#include "engine/guards.h"
#include "engine/isolate.h"
#include "engine/jobs.h"
#include "engine/monitor.h"
#include "engine/persist.h"
#include "engine/poll.h"
#include "engine/sched.h"
#include "engine/toast.h"
#include "engine/worker.h"
#include "model/followup.h"
#include "model/outcome.h"
#include "store/store.h"

/* How many newest messages a completion check reads: the answer is the last
 * one; a few more let it walk back over a turn's tool-only messages. */
#define FINALIZE_MESSAGE_LIMIT 20
/* ---- jobs (locked) ----------------------------------------------------- */

/* Is a restored task's session busy in the host? Read BEFORE its messages:
 * idle before the read and no finished answer in it means the restart cut
 * the run short (a run that ends between the two reads has its answer in
 * the messages). -1: the host could not say. [lock NOT held] */
static int session_busy(engine *eng, const char *session)
{
    cJSON *busy_map = poll_status_map(eng);
    int busy = !busy_map ? -1 : cJSON_GetObjectItemCaseSensitive(busy_map, session) != NULL;
    cJSON_Delete(busy_map);
    return busy;
}

/* The error of a run the restart cut short, with what it had written
 * (malloc'd). */
static char *restart_cut(const char *messages_json)
{
    char *partial = outcome_partial(messages_json);
    char *text = partial ? xasprintf("interrupted: the host restarted before the task finished. Its answer so "
                                     "far:\n%s",
                                     partial)
                         : xstrdup("interrupted: the host restarted before the task finished (it had written no "
                                   "answer yet)");
    free(partial);
    return text;
}

/* A check found no finished answer. now: an idle came during it (it may
 * have read too early), so check again at once; else (a stale idle, or the
 * host failed) the poll looks again, less often each time. */
static void check_later(engine *eng, task *t, bool now)
{
    t->checking = false;
    t->recheck = false;
    if (now) {
        engine_request_check(eng, t);
        return;
    }
    t->active->idle_checks++;
    unsigned shift = t->active->idle_checks < 5 ? t->active->idle_checks : 5;
    t->active->next_check_mono = mono_ms() + ((int64_t)eng->opt.poll_interval_ms << shift);
}

/* What one completion check found. */
typedef struct check_found {
    outcome out;
    int rc;     /* the read's result (0 when the events told the answer) */
    bool seen;  /* the awaited follow-up is in the messages */
    bool asked; /* a restored task's state is decided */
    char *cut;  /* a restart cut the run short: its error (malloc'd) */
    char *err;
} check_found;

/* Read the run's outcome from the session's messages, unless the events
 * already told it (f->out set). [lock NOT held] */
static void check_read(engine *eng, const char *task_id, const char *session, const char *prev, bool skip_notifications,
                       bool recovering, unsigned awaited, check_found *f)
{
    f->asked = true;
    if (f->out.text)
        return;
    char *json = NULL;
    int busy = recovering ? session_busy(eng, session) : 1;
    f->rc = hostapi_session_messages(&eng->api, session, awaited ? 0 : FINALIZE_MESSAGE_LIMIT, &json, &f->err);
    f->seen = f->rc == 0 && awaited && followup_seen(json, task_id, awaited);
    if (f->rc == 0 && (!awaited || f->seen))
        outcome_from_messages(json, prev, skip_notifications, &f->out);
    f->asked = busy >= 0;
    if (f->rc == 0 && busy == 0 && f->out.kind == OUTCOME_NONE)
        f->cut = restart_cut(json);
    hostapi_free(&eng->api, json);
}

/* Act on what the check of active task t found; sent, awaited, recovering:
 * the task's state when the check began. [lock held] */
static void check_apply(engine *eng, task *t, const check_found *f, unsigned sent, unsigned awaited, bool recovering)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (recovering)
        t->recovering = (f->rc != 0 && f->rc != -ENOENT) || !f->asked; /* else decided; the poll asks again */
    t->followup_wait = f->seen && t->followup_wait == awaited ? 0 : t->followup_wait; /* seen: as usual from now */
    if (t->followups_sent != sent) {
        check_later(eng, t, true); /* a follow-up went out during the read: it may predate it */
    } else if (f->cut) {
        engine_finish(eng, t, TASK_ERROR, f->cut, NULL);
    } else if (f->rc == -ENOENT) {
        engine_finish(eng, t, TASK_ERROR, "The task's session no longer exists.", NULL);
    } else if (f->out.kind == OUTCOME_COMPLETED && engine_launcher_waits(eng, t)) {
        /* It answered, but tasks it launched still run: it waits for
         * their notifications, without a slot, and answers again. */
        t->checking = false;
        t->recheck = false;
        registry_set_awaiting(&eng->reg, t, true);
    } else if (f->out.kind == OUTCOME_COMPLETED) {
        engine_finish(eng, t, TASK_COMPLETED, f->out.text, f->out.message_id);
    } else if (f->out.kind == OUTCOME_ERROR) {
        engine_finish(eng, t, TASK_ERROR, f->out.text, f->out.message_id);
    } else {
        check_later(eng, t, t->recheck && f->rc == 0);
    }
}

static void run_check(engine *eng, job *j)
{
    task *t = registry_find(&eng->reg, j->task_id);
    if (!t || t->run != j->run || !task_status_active(t->status) || t->cancelling) {
        if (t && t->run == j->run)
            t->checking = t->recheck = false; /* a recheck lives only with its check */
        return;
    }
    char *session = xstrdup(t->session_id);
    char *prev = xstrdup(t->result_message_id);
    bool skip_notifications = !t->woken; /* a notification just pushed to wake it is not after its answer */
    bool recovering = t->recovering;
    unsigned sent = t->followups_sent, awaited = t->followup_wait; /* model/followup.h: read all then */
    /* The answer the events told in full needs no read (model/answer.h); a
     * restored task, a resumed or forked one (a late duplicate of an older
     * message's events could pass for the answer), or a run that was sent a
     * follow-up (the events' answer may be the one before it), is decided
     * from the messages. */
    check_found f = {0};
    if (!recovering && t->status == TASK_RUNNING && !t->forked && t->followups_sent == t->active->followups_before) {
        f.out.text = answer_take(&t->active->answer, prev, &f.out.message_id);
        f.out.kind = f.out.text ? OUTCOME_COMPLETED : OUTCOME_NONE;
    }
    engine_unlock(eng);

    if (recovering) /* a restored task in its own folder: the new host follows it first */
        isolate_watch(eng, j->task_id, NULL);
    check_read(eng, j->task_id, session, prev, skip_notifications, recovering, awaited, &f);

    engine_lock(eng);
    t = registry_find(&eng->reg, j->task_id);
    if (t && t->run == j->run && task_status_active(t->status) && !t->cancelling)
        check_apply(eng, t, &f, sent, awaited, recovering);
    else if (t && t->run == j->run)
        t->checking = t->recheck = false; /* stopped meanwhile: the abort ends it */
    outcome_free(&f.out);
    free(f.cut);
    free(f.err);
    free(session);
    free(prev);
}

/* n's task's notification is delivered (or moot): the store forgets it. */
static void notification_done(engine *eng, const notification *n)
{
    task *t = registry_find(&eng->reg, n->task_id);
    if (t && t->notification_run == n->run && t->notification_state != NOTIFICATION_DONE) {
        t->notification_state = NOTIFICATION_DONE;
        registry_touch(&eng->reg, t);
    }
}

/* Before a completion notification is sent: the store records "being sent", on
 * disk, so a restart after the send knows to look before sending again; a
 * notification a restart cut short (n->verify) is looked for in the parent
 * session first. Returns -1 to send it, else whether it is settled (as
 * push_notification). The lock is released meanwhile: tasks may have changed. */
static int mark_sending(engine *eng, notification *n)
{
    task *t = registry_find(&eng->reg, n->task_id);
    if (persist_on(eng) && t && t->notification_state != NOTIFICATION_PUSHING) {
        t->notification_state = NOTIFICATION_PUSHING;
        t->notification_run = n->run;
        t->notification_pushed_ms = engine_now(eng);
        registry_touch(&eng->reg, t);
        persist_sync(eng);
    }
    if (n->verify) {
        char *session = xstrdup(n->parent_session), *json = NULL;
        engine_unlock(eng);
        int rc = hostapi_session_messages(&eng->api, session, 0, &json, NULL);
        bool sent = rc == 0 && outcome_has_notification(json, n->task_id, n->since_ms);
        hostapi_free(&eng->api, json);
        free(session);
        engine_lock(eng);
        n->verify = false;
        if (sent || rc == -ENOENT) {
            notification_done(eng, n);
            return true;
        }
    }
    t = registry_find(&eng->reg, n->task_id);
    if (!t || eng->stopping || t->delivered_run == n->run)
        return true;
    return -1;
}

/* n, about t, left the queue to be pushed: a resume of t no longer looks
 * for it (engine_revive_notifications). */
static void notification_taken(task *t, const notification *n)
{
    if (!n->text && !n->permission_request && t->notifications_unformatted > 0)
        t->notifications_unformatted--;
}

/* Out of retries: n is held for the parent's next ocbg answer (a question
 * will be stale by then: the task's status shows it). */
static void hold_notification(engine *eng, notification *n)
{
    if (n->permission_request)
        return;
    parent *p = registry_parent(&eng->reg, n->parent_session);
    if (p && registry_find(&eng->reg, n->task_id)) {
        held_notification *h = xcalloc(1, sizeof *h);
        h->text = n->text;
        n->text = NULL;
        *p->held_tail = h;
        p->held_tail = &h->next;
    }
}

/* j's notification could not be pushed: tried again later (false, j->notification
 * taken), or, out of retries, held for the parent's next answer (true). */
static bool retry_or_hold(engine *eng, job *j)
{
    notification *n = j->notification;
    if (n->attempts < eng->opt.notify_retries) {
        n->next_try = mono_ms() + ((int64_t)eng->opt.notify_retry_ms << n->attempts);
        n->attempts++;
        j->notification = NULL;
        jobs_retry_later(&eng->q, n);
        return false;
    }
    hold_notification(eng, n);
    return true;
}

/* Push j's notification. true: it is settled (pushed, moot, or kept for the
 * parent's next answer); false: it stays on its way (parked for a slot, or
 * to be retried), j->notification taken. */
static bool push_notification(engine *eng, job *j)
{
    notification *n = j->notification;
    task *t = registry_find(&eng->reg, n->task_id);
    /* Gone (cleared, parent deleted) or already returned by a blocking wait. */
    if (!t || eng->stopping)
        return true;
    notification_taken(t, n);
    if (n->permission_request) {
        /* A question answered before its notification went out needs no notification. */
        if (!task_permission_request(t) || strcmp(task_permission_request(t), n->permission_request) != 0)
            return true;
    } else if (!n->extra && t->delivered_run == n->run) {
        notification_done(eng, n);
        return true;
    }
    /* Formatted before the lock is first let go: the task is as its run
     * left it (a resume formats its queued notifications first). */
    engine_notification_text(eng, n, t);
    if (defer_hold(eng, n) || (n->wake && defer_flush_before(eng, n))) { /* parent busy: engine/defer.h */
        j->notification = NULL;
        return false;
    }
    int settled = n->permission_request || n->extra ? -1 : mark_sending(eng, n);
    if (settled >= 0)
        return settled;
    /* Into the session of a task that launched it: only while that task
     * runs (one that ended was stopped with its tasks; nobody is there). */
    task *launcher = registry_find_session(&eng->reg, n->parent_session);
    if (launcher && !task_status_active(launcher->status)) {
        if (!n->extra)
            notification_done(eng, n);
        return true;
    }
    if (n->wake && !sched_wake_slot(eng, launcher)) {
        j->notification = NULL;
        sched_park(eng, n);
        return false;
    }
    char *session = xstrdup(n->parent_session), *agent = xstrdup(n->agent), *text = xstrdup(n->text);
    bool wake = n->wake;
    if (launcher && wake)
        launcher->woken = true; /* before its busy event can clear it */
    engine_unlock(eng);
    char *err = NULL;
    int rc = hostapi_session_prompt(&eng->api, session, text, agent, !wake, false, &err);
    engine_lock(eng);
    free(session);
    free(agent);
    free(text);
    free(err);
    if (rc == 0 || rc == -ENOENT) { /* delivered, or the parent is gone */
        if (rc == 0 && !n->extra)
            toast_note_notification(eng, n, wake);
        if (!n->extra)
            notification_done(eng, n);
        return true;
    }
    return retry_or_hold(eng, j);
}

/* Push a notification. An isolated task's worktree report goes in it:
 * when that is not read yet, the job goes to the worktree thread
 * (engine/gitwork.h), which reads it and gives the job back. true: the job
 * was handed over (not freed here). */
static bool run_notify(engine *eng, job *j)
{
    task *t = registry_find(&eng->reg, j->notification->task_id);
    bool settle = t && t->wt && !j->notification->permission_request && !j->notification->text;
    if (settle && !task_status_active(t->status) && t->wt->report_run != t->run) {
        gitwork_push(eng, j);
        return true;
    }
    char task_id[TASK_ID_SIZE];
    memcpy(task_id, j->notification->task_id, sizeof task_id);
    char *session = xstrdup(j->notification->parent_session);
    if (push_notification(eng, j))
        engine_notification_settled(eng, session);
    free(session);
    if (settle) { /* after the push: the parent does not wait for the host's clean-up */
        engine_unlock(eng);
        isolate_let_go(eng, task_id);
        engine_lock(eng);
    }
    return false;
}

/* A task's run ended: what its session launched and still runs is
 * cancelled (each one's own launches follow by the same job). */
static void run_cascade(engine *eng, job *j)
{
    parent *p = registry_parent(&eng->reg, j->session_id);
    for (task *c = p ? p->head : NULL; c; c = c->pnext) {
        if (!task_status_active(c->status))
            continue;
        if (c->type == TASK_SHELL && c->status != TASK_PENDING) {
            engine_stop_task(eng, c); /* its exit ends it, cancelled */
            continue;
        }
        if (c->session_id)
            engine_request_abort(eng, c->session_id);
        engine_finish(eng, c, TASK_CANCELLED, NULL, NULL);
    }
}

static void run_abort(engine *eng, job *j)
{
    engine_unlock(eng);
    hostapi_session_abort(&eng->api, j->session_id, NULL);
    engine_lock(eng);
}

/* Start a task the scheduler admitted from the queue. A task cancelled
 * meanwhile never starts; one that cannot start ends in error (its launch
 * call returned long ago: the parent is told). */
static void run_start(engine *eng, job *j)
{
    task *t = registry_find(&eng->reg, j->task_id);
    if (!t || t->run != j->run || !task_status_active(t->status))
        return;
    if (t->cancelling) {
        engine_finish(eng, t, TASK_CANCELLED, NULL, NULL);
        return;
    }
    task_type type = t->type;
    engine_unlock(eng);
    char *err = NULL;
    int rc = engine_run_start(eng, type, j->task_id, &err);
    engine_lock(eng);
    t = rc != 0 ? registry_find(&eng->reg, j->task_id) : NULL;
    if (t && t->run == j->run) {
        char *why = xasprintf("The task could not start: %s", err ? err : "unknown error");
        engine_finish(eng, t, t->cancelling ? TASK_CANCELLED : TASK_ERROR, why, NULL);
        free(why);
    }
    free(err);
}

static void run_job(engine *eng, job *j)
{
    switch (j->kind) {
    case JOB_CHECK:
        run_check(eng, j);
        break;
    case JOB_NOTIFY:
        if (run_notify(eng, j))
            return;
        break;
    case JOB_ABORT:
        run_abort(eng, j);
        break;
    case JOB_START:
        run_start(eng, j);
        break;
    case JOB_CASCADE:
        run_cascade(eng, j);
        break;
    case JOB_AMEND:
        amend_run(eng, j);
        break;
    default: /* git's: JOB_RELEASE (here, after the aborts queued before it), JOB_ORPHANS, JOB_EARLY */
        gitwork_push(eng, j);
        return;
    }
    job_free(j);
}

static void *worker_main(void *arg)
{
    engine *eng = arg;
    engine_lock(eng);
    persist_log_deferred(eng);
    while (!eng->stopping) {
        int64_t now = mono_ms();
        jobs_take_due_retries(&eng->q, now);
        int64_t defer_at = defer_tick(eng, now);   /* held silent notifications whose parent is idle */
        int64_t watch_at = monitor_tick(eng, now); /* the watches' events (engine/monitor.h) */
        defer_at = watch_at && (!defer_at || watch_at < defer_at) ? watch_at : defer_at; /* wait for the sooner */
        if (eng->sched_due) {
            eng->sched_due = false;
            sched_pump(eng);
        }
        job *j = jobs_pop(&eng->q);
        if (j) {
            run_job(eng, j);
            continue;
        }
        /* The tick: the fallback poll while agents run (poll.c: it reads the
         * status map only when events do not show the tasks alive), the
         * guards while any task does. */
        if (eng->reg.active_count == 0) {
            eng->next_poll = 0;
        } else if (eng->next_poll == 0) {
            eng->next_poll = now + eng->opt.poll_interval_ms;
        } else if (now >= eng->next_poll) {
            eng->next_poll = now + eng->opt.poll_interval_ms;
            if (eng->reg.active_agents > 0)
                poll_tick(eng, now);
            guards_tick(eng);
            continue;
        }
        int64_t toast_at = toast_due(eng);
        if (toast_at && now >= toast_at) {
            toast_flush(eng);
            continue;
        }
        int64_t deadline = eng->next_poll;
        if (toast_at && (deadline == 0 || toast_at < deadline))
            deadline = toast_at;
        if (defer_at && (deadline == 0 || defer_at < deadline))
            deadline = defer_at;
        if (eng->q.retries && (deadline == 0 || eng->q.retries->next_try < deadline))
            deadline = eng->q.retries->next_try;
        if (deadline == 0) {
            engine_cond_wait(eng, &eng->work_cv);
        } else {
            struct timespec ts;
            mono_deadline(&ts, deadline);
            engine_cond_timedwait(eng, &eng->work_cv, &ts);
        }
        eng->worker_wakeups++;
    }
    engine_unlock(eng);
    return NULL;
}

int worker_start(engine *eng)
{
    int rc = pthread_create(&eng->worker, NULL, worker_main, eng);
    eng->worker_started = rc == 0;
    return rc;
}

void worker_join(engine *eng)
{
    if (eng->worker_started)
        pthread_join(eng->worker, NULL);
    eng->worker_started = false;
}

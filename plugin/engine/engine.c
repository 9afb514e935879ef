/* engine.c — see engine.h. How a task's state changes (a run ends, a
 * question is asked, a session is deleted) and blocking waits. */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/jobs.h"
#include "model/monitor_task.h"
#include "store/store.h"
#include "text/monitor.h"
#include "text/texts.h"
#include "worktree/worktree.h"

int64_t engine_now(engine *eng)
{
    return hostapi_now(&eng->api);
}

void engine_task_activated(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    pthread_cond_signal(&eng->work_cv);
}

void engine_wake_waiters(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    for (waiter *w = eng->waiters; w; w = w->next)
        pthread_cond_signal(&w->cv);
}

void engine_request_check(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (t->type == TASK_SHELL || !t->session_id || t->inherited || t->cancelling || !task_status_active(t->status))
        return;
    if (t->checking) {
        /* The check under way may have read the messages before this idle's
         * answer was stored: it runs again at once if it finds nothing. */
        t->recheck = true;
        return;
    }
    t->checking = true;
    jobs_push(&eng->q, job_for_task(JOB_CHECK, t));
}

void engine_request_abort(engine *eng, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_ABORT;
    j->session_id = xstrdup(session_id);
    jobs_push(&eng->q, j);
}

void engine_push_notification(engine *eng, notification *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    parent *p = registry_parent(&eng->reg, n->parent_session);
    if (p)
        p->notifications_out++;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notification = n;
    jobs_push(&eng->q, j);
}

/* The tasks t's own session launched (max_depth > 1), or NULL. */
static parent *launched_by(engine *eng, const task *t)
{
    return t->session_id ? registry_parent(&eng->reg, t->session_id) : NULL;
}

/* p's session is a task's that waits for the tasks it launched: once they
 * have all ended and their notifications are out, it is checked again (it
 * completes with its answer unless a notification woke it). */
static void check_launcher(engine *eng, parent *p)
{
    if (p->active > 0 || p->notifications_out > 0)
        return;
    task *a = registry_find_session(&eng->reg, p->session_id);
    if (a && a->awaiting)
        engine_request_check(eng, a);
}

void engine_notification_settled(engine *eng, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    parent *p = registry_parent(&eng->reg, session_id);
    if (!p)
        return;
    if (p->notifications_out > 0)
        p->notifications_out--;
    check_launcher(eng, p);
}

bool engine_launcher_waits(engine *eng, const task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    parent *own = launched_by(eng, t);
    return own && (own->active > 0 || own->notifications_out > 0);
}

/* t's run ended: what its session launched and still runs is cancelled by
 * the worker (not here: callers may be walking the active list). */
static void cascade(engine *eng, const task *t)
{
    parent *own = launched_by(eng, t);
    if (!own || own->active == 0)
        return;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_CASCADE;
    j->session_id = xstrdup(t->session_id);
    jobs_push(&eng->q, j);
}

void engine_permission_asked(engine *eng, task *t, const char *request_id, const char *what)
{
    ENGINE_ASSERT_LOCKED(eng);
    const char *open = task_permission_request(t); /* NULL too when t is not active */
    if (!t->active || (open && strcmp(open, request_id) == 0))
        return; /* one notification per question, however often the host says it */
    free(t->active->permission_request);
    free(t->active->permission_what);
    t->active->permission_request = xstrdup(request_id);
    t->active->permission_what = xstrdup(what);
    t->last_update_ms = engine_now(eng);
    engine_wake_waiters(eng);
    if (t->foreground)
        return;
    notification *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    /* its text when it is pushed (engine_notification_text) */
    /* A task that launched tasks cannot answer the user's questions: its
     * session is told without a turn (the person sees the question). */
    n->wake = registry_find_session(&eng->reg, t->parent->session_id) == NULL;
    n->permission_request = xstrdup(request_id);
    engine_push_notification(eng, n);
}

void engine_permission_replied(engine *eng, task *t, const char *request_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    const char *open = task_permission_request(t);
    if (!open || (request_id && strcmp(open, request_id) != 0))
        return;
    free(t->active->permission_request);
    free(t->active->permission_what);
    t->active->permission_request = t->active->permission_what = NULL;
    t->last_update_ms = engine_now(eng);
    engine_wake_waiters(eng);
}

void engine_notification_text(engine *eng, notification *n, const task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (n->text)
        return;
    if (n->permission_request)
        n->text = format_permission_notification(t);
    else if (task_is_monitor(t) && t->shell->lost)
        n->text = format_monitor_lost(t);
    else
        n->text = format_notification(t, n->batch_done, n->batch_total, engine_now(eng), eng->opt.notify_max_chars);
}

void engine_revive_notifications(void *engine_arg, task *t)
{
    engine *eng = engine_arg;
    ENGINE_ASSERT_LOCKED(eng);
    for (job *j = eng->q.jobs; j && t->notifications_unformatted > 0; j = j->next) {
        notification *n = j->kind == JOB_NOTIFY ? j->notification : NULL;
        if (n && !n->text && !n->permission_request && strcmp(n->task_id, t->id) == 0) {
            engine_notification_text(eng, n, t);
            t->notifications_unformatted--;
        }
    }
}

void engine_notify(engine *eng, task *t, bool verify)
{
    ENGINE_ASSERT_LOCKED(eng);
    notification *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    /* The text is formatted when the worker pushes it, from the task (a
     * burst of completions holds no texts); only the batch's progress is
     * taken now, as it stands when this run ended. */
    n->batch_done = t->batch->done;
    n->batch_total = t->batch->total;
    t->notifications_unformatted++;
    /* Quiet while siblings still run; a failure or the last one wakes. */
    n->wake = eng->opt.wake == WAKE_ALWAYS || t->status == TASK_ERROR || t->parent->active == 0;
    n->verify = verify;
    n->since_ms = t->notification_pushed_ms;
    /* Owed from now until it is sent (the store keeps this: engine/persist.h). */
    t->notification_state = verify ? NOTIFICATION_PUSHING : NOTIFICATION_DUE;
    t->notification_run = t->run;
    t->notification_wake = n->wake;
    registry_touch(&eng->reg, t);
    engine_push_notification(eng, n);
}

void engine_finish(engine *eng, task *t, task_status s, const char *text, const char *message_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!task_status_active(t->status))
        return;
    /* A command a guard stopped ends with the guard's error, however it exited. */
    char *guard = t->active ? t->active->guard_error : NULL;
    if (guard)
        t->active->guard_error = NULL;
    if (guard) {
        s = TASK_ERROR;
        text = guard;
    }
    int64_t now = engine_now(eng);
    if (s == TASK_COMPLETED) {
        free(t->result);
        t->result = xstrdup(text ? text : "");
        task_set_result_message(t, message_id);
        free(t->error);
        t->error = NULL;
        t->texts_stored &= (unsigned char)~(TASK_TEXT_RESULT | TASK_TEXT_ERROR); /* new texts, in memory */
    } else if (s == TASK_CANCELLED && t->stopped_by_user) {
        free(t->error);
        t->error = xstrdup(TASK_STOPPED_BY_USER);
        t->texts_stored &= (unsigned char)~TASK_TEXT_ERROR;
    } else if (s == TASK_ERROR) {
        free(t->error);
        t->error = xstrdup(text ? text : "unknown error");
        t->texts_stored &= (unsigned char)~TASK_TEXT_ERROR;
        if (message_id)
            task_set_result_message(t, message_id);
    }
    registry_set_status(&eng->reg, t, s, now);
    engine_permission_replied(eng, t, NULL); /* a question of an ended run is moot */
    t->checking = false;
    t->recheck = false;
    t->cancelling = false;
    /* A blocking call waiting for this result returns it instead of a
     * notification: waits test "done" before cancellation and timeout, so a
     * registered waiter always returns a run that ended. */
    bool look, told = monitor_note_end(t, s, guard != NULL, mono_ms(), &look); /* model/monitor_task.h */
    if (look)
        pthread_cond_signal(&eng->work_cv); /* the watch's last events and "stream ended" (engine/monitor.h) */
    if (t->result_waiters > 0)
        t->delivered_run = t->run;
    else if ((s != TASK_CANCELLED || t->stopped_by_user) && !told) /* the model stopped it itself: no news */
        engine_notify(eng, t, false);
    cascade(eng, t);
    check_launcher(eng, t->parent);
    engine_wake_waiters(eng);
    free(guard);
}

void engine_fail_task(engine *eng, task *t, const char *text)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!task_status_active(t->status) || t->cancelling || task_guard_error(t))
        return; /* ended, being cancelled, or already being stopped by a guard */
    if (t->type == TASK_SHELL && t->shell && t->shell->pid > 0 && !t->shell->exited) {
        t->active->guard_error = xstrdup(text);
        engine_stop_task(eng, t);
        return;
    }
    if (t->session_id)
        engine_request_abort(eng, t->session_id);
    engine_finish(eng, t, TASK_ERROR, text, NULL);
}

void engine_session_deleted(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    bool first = !t->session_gone;
    t->session_gone = true;
    if (!task_status_active(t->status) || !first)
        return;
    if (!t->cancelling)
        engine_request_abort(eng, t->session_id);
    t->cancelling = true; /* its idles and errors now come from the abort */
    t->active->gone_at_mono = mono_ms();
}

/* A pending task has nothing running: stopping it ends it, cancelled. */
static bool stop_pending(engine *eng, task *t)
{
    if (t->status != TASK_PENDING)
        return false;
    engine_finish(eng, t, TASK_CANCELLED, NULL, NULL);
    return true;
}

void engine_stop_task_now(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (stop_pending(eng, t))
        return;
    if (!task_status_active(t->status) || (t->session_gone && t->cancelling))
        return; /* ended, or its abort is already on its way */
    eng->runners[t->type]->kill(eng->runners[t->type], t);
}

void engine_stop_task(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (stop_pending(eng, t))
        return;
    if (task_status_active(t->status))
        eng->runners[t->type]->stop(eng->runners[t->type], t);
}

int engine_run_start(engine *eng, task_type type, const char *task_id, char **err)
{
    return eng->runners[type]->start(eng->runners[type], task_id, err);
}

/* Stop and remove p's tasks and, first, what their sessions launched.
 * levels bounds the walk (a host could name a session its own ancestor). */
static void drop_tree(engine *eng, parent *p, int levels)
{
    worktree_item *worktrees = NULL;
    for (task *t = p->head; t; t = t->pnext) {
        worktree_item_take(t, &worktrees);
        engine_stop_task_now(eng, t);
        parent *own = launched_by(eng, t);
        if (own && own != p && levels > 0)
            drop_tree(eng, own, levels - 1);
    }
    /* Removed by the worker after the aborts queued above (same line). */
    engine_release_worktrees(eng, worktrees);
    registry_remove_parent(&eng->reg, p);
}

void engine_release_worktrees(engine *eng, worktree_item *list)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!list)
        return;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_RELEASE;
    j->release = list;
    jobs_push(&eng->q, j);
}

void engine_drop_parent(engine *eng, parent *p)
{
    ENGINE_ASSERT_LOCKED(eng);
    drop_tree(eng, p, OPTIONS_MAX_DEPTH);
    engine_wake_waiters(eng);
}

void engine_drop_descendants(engine *eng, const task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    parent *own = launched_by(eng, t);
    if (own && own != t->parent)
        engine_drop_parent(eng, own);
}

char *engine_take_held(engine *eng, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    parent *p = registry_parent(&eng->reg, session_id);
    if (!p || !p->held)
        return NULL;
    strbuf sb = {0};
    sb_puts(&sb, "\n\n[ocbg] Notifications that could not be delivered earlier:\n");
    for (held_notification *h = p->held; h;) {
        held_notification *next = h->next;
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

wait_result engine_wait(engine *eng, ocp_call_ctx *ctx, int64_t deadline, bool (*done)(engine *eng, void *arg),
                        void *arg)
{
    ENGINE_ASSERT_LOCKED(eng);
    waiter w = {.ctx = ctx};
    cond_init_monotonic(&w.cv);
    w.next = eng->waiters;
    if (eng->waiters)
        eng->waiters->prev = &w;
    eng->waiters = &w;
    wait_result r;
    for (;;) {
        if (done(eng, arg)) {
            r = WAIT_DONE;
            break;
        }
        if (ctx && __atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST)) {
            r = WAIT_CANCELLED;
            break;
        }
        if (eng->stopping) {
            r = WAIT_SHUTDOWN;
            break;
        }
        if (mono_ms() >= deadline) {
            r = WAIT_TIMEOUT;
            break;
        }
        struct timespec ts;
        mono_deadline(&ts, deadline);
        engine_cond_timedwait(eng, &w.cv, &ts);
    }
    if (w.prev)
        w.prev->next = w.next;
    else
        eng->waiters = w.next;
    if (w.next)
        w.next->prev = w.prev;
    pthread_cond_destroy(&w.cv);
    return r;
}

void engine_cancel_wait(engine *eng, ocp_call_ctx *ctx)
{
    engine_lock(eng);
    for (waiter *w = eng->waiters; w; w = w->next)
        if (w->ctx == ctx)
            pthread_cond_signal(&w->cv);
    engine_unlock(eng);
}

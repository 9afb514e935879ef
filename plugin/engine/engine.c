/* engine.c — see engine.h. How a task's state changes (a run ends, a
 * question is asked, a session is deleted) and blocking waits. */
#include "engine/engine.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/jobs.h"
#include "store/store.h"
#include "text/texts.h"
#include "worktree/worktree.h"

int64_t engine_now(engine *o)
{
    return hc_now(&o->api);
}

void engine_task_activated(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    pthread_cond_signal(&o->work_cv);
}

void engine_wake_waiters(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    for (waiter *w = o->waiters; w; w = w->next)
        pthread_cond_signal(&w->cv);
}

void engine_request_finalize(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    if (t->type == TASK_SHELL || !t->session_id || t->inherited || t->cancelling || !task_status_active(t->status))
        return;
    if (t->finalizing) {
        /* The check under way may have read the messages before this idle's
         * answer was stored: it runs again at once if it finds nothing. */
        t->recheck = true;
        return;
    }
    t->finalizing = true;
    jobs_push(&o->q, job_for_task(JOB_FINALIZE, t));
}

void engine_request_abort(engine *o, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(o);
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_ABORT;
    j->session_id = xstrdup(session_id);
    jobs_push(&o->q, j);
}

void engine_push_notice(engine *o, notice *n)
{
    ENGINE_ASSERT_LOCKED(o);
    parent *p = registry_parent(&o->reg, n->parent_session);
    if (p)
        p->notices_out++;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notice = n;
    jobs_push(&o->q, j);
}

/* The tasks t's own session launched (max_depth > 1), or NULL. */
static parent *launched_by(engine *o, const task *t)
{
    return t->session_id ? registry_parent(&o->reg, t->session_id) : NULL;
}

/* p's session is a task's that waits for the tasks it launched: once they
 * have all ended and their notices are out, it is checked again (it
 * completes with its answer unless a notice woke it). */
static void check_launcher(engine *o, parent *p)
{
    if (p->active > 0 || p->notices_out > 0)
        return;
    task *a = registry_find_session(&o->reg, p->session_id);
    if (a && a->awaiting)
        engine_request_finalize(o, a);
}

void engine_notice_settled(engine *o, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(o);
    parent *p = registry_parent(&o->reg, session_id);
    if (!p)
        return;
    if (p->notices_out > 0)
        p->notices_out--;
    check_launcher(o, p);
}

bool engine_launcher_waits(engine *o, const task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    parent *own = launched_by(o, t);
    return own && (own->active > 0 || own->notices_out > 0);
}

/* t's run ended: what its session launched and still runs is cancelled by
 * the worker (not here: callers may be walking the active list). */
static void cascade(engine *o, const task *t)
{
    parent *own = launched_by(o, t);
    if (!own || own->active == 0)
        return;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_CASCADE;
    j->session_id = xstrdup(t->session_id);
    jobs_push(&o->q, j);
}

void engine_permission_asked(engine *o, task *t, const char *request_id, const char *what)
{
    ENGINE_ASSERT_LOCKED(o);
    const char *open = task_permission_request(t); /* NULL too when t is not live */
    if (!t->live || (open && strcmp(open, request_id) == 0))
        return; /* one notice per question, however often the host says it */
    free(t->live->permission_request);
    free(t->live->permission_what);
    t->live->permission_request = xstrdup(request_id);
    t->live->permission_what = xstrdup(what);
    t->last_update_ms = engine_now(o);
    engine_wake_waiters(o);
    if (t->foreground)
        return;
    notice *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    /* its text when it is pushed (engine_notice_text) */
    /* A task that launched tasks cannot answer the user's questions: its
     * session is told without a turn (the person sees the question). */
    n->wake = registry_find_session(&o->reg, t->parent->session_id) == NULL;
    n->permission_request = xstrdup(request_id);
    engine_push_notice(o, n);
}

void engine_permission_replied(engine *o, task *t, const char *request_id)
{
    ENGINE_ASSERT_LOCKED(o);
    const char *open = task_permission_request(t);
    if (!open || (request_id && strcmp(open, request_id) != 0))
        return;
    free(t->live->permission_request);
    free(t->live->permission_what);
    t->live->permission_request = t->live->permission_what = NULL;
    t->last_update_ms = engine_now(o);
    engine_wake_waiters(o);
}

void engine_notice_text(engine *o, notice *n, const task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    if (n->text)
        return;
    if (n->permission_request)
        n->text = format_permission_notice(t);
    else
        n->text = format_notification(t, n->batch_done, n->batch_total, engine_now(o), o->opt.notify_max_chars);
}

void engine_revive_notices(void *eng, task *t)
{
    engine *o = eng;
    ENGINE_ASSERT_LOCKED(o);
    for (job *j = o->q.jobs; j && t->notices_unformatted > 0; j = j->next) {
        notice *n = j->kind == JOB_NOTIFY ? j->notice : NULL;
        if (n && !n->text && !n->permission_request && strcmp(n->task_id, t->id) == 0) {
            engine_notice_text(o, n, t);
            t->notices_unformatted--;
        }
    }
}

void engine_notify(engine *o, task *t, bool verify)
{
    ENGINE_ASSERT_LOCKED(o);
    notice *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    /* The text is formatted when the worker pushes it, from the task (a
     * burst of completions holds no texts); only the batch's progress is
     * taken now, as it stands when this run ended. */
    n->batch_done = t->batch->done;
    n->batch_total = t->batch->total;
    t->notices_unformatted++;
    /* Quiet while siblings still run; a failure or the last one wakes. */
    n->wake = o->opt.wake == WAKE_ALWAYS || t->status == TASK_ERROR || t->parent->active == 0;
    n->verify = verify;
    n->since_ms = t->notice_pushed_ms;
    /* Owed from now until it is sent (the store keeps this: engine/persist.h). */
    t->notice_state = verify ? NOTICE_PUSHING : NOTICE_DUE;
    t->notice_run = t->run;
    t->notice_wake = n->wake;
    registry_touch(&o->reg, t);
    engine_push_notice(o, n);
}

void engine_finish(engine *o, task *t, task_status s, const char *text, const char *message_id)
{
    ENGINE_ASSERT_LOCKED(o);
    if (!task_status_active(t->status))
        return;
    /* A command a guard stopped ends with the guard's error, however it exited. */
    char *guard = t->live ? t->live->guard_error : NULL;
    if (guard)
        t->live->guard_error = NULL;
    if (guard) {
        s = TASK_ERROR;
        text = guard;
    }
    int64_t now = engine_now(o);
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
    else if (s != TASK_CANCELLED || t->stopped_by_user) /* the model stopped it itself: no news */
        engine_notify(o, t, false);
    cascade(o, t);
    check_launcher(o, t->parent);
    engine_wake_waiters(o);
    free(guard);
}

void engine_fail_task(engine *o, task *t, const char *text)
{
    ENGINE_ASSERT_LOCKED(o);
    if (!task_status_active(t->status) || t->cancelling || task_guard_error(t))
        return; /* ended, being cancelled, or already being stopped by a guard */
    if (t->type == TASK_SHELL && t->shell && t->shell->pid > 0 && !t->shell->exited) {
        t->live->guard_error = xstrdup(text);
        engine_stop_task(o, t);
        return;
    }
    if (t->session_id)
        engine_request_abort(o, t->session_id);
    engine_finish(o, t, TASK_ERROR, text, NULL);
}

void engine_session_deleted(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    bool first = !t->session_gone;
    t->session_gone = true;
    if (!task_status_active(t->status) || !first)
        return;
    if (!t->cancelling)
        engine_request_abort(o, t->session_id);
    t->cancelling = true; /* its idles and errors now come from the abort */
    t->live->gone_at_mono = mono_ms();
}

/* A pending task has nothing running: stopping it ends it, cancelled. */
static bool stop_pending(engine *o, task *t)
{
    if (t->status != TASK_PENDING)
        return false;
    engine_finish(o, t, TASK_CANCELLED, NULL, NULL);
    return true;
}

void engine_stop_task_now(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    if (stop_pending(o, t))
        return;
    if (!task_status_active(t->status) || (t->session_gone && t->cancelling))
        return; /* ended, or its abort is already on its way */
    o->runners[t->type]->kill(o->runners[t->type], t);
}

void engine_stop_task(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    if (stop_pending(o, t))
        return;
    if (task_status_active(t->status))
        o->runners[t->type]->stop(o->runners[t->type], t);
}

int engine_run_start(engine *o, task_type type, const char *task_id, char **err)
{
    return o->runners[type]->start(o->runners[type], task_id, err);
}

/* Stop and remove p's tasks and, first, what their sessions launched.
 * levels bounds the walk (a host could name a session its own ancestor). */
static void drop_tree(engine *o, parent *p, int levels)
{
    worktree_item *worktrees = NULL;
    for (task *t = p->head; t; t = t->pnext) {
        worktree_item_take(t, &worktrees);
        engine_stop_task_now(o, t);
        parent *own = launched_by(o, t);
        if (own && own != p && levels > 0)
            drop_tree(o, own, levels - 1);
    }
    /* Removed by the worker after the aborts queued above (same line). */
    engine_release_worktrees(o, worktrees);
    registry_remove_parent(&o->reg, p);
}

void engine_release_worktrees(engine *o, worktree_item *list)
{
    ENGINE_ASSERT_LOCKED(o);
    if (!list)
        return;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_RELEASE;
    j->release = list;
    jobs_push(&o->q, j);
}

void engine_drop_parent(engine *o, parent *p)
{
    ENGINE_ASSERT_LOCKED(o);
    drop_tree(o, p, OPTIONS_MAX_DEPTH);
    engine_wake_waiters(o);
}

void engine_drop_descendants(engine *o, const task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    parent *own = launched_by(o, t);
    if (own && own != t->parent)
        engine_drop_parent(o, own);
}

char *engine_take_held(engine *o, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(o);
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

wait_result engine_wait(engine *o, ocp_call_ctx *ctx, int64_t deadline, bool (*done)(engine *o, void *arg), void *arg)
{
    ENGINE_ASSERT_LOCKED(o);
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
        engine_cond_timedwait(o, &w.cv, &ts);
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

void engine_cancel_wait(engine *o, ocp_call_ctx *ctx)
{
    engine_lock(o);
    for (waiter *w = o->waiters; w; w = w->next)
        if (w->ctx == ctx)
            pthread_cond_signal(&w->cv);
    engine_unlock(o);
}

/* jobs.c — the worker's queue: jobs, and failed pushes waiting for their
 * next try. Everything here runs with the engine lock held and never blocks. */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/jobs.h"

void jobs_push(ocbg *o, job *j)
{
    j->next = NULL;
    *o->jobs_tail = j;
    o->jobs_tail = &j->next;
    pthread_cond_signal(&o->work_cv);
}

job *jobs_pop(ocbg *o)
{
    job *j = o->jobs;
    if (j) {
        o->jobs = j->next;
        if (!o->jobs)
            o->jobs_tail = &o->jobs;
    }
    return j;
}

void notice_free(notice *n)
{
    if (!n)
        return;
    free(n->permission_request);
    free(n->parent_session);
    free(n->agent);
    free(n->text);
    free(n);
}

void job_free(job *j)
{
    free(j->session_id);
    notice_free(j->notice);
    free(j);
}

void engine_request_finalize(ocbg *o, task *t)
{
    if (t->type == TASK_SHELL || !t->session_id || t->cancelling || !task_status_active(t->status))
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
    jobs_push(o, j);
}

void engine_request_abort(ocbg *o, const char *session_id)
{
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_ABORT;
    j->session_id = xstrdup(session_id);
    jobs_push(o, j);
}

void engine_push_notice(ocbg *o, notice *n)
{
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notice = n;
    jobs_push(o, j);
}

/* ---- the worker's jobs (entered and left with the lock held) ----------- */

/* Insert into the retry list, ordered by next_try. */
void jobs_retry_later(ocbg *o, notice *n)
{
    notice **p = &o->retries;
    while (*p && (*p)->next_try <= n->next_try)
        p = &(*p)->next;
    n->next = *p;
    *p = n;
}

void jobs_take_due_retries(ocbg *o, int64_t now)
{
    while (o->retries && o->retries->next_try <= now) {
        notice *n = o->retries;
        o->retries = n->next;
        job *j = xcalloc(1, sizeof *j);
        j->kind = JOB_NOTIFY;
        j->notice = n;
        jobs_push(o, j);
    }
}

void jobs_free_all(ocbg *o)
{
    for (job *j; (j = jobs_pop(o));)
        job_free(j);
    while (o->retries) {
        notice *n = o->retries;
        o->retries = n->next;
        notice_free(n);
    }
}

/* jobs.c — the worker's queue: jobs, and failed pushes waiting for their
 * next try. Nothing here blocks. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock.h"
#include "base/util.h"
#include "engine/jobs.h"
#include "worktree/worktree.h"

void jobs_init(job_queue *q, pthread_cond_t *wake, const pthread_mutex_t *mu)
{
    q->jobs = NULL;
    q->jobs_tail = &q->jobs;
    q->checks = NULL;
    q->checks_tail = &q->checks;
    q->retries = NULL;
    q->wake = wake;
    q->mu = mu;
}

job *job_for_task(job_kind kind, const task *t)
{
    job *j = xcalloc(1, sizeof *j);
    j->kind = kind;
    memcpy(j->task_id, t->id, sizeof j->task_id);
    j->run = t->run;
    return j;
}

void jobs_push(job_queue *q, job *j)
{
    assert(lock_held(q->mu));
    job ***tail = j->kind == JOB_CHECK ? &q->checks_tail : &q->jobs_tail;
    j->next = NULL;
    **tail = j;
    *tail = &j->next;
    pthread_cond_signal(q->wake);
}

void jobs_push_front(job_queue *q, job *first, job *last)
{
    assert(lock_held(q->mu));
    last->next = q->jobs;
    if (q->jobs_tail == &q->jobs)
        q->jobs_tail = &last->next;
    q->jobs = first;
    pthread_cond_signal(q->wake);
}

/* The head of the line head..*tail, taken off it, or NULL. */
static job *pop_line(job **head, job ***tail)
{
    job *j = *head;
    if (j) {
        *head = j->next;
        if (!*head)
            *tail = head;
    }
    return j;
}

job *jobs_pop(job_queue *q)
{
    assert(lock_held(q->mu));
    job *j = pop_line(&q->jobs, &q->jobs_tail);
    return j ? j : pop_line(&q->checks, &q->checks_tail);
}

job *jobs_take(job_queue *q, job_kind kind)
{
    assert(lock_held(q->mu));
    job *taken = NULL, **taken_tail = &taken;
    job **p = &q->jobs;
    while (*p) {
        job *j = *p;
        if (j->kind != kind) {
            p = &j->next;
            continue;
        }
        *p = j->next;
        j->next = NULL;
        *taken_tail = j;
        taken_tail = &j->next;
    }
    q->jobs_tail = p;
    return taken;
}

void notification_free(notification *n)
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
    notification_free(j->notification);
    worktree_items_free(j->release);
    free(j);
}

/* Insert into the retry list, ordered by next_try. */
void jobs_retry_later(job_queue *q, notification *n)
{
    assert(lock_held(q->mu));
    notification **p = &q->retries;
    while (*p && (*p)->next_try <= n->next_try)
        p = &(*p)->next;
    n->next = *p;
    *p = n;
}

void jobs_take_due_retries(job_queue *q, int64_t now)
{
    assert(lock_held(q->mu));
    while (q->retries && q->retries->next_try <= now) {
        notification *n = q->retries;
        q->retries = n->next;
        job *j = xcalloc(1, sizeof *j);
        j->kind = JOB_NOTIFY;
        j->notification = n;
        jobs_push(q, j);
    }
}

void jobs_free_all(job_queue *q)
{
    for (job *j; (j = pop_line(&q->jobs, &q->jobs_tail)) || (j = pop_line(&q->checks, &q->checks_tail));)
        job_free(j);
    while (q->retries) {
        notification *n = q->retries;
        q->retries = n->next;
        notification_free(n);
    }
}

/* lanes.c — see lanes.h. */
#include "model/lanes.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* by_agent's key: the lane's own name (map.h). */
static const char *lane_name_of(const void *l)
{
    return ((const lane *)l)->name;
}

void lanes_init(lanes *ls)
{
    memset(ls, 0, sizeof *ls);
    map_init(&ls->by_agent, lane_name_of);
    ls->shell.name = xstrdup("");
}

void lanes_free(lanes *ls)
{
    for (lane *l = ls->all; l;) {
        lane *next = l->next;
        free(l->name);
        free(l);
        l = next;
    }
    free(ls->shell.name);
    map_free(&ls->by_agent);
    memset(ls, 0, sizeof *ls);
}

lane *lanes_of(lanes *ls, task_type type, const char *agent)
{
    if (type == TASK_SHELL)
        return &ls->shell;
    const char *key = agent ? agent : "";
    lane *l = map_get(&ls->by_agent, key);
    if (!l) {
        l = xcalloc(1, sizeof *l);
        l->name = xstrdup(key);
        l->next = ls->all;
        ls->all = l;
        map_put(&ls->by_agent, l);
    }
    return l;
}

void lanes_enqueue(lanes *ls, task *t)
{
    lane *l = t->lane;
    task_active *q = t->active;
    q->qseq = ++ls->next_seq;
    q->qnext = NULL;
    q->qprev = l->qtail;
    if (l->qtail)
        l->qtail->active->qnext = t;
    else
        l->qhead = t;
    l->qtail = t;
    l->queued++;
    ls->queued++;
}

void lanes_dequeue(lanes *ls, task *t)
{
    lane *l = t->lane;
    task_active *q = t->active;
    if (q->qprev)
        q->qprev->active->qnext = q->qnext;
    else
        l->qhead = q->qnext;
    if (q->qnext)
        q->qnext->active->qprev = q->qprev;
    else
        l->qtail = q->qprev;
    q->qnext = q->qprev = NULL;
    l->queued--;
    ls->queued--;
}

void lanes_hold(lanes *ls, task *t)
{
    t->lane->running++;
    ls->running_agents += t->type == TASK_AGENT;
}

static void freed(lanes *ls)
{
    if (ls->on_freed)
        ls->on_freed(ls->on_freed_arg);
}

void lanes_release(lanes *ls, task *t)
{
    if (t->retrying) {
        t->retrying = false;
        t->lane->retrying--;
    }
    t->lane->running--;
    ls->running_agents -= t->type == TASK_AGENT;
    freed(ls);
}

void lanes_set_retrying(lanes *ls, task *t, bool retrying)
{
    if (t->retrying == retrying)
        return;
    t->retrying = retrying;
    if (retrying) {
        t->lane->retrying++;
    } else {
        t->lane->retrying--;
        freed(ls);
    }
}

unsigned lanes_queued_of(const lanes *ls, task_type type)
{
    return type == TASK_SHELL ? ls->shell.queued : ls->queued - ls->shell.queued;
}

/* sched.c — see sched.h. */
#include "engine/sched.h"

#include <string.h>

#include "base/util.h"

bool sched_lane_open(engine *o, const lane *l)
{
    ENGINE_ASSERT_LOCKED(o);
    const lanes *ls = &o->reg.lanes;
    if (l == &ls->shell)
        return l->running < (unsigned)o->opt.max_running_shells;
    int cap = options_agent_cap(&o->opt, l->name);
    return ls->running_agents < (unsigned)o->opt.max_running_agents && (cap == 0 || l->running < (unsigned)cap) &&
           l->retrying == 0;
}

admission sched_admission(engine *o, task_type type, const char *agent)
{
    ENGINE_ASSERT_LOCKED(o);
    lanes *ls = &o->reg.lanes;
    lane *l = lanes_of(ls, type, agent);
    /* Open lanes have no one waiting (every release pumps), so a task that
     * starts at once jumps no queue; nor a woken launcher's slot. */
    if (sched_lane_open(o, l) && l->queued == 0 && (type == TASK_SHELL || !o->parked))
        return ADMIT_NOW;
    return ls->queued < (unsigned)o->opt.max_queued ? ADMIT_QUEUE : ADMIT_FULL;
}

void sched_why_waiting(engine *o, const lane *l, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(o);
    const lanes *ls = &o->reg.lanes;
    int cap = options_agent_cap(&o->opt, l->name);
    if (l == &ls->shell)
        sb_printf(out, "all %d command slots are busy (max_running_shells %d)", o->opt.max_running_shells,
                  o->opt.max_running_shells);
    else if (l->retrying > 0)
        sb_printf(out,
                  "the host is retrying a rate-limited call of a running %s task; %s tasks wait until it "
                  "clears",
                  l->name, l->name);
    else if (cap > 0 && l->running >= (unsigned)cap)
        sb_printf(out, "all %d %s slots are busy (max_running_per_agent %s: %d)", cap, l->name, l->name, cap);
    else
        sb_printf(out, "all %d agent slots are busy (max_running_agents %d)", o->opt.max_running_agents,
                  o->opt.max_running_agents);
}

/* Append j to the chain first..last. */
static void chain(job *j, job **first, job **last)
{
    if (*last)
        (*last)->next = j;
    else
        *first = j;
    *last = j;
}

/* Admit t: it holds its slot from now; its start joins `starts`. */
static void admit(engine *o, task *t, job **first, job **last)
{
    registry_set_status(&o->reg, t, TASK_RUNNING, engine_now(o));
    chain(job_for_task(JOB_START, t), first, last);
}

/* The open agent lane whose oldest pending task is the oldest, or NULL. */
static lane *next_agent_lane(engine *o)
{
    lane *best = NULL;
    for (lane *l = o->reg.lanes.all; l; l = l->next)
        if (l->qhead && (!best || l->qhead->live->qseq < best->qhead->live->qseq) && sched_lane_open(o, l))
            best = l;
    return best;
}

bool sched_wake_slot(engine *o, task *launcher)
{
    ENGINE_ASSERT_LOCKED(o);
    if (!launcher || !launcher->awaiting)
        return true;
    if (!sched_lane_open(o, launcher->lane))
        return false;
    registry_set_awaiting(&o->reg, launcher, false);
    return true;
}

void sched_park(engine *o, notice *n)
{
    ENGINE_ASSERT_LOCKED(o);
    task *a = registry_find_session(&o->reg, n->parent_session);
    if (a)
        a->wake_parked = true;
    n->next = NULL;
    notice **pp = &o->parked;
    while (*pp)
        pp = &(*pp)->next;
    *pp = n;
}

/* Parked waking notices whose task can take a slot now (or no longer
 * waits for one) go out first, oldest first: each task they wake was
 * admitted long before anything in the queue. */
static void unpark(engine *o, job **first, job **last)
{
    for (notice **pp = &o->parked; *pp;) {
        notice *n = *pp;
        if (!sched_wake_slot(o, registry_find_session(&o->reg, n->parent_session))) {
            pp = &n->next;
            continue;
        }
        *pp = n->next;
        n->next = NULL;
        job *j = xcalloc(1, sizeof *j);
        j->kind = JOB_NOTIFY;
        j->notice = n;
        chain(j, first, last);
    }
}

void sched_pump(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    lanes *ls = &o->reg.lanes;
    job *first = NULL, *last = NULL;
    unpark(o, &first, &last);
    for (lane *l; ls->queued > 0 && (l = next_agent_lane(o));)
        admit(o, l->qhead, &first, &last);
    while (ls->shell.qhead && sched_lane_open(o, &ls->shell))
        admit(o, ls->shell.qhead, &first, &last);
    /* Before the notifications already queued: a waiting task's start is
     * what the slot was freed for. */
    if (first)
        jobs_push_front(&o->q, first, last);
}

void sched_freed(void *eng)
{
    ENGINE_ASSERT_LOCKED((engine *)eng);
    engine *o = eng;
    if (o->reg.lanes.queued == 0 && !o->parked)
        return;
    o->sched_due = true;
    pthread_cond_signal(&o->work_cv);
}

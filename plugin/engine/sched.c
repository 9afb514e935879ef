/* sched.c — see sched.h. */
#include "engine/sched.h"

#include <string.h>

#include "base/util.h"

bool sched_lane_open(engine *eng, const lane *l)
{
    ENGINE_ASSERT_LOCKED(eng);
    const lanes *ls = &eng->reg.lanes;
    if (l == &ls->shell)
        return l->running < (unsigned)eng->opt.max_running_shells;
    int cap = options_agent_cap(&eng->opt, l->name);
    return ls->running_agents < (unsigned)eng->opt.max_running_agents && (cap == 0 || l->running < (unsigned)cap) &&
           l->retrying == 0;
}

admission sched_admission(engine *eng, task_type type, const char *agent)
{
    ENGINE_ASSERT_LOCKED(eng);
    lanes *ls = &eng->reg.lanes;
    lane *l = lanes_of(ls, type, agent);
    /* Open lanes have no one waiting (every release pumps), so a task that
     * starts at once jumps no queue; nor a woken launcher's slot. */
    if (sched_lane_open(eng, l) && l->queued == 0 && (type == TASK_SHELL || !eng->parked))
        return ADMIT_NOW;
    return ls->queued < (unsigned)eng->opt.max_queued ? ADMIT_QUEUE : ADMIT_FULL;
}

void sched_why_waiting(engine *eng, const lane *l, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    const lanes *ls = &eng->reg.lanes;
    int cap = options_agent_cap(&eng->opt, l->name);
    if (l == &ls->shell)
        sb_printf(out, "all %d command slots are busy (max_running_shells %d)", eng->opt.max_running_shells,
                  eng->opt.max_running_shells);
    else if (l->retrying > 0)
        sb_printf(out,
                  "the host is retrying a rate-limited call of a running %s task; %s tasks wait until it "
                  "clears",
                  l->name, l->name);
    else if (cap > 0 && l->running >= (unsigned)cap)
        sb_printf(out, "all %d %s slots are busy (max_running_per_agent %s: %d)", cap, l->name, l->name, cap);
    else
        sb_printf(out, "all %d agent slots are busy (max_running_agents %d)", eng->opt.max_running_agents,
                  eng->opt.max_running_agents);
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
static void admit(engine *eng, task *t, job **first, job **last)
{
    registry_set_status(&eng->reg, t, TASK_RUNNING, engine_now(eng));
    chain(job_for_task(JOB_START, t), first, last);
}

/* The open agent lane whose oldest pending task is the oldest, or NULL. */
static lane *next_agent_lane(engine *eng)
{
    lane *best = NULL;
    for (lane *l = eng->reg.lanes.all; l; l = l->next)
        if (l->qhead && (!best || l->qhead->active->qseq < best->qhead->active->qseq) && sched_lane_open(eng, l))
            best = l;
    return best;
}

bool sched_wake_slot(engine *eng, task *launcher)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!launcher || !launcher->awaiting)
        return true;
    if (!sched_lane_open(eng, launcher->lane))
        return false;
    registry_set_awaiting(&eng->reg, launcher, false);
    return true;
}

void sched_park(engine *eng, notification *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *a = registry_find_session(&eng->reg, n->parent_session);
    if (a)
        a->wake_parked = true;
    n->next = NULL;
    notification **pp = &eng->parked;
    while (*pp)
        pp = &(*pp)->next;
    *pp = n;
}

/* Parked waking notifications whose task can take a slot now (or no longer
 * waits for one) go out first, oldest first: each task they wake was
 * admitted long before anything in the queue. */
static void unpark(engine *eng, job **first, job **last)
{
    for (notification **pp = &eng->parked; *pp;) {
        notification *n = *pp;
        if (!sched_wake_slot(eng, registry_find_session(&eng->reg, n->parent_session))) {
            pp = &n->next;
            continue;
        }
        *pp = n->next;
        n->next = NULL;
        job *j = xcalloc(1, sizeof *j);
        j->kind = JOB_NOTIFY;
        j->notification = n;
        chain(j, first, last);
    }
}

void sched_pump(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    lanes *ls = &eng->reg.lanes;
    job *first = NULL, *last = NULL;
    unpark(eng, &first, &last);
    for (lane *l; ls->queued > 0 && (l = next_agent_lane(eng));)
        admit(eng, l->qhead, &first, &last);
    while (ls->shell.qhead && sched_lane_open(eng, &ls->shell))
        admit(eng, ls->shell.qhead, &first, &last);
    /* Before the notifications already queued: a waiting task's start is
     * what the slot was freed for. */
    if (first)
        jobs_push_front(&eng->q, first, last);
}

void sched_freed(void *engine_arg)
{
    ENGINE_ASSERT_LOCKED((engine *)engine_arg);
    engine *eng = engine_arg;
    if (eng->reg.lanes.queued == 0 && !eng->parked)
        return;
    eng->sched_due = true;
    pthread_cond_signal(&eng->work_cv);
}

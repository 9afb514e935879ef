/* agent_heap.c — layer 2 (agents), low: the heap of sessions whose turn
 * wakes, soonest first (ties in scheduling order); scheduling a wake signals
 * the scheduler thread (agent_sched.c). Uses the core only. */
#include "sim_agent_int.h"

static int heap_less(const sim_session *a, const sim_session *b)
{
    if (a->run->wake_mono != b->run->wake_mono)
        return a->run->wake_mono < b->run->wake_mono;
    return a->run->wake_seq < b->run->wake_seq;
}

static void heap_set(sim_agents *ag, size_t i, sim_session *s)
{
    ag->heap[i] = s;
    s->run->heap_idx = (long)i;
}

static void heap_up(sim_agents *ag, size_t i)
{
    sim_session *s = ag->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(s, ag->heap[p]))
            break;
        heap_set(ag, i, ag->heap[p]);
        i = p;
    }
    heap_set(ag, i, s);
}

static void heap_down(sim_agents *ag, size_t i)
{
    sim_session *s = ag->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const sim_session *best = s;
        if (l < ag->heap_len && heap_less(ag->heap[l], best)) {
            m = l;
            best = ag->heap[l];
        }
        if (l + 1 < ag->heap_len && heap_less(ag->heap[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        heap_set(ag, i, ag->heap[m]);
        i = m;
    }
    heap_set(ag, i, s);
}

void sim_agent_unschedule_locked(sim_agents *ag, sim_session *s)
{
    if (s->run->heap_idx < 0)
        return;
    size_t i = (size_t)s->run->heap_idx;
    s->run->heap_idx = -1;
    ag->heap_len--;
    if (i == ag->heap_len)
        return;
    heap_set(ag, i, ag->heap[ag->heap_len]);
    heap_up(ag, i);
    heap_down(ag, (size_t)ag->heap[i]->run->heap_idx);
}

void sim_agent_schedule_locked(sim_agents *ag, sim_session *s, int64_t at)
{
    sim_agent_unschedule_locked(ag, s);
    if (ag->heap_len == ag->heap_cap) {
        ag->heap_cap = ag->heap_cap ? ag->heap_cap * 2 : 64;
        ag->heap = sim_xrealloc(ag->heap, ag->heap_cap * sizeof *ag->heap);
    }
    s->run->wake_mono = at;
    s->run->wake_seq = ++ag->sched_seq;
    ag->heap_len++;
    heap_set(ag, ag->heap_len - 1, s);
    heap_up(ag, ag->heap_len - 1);
    pthread_cond_signal(&ag->sched_cv);
}

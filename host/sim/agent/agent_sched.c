/* agent_sched.c — layer 2 (agents), its top file: the one scheduler thread
 * that runs every session's model turn, soonest wake first (agent_heap.c);
 * before a turn's first step, the history goes through the plugins'
 * transform_messages (a callback). The agents' setup and teardown. Uses
 * agent_steps.c, agent_turn.c, agent_heap.c, agent_scripts.c, the storage and
 * the core. */
#include "sim_agent_int.h"

#include <stdlib.h>
#include <string.h>

/* Before a turn's first step, the host (like OpenCode before each model call)
 * passes the history through the plugins' transform_messages (the transform
 * hook). That calls into plugins, so it runs with mu released; the turn may
 * be aborted or the session deleted meanwhile, which `gen` and a fresh lookup
 * detect. */
static void transform_unlocked(sim_agents *ag, sim_session *s)
{
    char *id = sim_strdup(s->id);
    uint64_t gen = s->run->turn.gen;
    cJSON *hist = sim_session_messages_locked(s, 0);
    char *in = sim_print(hist);
    cJSON_Delete(hist);
    pthread_mutex_unlock(&ag->core->mu);
    char *seen =
        ag->callbacks.transform ? ag->callbacks.transform(ag->callbacks.transform_ctx, id, in) : sim_strdup(in);
    free(in);
    pthread_mutex_lock(&ag->core->mu);
    sim_session *now = sim_find_locked(ag->store, id);
    if (now && now->busy && now->run->turn.gen == gen) {
        free(now->model_input);
        now->model_input = seen;
        now->run->turn.transformed = 1;
        sim_changed_locked(ag->core);
    } else {
        free(seen);
    }
    free(id);
}

static void *sched_main(void *arg)
{
    sim_agents *ag = arg;
    pthread_mutex_lock(&ag->core->mu);
    while (!ag->core->stopping) {
        if (ag->heap_len == 0) {
            sim_cond_wait_until(&ag->sched_cv, &ag->core->mu, -1);
            continue;
        }
        sim_session *s = ag->heap[0];
        int64_t now = sim_mono_ms();
        if (s->run->wake_mono > now) {
            sim_cond_wait_until(&ag->sched_cv, &ag->core->mu, s->run->wake_mono);
            continue;
        }
        sim_agent_unschedule_locked(ag, s);
        if (!s->busy)
            continue;
        if (!s->run->turn.transformed) {
            /* Only this thread advances turns, so the turn cannot move on
             * while mu is released; an abort or delete changes gen. */
            uint64_t gen = s->run->turn.gen;
            char *id = sim_strdup(s->id);
            transform_unlocked(ag, s);
            s = sim_find_locked(ag->store, id);
            free(id);
            if (!s || !s->busy || s->run->turn.gen != gen)
                continue;
        }
        sim_agent_advance_locked(ag, s);
    }
    pthread_mutex_unlock(&ag->core->mu);
    return NULL;
}

int sim_agents_start(sim_agents *ag)
{
    int rc = pthread_create(&ag->sched_thread, NULL, sched_main, ag);
    if (rc == 0)
        ag->sched_started = 1;
    return rc;
}

void sim_agents_join(sim_agents *ag)
{
    pthread_mutex_lock(&ag->core->mu);
    pthread_cond_broadcast(&ag->sched_cv);
    pthread_mutex_unlock(&ag->core->mu);
    if (ag->sched_started)
        pthread_join(ag->sched_thread, NULL);
    ag->sched_started = 0;
}

int sim_agents_init(sim_agents *ag, sim_storage *store)
{
    memset(ag, 0, sizeof *ag);
    ag->core = store->core;
    ag->store = store;
    store->release = sim_agent_release_locked;
    store->release_ctx = ag;
    return sim_cond_init(&ag->sched_cv);
}

void sim_agents_destroy(sim_agents *ag)
{
    sim_agent_rules_free_locked(ag);
    free(ag->heap);
    ag->heap = NULL;
    ag->heap_len = ag->heap_cap = 0;
    pthread_cond_destroy(&ag->sched_cv);
}

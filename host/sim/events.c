/* events.c — the one thread that delivers the event queue (core_events.c) to
 * every plugin's on_event, and the public event functions of simhost.h. */
#include "sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void sim_emit(sim_host *h, const char *event_json)
{
    if (!event_json)
        return;
    pthread_mutex_lock(&h->core.mu);
    sim_emit_text_locked(&h->core, event_json);
    pthread_mutex_unlock(&h->core.mu);
}

void sim_event_faults(sim_host *h, uint32_t seed, double drop, double dup, int delay_ms,
                      const char *only_type)
{
    pthread_mutex_lock(&h->core.mu);
    sim_events_faults_locked(&h->core, seed, drop, dup, delay_ms, only_type);
    pthread_mutex_unlock(&h->core.mu);
}

size_t sim_events_delivered(sim_host *h, const char *type)
{
    pthread_mutex_lock(&h->core.mu);
    size_t n = sim_events_count_locked(&h->core, type);
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

int sim_events_flush(sim_host *h, int timeout_ms)
{
    sim_core *c = &h->core;
    int64_t deadline = sim_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&c->mu);
    uint64_t upto = c->ev.seq;
    int rc = 0;
    while (sim_events_pending_locked(c, upto)) {
        if (sim_mono_ms() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        sim_cond_wait_until(&c->state_cv, &c->mu, deadline);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void *event_main(void *arg)
{
    sim_host *h = arg;
    sim_core *c = &h->core;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        int64_t until;
        sim_event *e = sim_events_take_locked(c, &until);
        if (!e) {
            sim_cond_wait_until(&c->ev.cv, &c->mu, until);
            continue;
        }
        pthread_mutex_unlock(&c->mu);
        /* No host lock held: the plugin's on_event must not call the host, but
         * its other threads are calling host functions right now. */
        sim_plugins_deliver(h, e->json);
        pthread_mutex_lock(&c->mu);
        sim_events_done_locked(c, e);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int sim_events_start(sim_host *h)
{
    int rc = pthread_create(&h->ev_thread, NULL, event_main, h);
    if (rc == 0)
        h->ev_started = 1;
    return rc;
}

void sim_events_join(sim_host *h)
{
    if (h->ev_started)
        pthread_join(h->ev_thread, NULL);
    h->ev_started = 0;
    pthread_mutex_lock(&h->core.mu);
    sim_events_clear_locked(&h->core);
    pthread_mutex_unlock(&h->core.mu);
}

/* api_delivery.c — layer 3 (API): the one thread that delivers the event
 * queue (core_events.c), in order, through the deliver callback (the host's
 * plugins' on_event). Uses the core only. */
#include "sim_api_int.h"

static void *event_main(void *arg)
{
    sim_api *a = arg;
    sim_core *c = a->core;
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
        if (a->deliver)
            a->deliver(a->deliver_ctx, e->json);
        pthread_mutex_lock(&c->mu);
        sim_events_done_locked(c, e);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int sim_api_start(sim_api *a)
{
    int rc = pthread_create(&a->ev_thread, NULL, event_main, a);
    if (rc == 0)
        a->ev_started = 1;
    return rc;
}

void sim_api_join(sim_api *a)
{
    pthread_mutex_lock(&a->core->mu);
    pthread_cond_broadcast(&a->core->ev.cv);
    pthread_mutex_unlock(&a->core->mu);
    if (a->ev_started)
        pthread_join(a->ev_thread, NULL);
    a->ev_started = 0;
    pthread_mutex_lock(&a->core->mu);
    sim_events_clear_locked(a->core);
    pthread_mutex_unlock(&a->core->mu);
}

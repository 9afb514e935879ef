/* core_init.c — layer 0 (core), its top file: setting up and tearing down
 * the core (the lock, the condvars, what is left of the event queue). Uses
 * core.c and core_events.c (see sim_core.h). */
#include "sim_core.h"

int sim_core_init(sim_core *c)
{
    int rc = sim_cond_init(&c->state_cv);
    if (rc)
        return rc;
    rc = sim_cond_init(&c->ev.cv);
    if (rc) {
        pthread_cond_destroy(&c->state_cv);
        return rc;
    }
    pthread_mutex_init(&c->mu, NULL);
    return 0;
}

void sim_core_destroy(sim_core *c)
{
    sim_events_free_locked(c);
    pthread_cond_destroy(&c->state_cv);
    pthread_cond_destroy(&c->ev.cv);
    pthread_mutex_destroy(&c->mu);
}

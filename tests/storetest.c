/* storetest.c — see storetest.h. */
#include "storetest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"

sim_host *lt_host(const char *opts)
{
    sim_host *h = sim_create();
    if (!h || sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        tap_bail_out("loading the linked-in ocbg: %s", h ? sim_load_error(h) : "no host");
    return h;
}

ocbg *lt_engine(sim_host *h)
{
    return sim_plugin(h, 0)->userdata;
}

int lt_wait_until(sim_host *h, int (*cond)(sim_host *h, const char *arg), const char *arg)
{
    int64_t deadline = (int64_t)time(NULL) + tap_timeout_ms(5000) / 1000 + 1;
    while (!cond(h, arg)) {
        if ((int64_t)time(NULL) > deadline)
            return -1;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int lt_store_given_up(sim_host *h, const char *unused)
{
    (void)unused;
    ocbg *o = lt_engine(h);
    pthread_mutex_lock(&o->mu);
    int off = !o->reg.track;
    pthread_mutex_unlock(&o->mu);
    return off;
}

int lt_wait_log(sim_host *h, const char *needle)
{
    for (;;) {
        size_t n = sim_calls(h, "log", NULL);
        for (size_t i = 0; i < n; i++) {
            char *body = sim_call_body(h, "log", NULL, (int)i);
            int hit = body && strstr(body, needle);
            free(body);
            if (hit)
                return 0;
        }
        if (sim_wait_calls(h, "log", NULL, n + 1, tap_timeout_ms(3000)) != 0)
            return -1;
    }
}

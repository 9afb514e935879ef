/* core.c — layer 0 (core), its lowest file: the state-change signal, the
 * clock, condvars and allocation that every layer of the simulated host
 * shares (see sim_core.h). Calls no other file of the host. */
#include "sim_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *sim_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("simhost: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *sim_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fputs("simhost: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *sim_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("simhost: out of memory\n", stderr);
        abort();
    }
    return q;
}

char *sim_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = sim_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *sim_print(const cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    if (!s) {
        fputs("simhost: out of memory printing JSON\n", stderr);
        abort();
    }
    return s;
}

int64_t sim_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The offset is atomic so that the clock takes no lock: plugins call the
 * host's now_ms while holding their own locks (ocp.h), so it must return at
 * once. */
int64_t sim_wall_ms(sim_core *c)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + __atomic_load_n(&c->advance_ms, __ATOMIC_SEQ_CST);
}

void sim_clock_advance(sim_core *c, int64_t ms)
{
    __atomic_add_fetch(&c->advance_ms, ms, __ATOMIC_SEQ_CST);
    sim_changed(c);
}

int sim_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc)
        return rc;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

void sim_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_mono)
{
    if (until_mono < 0) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = {.tv_sec = until_mono / 1000, .tv_nsec = (until_mono % 1000) * 1000000};
    pthread_cond_timedwait(cv, mu, &ts);
}

void sim_changed_locked(sim_core *c)
{
    c->version++;
    pthread_cond_broadcast(&c->state_cv);
}

void sim_changed(sim_core *c)
{
    pthread_mutex_lock(&c->mu);
    sim_changed_locked(c);
    pthread_mutex_unlock(&c->mu);
}

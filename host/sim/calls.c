/* calls.c — the record of every host call a plugin made, and the faults and
 * slowness a test injects into them. */
#include "sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The per-function entry (created on first use). mu held. */
static sim_slowfn *fnstat_locked(sim_host *h, const char *fn)
{
    for (sim_slowfn *f = h->fnstats; f; f = f->next)
        if (strcmp(f->fn, fn) == 0)
            return f;
    sim_slowfn *f = sim_xcalloc(1, sizeof *f);
    f->fn = sim_strdup(fn);
    f->next = h->fnstats;
    h->fnstats = f;
    return f;
}

void sim_fail(sim_host *h, const char *fn, int nth, int count, int err)
{
    pthread_mutex_lock(&h->core.mu);
    /* One rule per function: a new one replaces the old. */
    for (sim_fault **pp = &h->faults; *pp;) {
        sim_fault *f = *pp;
        if (!fn || strcmp(f->fn, fn) == 0) {
            *pp = f->next;
            free(f->fn);
            free(f);
        } else {
            pp = &f->next;
        }
    }
    if (fn && count != 0) {
        sim_fault *f = sim_xcalloc(1, sizeof *f);
        f->fn = sim_strdup(fn);
        f->base = fnstat_locked(h, fn)->calls;
        f->nth = nth < 1 ? 1 : nth;
        f->count = count;
        f->err = err < 0 ? err : -EIO;
        f->next = h->faults;
        h->faults = f;
    }
    pthread_mutex_unlock(&h->core.mu);
}

void sim_slow(sim_host *h, const char *fn, int ms)
{
    if (!fn)
        return;
    pthread_mutex_lock(&h->core.mu);
    fnstat_locked(h, fn)->ms = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&h->core.mu);
}

int sim_call_begin(sim_host *h, const char *fn)
{
    pthread_mutex_lock(&h->core.mu);
    sim_slowfn *st = fnstat_locked(h, fn);
    int ms = st->ms;
    pthread_mutex_unlock(&h->core.mu);
    if (ms > 0) {
        /* A slow host: the plugin's thread is stuck in the call, host locks free. */
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    pthread_mutex_lock(&h->core.mu);
    uint64_t k = ++st->calls;
    int rc = 0;
    for (sim_fault *f = h->faults; f; f = f->next) {
        if (strcmp(f->fn, fn) != 0)
            continue;
        uint64_t nth = k - f->base; /* 1-based since the fault was set */
        if (nth >= (uint64_t)f->nth && (f->count < 0 || nth < (uint64_t)f->nth + (uint64_t)f->count))
            rc = f->err;
    }
    pthread_mutex_unlock(&h->core.mu);
    return rc;
}

void sim_call_record(sim_host *h, const char *fn, const char *session, const char *body, int rc,
                     int64_t t_ms)
{
    pthread_mutex_lock(&h->core.mu);
    if (h->ncalls == h->calls_cap) {
        h->calls_cap = h->calls_cap ? h->calls_cap * 2 : 64;
        h->calls = sim_xrealloc(h->calls, h->calls_cap * sizeof *h->calls);
    }
    sim_callrec *c = &h->calls[h->ncalls++];
    c->fn = sim_strdup(fn);
    c->session = sim_strdup(session);
    c->body = sim_strdup(body);
    c->rc = rc;
    c->t_ms = t_ms;
    sim_changed_locked(&h->core);
    pthread_mutex_unlock(&h->core.mu);
}

static int rec_matches(const sim_callrec *c, const char *fn, const char *sid)
{
    if (fn && strcmp(c->fn, fn) != 0)
        return 0;
    if (sid && (!c->session || strcmp(c->session, sid) != 0))
        return 0;
    return 1;
}

size_t sim_calls(sim_host *h, const char *fn, const char *session_id)
{
    size_t n = 0;
    pthread_mutex_lock(&h->core.mu);
    for (size_t i = 0; i < h->ncalls; i++)
        n += rec_matches(&h->calls[i], fn, session_id);
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

char *sim_call_body(sim_host *h, const char *fn, const char *session_id, int n)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    if (n >= 0) {
        int seen = 0;
        for (size_t i = 0; i < h->ncalls && !out; i++)
            if (rec_matches(&h->calls[i], fn, session_id) && seen++ == n)
                out = sim_strdup(h->calls[i].body ? h->calls[i].body : "");
    } else {
        int seen = -1;
        for (size_t i = h->ncalls; i-- > 0 && !out;)
            if (rec_matches(&h->calls[i], fn, session_id) && seen-- == n)
                out = sim_strdup(h->calls[i].body ? h->calls[i].body : "");
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

char *sim_calls_json(sim_host *h)
{
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&h->core.mu);
    for (size_t i = 0; i < h->ncalls; i++) {
        const sim_callrec *c = &h->calls[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "fn", c->fn);
        if (c->session)
            cJSON_AddStringToObject(o, "session", c->session);
        else
            cJSON_AddNullToObject(o, "session");
        if (c->body)
            cJSON_AddStringToObject(o, "body", c->body);
        else
            cJSON_AddNullToObject(o, "body");
        cJSON_AddNumberToObject(o, "rc", c->rc);
        cJSON_AddNumberToObject(o, "t_ms", (double)c->t_ms);
        cJSON_AddItemToArray(a, o);
    }
    pthread_mutex_unlock(&h->core.mu);
    char *s = sim_print(a);
    cJSON_Delete(a);
    return s;
}

void sim_calls_free_locked(sim_host *h)
{
    for (size_t i = 0; i < h->ncalls; i++) {
        free(h->calls[i].fn);
        free(h->calls[i].session);
        free(h->calls[i].body);
    }
    free(h->calls);
    h->calls = NULL;
    h->ncalls = h->calls_cap = 0;
    while (h->faults) {
        sim_fault *f = h->faults;
        h->faults = f->next;
        free(f->fn);
        free(f);
    }
    while (h->fnstats) {
        sim_slowfn *f = h->fnstats;
        h->fnstats = f->next;
        free(f->fn);
        free(f);
    }
}

/* api_calls.c — layer 3 (API), its lowest file: the record of every host
 * call a plugin made (a call about a session of a released folder counted
 * too), and the faults and slowness a test injects into them. Uses the
 * store and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The per-function entry (created on first use). mu held. */
static sim_slowfn *fnstat_locked(sim_api *a, const char *fn)
{
    for (sim_slowfn *f = a->fnstats; f; f = f->next)
        if (strcmp(f->fn, fn) == 0)
            return f;
    sim_slowfn *f = sim_xcalloc(1, sizeof *f);
    f->fn = sim_strdup(fn);
    f->next = a->fnstats;
    a->fnstats = f;
    return f;
}

void sim_api_fail(sim_api *a, const char *fn, int nth, int count, int err)
{
    pthread_mutex_lock(&a->core->mu);
    /* One rule per function: a new one replaces the old. */
    for (sim_fault **pp = &a->faults; *pp;) {
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
        f->base = fnstat_locked(a, fn)->calls;
        f->nth = nth < 1 ? 1 : nth;
        f->count = count;
        f->err = err < 0 ? err : -EIO;
        f->next = a->faults;
        a->faults = f;
    }
    pthread_mutex_unlock(&a->core->mu);
}

void sim_api_slow(sim_api *a, const char *fn, int ms)
{
    if (!fn)
        return;
    pthread_mutex_lock(&a->core->mu);
    fnstat_locked(a, fn)->ms = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&a->core->mu);
}

void sim_api_on_call(sim_api *a, const char *fn, void (*on_call)(void *arg), void *arg)
{
    if (!fn)
        return;
    pthread_mutex_lock(&a->core->mu);
    sim_slowfn *st = fnstat_locked(a, fn);
    st->on_call = on_call;
    st->on_call_arg = arg;
    pthread_mutex_unlock(&a->core->mu);
}

int sim_api_call_begin(sim_api *a, const char *fn)
{
    pthread_mutex_lock(&a->core->mu);
    sim_slowfn *st = fnstat_locked(a, fn);
    int ms = st->ms;
    void (*on_call)(void *) = st->on_call;
    void *on_call_arg = st->on_call_arg;
    st->started++;
    sim_changed_locked(a->core);
    pthread_mutex_unlock(&a->core->mu);
    if (on_call)
        on_call(on_call_arg);
    if (ms > 0) {
        /* A slow host: the plugin's thread is stuck in the call, host locks free. */
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    pthread_mutex_lock(&a->core->mu);
    uint64_t k = ++st->calls;
    int rc = 0;
    for (sim_fault *f = a->faults; f; f = f->next) {
        if (strcmp(f->fn, fn) != 0)
            continue;
        uint64_t nth = k - f->base; /* 1-based since the fault was set */
        if (nth >= (uint64_t)f->nth && (f->count < 0 || nth < (uint64_t)f->nth + (uint64_t)f->count))
            rc = f->err;
    }
    pthread_mutex_unlock(&a->core->mu);
    return rc;
}

/* A call about sid, a session of a folder the plugin released: counted
 * (sim_released_touches), and said on stderr as a TAP comment, since in
 * OpenCode it would make a new instance at a folder that may be gone. mu
 * held. */
static void touch_check_locked(sim_api *a, const char *fn, const char *sid)
{
    sim_dir *d = sim_dir_of_session_locked(a->store, sid);
    if (d && d->released) {
        d->touches++;
        fprintf(stderr, "# simhost: %s about %s, of the released folder %s\n", fn, sid, d->path);
    }
}

void sim_api_call_record(sim_api *a, const char *fn, const char *session, const char *body, int rc, int64_t t_ms)
{
    pthread_mutex_lock(&a->core->mu);
    touch_check_locked(a, fn, session);
    if (a->ncalls == a->calls_cap) {
        a->calls_cap = a->calls_cap ? a->calls_cap * 2 : 64;
        a->calls = sim_xrealloc(a->calls, a->calls_cap * sizeof *a->calls);
    }
    sim_callrec *c = &a->calls[a->ncalls++];
    c->fn = sim_strdup(fn);
    c->session = sim_strdup(session);
    c->body = sim_strdup(body);
    c->rc = rc;
    c->t_ms = t_ms;
    sim_changed_locked(a->core);
    pthread_mutex_unlock(&a->core->mu);
}

size_t sim_api_calls_started(sim_api *a, const char *fn)
{
    pthread_mutex_lock(&a->core->mu);
    size_t n = (size_t)fnstat_locked(a, fn)->started;
    pthread_mutex_unlock(&a->core->mu);
    return n;
}

static int rec_matches(const sim_callrec *c, const char *fn, const char *sid)
{
    if (fn && strcmp(c->fn, fn) != 0)
        return 0;
    if (sid && (!c->session || strcmp(c->session, sid) != 0))
        return 0;
    return 1;
}

size_t sim_api_calls(sim_api *a, const char *fn, const char *session_id)
{
    size_t n = 0;
    pthread_mutex_lock(&a->core->mu);
    for (size_t i = 0; i < a->ncalls; i++)
        n += rec_matches(&a->calls[i], fn, session_id);
    pthread_mutex_unlock(&a->core->mu);
    return n;
}

char *sim_api_call_body(sim_api *a, const char *fn, const char *session_id, int n)
{
    char *out = NULL;
    pthread_mutex_lock(&a->core->mu);
    if (n >= 0) {
        int seen = 0;
        for (size_t i = 0; i < a->ncalls && !out; i++)
            if (rec_matches(&a->calls[i], fn, session_id) && seen++ == n)
                out = sim_strdup(a->calls[i].body ? a->calls[i].body : "");
    } else {
        int seen = -1;
        for (size_t i = a->ncalls; i-- > 0 && !out;)
            if (rec_matches(&a->calls[i], fn, session_id) && seen-- == n)
                out = sim_strdup(a->calls[i].body ? a->calls[i].body : "");
    }
    pthread_mutex_unlock(&a->core->mu);
    return out;
}

char *sim_api_calls_json(sim_api *a)
{
    cJSON *list = cJSON_CreateArray();
    pthread_mutex_lock(&a->core->mu);
    for (size_t i = 0; i < a->ncalls; i++) {
        const sim_callrec *c = &a->calls[i];
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
        cJSON_AddItemToArray(list, o);
    }
    pthread_mutex_unlock(&a->core->mu);
    char *s = sim_print(list);
    cJSON_Delete(list);
    return s;
}

void sim_api_calls_free_locked(sim_api *a)
{
    for (size_t i = 0; i < a->ncalls; i++) {
        free(a->calls[i].fn);
        free(a->calls[i].session);
        free(a->calls[i].body);
    }
    free(a->calls);
    a->calls = NULL;
    a->ncalls = a->calls_cap = 0;
    while (a->faults) {
        sim_fault *f = a->faults;
        a->faults = f->next;
        free(f->fn);
        free(f);
    }
    while (a->fnstats) {
        sim_slowfn *f = a->fnstats;
        a->fnstats = f->next;
        free(f->fn);
        free(f);
    }
}

/* events.c — the event queue and the one thread that delivers it, in order
 * of due time (then emission order), to every plugin's on_event. Event faults
 * are decided when an event is emitted, from a seeded random source, so a
 * given seed and event sequence always give the same faults. */
#include "sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rand01(uint64_t *s)
{
    return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* Insert keeping (due, seq) order; new events are nearly always last. */
static void enqueue_locked(sim_host *h, sim_event *e)
{
    sim_event *after = h->ev_tail;
    while (after && (after->due_mono > e->due_mono ||
                     (after->due_mono == e->due_mono && after->seq > e->seq)))
        after = after->prev;
    e->prev = after;
    e->next = after ? after->next : h->ev_head;
    if (e->next)
        e->next->prev = e;
    else
        h->ev_tail = e;
    if (after)
        after->next = e;
    else
        h->ev_head = e;
    pthread_cond_signal(&h->ev_cv);
}

static sim_event *event_new(const char *json, const char *type, uint64_t seq, int64_t due)
{
    sim_event *e = sim_xcalloc(1, sizeof *e);
    e->json = sim_strdup(json);
    e->type = sim_strdup(type);
    e->seq = seq;
    e->due_mono = due;
    return e;
}

static void event_free(sim_event *e)
{
    free(e->json);
    free(e->type);
    free(e);
}

static void emit_typed_locked(sim_host *h, const char *json, const char *type)
{
    uint64_t seq = ++h->ev_seq;
    int64_t now = sim_mono_ms();
    int faulty = (h->ev_drop > 0 || h->ev_dup > 0 || h->ev_delay_ms > 0) &&
                 (!h->ev_only_type || strcmp(h->ev_only_type, type) == 0);
    if (!faulty) {
        enqueue_locked(h, event_new(json, type, seq, now));
        sim_changed_locked(h);
        return;
    }
    /* Three draws per faulty event, whatever they decide, so one fault's
     * outcome does not shift the next event's. */
    double r_drop = rand01(&h->ev_rng), r_dup = rand01(&h->ev_rng);
    uint64_t r_delay = splitmix(&h->ev_rng);
    if (r_drop < h->ev_drop) {
        sim_changed_locked(h);
        return;
    }
    int64_t span = h->ev_delay_ms > 0 ? (int64_t)h->ev_delay_ms + 1 : 1;
    enqueue_locked(h, event_new(json, type, seq, now + (int64_t)(r_delay % (uint64_t)span)));
    if (r_dup < h->ev_dup) {
        /* The copy gets its own delay, so it may arrive before or after. */
        uint64_t r2 = splitmix(&h->ev_rng);
        enqueue_locked(h, event_new(json, type, seq, now + (int64_t)(r2 % (uint64_t)span)));
    }
    sim_changed_locked(h);
}

void sim_emit_locked(sim_host *h, cJSON *ev)
{
    char *json = sim_print(ev);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
    emit_typed_locked(h, json, type ? type : "");
    free(json);
    cJSON_Delete(ev);
}

void sim_emit_text_locked(sim_host *h, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "type"));
    emit_typed_locked(h, json, type ? type : "");
    cJSON_Delete(j);
}

void sim_emit_props_locked(sim_host *h, const char *type, cJSON *props)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddItemToObject(ev, "properties", props);
    sim_emit_locked(h, ev);
}

void sim_emit(sim_host *h, const char *event_json)
{
    if (!event_json)
        return;
    pthread_mutex_lock(&h->mu);
    sim_emit_text_locked(h, event_json);
    pthread_mutex_unlock(&h->mu);
}

void sim_event_faults(sim_host *h, uint32_t seed, double drop, double dup, int delay_ms,
                      const char *only_type)
{
    pthread_mutex_lock(&h->mu);
    h->ev_rng = seed;
    h->ev_drop = drop;
    h->ev_dup = dup;
    h->ev_delay_ms = delay_ms > 0 ? delay_ms : 0;
    free(h->ev_only_type);
    h->ev_only_type = only_type ? sim_strdup(only_type) : NULL;
    pthread_mutex_unlock(&h->mu);
}

static void count_type_locked(sim_host *h, const char *type)
{
    h->ev_delivered++;
    for (sim_typecount *t = h->ev_types; t; t = t->next) {
        if (strcmp(t->type, type) == 0) {
            t->n++;
            return;
        }
    }
    sim_typecount *t = sim_xcalloc(1, sizeof *t);
    t->type = sim_strdup(type);
    t->n = 1;
    t->next = h->ev_types;
    h->ev_types = t;
}

size_t sim_events_delivered(sim_host *h, const char *type)
{
    size_t n = 0;
    pthread_mutex_lock(&h->mu);
    if (!type) {
        n = h->ev_delivered;
    } else {
        for (sim_typecount *t = h->ev_types; t; t = t->next)
            if (strcmp(t->type, type) == 0)
                n = t->n;
    }
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* Is any event numbered <= upto still queued or being delivered? mu held. */
static int pending_upto_locked(sim_host *h, uint64_t upto)
{
    if (h->ev_inflight && h->ev_inflight <= upto)
        return 1;
    for (sim_event *e = h->ev_head; e; e = e->next)
        if (e->seq <= upto)
            return 1;
    return 0;
}

int sim_events_flush(sim_host *h, int timeout_ms)
{
    int64_t deadline = sim_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&h->mu);
    uint64_t upto = h->ev_seq;
    int rc = 0;
    while (pending_upto_locked(h, upto)) {
        if (sim_mono_ms() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        sim_cond_wait_until(&h->state_cv, &h->mu, deadline);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

static void *event_main(void *arg)
{
    sim_host *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        sim_event *e = h->ev_head;
        if (!e) {
            sim_cond_wait_until(&h->ev_cv, &h->mu, -1);
            continue;
        }
        if (e->due_mono > sim_mono_ms()) {
            sim_cond_wait_until(&h->ev_cv, &h->mu, e->due_mono);
            continue;
        }
        h->ev_head = e->next;
        if (h->ev_head)
            h->ev_head->prev = NULL;
        else
            h->ev_tail = NULL;
        h->ev_inflight = e->seq;
        pthread_mutex_unlock(&h->mu);
        /* No host lock held: the plugin's on_event must not call the host, but
         * its other threads are calling host functions right now. */
        sim_plugins_deliver(h, e->json);
        pthread_mutex_lock(&h->mu);
        h->ev_inflight = 0;
        count_type_locked(h, e->type);
        sim_changed_locked(h);
        event_free(e);
    }
    pthread_mutex_unlock(&h->mu);
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
    pthread_mutex_lock(&h->mu);
    while (h->ev_head) {
        sim_event *e = h->ev_head;
        h->ev_head = e->next;
        event_free(e);
    }
    h->ev_tail = NULL;
    pthread_mutex_unlock(&h->mu);
}

/* core_events.c — the event queue every layer emits into, kept in order of
 * due time (then emission order), and the event faults (drop, duplicate,
 * delay) decided when an event is emitted, from a seeded random source, so a
 * given seed and event sequence always give the same faults. Delivery (a
 * thread that takes due events and hands them to the plugins) is the API
 * layer's. Layer 0 (core); uses core.c. */
#include "sim_core.h"

#include <stdlib.h>
#include <string.h>

struct sim_typecount {
    char *type;
    size_t n;
    sim_typecount *next;
};

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
static void enqueue_locked(sim_evq *q, sim_event *e)
{
    sim_event *after = q->tail;
    while (after && (after->due_mono > e->due_mono || (after->due_mono == e->due_mono && after->seq > e->seq)))
        after = after->prev;
    e->prev = after;
    e->next = after ? after->next : q->head;
    if (e->next)
        e->next->prev = e;
    else
        q->tail = e;
    if (after)
        after->next = e;
    else
        q->head = e;
    pthread_cond_signal(&q->cv);
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

/* Is type one of the comma-separated types in list? */
static int type_listed(const char *list, const char *type)
{
    size_t n = strlen(type);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, type, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

static void emit_typed_locked(sim_core *c, const char *json, const char *type, const cJSON *ev)
{
    if (c->route && !c->route(c->route_ctx, ev)) {
        c->unrouted++;
        return;
    }
    sim_evq *q = &c->ev;
    uint64_t seq = ++q->seq;
    int64_t now = sim_mono_ms();
    int faulty = (q->drop > 0 || q->dup > 0 || q->delay_ms > 0) && (!q->only_type || type_listed(q->only_type, type));
    if (!faulty) {
        enqueue_locked(q, event_new(json, type, seq, now));
        sim_changed_locked(c);
        return;
    }
    /* Three draws per faulty event, whatever they decide, so one fault's
     * outcome does not shift the next event's. */
    double r_drop = rand01(&q->rng), r_dup = rand01(&q->rng);
    uint64_t r_delay = splitmix(&q->rng);
    if (r_drop < q->drop) {
        sim_changed_locked(c);
        return;
    }
    int64_t span = q->delay_ms > 0 ? (int64_t)q->delay_ms + 1 : 1;
    enqueue_locked(q, event_new(json, type, seq, now + (int64_t)(r_delay % (uint64_t)span)));
    if (r_dup < q->dup) {
        /* The copy gets its own delay, so it may arrive before or after. */
        uint64_t r2 = splitmix(&q->rng);
        enqueue_locked(q, event_new(json, type, seq, now + (int64_t)(r2 % (uint64_t)span)));
    }
    sim_changed_locked(c);
}

void sim_emit_locked(sim_core *c, cJSON *ev)
{
    char *json = sim_print(ev);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
    emit_typed_locked(c, json, type ? type : "", ev);
    free(json);
    cJSON_Delete(ev);
}

void sim_emit_text_locked(sim_core *c, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "type"));
    emit_typed_locked(c, json, type ? type : "", j);
    cJSON_Delete(j);
}

void sim_emit_props_locked(sim_core *c, const char *type, cJSON *props)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddItemToObject(ev, "properties", props);
    sim_emit_locked(c, ev);
}

void sim_events_faults_locked(sim_core *c, uint32_t seed, double drop, double dup, int delay_ms, const char *only_type)
{
    sim_evq *q = &c->ev;
    q->rng = seed;
    q->drop = drop;
    q->dup = dup;
    q->delay_ms = delay_ms > 0 ? delay_ms : 0;
    free(q->only_type);
    q->only_type = only_type ? sim_strdup(only_type) : NULL;
}

sim_event *sim_events_take_locked(sim_core *c, int64_t *wait_until)
{
    sim_evq *q = &c->ev;
    sim_event *e = q->head;
    if (!e) {
        *wait_until = -1;
        return NULL;
    }
    if (e->due_mono > sim_mono_ms()) {
        *wait_until = e->due_mono;
        return NULL;
    }
    q->head = e->next;
    if (q->head)
        q->head->prev = NULL;
    else
        q->tail = NULL;
    q->inflight = e->seq;
    return e;
}

static void count_type_locked(sim_evq *q, const char *type)
{
    q->delivered++;
    for (sim_typecount *t = q->types; t; t = t->next) {
        if (strcmp(t->type, type) == 0) {
            t->n++;
            return;
        }
    }
    sim_typecount *t = sim_xcalloc(1, sizeof *t);
    t->type = sim_strdup(type);
    t->n = 1;
    t->next = q->types;
    q->types = t;
}

void sim_events_done_locked(sim_core *c, sim_event *e)
{
    c->ev.inflight = 0;
    count_type_locked(&c->ev, e->type);
    sim_changed_locked(c);
    event_free(e);
}

size_t sim_events_count_locked(const sim_core *c, const char *type)
{
    if (!type)
        return c->ev.delivered;
    for (const sim_typecount *t = c->ev.types; t; t = t->next)
        if (strcmp(t->type, type) == 0)
            return t->n;
    return 0;
}

int sim_events_pending_locked(const sim_core *c, uint64_t upto)
{
    if (c->ev.inflight && c->ev.inflight <= upto)
        return 1;
    for (const sim_event *e = c->ev.head; e; e = e->next)
        if (e->seq <= upto)
            return 1;
    return 0;
}

void sim_events_clear_locked(sim_core *c)
{
    while (c->ev.head) {
        sim_event *e = c->ev.head;
        c->ev.head = e->next;
        event_free(e);
    }
    c->ev.tail = NULL;
}

void sim_events_free_locked(sim_core *c)
{
    sim_events_clear_locked(c);
    free(c->ev.only_type);
    c->ev.only_type = NULL;
    while (c->ev.types) {
        sim_typecount *t = c->ev.types;
        c->ev.types = t->next;
        free(t->type);
        free(t);
    }
}

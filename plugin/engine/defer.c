/* defer.c — see defer.h. */
#include "engine/defer.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A held notice goes out anyway once its parent's busy state was last
 * confirmed this many poll intervals ago: while agents run, the poll reads
 * the status map at least every POLL_GAP_MAX (8) intervals (engine/poll.c)
 * and confirms a busy parent, so only a lost idle (or a host that cannot
 * say) gets that far. */
#define DEFER_CONFIRM_POLLS 12

/* A session the host last said is busy. */
typedef struct busy_session {
    char *id;               /* the map's key */
    int64_t confirmed_mono; /* when an event or the poll last said so */
    int64_t event_mono;     /* when an event last said so */
} busy_session;

/* The busy map's key: the value's own session id (map.h). */
static const char *busy_id_of(const void *b)
{
    return ((const busy_session *)b)->id;
}

void defer_init(engine *o)
{
    map_init(&o->defer.busy, busy_id_of);
    o->defer.held = NULL;
    o->defer.held_tail = &o->defer.held;
}

static void free_busy(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    busy_session *b = value;
    free(b->id);
    free(b);
}

void defer_free(engine *o)
{
    map_each(&o->defer.busy, free_busy, NULL);
    map_free(&o->defer.busy);
    while (o->defer.held) {
        notice *n = o->defer.held;
        o->defer.held = n->next;
        notice_free(n);
    }
    o->defer.held_tail = &o->defer.held;
}

static int64_t bound_ms(const engine *o)
{
    return (int64_t)o->opt.poll_interval_ms * DEFER_CONFIRM_POLLS;
}

/* The session is no longer busy (idle, deleted): its held notices may go. */
static void forget_busy(engine *o, const char *session_id)
{
    busy_session *b = map_del(&o->defer.busy, session_id);
    if (b)
        free_busy(NULL, b, NULL);
    if (o->defer.held) {
        o->defer.due = true;
        pthread_cond_signal(&o->work_cv);
    }
}

void defer_note(engine *o, const session_note *n)
{
    ENGINE_ASSERT_LOCKED(o);
    switch (n->kind) {
    case NOTE_BUSY:
    case NOTE_RETRY: {
        busy_session *b = map_get(&o->defer.busy, n->session_id);
        if (!b) {
            b = xcalloc(1, sizeof *b);
            b->id = xstrdup(n->session_id);
            map_put(&o->defer.busy, b);
        }
        b->confirmed_mono = b->event_mono = mono_ms();
        break;
    }
    case NOTE_IDLE:
    case NOTE_DELETED:
        forget_busy(o, n->session_id);
        break;
    default:
        break;
    }
}

/* Is n's parent busy, as last confirmed less than the bound ago? */
static bool parent_busy(engine *o, const notice *n, int64_t now)
{
    const busy_session *b = map_get(&o->defer.busy, n->parent_session);
    return b && now - b->confirmed_mono < bound_ms(o);
}

bool defer_hold(engine *o, notice *n)
{
    ENGINE_ASSERT_LOCKED(o);
    if (n->wake || n->permission_request || n->released || !parent_busy(o, n, mono_ms()))
        return false;
    n->next = NULL;
    *o->defer.held_tail = n;
    o->defer.held_tail = &n->next;
    o->defer.deferred++;
    const busy_session *b = map_get(&o->defer.busy, n->parent_session);
    int64_t at = b->confirmed_mono + bound_ms(o);
    if (o->defer.next_at == 0 || at < o->defer.next_at)
        o->defer.next_at = at; /* the worker's wait ends by then */
    return true;
}

/* Append a job pushing n (released: it is not held again) to first..last. */
static void chain_release(notice *n, job **first, job **last)
{
    n->next = NULL;
    n->released = true;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notice = n;
    if (*last)
        (*last)->next = j;
    else
        *first = j;
    *last = j;
}

/* Take the held notices `release` says go, in order, into first..last. */
static void take_held(engine *o, bool (*release)(engine *o, const notice *n, const void *arg), const void *arg,
                      job **first, job **last)
{
    notice **pp = &o->defer.held;
    while (*pp) {
        notice *n = *pp;
        if (release(o, n, arg)) {
            *pp = n->next;
            chain_release(n, first, last);
        } else {
            pp = &n->next;
        }
    }
    o->defer.held_tail = pp;
}

static bool same_parent(engine *o, const notice *n, const void *session)
{
    (void)o;
    return strcmp(n->parent_session, session) == 0;
}

bool defer_flush_before(engine *o, notice *n)
{
    ENGINE_ASSERT_LOCKED(o);
    job *first = NULL, *last = NULL;
    take_held(o, same_parent, n->parent_session, &first, &last);
    if (!first)
        return false;
    chain_release(n, &first, &last);
    jobs_push_front(&o->q, first, last);
    return true;
}

typedef struct busy_vec {
    busy_session **items;
    size_t n;
} busy_vec;

static void collect_busy(const char *key, void *value, void *arg)
{
    (void)key;
    busy_vec *v = arg;
    v->items[v->n++] = value;
}

void defer_poll(engine *o, const cJSON *status_map)
{
    ENGINE_ASSERT_LOCKED(o);
    busy_vec v = {xcalloc(o->defer.busy.count + 1, sizeof *v.items), 0};
    map_each(&o->defer.busy, collect_busy, &v);
    int64_t now = mono_ms();
    for (size_t i = 0; i < v.n; i++) {
        if (cJSON_GetObjectItemCaseSensitive(status_map, v.items[i]->id))
            v.items[i]->confirmed_mono = now;
        else if (now - v.items[i]->event_mono >= o->opt.poll_interval_ms)
            forget_busy(o, v.items[i]->id); /* its idle was lost (a newer busy event than the map: kept) */
    }
    free(v.items);
}

/* Does held notice n go now: its parent idle or gone, or not confirmed
 * busy for too long, or its task gone? */
static bool goes_now(engine *o, const notice *n, const void *now)
{
    return !parent_busy(o, n, *(const int64_t *)now) || !registry_find(&o->reg, n->task_id);
}

int64_t defer_tick(engine *o, int64_t now)
{
    ENGINE_ASSERT_LOCKED(o);
    if (!o->defer.held)
        return 0;
    if (o->defer.due || now >= o->defer.next_at) {
        o->defer.due = false;
        job *first = NULL, *last = NULL;
        take_held(o, goes_now, &now, &first, &last);
        for (job *j = first, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            jobs_push(&o->q, j);
        }
        o->defer.next_at = 0;
        for (notice *n = o->defer.held; n; n = n->next) {
            const busy_session *b = map_get(&o->defer.busy, n->parent_session);
            int64_t at = b ? b->confirmed_mono + bound_ms(o) : now;
            if (o->defer.next_at == 0 || at < o->defer.next_at)
                o->defer.next_at = at;
        }
    }
    return o->defer.held ? o->defer.next_at : 0;
}

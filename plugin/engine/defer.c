/* defer.c — see defer.h. */
#include "engine/defer.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A held notification goes out anyway once its parent's busy state was last
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

void defer_init(engine *eng)
{
    map_init(&eng->defer.busy, busy_id_of);
    eng->defer.held = NULL;
    eng->defer.held_tail = &eng->defer.held;
}

static void free_busy(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    busy_session *b = value;
    free(b->id);
    free(b);
}

void defer_free(engine *eng)
{
    map_each(&eng->defer.busy, free_busy, NULL);
    map_free(&eng->defer.busy);
    while (eng->defer.held) {
        notification *n = eng->defer.held;
        eng->defer.held = n->next;
        notification_free(n);
    }
    eng->defer.held_tail = &eng->defer.held;
}

static int64_t bound_ms(const engine *eng)
{
    return (int64_t)eng->opt.poll_interval_ms * DEFER_CONFIRM_POLLS;
}

/* The session is no longer busy (idle, deleted): its held notifications may go. */
static void forget_busy(engine *eng, const char *session_id)
{
    busy_session *b = map_del(&eng->defer.busy, session_id);
    if (b)
        free_busy(NULL, b, NULL);
    if (eng->defer.held) {
        eng->defer.due = true;
        pthread_cond_signal(&eng->work_cv);
    }
}

void defer_note(engine *eng, const session_note *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    switch (n->kind) {
    case NOTE_BUSY:
    case NOTE_RETRY: {
        busy_session *b = map_get(&eng->defer.busy, n->session_id);
        if (!b) {
            b = xcalloc(1, sizeof *b);
            b->id = xstrdup(n->session_id);
            map_put(&eng->defer.busy, b);
        }
        b->confirmed_mono = b->event_mono = mono_ms();
        break;
    }
    case NOTE_IDLE:
    case NOTE_DELETED:
        forget_busy(eng, n->session_id);
        break;
    default:
        break;
    }
}

/* Is n's parent busy, as last confirmed less than the bound ago? */
static bool parent_busy(engine *eng, const notification *n, int64_t now)
{
    const busy_session *b = map_get(&eng->defer.busy, n->parent_session);
    return b && now - b->confirmed_mono < bound_ms(eng);
}

bool defer_hold(engine *eng, notification *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (n->wake || n->permission_request || n->released || !parent_busy(eng, n, mono_ms()))
        return false;
    n->next = NULL;
    *eng->defer.held_tail = n;
    eng->defer.held_tail = &n->next;
    eng->defer.deferred++;
    const busy_session *b = map_get(&eng->defer.busy, n->parent_session);
    int64_t at = b->confirmed_mono + bound_ms(eng);
    if (eng->defer.next_at == 0 || at < eng->defer.next_at)
        eng->defer.next_at = at; /* the worker's wait ends by then */
    return true;
}

/* Append a job pushing n (released: it is not held again) to first..last. */
static void chain_release(notification *n, job **first, job **last)
{
    n->next = NULL;
    n->released = true;
    job *j = xcalloc(1, sizeof *j);
    j->kind = JOB_NOTIFY;
    j->notification = n;
    if (*last)
        (*last)->next = j;
    else
        *first = j;
    *last = j;
}

/* Take the held notifications `release` says go, in order, into first..last. */
static void take_held(engine *eng, bool (*release)(engine *eng, const notification *n, const void *arg),
                      const void *arg, job **first, job **last)
{
    notification **pp = &eng->defer.held;
    while (*pp) {
        notification *n = *pp;
        if (release(eng, n, arg)) {
            *pp = n->next;
            chain_release(n, first, last);
        } else {
            pp = &n->next;
        }
    }
    eng->defer.held_tail = pp;
}

static bool same_parent(engine *eng, const notification *n, const void *session)
{
    (void)eng;
    return strcmp(n->parent_session, session) == 0;
}

bool defer_flush_before(engine *eng, notification *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    job *first = NULL, *last = NULL;
    take_held(eng, same_parent, n->parent_session, &first, &last);
    if (!first)
        return false;
    chain_release(n, &first, &last);
    jobs_push_front(&eng->q, first, last);
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

void defer_poll(engine *eng, const cJSON *status_map)
{
    ENGINE_ASSERT_LOCKED(eng);
    busy_vec v = {xcalloc(eng->defer.busy.count + 1, sizeof *v.items), 0};
    map_each(&eng->defer.busy, collect_busy, &v);
    int64_t now = mono_ms();
    for (size_t i = 0; i < v.n; i++) {
        if (cJSON_GetObjectItemCaseSensitive(status_map, v.items[i]->id))
            v.items[i]->confirmed_mono = now;
        else if (now - v.items[i]->event_mono >= eng->opt.poll_interval_ms)
            forget_busy(eng, v.items[i]->id); /* its idle was lost (a newer busy event than the map: kept) */
    }
    free(v.items);
}

/* Does held notification n go now: its parent idle or gone, or not confirmed
 * busy for too long, or its task gone? */
static bool goes_now(engine *eng, const notification *n, const void *now)
{
    return !parent_busy(eng, n, *(const int64_t *)now) || !registry_find(&eng->reg, n->task_id);
}

int64_t defer_tick(engine *eng, int64_t now)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!eng->defer.held)
        return 0;
    if (eng->defer.due || now >= eng->defer.next_at) {
        eng->defer.due = false;
        job *first = NULL, *last = NULL;
        take_held(eng, goes_now, &now, &first, &last);
        for (job *j = first, *next; j; j = next) {
            next = j->next;
            j->next = NULL;
            jobs_push(&eng->q, j);
        }
        eng->defer.next_at = 0;
        for (notification *n = eng->defer.held; n; n = n->next) {
            const busy_session *b = map_get(&eng->defer.busy, n->parent_session);
            int64_t at = b ? b->confirmed_mono + bound_ms(eng) : now;
            if (eng->defer.next_at == 0 || at < eng->defer.next_at)
                eng->defer.next_at = at;
        }
    }
    return eng->defer.held ? eng->defer.next_at : 0;
}

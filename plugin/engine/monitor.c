/* monitor.c — see monitor.h. */
#include "engine/monitor.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "text/monitor.h"

/* The wakes the monitors of one session gave in the last minute: a ring of
 * their monotonic times, per_minute long. */
typedef struct session_wakes {
    char *session_id;
    int64_t *at;
    unsigned size, pos, count;
} session_wakes;

/* The tasks whose output is watched, by id (a removed task's entry is
 * dropped at the next look). */
typedef struct monitor_list {
    char (*ids)[TASK_ID_SIZE];
    unsigned n, cap;
    bool narrowed;        /* lim was set (monitor_set_limits) */
    watch_limits lim;     /* then: a new monitor's bounds */
    session_wakes *wakes; /* sessions their monitors woke in the last minute */
    unsigned nwakes, capwakes;
} monitor_list;

static monitor_list *list_of(engine *eng)
{
    if (!eng->monitors)
        eng->monitors = xcalloc(1, sizeof *eng->monitors);
    return eng->monitors;
}

watch_limits monitor_limits(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    return eng->monitors && eng->monitors->narrowed ? eng->monitors->lim : watch_limits_default();
}

void monitor_set_limits(engine *eng, const watch_limits *lim)
{
    ENGINE_ASSERT_LOCKED(eng);
    monitor_list *l = list_of(eng);
    l->lim = *lim;
    l->narrowed = true;
}

void monitor_attach(engine *eng, task *t, shell_monitor *m)
{
    ENGINE_ASSERT_LOCKED(eng);
    monitor_list *l = list_of(eng);
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4;
        l->ids = xrealloc(l->ids, l->cap * sizeof *l->ids);
    }
    memcpy(l->ids[l->n++], t->id, TASK_ID_SIZE);
    m->expires_mono = mono_ms() + m->timeout_ms;
    m->expires_ms = engine_now(eng) + m->timeout_ms;
    m->listed = true;
    t->shell->monitor = m;
    pthread_cond_signal(&eng->work_cv);
}

void monitor_wake(void *engine_arg)
{
    engine *eng = engine_arg;
    ENGINE_ASSERT_LOCKED(eng);
    pthread_cond_signal(&eng->work_cv);
}

/* Whether t's parent session may be woken once more at monotonic now: the
 * monitors of a session together wake it at most per_minute times in any
 * 60 s, as one monitor may (each wake is a model turn: eight monitors at
 * their own bound would be eight times that). A word past it is told
 * without a turn: the model reads it at the session's next one. */
static bool session_may_wake(engine *eng, const task *t, int64_t now)
{
    monitor_list *l = list_of(eng);
    unsigned per_minute = monitor_limits(eng).per_minute;
    per_minute = per_minute ? per_minute : 1;
    session_wakes *w = NULL;
    for (unsigned i = 0; i < l->nwakes && !w; i++)
        if (strcmp(l->wakes[i].session_id, t->parent->session_id) == 0)
            w = &l->wakes[i];
    if (!w) {
        if (l->nwakes == l->capwakes) {
            l->capwakes = l->capwakes ? l->capwakes * 2 : 4;
            l->wakes = xrealloc(l->wakes, l->capwakes * sizeof *l->wakes);
        }
        w = &l->wakes[l->nwakes++];
        *w = (session_wakes){xstrdup(t->parent->session_id), xcalloc(per_minute, sizeof(int64_t)), per_minute, 0, 0};
    }
    if (w->count == w->size && w->at[w->pos] > now - 60000)
        return false; /* the oldest of the last `size` wakes is within the minute */
    w->at[w->pos] = now;
    w->pos = (w->pos + 1) % w->size;
    w->count += w->count < w->size;
    return true;
}

/* Sessions whose newest wake is a minute old are forgotten. */
static void forget_old_wakes(monitor_list *l, int64_t now)
{
    for (unsigned i = 0; i < l->nwakes;) {
        session_wakes *w = &l->wakes[i];
        bool recent = false;
        for (unsigned k = 0; k < w->count && !recent; k++)
            recent = w->at[k] > now - 60000;
        if (recent) {
            i++;
            continue;
        }
        free(w->session_id);
        free(w->at);
        l->wakes[i] = l->wakes[--l->nwakes];
    }
}

/* Push text (taken) into t's parent session, waking it within the
 * session's bound. */
static void tell(engine *eng, const task *t, char *text)
{
    notification *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    n->wake = session_may_wake(eng, t, mono_ms()); /* an event is there to be reacted to */
    n->extra = true;
    n->text = text;
    engine_push_notification(eng, n);
}

/* m gives its last word (why): said, its own command stopped, a followed
 * task's watch taken off it. m is freed when it follows. */
static void finish(engine *eng, task *t, shell_monitor *m, monitor_end why)
{
    m->end = (uint8_t)why;
    m->listed = false;
    tell(eng, t, format_monitor_end(t, m));
    if (m->follows) {
        t->shell->monitor = NULL;
        shell_monitor_free(m);
    } else if (why != MONITOR_ENDED) {
        engine_stop_task(eng, t); /* its exit ends it, cancelled: no ordinary notification */
    }
}

/* One watch's look at now: its next due time, or -1 when it gave its last word. */
static int64_t look(engine *eng, task *t, shell_monitor *m, int64_t now)
{
    if (now >= m->expires_mono) {
        finish(eng, t, m, MONITOR_EXPIRED);
        return -1;
    }
    watch_event ev;
    watch_verdict v;
    while ((v = watch_take(&m->w, now, &ev)) == WATCH_EVENT) {
        tell(eng, t, format_monitor_event(t, m, &ev));
        free(ev.lines);
    }
    if (v != WATCH_NOTHING || (m->w.ended && watch_done(&m->w))) {
        finish(eng, t, m,
               v == WATCH_STOP_FLOOD   ? MONITOR_FLOODED
               : v == WATCH_STOP_LIMIT ? MONITOR_LIMITED
                                       : MONITOR_ENDED);
        return -1;
    }
    int64_t due = watch_next_due(&m->w);
    if (due && due <= now)
        due = now + 1; /* never a busy loop */
    return due && due < m->expires_mono ? due : m->expires_mono;
}

int64_t monitor_tick(engine *eng, int64_t now)
{
    ENGINE_ASSERT_LOCKED(eng);
    monitor_list *l = eng->monitors;
    int64_t next = 0;
    for (unsigned i = 0; l && i < l->n;) {
        task *t = registry_find(&eng->reg, l->ids[i]);
        shell_monitor *m = t ? task_monitor(t) : NULL;
        int64_t due = m && m->listed ? look(eng, t, m, now) : -1;
        if (due < 0) { /* off the list: the last one takes its place */
            memcpy(l->ids[i], l->ids[--l->n], TASK_ID_SIZE);
            continue;
        }
        if (!next || due < next)
            next = due;
        i++;
    }
    if (l)
        forget_old_wakes(l, now);
    return next;
}

void monitor_free(engine *eng)
{
    monitor_list *l = eng->monitors;
    for (unsigned i = 0; l && i < l->nwakes; i++) {
        free(l->wakes[i].session_id);
        free(l->wakes[i].at);
    }
    if (l) {
        free(l->ids);
        free(l->wakes);
    }
    free(l);
    eng->monitors = NULL;
}

/* view.c — see view.h: each session's tasks as the host's UI shows them,
 * published by the view thread. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/engine.h"
#include "engine/view.h"
#include "text/texts.h"

/* A pending task's place in its lane's queue, 1 = next. */
static unsigned queue_place(const task *t)
{
    unsigned n = 1;
    for (const task *q = t->lane ? t->lane->qhead : NULL; q && q != t; q = q->live ? q->live->qnext : NULL)
        n++;
    return n;
}

static void add_time(cJSON *o, const char *name, int64_t ms)
{
    if (ms > 0)
        cJSON_AddNumberToObject(o, name, (double)ms);
}

/* The newest tool names of a live task, newest first (at most max). */
static void add_recent(cJSON *o, const task *t, unsigned max)
{
    const char *names[RECENT_TOOLS];
    unsigned n = task_recent_tools(t, names, max < RECENT_TOOLS ? max : RECENT_TOOLS);
    if (n)
        cJSON_AddItemToObject(o, "recent", cJSON_CreateStringArray(names, (int)n));
}

/* What the task's kind adds: its agent (and an isolated task's branch), or
 * its command and exit. */
static void add_kind(cJSON *o, const task *t)
{
    if (t->type == TASK_SHELL) {
        cJSON_AddStringToObject(o, "kind", "shell");
        if (t->shell && t->shell->command)
            cJSON_AddStringToObject(o, "command", t->shell->command);
        if (t->shell && t->shell->exited && !t->shell->term_signal)
            cJSON_AddNumberToObject(o, "exit", t->shell->exit_code);
        return;
    }
    cJSON_AddStringToObject(o, "kind", "agent");
    if (t->agent)
        cJSON_AddStringToObject(o, "agent", t->agent);
    if (t->session_id)
        cJSON_AddStringToObject(o, "session", t->session_id);
    if (t->wt)
        cJSON_AddStringToObject(o, "branch", t->wt->branch); /* isolated: the branch it works on */
}

/* t's line of a view (docs/panel.md). */
static cJSON *task_line(const task *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", t->id);
    add_kind(o, t);
    cJSON_AddStringToObject(o, "status", task_status_name(t->status));
    cJSON_AddStringToObject(o, "description", t->description ? t->description : "");
    if (t->status == TASK_PENDING)
        cJSON_AddNumberToObject(o, "queue", queue_place(t));
    const char *waiting = task_permission_what(t);
    if (waiting)
        cJSON_AddStringToObject(o, "waiting", waiting);
    add_time(o, "created", t->created_ms);
    add_time(o, "started", t->started_ms);
    if (task_status_terminal(t->status))
        add_time(o, "ended", t->completed_ms);
    const usage *u = task_usage(t);
    if (u) {
        cJSON_AddNumberToObject(o, "tokens", (double)usage_tokens(u));
        cJSON_AddNumberToObject(o, "cost", u->cost);
    }
    if (t->tool_calls)
        cJSON_AddNumberToObject(o, "tools", t->tool_calls);
    add_recent(o, t, 3);
    if (t->status == TASK_ERROR && t->error) {
        size_t len = strlen(t->error);
        char *cut = xstrndup(t->error, utf8_offset(t->error, len, VIEW_ERROR_CHARS));
        cJSON_AddStringToObject(o, "error", cut);
        free(cut);
    }
    if (t->stopped_by_user)
        cJSON_AddBoolToObject(o, "stopped_by_user", true);
    return o;
}

/* p's view, or NULL when its tasks are as last published (and !force).
 * session: the parent's id (p may be NULL: it has no tasks left). */
static char *build_view(engine *o, parent *p, const char *session, bool force)
{
    cJSON *tasks = cJSON_CreateArray();
    int n = 0;
    for (const task *t = p ? p->head : NULL; t && n < VIEW_MAX_TASKS; t = t->pnext, n++)
        cJSON_AddItemToArray(tasks, task_line(t));
    char *text = cJSON_PrintUnformatted(tasks);
    uint64_t h = fnv64(1469598103934665603ULL, text, strlen(text)) | 1; /* never 0: "none yet" */
    char *view = NULL;
    if (!p || force || h != p->view_hash) {
        uint64_t seq = p ? ++p->view_seq : 0;
        if (p)
            p->view_hash = h;
        cJSON *v = cJSON_CreateObject();
        cJSON_AddNumberToObject(v, "v", 1);
        cJSON_AddStringToObject(v, "session", session);
        cJSON_AddNumberToObject(v, "seq", (double)seq);
        cJSON_AddNumberToObject(v, "now", (double)engine_now(o));
        cJSON_AddItemToObject(v, "tasks", tasks);
        tasks = NULL;
        view = cJSON_PrintUnformatted(v);
        cJSON_Delete(v);
    }
    cJSON_Delete(tasks);
    free(text);
    return view;
}

/* One view to publish, built under the lock. */
typedef struct outgoing {
    char *session, *view;
} outgoing;

typedef struct round {
    engine *o;
    outgoing *items;
    size_t n, cap;
    bool force;
} round;

static void take(round *r, parent *p, const char *session)
{
    char *view = build_view(r->o, p, session, r->force);
    if (!view)
        return;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->items = xrealloc(r->items, r->cap * sizeof *r->items);
    }
    r->items[r->n++] = (outgoing){xstrdup(session), view};
}

static void take_each(const char *key, void *value, void *arg)
{
    take(arg, value, key);
}

/* The views to publish now: every session's (sync), the marked ones, and
 * on a tick those with live tasks whose view changed. [lock held] */
static void collect(engine *o, round *r, bool tick)
{
    ENGINE_ASSERT_LOCKED(o);
    view_state *vs = &o->view;
    r->force = vs->sync_all;
    if (vs->sync_all)
        map_each(&o->reg.parents, take_each, r);
    for (size_t i = 0; i < vs->nmarked; i++) {
        parent *p = registry_parent(&o->reg, vs->marked[i]);
        if (p)
            p->view_marked = false;
        if (!vs->sync_all || !p)
            take(r, p, vs->marked[i]);
        free(vs->marked[i]);
    }
    vs->nmarked = 0;
    vs->sync_all = false;
    r->force = false;
    for (task *t = tick ? o->reg.active : NULL; t; t = t->live->anext) {
        if (t->parent->view_marked)
            continue; /* its parent's view was just taken */
        t->parent->view_marked = true;
        take(r, t->parent, t->parent->session_id);
    }
    for (task *t = tick ? o->reg.active : NULL; t; t = t->live->anext)
        t->parent->view_marked = false;
}

static void publish(engine *o, round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        int rc = hc_publish_view(&o->api, r->items[i].session, r->items[i].view);
        if (rc < 0 && rc != -ENOSYS)
            hc_log(&o->api, OCP_LOG_DEBUG, "ocbg: the host could not show the view of %s (%d)", r->items[i].session,
                   rc);
        free(r->items[i].session);
        free(r->items[i].view);
    }
    r->n = 0;
}

static bool due(const view_state *vs)
{
    return vs->sync_all || vs->nmarked > 0;
}

static void *view_main(void *arg)
{
    engine *o = arg;
    view_state *vs = &o->view;
    round r = {.o = o};
    int64_t next_tick = mono_ms() + VIEW_TICK_MS, not_before = 0;
    engine_lock(o);
    while (!o->stopping) {
        int64_t now = mono_ms();
        bool tick = now >= next_tick;
        if (!(tick && o->reg.active) && !(due(vs) && now >= not_before)) {
            int64_t wake = o->reg.active ? next_tick : 0;
            if (due(vs) && (!wake || not_before < wake))
                wake = not_before;
            if (tick && !o->reg.active)
                next_tick = now + VIEW_TICK_MS; /* nothing live: the tick waits for a kick */
            struct timespec ts;
            mono_deadline(&ts, wake);
            if (wake)
                engine_cond_timedwait(o, &vs->cv, &ts);
            else
                engine_cond_wait(o, &vs->cv);
            continue;
        }
        if (tick)
            next_tick = now + VIEW_TICK_MS;
        collect(o, &r, tick);
        if (r.n) {
            vs->rounds++;
            vs->published += r.n;
        }
        engine_unlock(o);
        publish(o, &r);
        engine_lock(o);
        not_before = mono_ms() + VIEW_MIN_GAP_MS;
    }
    engine_unlock(o);
    free(r.items);
    return NULL;
}

int view_start(engine *o)
{
    view_state *vs = &o->view;
    cond_init_monotonic(&vs->cv);
    if (!hc_has_views(&o->api))
        return 0;
    engine_lock(o); /* the worker runs already: it reads the hook under the lock */
    o->reg.on_change = view_task_changed;
    o->reg.on_change_arg = o;
    vs->sync_all = true;
    engine_unlock(o);
    int rc = pthread_create(&vs->thread, NULL, view_main, o);
    vs->started = rc == 0;
    return rc;
}

void view_stop(engine *o)
{
    view_state *vs = &o->view;
    if (vs->started) {
        engine_lock(o);
        pthread_cond_broadcast(&vs->cv); /* o->stopping is set */
        engine_unlock(o);
        pthread_join(vs->thread, NULL);
        vs->started = false;
    }
    for (size_t i = 0; i < vs->nmarked; i++)
        free(vs->marked[i]);
    free(vs->marked);
    vs->marked = NULL;
    vs->nmarked = vs->cap = 0;
    pthread_cond_destroy(&vs->cv);
}

void view_task_changed(void *eng, task *t)
{
    engine *o = eng;
    ENGINE_ASSERT_LOCKED(o);
    view_state *vs = &o->view;
    parent *p = t->parent;
    if (!p || p->view_marked)
        return; /* a foreground call's task too: shown while it runs, and gone when its call returns */
    p->view_marked = true;
    if (vs->nmarked == vs->cap) {
        vs->cap = vs->cap ? vs->cap * 2 : 8;
        vs->marked = xrealloc(vs->marked, vs->cap * sizeof *vs->marked);
    }
    vs->marked[vs->nmarked++] = xstrdup(p->session_id);
    pthread_cond_signal(&vs->cv);
}

void view_sync_all(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    o->view.sync_all = true;
    pthread_cond_signal(&o->view.cv);
}

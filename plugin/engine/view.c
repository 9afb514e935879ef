/* view.c — see view.h: each session's tasks as the host's UI shows them,
 * published by the view thread. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/monitor_task.h"
#include "engine/engine.h"
#include "engine/view.h"
#include "text/texts.h"

/* A pending task's place in its lane's queue, 1 = next. */
static unsigned queue_place(const task *t)
{
    unsigned n = 1;
    for (const task *q = t->lane ? t->lane->qhead : NULL; q && q != t; q = q->active ? q->active->qnext : NULL)
        n++;
    return n;
}

static void add_time(cJSON *obj, const char *name, int64_t ms)
{
    if (ms > 0)
        cJSON_AddNumberToObject(obj, name, (double)ms);
}

/* The newest tool names of an active task, newest first (at most max). */
static void add_recent(cJSON *obj, const task *t, unsigned max)
{
    const char *names[RECENT_TOOLS];
    unsigned n = task_recent_tools(t, names, max < RECENT_TOOLS ? max : RECENT_TOOLS);
    if (n)
        cJSON_AddItemToObject(obj, "recent", cJSON_CreateStringArray(names, (int)n));
}

/* A watched command's monitor (model/monitor.h): its events so far, and
 * while it watches, when it expires (wall-clock ms: the panel counts the
 * time left down itself, so the view need not change every second). */
static void add_watch(cJSON *obj, const task *t)
{
    const shell_monitor *m = task_monitor(t);
    if (!m)
        return;
    cJSON_AddNumberToObject(obj, "events", m->w.events);
    if (m->end == MONITOR_LIVE)
        cJSON_AddNumberToObject(obj, "expires", (double)m->expires_ms);
    if (m->pattern)
        cJSON_AddStringToObject(obj, "pattern", m->pattern);
}

/* What the task's kind adds: its agent (and an isolated task's branch), or
 * its command and exit. */
static void add_kind(cJSON *obj, const task *t)
{
    if (t->type == TASK_SHELL) {
        cJSON_AddStringToObject(obj, "kind", task_is_monitor(t) ? "monitor" : "shell");
        if (t->shell && t->shell->command)
            cJSON_AddStringToObject(obj, "command", t->shell->command);
        add_watch(obj, t);
        if (t->shell && t->shell->exited && !t->shell->term_signal)
            cJSON_AddNumberToObject(obj, "exit", t->shell->exit_code);
        return;
    }
    cJSON_AddStringToObject(obj, "kind", "agent");
    if (t->agent)
        cJSON_AddStringToObject(obj, "agent", t->agent);
    if (t->session_id)
        cJSON_AddStringToObject(obj, "session", t->session_id);
    if (t->wt)
        cJSON_AddStringToObject(obj, "branch", t->wt->branch); /* isolated: the branch it works on */
}

/* t's open permission question, an item of a line's "questions". [lock held] */
static void add_question(engine *eng, cJSON *list, const task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "id", task_permission_request(t));
    cJSON_AddStringToObject(q, "task", t->id);
    cJSON_AddStringToObject(q, "description", t->description ? t->description : "");
    cJSON_AddStringToObject(q, "what", task_permission_what(t));
    /* An isolated task's session works in its worktree, and so does every
     * task launched below it: OpenCode takes the answer there only. Any
     * other task's session is the project's. */
    const task_worktree *wt = t->wt ? t->wt : registry_worktree_of(&eng->reg, t->parent->session_id);
    if (wt && wt->path)
        cJSON_AddStringToObject(q, "directory", wt->path);
    cJSON_AddItemToArray(list, q);
}

/* The open questions of active task t and of the tasks launched below it
 * (max_depth 2 or more): t's first, then each level's tasks newest first,
 * at most VIEW_MAX_QUESTIONS. OpenCode 1.18.33's TUI shows the questions of
 * the session on screen and of the sessions it launched only: one asked
 * further down shows nowhere, so the line of the task the person's session
 * launched carries it (docs/panel.md). [lock held] */
static void add_questions(engine *eng, const task *t, unsigned depth, cJSON *list)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!t->active || cJSON_GetArraySize(list) >= VIEW_MAX_QUESTIONS)
        return;
    if (task_permission_request(t) && task_permission_what(t))
        add_question(eng, list, t);
    const parent *own = depth < VIEW_QUESTION_DEPTH && t->session_id ? registry_parent(&eng->reg, t->session_id) : NULL;
    unsigned left = own ? own->active : 0; /* its active tasks not yet seen */
    for (const task *c = left ? own->head : NULL; c && left; c = c->pnext) {
        if (c->active) {
            left--;
            add_questions(eng, c, depth + 1, list);
        }
    }
}

/* t's line of a view (docs/panel.md). */
static cJSON *task_line(engine *eng, const task *t)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON_AddStringToObject(obj, "id", t->id);
    add_kind(obj, t);
    cJSON_AddStringToObject(obj, "status", task_status_name(t->status));
    cJSON_AddStringToObject(obj, "description", t->description ? t->description : "");
    if (t->status == TASK_PENDING)
        cJSON_AddNumberToObject(obj, "queue", queue_place(t));
    const char *waiting = task_permission_what(t);
    if (waiting)
        cJSON_AddStringToObject(obj, "waiting", waiting);
    cJSON *questions = cJSON_CreateArray();
    add_questions(eng, t, 0, questions);
    if (cJSON_GetArraySize(questions) > 0)
        cJSON_AddItemToObject(obj, "questions", questions);
    else
        cJSON_Delete(questions);
    add_time(obj, "created", t->created_ms);
    add_time(obj, "started", t->started_ms);
    if (task_status_terminal(t->status))
        add_time(obj, "ended", t->completed_ms);
    const usage *u = task_usage(t);
    if (u) {
        cJSON_AddNumberToObject(obj, "tokens", (double)usage_tokens(u));
        cJSON_AddNumberToObject(obj, "cost", u->cost);
    }
    if (t->tool_calls)
        cJSON_AddNumberToObject(obj, "tools", t->tool_calls);
    add_recent(obj, t, 3);
    if (t->status == TASK_ERROR && t->error) {
        size_t len = strlen(t->error);
        char *cut = xstrndup(t->error, utf8_offset(t->error, len, VIEW_ERROR_CHARS));
        cJSON_AddStringToObject(obj, "error", cut);
        free(cut);
    }
    if (t->stopped_by_user)
        cJSON_AddBoolToObject(obj, "stopped_by_user", true);
    return obj;
}

/* p's view, or NULL when its tasks are as last published (and !force).
 * session: the parent's id (p may be NULL: it has no tasks left). */
static char *build_view(engine *eng, parent *p, const char *session, bool force)
{
    cJSON *tasks = cJSON_CreateArray();
    int n = 0;
    for (const task *t = p ? p->head : NULL; t && n < VIEW_MAX_TASKS; t = t->pnext, n++)
        cJSON_AddItemToArray(tasks, task_line(eng, t));
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
        cJSON_AddNumberToObject(v, "now", (double)engine_now(eng));
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
    engine *eng;
    outgoing *items;
    size_t n, cap;
    bool force;
} round;

static void take(round *r, parent *p, const char *session)
{
    char *view = build_view(r->eng, p, session, r->force);
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
 * on a tick those with active tasks whose view changed. [lock held] */
static void collect(engine *eng, round *r, bool tick)
{
    ENGINE_ASSERT_LOCKED(eng);
    view_state *vs = &eng->view;
    r->force = vs->sync_all;
    if (vs->sync_all)
        map_each(&eng->reg.parents, take_each, r);
    for (size_t i = 0; i < vs->nmarked; i++) {
        parent *p = registry_parent(&eng->reg, vs->marked[i]);
        if (p)
            p->view_marked = false;
        if (!vs->sync_all || !p)
            take(r, p, vs->marked[i]);
        free(vs->marked[i]);
    }
    vs->nmarked = 0;
    vs->sync_all = false;
    r->force = false;
    for (task *t = tick ? eng->reg.active : NULL; t; t = t->active->anext) {
        if (t->parent->view_marked)
            continue; /* its parent's view was just taken */
        t->parent->view_marked = true;
        take(r, t->parent, t->parent->session_id);
    }
    for (task *t = tick ? eng->reg.active : NULL; t; t = t->active->anext)
        t->parent->view_marked = false;
}

static void publish(engine *eng, round *r)
{
    for (size_t i = 0; i < r->n; i++) {
        int rc = hostapi_publish_view(&eng->api, r->items[i].session, r->items[i].view);
        if (rc < 0 && rc != -ENOSYS)
            hostapi_log(&eng->api, OCP_LOG_DEBUG, "ocbg: the host could not show the view of %s (%d)",
                        r->items[i].session, rc);
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
    engine *eng = arg;
    view_state *vs = &eng->view;
    round r = {.eng = eng};
    int64_t next_tick = mono_ms() + VIEW_TICK_MS, not_before = 0;
    engine_lock(eng);
    while (!eng->stopping) {
        int64_t now = mono_ms();
        bool tick = now >= next_tick;
        if (!(tick && eng->reg.active) && !(due(vs) && now >= not_before)) {
            int64_t wake = eng->reg.active ? next_tick : 0;
            if (due(vs) && (!wake || not_before < wake))
                wake = not_before;
            if (tick && !eng->reg.active)
                next_tick = now + VIEW_TICK_MS; /* nothing active: the tick waits for a kick */
            struct timespec ts;
            mono_deadline(&ts, wake);
            if (wake)
                engine_cond_timedwait(eng, &vs->cv, &ts);
            else
                engine_cond_wait(eng, &vs->cv);
            continue;
        }
        if (tick)
            next_tick = now + VIEW_TICK_MS;
        collect(eng, &r, tick);
        if (r.n) {
            vs->rounds++;
            vs->published += r.n;
        }
        engine_unlock(eng);
        publish(eng, &r);
        engine_lock(eng);
        not_before = mono_ms() + VIEW_MIN_GAP_MS;
    }
    engine_unlock(eng);
    free(r.items);
    return NULL;
}

int view_start(engine *eng)
{
    view_state *vs = &eng->view;
    cond_init_monotonic(&vs->cv);
    if (!hostapi_has_views(&eng->api))
        return 0;
    engine_lock(eng); /* the worker runs already: it reads the hook under the lock */
    eng->reg.on_change = view_task_changed;
    eng->reg.on_change_arg = eng;
    vs->sync_all = true;
    engine_unlock(eng);
    int rc = pthread_create(&vs->thread, NULL, view_main, eng);
    vs->started = rc == 0;
    return rc;
}

void view_stop(engine *eng)
{
    view_state *vs = &eng->view;
    if (vs->started) {
        engine_lock(eng);
        pthread_cond_broadcast(&vs->cv); /* eng->stopping is set */
        engine_unlock(eng);
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

void view_task_changed(void *engine_arg, task *t)
{
    engine *eng = engine_arg;
    ENGINE_ASSERT_LOCKED(eng);
    view_state *vs = &eng->view;
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

void view_sync_all(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    eng->view.sync_all = true;
    pthread_cond_signal(&eng->view.cv);
}

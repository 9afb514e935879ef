/* registry.c — see task.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/task.h"
#include "base/util.h"

static const char *const status_names[] = {
    [TASK_PENDING] = "pending",     [TASK_RUNNING] = "running",     [TASK_COMPLETED] = "completed",
    [TASK_ERROR] = "error",         [TASK_CANCELLED] = "cancelled", [TASK_RESUMED] = "resumed",
};

const char *task_status_name(task_status s)
{
    return (unsigned)s < sizeof status_names / sizeof status_names[0] ? status_names[s] : "unknown";
}

bool task_status_active(task_status s)
{
    return s == TASK_RUNNING || s == TASK_RESUMED || s == TASK_PENDING;
}

bool task_status_terminal(task_status s)
{
    return s == TASK_COMPLETED || s == TASK_ERROR || s == TASK_CANCELLED;
}

void registry_init(registry *r)
{
    memset(r, 0, sizeof *r);
    map_init(&r->by_id);
    map_init(&r->by_session);
    map_init(&r->parents);
}

static void free_task(task *t)
{
    free(t->session_id);
    free(t->parent_message);
    free(t->parent_agent);
    free(t->description);
    free(t->prompt);
    free(t->agent);
    free(t->result);
    free(t->error);
    free(t->permission_request);
    free(t->permission_what);
    free(t->result_message_id);
    shell_state_free(t->shell);
    free(t);
}

static void free_parent(parent *p)
{
    for (held_notice *h = p->held; h;) {
        held_notice *next = h->next;
        free(h->text);
        free(h);
        h = next;
    }
    free(p->session_id);
    free(p);
}

typedef struct parent_vec {
    parent **items;
    size_t n;
} parent_vec;

static void collect_parent(const char *key, void *value, void *arg)
{
    (void)key;
    parent_vec *v = arg;
    v->items = xrealloc(v->items, (v->n + 1) * sizeof *v->items);
    v->items[v->n++] = value;
}

void registry_free(registry *r)
{
    parent_vec v = {0};
    map_each(&r->parents, collect_parent, &v);
    for (size_t i = 0; i < v.n; i++) {
        for (task *t = v.items[i]->head; t;) {
            task *next = t->pnext;
            free_task(t);
            t = next;
        }
        free_parent(v.items[i]);
    }
    free(v.items);
    map_free(&r->by_id);
    map_free(&r->by_session);
    map_free(&r->parents);
    memset(r, 0, sizeof *r);
}

task *registry_find(registry *r, const char *task_id)
{
    return map_get(&r->by_id, task_id);
}

task *registry_find_session(registry *r, const char *session_id)
{
    return map_get(&r->by_session, session_id);
}

parent *registry_parent(registry *r, const char *parent_session)
{
    return map_get(&r->parents, parent_session);
}

static void active_link(registry *r, task *t)
{
    t->aprev = NULL;
    t->anext = r->active;
    if (r->active)
        r->active->aprev = t;
    r->active = t;
    r->active_count++;
    r->active_agents += t->type == TASK_AGENT;
    t->parent->active++;
}

static void active_unlink(registry *r, task *t)
{
    if (t->aprev)
        t->aprev->anext = t->anext;
    else
        r->active = t->anext;
    if (t->anext)
        t->anext->aprev = t->aprev;
    t->anext = t->aprev = NULL;
    r->active_count--;
    r->active_agents -= t->type == TASK_AGENT;
    t->parent->active--;
}

task *registry_add(registry *r, const char *parent_session, const char *session_id, task_type type,
                   int64_t now)
{
    parent *p = map_get(&r->parents, parent_session);
    if (!p) {
        p = xcalloc(1, sizeof *p);
        p->session_id = xstrdup(parent_session);
        p->held_tail = &p->held;
        map_put(&r->parents, p->session_id, p);
    }
    task *t = xcalloc(1, sizeof *t);
    do
        random_id(t->id, sizeof t->id, "bg_");
    while (map_get(&r->by_id, t->id));
    if (p->active == 0) {
        /* A new batch; batch ids share the id space with nothing else. */
        random_id(p->batch_id, sizeof p->batch_id, "batch_");
    }
    memcpy(t->batch_id, p->batch_id, sizeof t->batch_id);
    t->session_id = xstrdup(session_id);
    t->type = type;
    t->status = TASK_RUNNING;
    t->created_ms = t->started_ms = t->last_update_ms = now;
    t->run = 1;
    t->parent = p;
    t->pnext = p->head;
    if (p->head)
        p->head->pprev = t;
    p->head = t;
    p->count++;
    map_put(&r->by_id, t->id, t);
    if (t->session_id)
        map_put(&r->by_session, t->session_id, t);
    r->count++;
    active_link(r, t);
    return t;
}

void registry_set_status(registry *r, task *t, task_status s, int64_t now)
{
    bool was = task_status_active(t->status), is = task_status_active(s);
    t->status = s;
    if (was && !is)
        active_unlink(r, t);
    else if (!was && is)
        active_link(r, t);
    if (task_status_terminal(s))
        t->completed_ms = now;
    t->last_update_ms = now;
}

static void unlink_task(registry *r, task *t)
{
    if (task_status_active(t->status))
        active_unlink(r, t);
    parent *p = t->parent;
    if (t->pprev)
        t->pprev->pnext = t->pnext;
    else
        p->head = t->pnext;
    if (t->pnext)
        t->pnext->pprev = t->pprev;
    p->count--;
    map_del(&r->by_id, t->id);
    if (t->session_id && map_get(&r->by_session, t->session_id) == t)
        map_del(&r->by_session, t->session_id);
    r->count--;
}

void registry_remove(registry *r, task *t)
{
    unlink_task(r, t);
    free_task(t);
}

void registry_remove_parent(registry *r, parent *p)
{
    while (p->head)
        registry_remove(r, p->head);
    map_del(&r->parents, p->session_id);
    free_parent(p);
}

void registry_batch_progress(const task *t, unsigned *done, unsigned *total)
{
    *done = *total = 0;
    for (const task *o = t->parent->head; o; o = o->pnext) {
        if (strcmp(o->batch_id, t->batch_id) != 0)
            continue;
        (*total)++;
        if (!task_status_active(o->status))
            (*done)++;
    }
}

static uint32_t hash32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h ? h : 1;
}

void task_note_tool(task *t, const char *call_id, const char *tool)
{
    if (call_id) {
        uint32_t h = hash32(call_id);
        for (unsigned i = 0; i < RECENT_CALLS; i++)
            if (t->recent_calls[i] == h)
                return; /* an update of a call already counted */
        t->recent_calls[t->recent_calls_next++ % RECENT_CALLS] = h;
    }
    t->tool_calls++;
    if (tool) {
        char *slot = t->recent_tools[t->recent_tools_next++ % RECENT_TOOLS];
        snprintf(slot, TOOL_NAME_SIZE, "%s", tool);
    }
}

/* registry.c — see registry.h. */
#include "model/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/intern.h"
#include "base/util.h"

/* The maps' keys: strings their values own (map.h). */
static const char *task_id_of(const void *t)
{
    return ((const task *)t)->id;
}

static const char *task_session_of(const void *t)
{
    return ((const task *)t)->session_id;
}

static const char *parent_session_of(const void *p)
{
    return ((const parent *)p)->session_id;
}

void registry_init(registry *r)
{
    memset(r, 0, sizeof *r);
    intern_retain(); /* its tasks' agent names */
    map_init(&r->by_id, task_id_of);
    map_init(&r->by_session, task_session_of);
    map_init(&r->parents, parent_session_of);
    lanes_init(&r->lanes);
}

/* Drop one reference to b: its last task left and its parent moved on. */
static void batch_unref(task_batch *b)
{
    if (b && --b->refs == 0)
        free(b);
}

/* The parent's current batch, a new one when none of its tasks is active. */
static task_batch *parent_batch(parent *p)
{
    if (p->active == 0 || !p->batch) {
        batch_unref(p->batch);
        p->batch = xcalloc(1, sizeof *p->batch);
        /* batch ids share the id space with nothing else */
        random_id(p->batch->id, sizeof p->batch->id, "batch_");
        p->batch->refs = 1;
    }
    return p->batch;
}

static void free_parent(parent *p)
{
    batch_unref(p->batch);
    for (held_notification *h = p->held; h;) {
        held_notification *next = h->next;
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
            batch_unref(t->batch);
            task_free(t);
            t = next;
        }
        free_parent(v.items[i]);
    }
    free(v.items);
    for (size_t i = 0; i < r->nremoved; i++)
        free(r->removed[i]);
    free(r->removed);
    free(r->dirty_q);
    map_free(&r->by_id);
    map_free(&r->by_session);
    map_free(&r->parents);
    lanes_free(&r->lanes);
    memset(r, 0, sizeof *r);
    intern_release();
}

task *registry_find(registry *r, const char *task_id)
{
    return map_get(&r->by_id, task_id);
}

task *registry_find_session(registry *r, const char *session_id)
{
    return map_get(&r->by_session, session_id);
}

const task_worktree *registry_worktree_of(registry *r, const char *session_id)
{
    /* A launcher is an older task, so the chain ends; the bound (deeper
     * than max_depth allows) guards against a store that says otherwise. */
    task *t = session_id ? registry_find_session(r, session_id) : NULL;
    for (unsigned hops = 0; t && hops < 64; hops++, t = registry_find_session(r, t->parent->session_id))
        if (t->wt)
            return t->wt;
    return NULL;
}

parent *registry_parent(registry *r, const char *parent_session)
{
    return map_get(&r->parents, parent_session);
}

/* t, active (its task_active just made), joins the active list. */
static void active_link(registry *r, task *t)
{
    t->active->aprev = NULL;
    t->active->anext = r->active;
    if (r->active)
        r->active->active->aprev = t;
    r->active = t;
    r->active_count++;
    r->active_agents += t->type == TASK_AGENT;
    t->parent->active++;
}

static void active_unlink(registry *r, task *t)
{
    task_active *l = t->active;
    if (l->aprev)
        l->aprev->active->anext = l->anext;
    else
        r->active = l->anext;
    if (l->anext)
        l->anext->active->aprev = l->aprev;
    l->anext = l->aprev = NULL;
    r->active_count--;
    r->active_agents -= t->type == TASK_AGENT;
    t->parent->active--;
}

/* A task's place in its lane for status s: waiting, holding a slot, neither. */
static void lane_leave(registry *r, task *t)
{
    if (t->status == TASK_PENDING)
        lanes_dequeue(&r->lanes, t);
    else if ((t->status == TASK_RUNNING || t->status == TASK_RESUMED) && !t->awaiting)
        lanes_release(&r->lanes, t);
    t->awaiting = t->wake_parked = false;
}

static void lane_enter(registry *r, task *t)
{
    if (t->status == TASK_PENDING)
        lanes_enqueue(&r->lanes, t);
    else if (t->status == TASK_RUNNING || t->status == TASK_RESUMED)
        lanes_hold(&r->lanes, t);
}

static parent *parent_of(registry *r, const char *parent_session)
{
    parent *p = map_get(&r->parents, parent_session);
    if (!p) {
        p = xcalloc(1, sizeof *p);
        p->session_id = xstrdup(parent_session);
        p->held_tail = &p->held;
        map_put(&r->parents, p);
    }
    return p;
}

/* What t's parent's view shows changed (on_change). */
static void changed(registry *r, task *t)
{
    if (r->on_change)
        r->on_change(r->on_change_arg, t);
}

/* Link t (its parent, batch, status set) as its parent's newest task. */
static void link_task(registry *r, task *t)
{
    parent *p = t->parent;
    t->pnext = p->head;
    if (p->head)
        p->head->pprev = t;
    p->head = t;
    p->count++;
    map_put(&r->by_id, t);
    r->count++;
    p->by_status[t->status]++;
}

void registry_new_id(registry *r, char id[TASK_ID_SIZE])
{
    do
        random_id(id, TASK_ID_SIZE, "bg_");
    while (map_get(&r->by_id, id));
}

task *registry_add(registry *r, const char *parent_session, task_type type, const char *agent, task_status s,
                   int64_t now)
{
    char id[TASK_ID_SIZE];
    registry_new_id(r, id);
    return registry_add_as(r, id, parent_session, type, agent, s, now);
}

task *registry_add_as(registry *r, const char *id, const char *parent_session, task_type type, const char *agent,
                      task_status s, int64_t now)
{
    if (map_get(&r->by_id, id))
        return NULL;
    parent *p = parent_of(r, parent_session);
    task *t = xcalloc(1, sizeof *t);
    snprintf(t->id, sizeof t->id, "%s", id);
    t->batch = parent_batch(p);
    t->batch->total++;
    t->batch->refs++;
    t->type = type;
    t->agent = intern(agent);
    t->lane = lanes_of(&r->lanes, type, agent);
    t->status = s;
    t->created_ms = t->last_update_ms = now;
    t->started_ms = s == TASK_PENDING ? 0 : now;
    t->run = 1;
    t->parent = p;
    link_task(r, t);
    task_begin_active(t);
    active_link(r, t);
    lane_enter(r, t);
    t->seq = ++r->next_seq;
    registry_touch(r, t);
    changed(r, t);
    return t;
}

bool registry_restore(registry *r, task *t, const char *parent_session, const char *batch_id)
{
    if (map_get(&r->by_id, t->id) || (t->session_id && map_get(&r->by_session, t->session_id)))
        return false;
    parent *p = parent_of(r, parent_session);
    bool active = task_status_active(t->status);
    task_batch *b = p->head && strcmp(p->head->batch->id, batch_id) == 0 ? p->head->batch : NULL;
    if (!b) {
        b = xcalloc(1, sizeof *b);
        snprintf(b->id, sizeof b->id, "%s", batch_id[0] ? batch_id : "batch_restored");
    }
    if (active && p->batch != b) {
        batch_unref(p->batch);
        p->batch = b;
        b->refs++;
    }
    t->batch = b;
    b->total++;
    b->refs++;
    b->done += !active;
    t->lane = lanes_of(&r->lanes, t->type, t->agent);
    t->parent = p;
    link_task(r, t);
    if (active) {
        task_begin_active(t);
        active_link(r, t);
        lane_enter(r, t);
    }
    if (t->session_id)
        map_put(&r->by_session, t);
    if (t->seq > r->next_seq)
        r->next_seq = t->seq;
    changed(r, t);
    return true;
}

void registry_set_status(registry *r, task *t, task_status s, int64_t now)
{
    bool was = task_status_active(t->status), is = task_status_active(s);
    if (!was && is) {
        if (r->on_revive)
            r->on_revive(r->on_revive_arg, t);
        task_begin_active(t);       /* before its lane: a pending task queues in it */
        t->stopped_by_user = false; /* a new run */
    }
    if (t->status == TASK_PENDING && s == TASK_RUNNING)
        t->started_ms = now;
    if (t->status != s) {
        lane_leave(r, t);
        t->parent->by_status[t->status]--;
        t->status = s;
        t->parent->by_status[s]++;
        lane_enter(r, t);
    }
    if (was && !is) {
        active_unlink(r, t);
        task_end_run(t);
        t->batch->done++;
    } else if (!was && is) {
        active_link(r, t);
        t->batch->done--;
    }
    if (task_status_terminal(s))
        t->completed_ms = now;
    t->last_update_ms = now;
    registry_touch(r, t);
    changed(r, t);
    task_check(t);
}

void registry_set_awaiting(registry *r, task *t, bool awaiting)
{
    if (t->awaiting == awaiting || (t->status != TASK_RUNNING && t->status != TASK_RESUMED))
        return;
    if (awaiting)
        lanes_release(&r->lanes, t);
    else
        lanes_hold(&r->lanes, t);
    t->awaiting = awaiting;
    t->wake_parked = false;
    task_check(t);
}

static void unlink_task(registry *r, task *t)
{
    lane_leave(r, t);
    t->parent->by_status[t->status]--;
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

static void dirty_unlink(registry *r, task *t)
{
    if (!t->dirty_slot)
        return;
    r->dirty_q[t->dirty_slot - 1] = NULL;
    t->dirty_slot = 0;
    r->dirty--;
}

/* Room at the end of dirty_q: the taken and removed entries squeezed out
 * first (each task's slot follows it), else the queue grows. */
static void dirty_make_room(registry *r)
{
    if (r->dirty_len < r->dirty_cap)
        return;
    if (!r->dirty_cap || r->dirty * 2 > r->dirty_cap) {
        r->dirty_cap = r->dirty_cap ? r->dirty_cap * 2 : 64;
        r->dirty_q = xrealloc(r->dirty_q, r->dirty_cap * sizeof *r->dirty_q);
        return;
    }
    size_t n = 0;
    for (size_t i = r->dirty_head; i < r->dirty_len; i++)
        if (r->dirty_q[i]) {
            r->dirty_q[n] = r->dirty_q[i];
            r->dirty_q[n]->dirty_slot = (uint32_t)(n + 1);
            n++;
        }
    r->dirty_head = 0;
    r->dirty_len = n;
}

void registry_touch(registry *r, task *t)
{
    if (!r->track || t->foreground)
        return;
    r->dirty_gen++;
    if (!t->dirty_slot) {
        dirty_make_room(r);
        r->dirty_q[r->dirty_len++] = t;
        t->dirty_slot = (uint32_t)r->dirty_len;
        r->dirty++;
    }
    if (r->on_dirty)
        r->on_dirty(r->on_dirty_arg);
}

bool registry_take_dirty(registry *r, size_t max, void (*fn)(void *arg, task *t), void *arg)
{
    for (size_t n = 0; r->dirty > 0 && n < max; n++) {
        while (!r->dirty_q[r->dirty_head])
            r->dirty_head++;
        task *t = r->dirty_q[r->dirty_head++];
        dirty_unlink(r, t);
        fn(arg, t);
    }
    if (r->dirty == 0)
        r->dirty_head = r->dirty_len = 0;
    return r->dirty == 0;
}

/* The store deletes task id's row at its next write. */
static void note_removed(registry *r, const char *id)
{
    if (!r->track)
        return;
    if (r->nremoved == r->removed_cap) {
        r->removed_cap = r->removed_cap ? r->removed_cap * 2 : 16;
        r->removed = xrealloc(r->removed, r->removed_cap * sizeof *r->removed);
    }
    r->removed[r->nremoved++] = xstrdup(id);
    r->dirty_gen++;
    if (r->on_dirty)
        r->on_dirty(r->on_dirty_arg);
}

void registry_remove(registry *r, task *t)
{
    changed(r, t);
    dirty_unlink(r, t);
    /* A foreground call's task is never stored (engine/persist.c); an
     * isolated one's row stays until its worktree is released. */
    if (!t->foreground && !t->wt)
        note_removed(r, t->id);
    unlink_task(r, t);
    t->batch->total--;
    t->batch->done -= !task_status_active(t->status);
    batch_unref(t->batch);
    task_free(t);
}

void registry_forget_row(registry *r, const char *id)
{
    note_removed(r, id);
}

void registry_remove_parent(registry *r, parent *p)
{
    while (p->head)
        registry_remove(r, p->head);
    map_del(&r->parents, p->session_id);
    free_parent(p);
}

void registry_set_session(registry *r, task *t, const char *session_id)
{
    if (t->session_id && map_get(&r->by_session, t->session_id) == t)
        map_del(&r->by_session, t->session_id);
    task_set_session(t, session_id);
    if (t->session_id)
        map_put(&r->by_session, t);
    /* The launching message only said where to fork its session from. */
    free(t->parent_message);
    t->parent_message = NULL;
    registry_touch(r, t);
    changed(r, t);
}

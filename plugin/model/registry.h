/*
 * registry.h — every task of the plugin instance, indexed: O(1) by task id
 * and by the task's own session id; each parent session's tasks on a list
 * (newest first) so that listing and clearing never scan other sessions'
 * tasks; active tasks (pending, running, resumed) on one list, which is all
 * the poller walks; each batch with its counters, so a notification's
 * "2 of 5 done" costs nothing; the run slots and queues (model/lanes.h),
 * kept in step with each task's status.
 * Pure data: not thread-safe, every function runs under the engine's lock.
 */
#ifndef OCBG_REGISTRY_H
#define OCBG_REGISTRY_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

#include "base/map.h"
#include "model/lanes.h"
#include "model/task.h"

/* The tasks a parent launched while some of its tasks were active. */
struct task_batch {
    char id[TASK_ID_SIZE];
    unsigned total; /* tasks of the batch still in the registry */
    unsigned done;  /* of those, the ones not active */
    unsigned refs;  /* total, plus one while it is its parent's current batch */
};

/* An undelivered notification waiting for the parent's next ocbg answer. */
typedef struct held_notification {
    char *text;
    struct held_notification *next;
} held_notification;

struct parent {
    char *session_id;
    task *head; /* newest first */
    unsigned count;
    unsigned active;                       /* pending, running or resumed */
    unsigned by_status[TASK_STATUS_COUNT]; /* its tasks counted by status */
    task_batch *batch;                     /* the batch new tasks join while active > 0; may be NULL */
    held_notification *held, **held_tail;
    unsigned notifications_out; /* notifications queued for this session and not yet pushed */
    /* its view for the host's UI (engine/view.c) */
    uint64_t view_hash; /* of the tasks part of the view last published; 0: none */
    uint64_t view_seq;  /* views published */
    bool view_marked;   /* on the view thread's list of sessions to publish */
};

typedef struct registry {
    map by_id;      /* task id → task */
    map by_session; /* task session id → task */
    map parents;    /* parent session id → parent */
    task *active;   /* active list head */
    unsigned active_count;
    unsigned active_agents; /* active agent tasks: what the fallback poll is for */
    unsigned count;
    lanes lanes; /* slots held and tasks pending, by agent name and for commands */
    /* What changed since the store last copied (engine/persist.c), when
     * `track` is on: tasks to write, ids of tasks to delete. */
    bool track;
    task **dirty_q; /* oldest first from dirty_head; NULL: a task removed meanwhile */
    size_t dirty_head, dirty_len, dirty_cap;
    size_t dirty; /* tasks in dirty_q: 0 when the store has copied every change */
    char **removed;
    size_t nremoved, removed_cap;
    uint64_t dirty_gen; /* +1 per change recorded */
    uint64_t next_seq;  /* the next task's seq */
    /* Called (if set) for every change recorded: the store thread's wake-up.
     * Runs under the engine's lock. */
    void (*on_dirty)(void *arg);
    void *on_dirty_arg;
    /* Called (if set) just before a task that ended becomes active again (a
     * resume), still in its ended state: a notification of the run that ended
     * takes its text from that state. Runs under the engine's lock. */
    void (*on_revive)(void *arg, task *t);
    void *on_revive_arg;
    /* Called (if set) when a task's status, session or place changes, when
     * it is added, restored or removed: what its parent's view shows
     * changed (engine/view.c). Runs under the engine's lock; t is still
     * linked to its parent (for a removal: just before). */
    void (*on_change)(void *arg, task *t);
    void *on_change_arg;
} registry;

void registry_init(registry *r);
void registry_free(registry *r); /* frees every task and parent */

task *registry_find(registry *r, const char *task_id);
task *registry_find_session(registry *r, const char *session_id);
parent *registry_parent(registry *r, const char *parent_session); /* NULL when it has no tasks */
/* The worktree the session `session_id` works in: that of its task when the
 * task is isolated, else the one its task's launcher works in (a task
 * launched by an isolated task works in its launcher's worktree), and so on
 * up the tree; NULL: the host's own folder (no task, or none isolated above
 * it). Points into the registry: valid while the lock is held. */
const task_worktree *registry_worktree_of(registry *r, const char *session_id);

/* A new task of `parent_session` with a fresh unique id, no session yet, of
 * agent `agent` (NULL for a command), with status `s` (running: it holds a
 * slot of its lane; pending: it joins the end of its lane's queue), on the
 * parent's list (newest first); joins the parent's current batch when the
 * parent has active tasks, else opens a new batch. Takes ownership of
 * nothing: strings are copied. */
task *registry_add(registry *r, const char *parent_session, task_type type, const char *agent, task_status s,
                   int64_t now);
/* registry_add with the id chosen beforehand (a launch that made the task's
 * worktree first: its branch is named after the id). NULL when a task
 * already has that id (nothing added). */
task *registry_add_as(registry *r, const char *id, const char *parent_session, task_type type, const char *agent,
                      task_status s, int64_t now);
/* A fresh task id ("bg_" + 8 hex) no task of r has now. */
void registry_new_id(registry *r, char id[TASK_ID_SIZE]);

/* Change status, keeping the active list, the parent's active count, the
 * batch's counters, the lanes' slots and queues, and the start and
 * completion times right: O(1), whatever the parent's or the batch's size. */
void registry_set_status(registry *r, task *t, task_status s, int64_t now);

/* An active agent task whose session is idle while its own tasks run gives
 * its slot back (awaiting), so they can start; it takes one again before
 * it is woken. No-op when already so. */
void registry_set_awaiting(registry *r, task *t, bool awaiting);

/* Unlink and free one task. Its stored row goes at the store's next write,
 * except an isolated task's (t->wt): that row stays until the caller has
 * released the worktree and calls registry_forget_row, so that a host
 * killed in between finds the task, and its folder, again. */
void registry_remove(registry *r, task *t);

/* The store deletes the row of task id, removed from memory earlier. */
void registry_forget_row(registry *r, const char *id);

/* Remove a parent and all its tasks. */
void registry_remove_parent(registry *r, parent *p);

/* t changed in a way the store keeps: it is copied at the store's next
 * write. registry_add, registry_set_status and registry_set_session do it
 * themselves. No-op unless tracking, and for a foreground call's task
 * (removed when its call returns: never stored). */
void registry_touch(registry *r, task *t);

/* Take the dirty tasks, oldest first, at most max of them: each is
 * unlinked and its flag cleared; fn sees each (under the lock). Returns
 * whether none is left. */
bool registry_take_dirty(registry *r, size_t max, void (*fn)(void *arg, task *t), void *arg);

/* Put a task the store kept back in the registry: t (detached, owned from
 * now: id, type, status, fields set) joins parent `parent_session` as its
 * newest task, in batch `batch_id` (the parent's newest task's batch when it
 * has that id, else a new one), active lists and lanes as its status says.
 * Returns false (t untouched, still the caller's) when its id is taken. */
bool registry_restore(registry *r, task *t, const char *parent_session, const char *batch_id);

/* Give t its own session (a runner created it): findable by it from now;
 * its parent_message (where to fork the session from) is dropped. */
void registry_set_session(registry *r, task *t, const char *session_id);

#endif

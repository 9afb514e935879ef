/*
 * lanes.h — where tasks hold and wait for a run slot. Each agent name has a
 * lane, shell commands share one. A lane counts its tasks that hold a slot
 * (running or resumed) and keeps its pending tasks in launch order; a
 * sequence number orders pending tasks across lanes, so the scheduler
 * (engine/sched.c) admits the oldest admissible one in O(lanes), whatever the
 * length of the queues. The registry moves tasks between lanes' states as
 * their status changes (model/registry.h); the rules of admission (caps,
 * pauses) are the engine's.
 * Pure data: not thread-safe, every function runs under the engine's lock.
 */
#ifndef OCBG_LANES_H
#define OCBG_LANES_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

#include "base/map.h"
#include "model/task.h"

typedef struct lane {
    char *name;          /* the agent's name; "" for the shell lane */
    unsigned running;    /* tasks holding a slot */
    unsigned retrying;   /* of those, the ones whose host is retrying a rate-limited call */
    unsigned queued;     /* pending tasks */
    task *qhead, *qtail; /* pending, oldest first */
    struct lane *next;   /* every lane of the set */
} lane;

typedef struct lanes {
    map by_agent; /* agent name → lane */
    lane *all;    /* agent lanes */
    lane shell;
    unsigned running_agents; /* slots held across agent lanes */
    unsigned queued;         /* pending tasks across all lanes */
    uint64_t next_seq;
    /* Called (if set) when a slot is released or a lane's retry clears: a
     * pending task may now be admissible. Runs under the engine's lock. */
    void (*on_freed)(void *arg);
    void *on_freed_arg;
} lanes;

void lanes_init(lanes *ls);
void lanes_free(lanes *ls);

/* The lane of agent `agent` (made on first use), or the shell lane. */
lane *lanes_of(lanes *ls, task_type type, const char *agent);

/* t (pending) joins the end of its lane's queue. */
void lanes_enqueue(lanes *ls, task *t);
/* t leaves its lane's queue. */
void lanes_dequeue(lanes *ls, task *t);
/* t takes a slot of its lane / gives it back (and its retry mark with it). */
void lanes_hold(lanes *ls, task *t);
void lanes_release(lanes *ls, task *t);

/* Mark or clear "the host retries t's rate-limited call". */
void lanes_set_retrying(lanes *ls, task *t, bool retrying);

/* How many tasks of this kind (agents, or commands) are pending. O(1): for
 * a task just queued, the number ahead of it is one less. */
unsigned lanes_queued_of(const lanes *ls, task_type type);

#endif

/*
 * sched.h — the scheduler: whether a task may start now or must wait, and
 * the start of waiting tasks, oldest first, as slots free up. The caps come
 * from the options (max_running_agents, max_running_per_agent,
 * max_running_shells, max_queued); a lane whose host reports a rate-limit
 * retry for one of its tasks admits nothing more until the retry clears. A
 * task whose session waits for the tasks it launched holds no slot (so
 * they can run: nesting never deadlocks); the notification that wakes it waits
 * for a slot like a start does, ahead of the queue.
 * Every function is [lock held] (and asserts it) and never blocks.
 */
#ifndef OCBG_SCHED_H
#define OCBG_SCHED_H

#include "base/face_guard.h"
#include <stdbool.h>

#include "base/util.h"
#include "engine/engine.h"

/* How a new task of (type, agent) is to be admitted. */
typedef enum admission {
    ADMIT_NOW,   /* a slot is free: it runs at once */
    ADMIT_QUEUE, /* it waits, pending, for a slot */
    ADMIT_FULL,  /* every slot is taken and the queue is full: refused */
} admission;

/* [lock held] */
admission sched_admission(engine *eng, task_type type, const char *agent);

/* Why lane l admits nothing now, in words ("all 5 agent slots are busy
 * (max_running_agents 5)"); written to out. [lock held] */
void sched_why_waiting(engine *eng, const lane *l, strbuf *out);

/* May a task of lane l (start or wake) take a slot now? [lock held] */
bool sched_lane_open(engine *eng, const lane *l);

/* A waking notification is about to go into the session of `launcher` (the task
 * whose session it is; NULL: none). An awaiting launcher holds no slot: it
 * takes one now if its lane is open. false: it must wait for one. [lock held] */
bool sched_wake_slot(engine *eng, task *launcher);

/* Keep waking notification n (owned from now) until the awaiting task whose
 * session it goes to can take a slot again: its tasks ended, and its next
 * turn is a run like any other. [lock held] */
void sched_park(engine *eng, notification *n);

/* Send the parked notifications whose tasks may take a slot now, then start every
 * pending task that may start now, oldest first: each is set running and
 * its start queued for the worker. [lock held] */
void sched_pump(engine *eng);

/* The lanes' "a slot freed" callback: have the worker pump. [lock held] */
void sched_freed(void *engine_arg);

#endif

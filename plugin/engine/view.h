/*
 * view.h — what the person sees: each session's tasks, as a view the host's
 * UI shows (ocp.h publish_view, docs/panel.md), kept current by a thread of
 * its own so that a slow UI never holds up a completion.
 *
 * Changes reach it two ways. A task's status, session or place changes
 * (registry on_change): its parent's view is marked and the thread is
 * woken; it publishes within VIEW_MIN_GAP_MS. Everything else a view shows
 * (tokens, tool calls, a permission question) changes while a task is
 * active: once a second the thread rebuilds the views of the sessions with
 * active tasks and publishes those whose tasks part differs from the last
 * one published (a hash). Nothing is published when nothing changed.
 * An active task's line also carries the open permission questions of the
 * tasks launched below it (max_depth 2 or more), which OpenCode's own
 * prompt shows on no screen; a descendant's question keeps its top-level
 * ancestor active, so the tick covers it too.
 *
 * Views are built under the engine lock (memory only: no I/O, no host
 * call) and published without it. Without the host's publish_view the
 * thread is not started and marking costs one branch.
 */
#ifndef OCBG_VIEW_H
#define OCBG_VIEW_H

#include "base/face_guard.h"
struct engine;
struct task;

/* Start the view thread if the host takes views; it publishes every
 * session's view once (a restart's restored tasks show again). Returns 0 or
 * an errno. [engine_start, after the store restored its tasks] */
int view_start(struct engine *eng);

/* Stop and join the thread, free its state. [engine_stop; lock not held] */
void view_stop(struct engine *eng);

/* What t's parent's view shows changed: publish it soon. The registry's
 * on_change. [lock held] */
void view_task_changed(void *engine_arg, struct task *t);

/* Publish every session's view soon (a UI asked: it just started). [lock held] */
void view_sync_all(struct engine *eng);

#endif

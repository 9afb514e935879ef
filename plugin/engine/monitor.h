/*
 * monitor.h — the engine's side of monitors (model/monitor.h): the list of
 * watches, the worker's look at them (events and last words pushed as
 * waking notifications, each once), and what a watched command's end does
 * to its watch.
 *
 * The shell thread feeds a watch under the lock and wakes the worker when it
 * made something due sooner (runner_env.watch_due); the worker's wait ends
 * at the watches' next due time (monitor_tick's answer): no polling, and no
 * wakeup while nothing is due. An event is an `extra` notification (not
 * stored): a restart loses the events not yet pushed, and the watch with its
 * command (docs/behaviour.md).
 */
#ifndef OCBG_ENGINE_MONITOR_H
#define OCBG_ENGINE_MONITOR_H

#include "base/face_guard.h"

#include "engine/engine.h"
#include "model/monitor_task.h"

/* Hang m (owned from now) on shell task t's output and list it; its expiry
 * counts from now; the worker is woken. [lock held] */
void monitor_attach(engine *eng, task *t, shell_monitor *m);

/* The worker's look at every watch at monotonic now: events due are pushed,
 * an expired, flooded or full watch stops (a monitor's own command is
 * stopped with it) and says so, an ended stream says so once its events are
 * out. Returns when the next look is due (monotonic ms; 0: nothing to wait
 * for). [lock held] [worker] */
int64_t monitor_tick(engine *eng, int64_t now);

/* The bounds of a monitor started now: watch_limits_default, unless a test
 * narrowed them with monitor_set_limits. [lock held] */
watch_limits monitor_limits(engine *eng);
void monitor_set_limits(engine *eng, const watch_limits *lim);

/* The runner_env.watch_due callback: wake the worker. [lock held] */
void monitor_wake(void *engine_arg);

/* Shutdown: free the list (the watches go with their tasks). [shutdown] */
void monitor_free(engine *eng);

#endif

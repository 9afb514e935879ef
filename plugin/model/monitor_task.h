/*
 * monitor_task.h — a monitor (model/monitor.h) as a task sees it: whether
 * a task is a monitor's own command, the watch on a task's output, and what
 * the end of a watched command's run does to its watch. Pure: no thread, no
 * host. [lock held] for each (not asserted: a task does not know its lock).
 */
#ifndef OCBG_MONITOR_TASK_H
#define OCBG_MONITOR_TASK_H

#include "base/face_guard.h"

#include <stdbool.h>
#include <stdint.h>

#include "model/monitor.h"
#include "model/task.h"

/* Is t a monitor's own command, live or restored from the store (its agent
 * is MONITOR_AGENT)? */
bool task_is_monitor(const task *t);

/* The watch on t's output (its own or one that follows it), or NULL. */
shell_monitor *task_monitor(const task *t);

/* t's run ends with status s at monotonic now; guarded: a guard ended it.
 * A live watch on it takes the end of its stream (*look: its last events
 * and "stream ended" are due, the worker must look), or for a cancel or a
 * guard ends silently (a followed task's watch is freed). Returns true when
 * t is a monitor's own command whose ending the monitor tells itself (no
 * ordinary notification): not when the person stopped it, nor a guard. */
bool monitor_note_end(task *t, task_status s, bool guarded, int64_t now, bool *look);

#endif

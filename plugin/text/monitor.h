/*
 * monitor.h — the texts of a monitor (a watched command's output, the
 * background_monitor and Monitor tools): its events, and its last word (the
 * stream ended, it expired, a flood or its total stopped it, a restart ended
 * it). docs/tools.md quotes them. Pure functions of a task and its monitor;
 * each returns a malloc'd text. [lock held] (not asserted: a task does not
 * know its lock)
 */
#ifndef OCBG_TEXT_MONITOR_H
#define OCBG_TEXT_MONITOR_H

#include "model/monitor.h"
#include "model/task.h"

/* One event: its number, its lines, and how many events the rate bound
 * held back before it. */
char *format_monitor_event(const task *t, const shell_monitor *m, const watch_event *ev);

/* The monitor's last word, for m->end (MONITOR_ENDED, _EXPIRED, _FLOODED,
 * _LIMITED). */
char *format_monitor_end(const task *t, const shell_monitor *m);

/* A monitor's own command that a restart of the host ended
 * (task_is_monitor, shell lost): its watch is gone with it. */
char *format_monitor_lost(const task *t);

#endif

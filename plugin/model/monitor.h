/*
 * monitor.h — a watch on a shell task's output (the monitor tools): the
 * watch itself (model/watch.h) and what the monitor adds to it, hung on the
 * task's shell_state (shell_state.monitor). A monitor is either a command of
 * its own (a shell task whose agent is MONITOR_AGENT, so a restart still
 * knows it) or a watch on an existing background command (follows).
 *
 * Pure data: no threads, no host. The engine lock guards it like the rest of
 * the task: the shell thread feeds it, the worker takes its events
 * (engine/monitor.h).
 */
#ifndef OCBG_MONITOR_H
#define OCBG_MONITOR_H

#include "base/face_guard.h"

#include <stdbool.h>
#include <stdint.h>

#include "model/watch.h"

/* The agent field of a monitor's own task: stored with the row, so a task
 * restored after a restart is still known to be a monitor. */
#define MONITOR_AGENT "monitor"

/* timeout_ms: default, and the bounds the model may set. */
#define MONITOR_TIMEOUT_DEFAULT_MS 300000
#define MONITOR_TIMEOUT_MIN_MS 1000
#define MONITOR_TIMEOUT_MAX_MS 1800000

/* Why a monitor gave its last word. */
typedef enum monitor_end {
    MONITOR_LIVE = 0,
    MONITOR_ENDED,    /* the stream ended: "stream ended" was said */
    MONITOR_EXPIRED,  /* timeout_ms passed */
    MONITOR_FLOODED,  /* events held back too long: stopped, the model told to filter */
    MONITOR_LIMITED,  /* max_events given: stopped */
    MONITOR_SILENCED, /* cancelled, stopped by the person, or a guard: nothing more from the watch */
} monitor_end;

typedef struct shell_monitor {
    watch w;         /* without the pattern: with one, its lines come filtered (the shell thread, line_filter.h) */
    char *pattern;   /* as given (NULL: every line) */
    uint64_t serial; /* this monitor among all of the process's, from 1: the shell thread's filter knows whose it is */
    int64_t timeout_ms;   /* as set */
    int64_t expires_mono; /* monotonic ms: then it expires */
    int64_t expires_ms;   /* the same, on the host's wall clock (the panel's time left) */
    bool follows;         /* watches a command it did not start: its ends leave the command running */
    bool listed;          /* on the engine's list of watches (engine/monitor.c) */
    uint8_t end;          /* monitor_end */
} shell_monitor;

/* A new monitor with limits lim and an optional POSIX ERE pattern; NULL
 * with err (errlen bytes) saying why when the pattern is refused (the bounds
 * of model/line_filter.h). Owned by the caller until hung on a task. Any
 * thread. */
shell_monitor *shell_monitor_new(const watch_limits *lim, const char *pattern, int64_t timeout_ms, bool follows,
                                 char *err, size_t errlen);

/* n bytes of the command's output at monotonic now: as it comes when m
 * has no pattern, else the complete lines the pattern kept (each ended by
 * '\n', at most max_bytes; the shell thread matches them off the lock).
 * true when this made
 * something due sooner than before (the worker must look again). [lock held]
 * (not asserted: m does not know its lock) */
bool shell_monitor_feed(shell_monitor *m, const char *data, size_t n, int64_t now);

void shell_monitor_free(shell_monitor *m);

#endif

/*
 * monitor.h — starting a monitor (background_monitor, Monitor): a new
 * command whose output lines come to the model as events, or a watch on a
 * running background command of the caller's session. Both faces call
 * op_monitor_start once and word its answer from monitor_started, without
 * the lock. The watch's life after that is the engine's (engine/monitor.h).
 */
#ifndef OCBG_OPS_MONITOR_H
#define OCBG_OPS_MONITOR_H

#include "ops/ops.h"

typedef struct monitor_req {
    const char *command;     /* a new command to watch; or NULL with task_id */
    const char *description; /* the new command's (NULL: the command); ignored with task_id */
    const char *task_id;     /* a running background command of the caller's session to follow */
    const char *pattern;     /* POSIX ERE selecting lines; NULL or "": every line */
    bool has_timeout;        /* timeout_ms was given */
    double timeout_ms;       /* MONITOR_TIMEOUT_MIN_MS..MONITOR_TIMEOUT_MAX_MS; else the default */
} monitor_req;

/* What op_monitor_start made: the task watched, and what the answer says. */
typedef struct monitor_started {
    char id[TASK_ID_SIZE]; /* the monitor's own command, or the followed task */
    bool follows;
    int64_t timeout_ms;
    strbuf queued; /* a new command waiting for a slot: why (sb_free it); else empty */
} monitor_started;

/* Start a monitor of the caller's session. The arguments are checked first
 * (command or task_id, the timeout's range, the pattern), then a new
 * command is asked for as a background Bash is (the same questions; a
 * refusal starts nothing) and launched with its watch; a followed task is
 * looked up (the caller's, a background command, running, not watched
 * yet). [lock not held] 0 with *res; or a negative errno with the error in
 * out, and nothing made. */
int op_monitor_start(engine *eng, const ocp_call_ctx *ctx, const monitor_req *req, monitor_started *res, strbuf *out);

#endif

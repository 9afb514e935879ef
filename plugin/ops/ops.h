/*
 * ops.h — the operations both faces share: launch, wait, cancel, clear,
 * resume, and finding a session's own tasks. A face (face/) turns a tool's
 * arguments into one of these and words the answer; an operation decides
 * what happens to tasks, asks the host's permission where it must, and never
 * leaves a half-made task behind.
 *
 * Threads: [worker] host worker threads (tool calls). Each function says
 * whether it takes the engine lock itself ("lock not held") or runs under it
 * ("lock held"). Texts an operation writes to `out` are the ones both faces
 * show alike (permission refusals, start failures).
 */
#ifndef OCBG_OPS_H
#define OCBG_OPS_H

#include <stdbool.h>

#include "base/util.h"
#include "engine/engine.h"

typedef struct launch_req {
    const char *description, *prompt, *agent;
    bool fork;       /* the child starts from a fork of the caller's context */
    bool foreground; /* the caller waits for the result itself: no notification */
} launch_req;

/* Launch an agent task of the caller's session: the host's permission, the
 * task registered, its session created (or forked), its prompt sent. [lock
 * not held] 0 with id and batch filled (out untouched); or a negative errno
 * with the error in out: nothing remains unless the session was created (the
 * task then exists, in error). */
int op_launch_agent(ocbg *o, const ocp_call_ctx *ctx, const launch_req *req, char id[TASK_ID_SIZE],
                    char batch[TASK_ID_SIZE], strbuf *out);

/* Run `command` for the caller's session in its directory: permission, task,
 * process. [lock not held] 0 with id; or a negative errno and the error in
 * out (a command that could not start is a task in error; a foreground one
 * is removed). */
int op_launch_shell(ocbg *o, const ocp_call_ctx *ctx, const char *command, const char *description,
                    bool foreground, char id[TASK_ID_SIZE], strbuf *out);

#endif

/*
 * permission.h — asking the host's consent before ocbg runs a command or
 * starts a sub-agent (ABI 1.1 ask_permission), the way the host's own tools
 * ask: for a command line, "external_directory" and "bash" exactly as
 * OpenCode's bash tool asks them (ops/bash_asks.h); permission "task" with
 * the agent's name.
 *
 * A host without ask_permission (ABI 1.0, or NULL) has no permission system
 * to apply: the action goes ahead, as it always did. Any answer other than
 * "allowed" stops the action: ocbg never acts on a failed question.
 *
 * Every function here runs on a tool call's thread, WITHOUT the engine lock
 * (the question may wait for the user for as long as the user takes).
 */
#ifndef OCBG_PERMISSION_H
#define OCBG_PERMISSION_H

#include "base/face_guard.h"
#include <cjson/cJSON.h>

#include "engine/engine.h"
#include "base/util.h"

/* May the call `ctx` run `command` (a /bin/sh command line)? description: the
 * model's description of it (may be NULL). Returns 0 to go ahead; otherwise
 * a negative errno (-EACCES denied, -ECANCELED Esc while asking, -EIO the
 * host could not ask) and the answer for the model in out, which says that
 * nothing was run. */
int permission_bash(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description, strbuf *out);

/* May the call `ctx` start (or resume) a sub-agent of type `agent`? The same
 * returns; the answer says that no task was started. */
int permission_task(engine *eng, const ocp_call_ctx *ctx, const char *agent, const char *description, strbuf *out);

/* May the call `ctx` send a message into a running sub-agent of type
 * `agent` (background_send)? The same permission as starting one ("task",
 * the agent's name), so a rule that forbids the agent forbids talking to
 * it; the answer says that nothing was sent. */
int permission_send(engine *eng, const ocp_call_ctx *ctx, const char *agent, const char *description, strbuf *out);

/* May the call `ctx` make the folder `folder` outside the project (an
 * isolated task's worktree)? What the host's own tools ask for a folder
 * outside the project: "external_directory", the pattern `folder` + "/" + "*"; an
 * "always" approves every folder under `root` (all of ocbg's worktrees).
 * The same returns; the answer says that no task was started. */
int permission_folder(engine *eng, const ocp_call_ctx *ctx, const char *folder, const char *root, strbuf *out);

#endif

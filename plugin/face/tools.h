/*
 * tools.h — tools as data: each tool's name, description and arguments are one
 * table; the JSON Schema the host shows the model and the validation of every
 * call both come from it, so they cannot disagree.
 *
 * Validation refuses, with a readable error and before anything is done: a
 * body that is not a JSON object, an unknown argument, a wrong type, a
 * missing or blank required string, a string that is not valid UTF-8 or is
 * longer than ARG_MAX_BYTES, and a value outside the argument's choices.
 */
#ifndef OCBG_TOOLS_H
#define OCBG_TOOLS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"
#include "hooks/usage.h"
#include "ops/ops.h"

/* How many lines a listing shows (background_list, /tasks); the totals count
 * every task. A model needs the newest few, not ten thousand queued lines. */
#define LIST_MAX_LINES 100

#define ARG_MAX_BYTES (1024 * 1024)

typedef enum arg_type {
    ARG_STRING,
    ARG_BOOLEAN,
    ARG_NUMBER,
    ARG_STRING_ARRAY
} arg_type;

/* How much the validator enforces. */
typedef enum arg_need {
    ARG_OPTIONAL,
    ARG_REQUIRED,            /* listed as required; must be present, and a string non-blank */
    ARG_REQUIRED_BY_HANDLER, /* listed as required; the handler checks it and words the error
                              * (the spec gives exact texts, e.g. for a blank resume prompt) */
} arg_need;

#define ARG_ARRAY_MAX 100 /* items in an array argument */
/* background_task's agent when the model names none: OpenCode's built-in
 * general-purpose sub-agent (its own `task` tool offers it first). */
#define DEFAULT_AGENT "general"

typedef struct arg_spec {
    const char *name;
    arg_type type;
    arg_need need;
    const char *description;
    const char *const *choices; /* NULL-terminated allowed strings, or NULL */
} arg_spec;

/* A tool handler. [worker] Runs without the engine lock, and never takes
 * it: it calls one operation of ops/ops.h and words the snapshot it
 * returns; writes the answer (or the error text) to out; returns 0 or a
 * negative errno. */
typedef int (*tool_fn)(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);

typedef struct tool_spec {
    const char *name;
    const char *description;
    const arg_spec *args;
    size_t nargs;
    tool_fn run;
} tool_spec;

/* The OpenCode face (table.c): background_task, _output, _cancel,
 * _list, _clear, _resume, _block, _send. */
extern const tool_spec background_tools[];
extern const size_t background_tool_count;

/* The Claude-style face (table.c): Task, Bash, TaskOutput, TaskStop. */
extern const tool_spec claude_tools[];
extern const size_t claude_tool_count;

/* The handlers (face/background.c, face/resume.c, face/claude.c). */
int tool_claude_task(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_claude_bash(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_claude_task_output(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_claude_task_stop(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);

/* The Claude face's status words: error → failed, cancelled → stopped,
 * resumed → running. */
const char *claude_status(task_status s);

/* Slash commands (commands.c): /tasks, and /bashes (deprecated, then the
 * same listing). [worker] */
int command_tasks(engine *eng, const char *command, const char *arguments, ocp_call_ctx *ctx, strbuf *out);
int tool_background_task(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_output(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_cancel(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_list(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_clear(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_resume(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_block(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_background_send(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
/* The monitor tools (face/monitor.c). */
int tool_background_monitor(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);
int tool_claude_monitor(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);

/* Resume mode of background_task and background_resume: validates in the
 * spec's order with its exact texts, then sends `prompt` to the task's
 * session. With block, waits up to timeout_s and answers with only the new
 * response (no notification). */
int resume_task(engine *eng, const char *task_id, const char *prompt, bool block, double timeout_s, ocp_call_ctx *ctx,
                const char *warning, strbuf *out);

/* A blocking wait's timeout argument, in seconds: default 120, at most 600;
 * false (and the error in out) when it is not a positive number. */
bool wait_timeout_arg(const cJSON *args, const char *tool, double *seconds, strbuf *out);

/* A launch's own runtime limit, argument 'timeout' in units of unit_ms
 * (1000: seconds, 1: milliseconds, named by unit): *ms, or 0 when absent;
 * false (and the error in out) when it is not a positive number. */
bool limit_arg(const cJSON *args, const char *tool, double unit_ms, const char *unit, int64_t *ms, strbuf *out);

/* Launch an agent task for `tool` with req (its timeout_ms from the 'timeout'
 * argument, in units of unit_ms; its isolation from 'isolation'): the
 * operation op_launch_agent. 0, or a negative errno with the error in out. */
int launch_in_budget(engine *eng, const cJSON *args, const char *tool, double unit_ms, const char *unit,
                     ocp_call_ctx *ctx, launch_req *req, launched *l, strbuf *out);

/* "Usage of the listed tasks: <usage>" on a line of its own, when any. */
void put_usage_total(strbuf *out, const usage *total);

/* "Task not found: <id>. Use background_list to see available tasks."; -ENOENT */
int task_not_found(strbuf *out, const char *task_id);

/* The JSON Schema of a tool's arguments (malloc'd). */
char *tool_schema_json(const tool_spec *t);

/* Parse and check args_json against t. Returns 0 and *args (free with
 * cJSON_Delete), or -EINVAL and *err (malloc'd). */
int tool_args_check(const tool_spec *t, const char *args_json, cJSON **args, char **err);

/* Typed reads of checked arguments; absent → the default. */
const char *arg_str(const cJSON *args, const char *name);
bool arg_bool(const cJSON *args, const char *name, bool def);
double arg_num(const cJSON *args, const char *name, double def);

#endif

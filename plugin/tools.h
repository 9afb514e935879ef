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

#include "engine.h"
#include "util.h"

#define ARG_MAX_BYTES (1024 * 1024)

typedef enum arg_type { ARG_STRING, ARG_BOOLEAN, ARG_NUMBER } arg_type;

typedef struct arg_spec {
    const char *name;
    arg_type type;
    bool required;
    const char *description;
    const char *const *choices; /* NULL-terminated allowed strings, or NULL */
} arg_spec;

/* A tool handler. [worker] Runs without the engine lock; writes the answer
 * (or the error text) to out; returns 0 or a negative errno. */
typedef int (*tool_fn)(ocbg *o, const cJSON *args, ocp_call_ctx *ctx, strbuf *out);

typedef struct tool_spec {
    const char *name;
    const char *description;
    const arg_spec *args;
    size_t nargs;
    tool_fn run;
} tool_spec;

/* The OpenCode face: background_task, _output, _cancel, _list, _clear. */
extern const tool_spec background_tools[];
extern const size_t background_tool_count;

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

/* args.c — schema generation and argument checks for tools.h. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "face/tools.h"
#include "ops/ops.h"
#include "text/texts.h"

static const char *const type_names[] = {
    [ARG_STRING] = "string", [ARG_BOOLEAN] = "boolean", [ARG_NUMBER] = "number", [ARG_STRING_ARRAY] = "array"};

char *tool_schema_json(const tool_spec *t)
{
    cJSON *schema = cJSON_CreateObject();
    cJSON_AddStringToObject(schema, "type", "object");
    cJSON *props = cJSON_AddObjectToObject(schema, "properties");
    cJSON *required = cJSON_AddArrayToObject(schema, "required");
    for (size_t i = 0; i < t->nargs; i++) {
        const arg_spec *a = &t->args[i];
        cJSON *p = cJSON_AddObjectToObject(props, a->name);
        cJSON_AddStringToObject(p, "type", type_names[a->type]);
        cJSON_AddStringToObject(p, "description", a->description);
        if (a->type == ARG_STRING_ARRAY) {
            cJSON *items = cJSON_AddObjectToObject(p, "items");
            cJSON_AddStringToObject(items, "type", "string");
        }
        if (a->choices) {
            cJSON *e = cJSON_AddArrayToObject(p, "enum");
            for (const char *const *c = a->choices; *c; c++)
                cJSON_AddItemToArray(e, cJSON_CreateString(*c));
        }
        if (a->need != ARG_OPTIONAL)
            cJSON_AddItemToArray(required, cJSON_CreateString(a->name));
    }
    cJSON_AddFalseToObject(schema, "additionalProperties");
    char *s = cJSON_PrintUnformatted(schema);
    cJSON_Delete(schema);
    char *copy = xstrdup(s);
    cJSON_free(s);
    return copy;
}

static const arg_spec *find_arg(const tool_spec *t, const char *name)
{
    for (size_t i = 0; i < t->nargs; i++)
        if (strcmp(t->args[i].name, name) == 0)
            return &t->args[i];
    return NULL;
}

static char *check_string(const tool_spec *t, const arg_spec *a, const char *v)
{
    size_t len = strlen(v);
    if (len > ARG_MAX_BYTES)
        return xasprintf("%s: argument '%s' is too long (%zu bytes; at most %d)", t->name, a->name, len, ARG_MAX_BYTES);
    if (!utf8_valid(v, len))
        return xasprintf("%s: argument '%s' is not valid UTF-8 text", t->name, a->name);
    return NULL;
}

static char *check_value(const tool_spec *t, const arg_spec *a, const cJSON *v)
{
    switch (a->type) {
    case ARG_STRING_ARRAY: {
        if (!cJSON_IsArray(v))
            return xasprintf("%s: argument '%s' must be an array of strings", t->name, a->name);
        int n = cJSON_GetArraySize(v);
        if (n > ARG_ARRAY_MAX)
            return xasprintf("%s: argument '%s' has %d items; at most %d", t->name, a->name, n, ARG_ARRAY_MAX);
        if (n == 0 && a->need == ARG_REQUIRED)
            return xasprintf("%s: argument '%s' must not be empty", t->name, a->name);
        const cJSON *item;
        cJSON_ArrayForEach (item, v) {
            if (!cJSON_IsString(item) || blank(item->valuestring))
                return xasprintf("%s: argument '%s' must hold only non-empty strings", t->name, a->name);
            char *msg = check_string(t, a, item->valuestring);
            if (msg)
                return msg;
        }
        return NULL;
    }
    case ARG_BOOLEAN:
        if (!cJSON_IsBool(v))
            return xasprintf("%s: argument '%s' must be a boolean (true or false)", t->name, a->name);
        return NULL;
    case ARG_NUMBER:
        if (!cJSON_IsNumber(v))
            return xasprintf("%s: argument '%s' must be a number", t->name, a->name);
        return NULL;
    case ARG_STRING:
        break;
    }
    if (!cJSON_IsString(v))
        return xasprintf("%s: argument '%s' must be a string", t->name, a->name);
    char *msg = check_string(t, a, v->valuestring);
    if (msg)
        return msg;
    if (a->need == ARG_REQUIRED && blank(v->valuestring))
        return xasprintf("%s: argument '%s' must not be empty", t->name, a->name);
    if (a->choices) {
        for (const char *const *c = a->choices; *c; c++)
            if (strcmp(*c, v->valuestring) == 0)
                return NULL;
        strbuf sb = {0};
        sb_printf(&sb, "%s: argument '%s' must be one of:", t->name, a->name);
        for (const char *const *c = a->choices; *c; c++)
            sb_printf(&sb, " %s", *c);
        return sb_take(&sb);
    }
    return NULL;
}

int tool_args_check(const tool_spec *t, const char *args_json, cJSON **args, char **err)
{
    *args = NULL;
    cJSON *root = blank(args_json) ? cJSON_CreateObject() : cJSON_Parse(args_json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        *err = xasprintf("%s: the arguments must be a JSON object", t->name);
        return -EINVAL;
    }
    for (const cJSON *v = root->child; v; v = v->next) {
        const arg_spec *a = v->string ? find_arg(t, v->string) : NULL;
        char *msg = a ? (cJSON_IsNull(v) && a->need == ARG_OPTIONAL ? NULL : check_value(t, a, v))
                      : xasprintf("%s: unknown argument '%.*s%s'", t->name, ECHO(v->string ? v->string : ""));
        if (msg) {
            cJSON_Delete(root);
            *err = msg;
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < t->nargs; i++) {
        const arg_spec *a = &t->args[i];
        if (a->need == ARG_REQUIRED && !cJSON_GetObjectItemCaseSensitive(root, a->name)) {
            *err = xasprintf("%s: missing required argument '%s' (%s)", t->name, a->name, a->description);
            cJSON_Delete(root);
            return -EINVAL;
        }
    }
    *args = root;
    return 0;
}

const char *arg_str(const cJSON *args, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, name));
}

bool arg_bool(const cJSON *args, const char *name, bool def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

double arg_num(const cJSON *args, const char *name, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* ---- answers both faces' handlers share ------------------------------ */

#define WAIT_TIMEOUT_DEFAULT_S 120
#define WAIT_TIMEOUT_MAX_S 600

bool wait_timeout_arg(const cJSON *args, const char *tool, double *seconds, strbuf *out)
{
    double t = arg_num(args, "timeout", WAIT_TIMEOUT_DEFAULT_S);
    if (!(t > 0) || !isfinite(t)) {
        sb_printf(out, "%s: argument 'timeout' must be a positive number of seconds (at most %d)", tool,
                  WAIT_TIMEOUT_MAX_S);
        return false;
    }
    *seconds = t > WAIT_TIMEOUT_MAX_S ? WAIT_TIMEOUT_MAX_S : t;
    return true;
}

bool limit_arg(const cJSON *args, const char *tool, double unit_ms, const char *unit, int64_t *ms, strbuf *out)
{
    *ms = 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "timeout");
    if (!v || cJSON_IsNull(v))
        return true;
    double x = cJSON_IsNumber(v) ? v->valuedouble * unit_ms : NAN;
    if (!(x >= 1) || !isfinite(x)) {
        sb_printf(out, "%s: argument 'timeout' must be a positive number of %s", tool, unit);
        return false;
    }
    *ms = x < 1e15 ? (int64_t)x : (int64_t)1e15;
    return true;
}

int launch_in_budget(engine *eng, const cJSON *args, const char *tool, double unit_ms, const char *unit,
                     ocp_call_ctx *ctx, launch_req *req, launched *l, strbuf *out)
{
    if (!limit_arg(args, tool, unit_ms, unit, &req->timeout_ms, out))
        return -EINVAL;
    req->isolation = arg_str(args, "isolation");
    return op_launch_agent(eng, ctx, req, l, out);
}

void put_usage_total(strbuf *out, const usage *total)
{
    if (usage_is_zero(total))
        return;
    sb_puts(out, "\nUsage of the listed tasks: ");
    format_usage(out, total);
}

int task_not_found(strbuf *out, const char *id)
{
    sb_printf(out, "Task not found: %.*s%s. Use background_list to see available tasks.", ECHO(id));
    return -ENOENT;
}

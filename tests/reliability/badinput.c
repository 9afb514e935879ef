/* badinput.c — the bad input table: every tool the plugin declares
 * (read from its table, so a new tool is covered without editing this file) ×
 * {missing argument, wrong type, empty, huge, invalid UTF-8, unknown extra
 * argument, not an object} → a failed call with a readable error naming what
 * is wrong, and nothing created or changed: no session created, forked,
 * prompted or aborted, no process spawned, the task list unchanged.
 *
 *   bad_inputs_tried: N */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "rel.h"
#include "tap.h"
#include "testlib.h"

#define ANSWER_MAX_BYTES 1024

static sim_host *h;
static char *parent, *running_id, *done_id, *batch_id;
static int tried;

/* A valid value for an argument, by name (the ids name real tasks, so that
 * an error can only come from the bad part). */
static cJSON *valid_value(const char *tool, const char *name, const cJSON *prop)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(prop, "type"));
    if (strcmp(name, "task_id") == 0)
        return cJSON_CreateString(strcmp(tool, "background_resume") == 0 ? done_id : running_id);
    if (strcmp(name, "task_ids") == 0) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString(done_id));
        return a;
    }
    if (strcmp(name, "batch_id") == 0)
        return cJSON_CreateString(batch_id);
    if (strcmp(name, "command") == 0)
        return cJSON_CreateString("true");
    const cJSON *e = cJSON_GetObjectItem(prop, "enum");
    if (cJSON_IsArray(e) && cJSON_GetArraySize(e) > 0)
        return cJSON_CreateString(cJSON_GetArrayItem(e, 0)->valuestring);
    if (type && strcmp(type, "boolean") == 0)
        return cJSON_CreateFalse();
    if (type && strcmp(type, "number") == 0)
        return cJSON_CreateNumber(1);
    if (type && strcmp(type, "array") == 0) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString("x"));
        return a;
    }
    return cJSON_CreateString("explore");
}

/* What the plugin's state looks like from outside. */
typedef struct snapshot {
    size_t creates, forks, prompts, aborts;
    char *list;
} snapshot;

static void snap(snapshot *s)
{
    s->creates = sim_calls(h, "session_create", NULL);
    s->forks = sim_calls(h, "session_fork", NULL);
    s->prompts = sim_calls(h, "session_prompt", NULL);
    s->aborts = sim_calls(h, "session_abort", NULL);
    s->list = rel_tool(h, parent, "background_list", "{}", NULL);
    /* A running task's line shows how long it has run: mask that. */
    char *p = strstr(s->list, running_id);
    char *eol = p ? strchr(p, '\n') : NULL;
    if (p && eol)
        memmove(p, eol, strlen(eol) + 1);
}

/* Try one bad call: it must fail with a readable error that contains
 * `mention` (when not NULL), and leave everything as it was. */
static void try_bad(const char *tool, const char *kind, const char *args_json, const char *mention)
{
    snapshot before, after;
    snap(&before);
    int rc;
    char *out = rel_tool(h, parent, tool, args_json, &rc);
    snap(&after);
    tried++;
    /* The spec's own text for a resume without its message (003). */
    int mentioned = !mention || strstr(out, mention) ||
                    (strcmp(mention, "message") == 0 && strstr(out, "Prompt is required when resuming a task"));
    /* An answer stays small whatever the input: at most a short prefix of an
     * argument is echoed (a 1 MB id must not come back as 1 MB). */
    int pass = rc < 0 && strlen(out) >= 10 && strlen(out) <= ANSWER_MAX_BYTES && mentioned;
    pass &= after.creates == before.creates && after.forks == before.forks && after.prompts == before.prompts &&
            after.aborts == before.aborts && strcmp(after.list, before.list) == 0;
    errno = 0;
    int child = waitpid(-1, NULL, WNOHANG); /* a spawned command would be a child */
    pass &= child <= 0;
    char shown[160];
    snprintf(shown, sizeof shown, "%.150s", args_json);
    if (!ok(pass, "%s × %s: refused, nothing changed", tool, kind)) {
        diag("args: %s%s", shown, strlen(args_json) > 150 ? "…" : "");
        diag("rc %d, answer: %.300s", rc, out);
        diag("mention wanted: %s", mention ? mention : "(any)");
        diag("creates %zu→%zu forks %zu→%zu prompts %zu→%zu aborts %zu→%zu list %s", before.creates, after.creates,
             before.forks, after.forks, before.prompts, after.prompts, before.aborts, after.aborts,
             strcmp(after.list, before.list) == 0 ? "same" : "changed");
    }
    free(out);
    free(before.list);
    free(after.list);
}

static char *print(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    return s;
}

/* The valid base: every required argument with a valid value. */
static cJSON *base_args(const char *tool, const cJSON *props, const cJSON *required)
{
    cJSON *args = cJSON_CreateObject();
    const cJSON *r;
    cJSON_ArrayForEach (r, required) {
        const cJSON *prop = cJSON_GetObjectItem(props, r->valuestring);
        cJSON_AddItemToObject(args, r->valuestring, valid_value(tool, r->valuestring, prop));
    }
    /* Arguments the schema leaves optional but a launch needs. */
    const char *launch_needs[] = {"description", "agent"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *prop = cJSON_GetObjectItem(props, launch_needs[i]);
        if (prop && cJSON_GetObjectItem(props, "prompt") && !cJSON_GetObjectItem(args, launch_needs[i]))
            cJSON_AddItemToObject(args, launch_needs[i], valid_value(tool, launch_needs[i], prop));
    }
    return args;
}

static void bad_value_saying(const char *tool, const char *kind, const cJSON *props, const cJSON *required,
                             const char *name, cJSON *value, const char *mention)
{
    cJSON *args = base_args(tool, props, required);
    cJSON_DeleteItemFromObject(args, name);
    /* A monitor watches a new command or follows task_id, never both: a bad
     * task_id is tried alone, or the refusal would be the pair's. */
    if (strcmp(name, "task_id") == 0 && cJSON_GetObjectItem(props, "command"))
        cJSON_DeleteItemFromObject(args, "command");
    cJSON_AddItemToObject(args, name, value);
    char *json = print(args);
    char k[128];
    snprintf(k, sizeof k, "%s '%s'", kind, name);
    try_bad(tool, k, json, mention);
    free(json);
    cJSON_Delete(args);
}

static void bad_value(const char *tool, const char *kind, const cJSON *props, const cJSON *required, const char *name,
                      cJSON *value)
{
    bad_value_saying(tool, kind, props, required, name, value, name);
}

/* Each required argument left out, and arguments that are no JSON object. */
static void bad_missing(const ocp_tool *t, const cJSON *props, const cJSON *required)
{
    const cJSON *r;
    cJSON_ArrayForEach (r, required) {
        cJSON *args = base_args(t->name, props, required);
        cJSON_DeleteItemFromObject(args, r->valuestring);
        char *json = print(args);
        char k[128];
        snprintf(k, sizeof k, "missing '%s'", r->valuestring);
        try_bad(t->name, k, json, r->valuestring);
        free(json);
        cJSON_Delete(args);
    }
    /* Not an object, for every tool. */
    const char *not_objects[] = {"[]", "null", "\"text\"", "{\"unterminated\":", "\xff\xfe"};
    for (size_t i = 0; i < sizeof not_objects / sizeof not_objects[0]; i++)
        try_bad(t->name, "arguments not a JSON object", not_objects[i], "JSON object");
}

/* One property given a bad value: wrong type, empty, huge, out of range,
 * invalid UTF-8. huge is a 2 MiB string (borrowed). */
static void bad_property(const ocp_tool *t, const cJSON *props, const cJSON *required, const cJSON *p, const char *huge)
{
    const cJSON *r;
    const char *name = p->string;
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(p, "type"));
    int is_required = 0;
    cJSON_ArrayForEach (r, required)
        is_required |= strcmp(r->valuestring, name) == 0;
    int is_enum = cJSON_GetObjectItem(p, "enum") != NULL;
    /* Wrong type. */
    if (strcmp(type, "string") == 0 || strcmp(type, "array") == 0)
        bad_value(t->name, "wrong type", props, required, name, cJSON_CreateNumber(42));
    else
        bad_value(t->name, "wrong type", props, required, name, cJSON_CreateString("yes"));
    if (strcmp(type, "boolean") != 0)
        bad_value(t->name, "wrong type (object)", props, required, name, cJSON_CreateObject());
    /* Empty: a required string "" or array [], or a string that must be one of a set. */
    if (strcmp(type, "string") == 0 && (is_required || is_enum))
        bad_value(t->name, "empty", props, required, name, cJSON_CreateString(""));
    if (strcmp(type, "array") == 0) {
        bad_value(t->name, "empty", props, required, name, cJSON_CreateArray());
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString(""));
        bad_value(t->name, "empty item", props, required, name, a);
    }
    /* Huge. */
    if (strcmp(type, "string") == 0)
        bad_value(t->name, "huge (2 MiB)", props, required, name, cJSON_CreateString(huge));
    if (strcmp(type, "array") == 0) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString(huge));
        bad_value(t->name, "huge item (2 MiB)", props, required, name, a);
        cJSON *many = cJSON_CreateArray();
        for (int i = 0; i < 100000; i++)
            cJSON_AddItemToArray(many, cJSON_CreateString(done_id));
        bad_value(t->name, "huge (100000 items)", props, required, name, many);
    }
    /* (A huge number is no error: a timeout is capped at its maximum.) */
    if (strcmp(type, "number") == 0) {
        bad_value(t->name, "negative", props, required, name, cJSON_CreateNumber(-1));
        bad_value(t->name, "zero", props, required, name, cJSON_CreateNumber(0));
    }
    /* Invalid UTF-8 (raw bytes in the JSON text: cJSON keeps them). */
    if (strcmp(type, "string") == 0)
        bad_value(t->name, "invalid UTF-8", props, required, name, cJSON_CreateString("ab\xc3\x28\xff"));
    if (strcmp(type, "array") == 0) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString("bg_\xed\xa0\x80"));
        bad_value(t->name, "invalid UTF-8 item (surrogate)", props, required, name, a);
    }
}

/* Long ids that name nothing (under the 1 MiB argument limit, so they are
 * looked up): not found, and only a prefix of the id comes back. */
static void bad_long_ids(const ocp_tool *t, const cJSON *props, const cJSON *required)
{
    const cJSON *p;
    size_t long_n = 512 * 1024;
    cJSON_ArrayForEach (p, props) {
        const char *name = p->string;
        char *long_id = malloc(long_n + 1);
        memset(long_id, 'q', long_n);
        memcpy(long_id, strcmp(name, "batch_id") == 0 ? "batch_" : "bg_", 3);
        long_id[long_n] = '\0';
        /* (background_list's batch filter is no error: checked in main.) */
        if (strcmp(name, "task_id") == 0 || (strcmp(name, "batch_id") == 0 && strcmp(t->name, "background_list")))
            bad_value_saying(t->name, "unknown long id (512 KiB)", props, required, name, cJSON_CreateString(long_id),
                             "not found: ");
        if (strcmp(name, "task_ids") == 0) {
            cJSON *a = cJSON_CreateArray();
            cJSON_AddItemToArray(a, cJSON_CreateString(long_id));
            bad_value_saying(t->name, "unknown long id item (512 KiB)", props, required, name, a, "not found: ");
        }
        free(long_id);
    }
}

/* Unknown extra argument (and an empty-named one, and a 512 KiB one). */
static void bad_extras(const ocp_tool *t, const cJSON *props, const cJSON *required)
{
    size_t long_n = 512 * 1024;
    cJSON *args = base_args(t->name, props, required);
    cJSON_AddNumberToObject(args, "bogus_extra", 1);
    char *json = print(args);
    try_bad(t->name, "unknown extra argument", json, "bogus_extra");
    free(json);
    cJSON_Delete(args);
    args = base_args(t->name, props, required);
    cJSON_AddStringToObject(args, "", "x");
    json = print(args);
    try_bad(t->name, "unknown extra argument ''", json, "unknown argument");
    free(json);
    cJSON_Delete(args);
    args = base_args(t->name, props, required);
    char *long_name = malloc(long_n + 1);
    memset(long_name, 'k', long_n);
    long_name[long_n] = '\0';
    cJSON_AddNumberToObject(args, long_name, 1);
    json = print(args);
    try_bad(t->name, "unknown extra argument (512 KiB name)", json, "unknown argument 'kkkk");
    free(long_name);
    free(json);
    cJSON_Delete(args);
}

static void table_for(const ocp_tool *t)
{
    cJSON *schema = cJSON_Parse(t->parameters_json);
    const cJSON *props = cJSON_GetObjectItem(schema, "properties");
    const cJSON *required = cJSON_GetObjectItem(schema, "required");
    if (!ok(cJSON_IsObject(props) && cJSON_IsArray(required), "%s: a schema with properties and required", t->name)) {
        cJSON_Delete(schema);
        return;
    }
    size_t huge_n = 2 * 1024 * 1024;
    char *huge = malloc(huge_n + 1);
    memset(huge, 'h', huge_n);
    huge[huge_n] = '\0';
    bad_missing(t, props, required);
    const cJSON *p;
    cJSON_ArrayForEach (p, props)
        bad_property(t, props, required, p, huge);
    bad_long_ids(t, props, required);
    bad_extras(t, props, required);
    free(huge);
    cJSON_Delete(schema);
}

int main(void)
{
    h = rel_host(NULL);
    if (!h)
        bail_out("cannot load ocbg");
    parent = sim_session_new(h, NULL, "main");
    sim_script(h, "rel-done#", "{\"steps\":[{\"reply\":\"done\"}]}", 1);
    sim_script(h, "rel-run#", "{\"steps\":[{\"hang\":true}]}", 1);
    char *out = rel_tool(h, parent, "background_task",
                         "{\"description\":\"Done\",\"prompt\":\"rel-done#\",\"agent\":\"explore\"}", NULL);
    done_id = t_find_id(out, "bg_");
    batch_id = t_find_id(out, "batch_");
    free(out);
    out = rel_tool(h, parent, "background_task",
                   "{\"description\":\"Run\",\"prompt\":\"rel-run#\",\"agent\":\"explore\"}", NULL);
    running_id = t_find_id(out, "bg_");
    free(out);
    if (!done_id || !running_id)
        bail_out("setup launches failed");
    out = rel_wait_settled(h, parent, done_id, 5000);
    if (!out)
        bail_out("setup task did not complete");
    free(out);
    sim_events_flush(h, 5000);

    const ocp_plugin *p = sim_plugin(h, 0);
    ok(p->tool_count >= 11, "the plugin declares %zu tools", p->tool_count);
    for (size_t i = 0; i < p->tool_count; i++)
        table_for(&p->tools[i]);
    /* Tools the plugin does not have. */
    try_bad("no_such_tool", "unknown tool", "{}", "no_such_tool");
    try_bad("", "empty tool name", "{}", "Unknown tool");
    char *long_tool = malloc(512 * 1024 + 1);
    memset(long_tool, 't', 512 * 1024);
    long_tool[512 * 1024] = '\0';
    try_bad(long_tool, "unknown tool (512 KiB name)", "{}", "Unknown tool: tttt");
    free(long_tool);

    /* A listing filtered by a batch that does not exist is an empty listing,
     * and it echoes only a prefix of the filter. */
    size_t n = 512 * 1024;
    char *args = malloc(n + 32);
    memset(args, 'q', n + 32);
    memcpy(args, "{\"batch_id\":\"batch_", 19);
    memcpy(args + n + 28, "\"}", 3);
    out = rel_tool(h, parent, "background_list", args, NULL);
    ok(strncmp(out, "No background tasks found (filter: batch batch_qqq", 50) == 0 && strlen(out) <= ANSWER_MAX_BYTES &&
           strstr(out, "q…)"),
       "background_list with a 512 KiB batch filter: an empty listing echoing a prefix (%zu bytes)", strlen(out));
    free(out);
    free(args);
    printf("bad_inputs_tried: %d\n", tried);
    free(parent);
    free(running_id);
    free(done_id);
    free(batch_id);
    sim_destroy(h);
    return done_testing();
}

/* The schemas tell the truth: every tool, called with exactly the
 * arguments its schema marks required (and valid values for them), works.
 * A model that follows the schema must not fail its first call. The tool
 * list is read from the plugin, so a new tool is covered without editing
 * this file. */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

typedef struct fixture {
    sim_host *h;
    char *parent, *running_id, *done_id;
} fixture;

static void setup(fixture *f)
{
    f->h = t_host(NULL);
    f->parent = sim_session_new(f->h, NULL, "main");
    f->done_id = t_launch_script(f->h, f->parent, "Done", J("{'steps':[{'reply':'done'}]}"));
    f->running_id = t_launch_script(f->h, f->parent, "Running", J("{'steps':[{'hang':true}]}"));
    if (t_wait_status(f->h, f->parent, f->done_id, "completed", 5000) != 0)
        bail_out("setup: the done task did not complete");
    if (t_wait_status(f->h, f->parent, f->running_id, "running", 5000) != 0)
        bail_out("setup: the running task did not start");
}

static void teardown(fixture *f)
{
    free(f->parent);
    free(f->running_id);
    free(f->done_id);
    sim_destroy(f->h);
}

/* A valid value for a required argument of `tool`. */
static cJSON *value_for(const fixture *f, const char *tool, const char *name)
{
    /* A finished task where a running one would block or be refused. */
    bool wants_done = strcmp(tool, "background_resume") == 0 || strcmp(tool, "TaskOutput") == 0;
    if (strcmp(name, "task_id") == 0)
        return cJSON_CreateString(wants_done ? f->done_id : f->running_id);
    if (strcmp(name, "task_ids") == 0) {
        cJSON *a = cJSON_CreateArray();
        cJSON_AddItemToArray(a, cJSON_CreateString(f->done_id));
        return a;
    }
    if (strcmp(name, "command") == 0)
        return cJSON_CreateString("true");
    if (strcmp(name, "subagent_type") == 0 || strcmp(name, "agent") == 0)
        return cJSON_CreateString("explore");
    if (strcmp(name, "prompt") == 0) {
        sim_script(f->h, "schema-call#", J("{'steps':[{'reply':'ok'}]}"), 0);
        return cJSON_CreateString("schema-call# check the build");
    }
    return cJSON_CreateString("go on");
}

static void call_with_required_only(const ocp_tool *t)
{
    fixture f;
    setup(&f);
    cJSON *schema = cJSON_Parse(t->parameters_json), *args = cJSON_CreateObject();
    const cJSON *r;
    cJSON_ArrayForEach (r, cJSON_GetObjectItem(schema, "required"))
        cJSON_AddItemToObject(args, r->valuestring, value_for(&f, t->name, r->valuestring));
    char *json = cJSON_PrintUnformatted(args), *out = NULL;
    int rc = sim_tool(f.h, f.parent, t->name, json, &out);
    if (!is_int(rc, 0, "%s(%s) with only its required arguments works", t->name, json))
        diag("answer: %.300s", out ? out : "(none)");
    free(out);
    free(json);
    cJSON_Delete(args);
    cJSON_Delete(schema);
    teardown(&f);
}

int main(void)
{
    sim_host *h = t_host(NULL);
    const ocp_plugin *p = sim_plugin(h, 0);
    size_t n = p->tool_count;
    ok(n >= 12, "the plugin declares %zu tools (both faces)", n);
    char **names = calloc(n, sizeof *names);
    for (size_t i = 0; i < n; i++)
        names[i] = strdup(p->tools[i].name);
    sim_destroy(h);
    for (size_t i = 0; i < n; i++) {
        h = t_host(NULL); /* the table lives as long as its host: a fresh one per tool */
        const ocp_plugin *q = sim_plugin(h, 0);
        for (size_t k = 0; k < q->tool_count; k++)
            if (strcmp(q->tools[k].name, names[i]) == 0) {
                ocp_tool copy = {strdup(q->tools[k].name), strdup(q->tools[k].description),
                                 strdup(q->tools[k].parameters_json)};
                sim_destroy(h);
                h = NULL;
                call_with_required_only(&copy);
                free((char *)copy.name);
                free((char *)copy.description);
                free((char *)copy.parameters_json);
                break;
            }
        if (h)
            sim_destroy(h);
        free(names[i]);
    }
    free(names);

    /* background_task's defaults, as its schema says. */
    fixture f;
    setup(&f);
    sim_script(f.h, "defaults#", J("{'steps':[{'reply':'ok'}]}"), 1);
    char *out = NULL;
    int rc = sim_tool(f.h, f.parent, "background_task",
                      J("{'prompt':'defaults# Find every caller of parse_config in the tree and list them'}"), &out);
    is_int(rc, 0, "background_task with only a prompt launches");
    like(out, "\nAgent: general\n", "the agent defaults to general");
    like(out, "\nDescription: defaults# Find every caller of parse_config in t…\n",
         "the description defaults to the prompt's first words");
    free(out);
    teardown(&f);
    return done_testing();
}

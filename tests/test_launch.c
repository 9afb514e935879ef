/* Launching a background task: what the
 * host is asked to do, what the model is told, and bad input creating nothing. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void launch_creates_child_and_sends_prompt(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_script(h, "find the auth code", J("{'steps':[{'wait_ms':50},{'reply':'auth lives in src/auth'}]}"), 1);
    char *out = t_tool(h, f.parent, "background_task",
                       J("{'description':'Find auth','prompt':'find the auth code','agent':'explore'}"));
    is_int(t_rc, 0, "launch succeeds");
    like(out, "Background task launched.", "answer says launched");
    like(out, "Status: running", "status is running at once");
    like(out, "Agent: explore", "answer names the agent");
    char *id = t_find_id(out, "bg_");
    ok(id && strlen(id) == 11, "a task id bg_ + 8 hex digits: %s", id ? id : "(none)");
    char *batch = t_find_id(out, "batch_");
    ok(batch != NULL, "a batch id is shown");
    free(batch);

    is_int(sim_calls(h, "session_create", NULL), 1, "one child session created");
    char *body = sim_call_body(h, "session_create", NULL, 0);
    cJSON *b = cJSON_Parse(body);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(b, "parentID")), f.parent, "child's parent is the caller");
    like(cJSON_GetStringValue(cJSON_GetObjectItem(b, "title")), "Find auth", "child's title has the description");
    cJSON_Delete(b);
    free(body);

    body = sim_call_body(h, "session_prompt", NULL, 0);
    b = cJSON_Parse(body);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(b, "agent")), "explore", "prompt runs the chosen agent");
    cJSON *text = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "parts"), 0), "text");
    is_str(cJSON_GetStringValue(text), "find the auth code", "prompt text sent as given");
    cJSON *tools = cJSON_GetObjectItem(b, "tools");
    ok(cJSON_IsFalse(cJSON_GetObjectItem(tools, "background_task")), "background_task denied in the child");
    ok(cJSON_IsFalse(cJSON_GetObjectItem(tools, "background_output")), "background_output denied in the child");
    ok(!cJSON_IsTrue(cJSON_GetObjectItem(b, "noReply")), "the child's prompt runs a model turn");
    cJSON_Delete(b);
    free(body);

    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "task completes by its idle event");
    const char *args = J("{'task_id':'%s'}", id);
    free(out);
    out = t_tool(h, f.parent, "background_output", args);
    like(out, "auth lives in src/auth", "output returns the sub-agent's last reply");
    like(out, "Description: Find auth", "output names the description");
    is_int(t_wait_messages_with(h, f.parent, "auth lives in src/auth", 1, 5000), 0, "parent is notified");
    free(out);
    free(id);
    t_close(&f);
}

static void bad_arguments_create_nothing(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    static const struct {
        const char *args, *expect;
    } cases[] = {
        /* (description and agent have defaults: test_schema_calls) */
        {"{\"prompt\":\"p\",\"agent\":\" \"}", "argument 'agent' must not be empty"},
        {"{\"description\":\"d\",\"agent\":\"a\"}", "missing required argument 'prompt'"},
        {"{\"description\":\"d\",\"prompt\":\"   \",\"agent\":\"a\"}", "argument 'prompt' must not be empty"},
        {"{\"description\":\"\",\"prompt\":\"p\",\"agent\":\"a\"}", "argument 'description' must not be empty"},
        {"{\"description\":\"d\",\"prompt\":5,\"agent\":\"a\"}", "argument 'prompt' must be a string"},
        {"{\"description\":\"d\",\"prompt\":\"p\",\"agent\":\"a\",\"colour\":\"red\"}", "unknown argument 'colour'"},
        {"[1,2]", "the arguments must be a JSON object"},
        {"{\"description\":\"d\",\"prompt\":\"\xff\xfe\",\"agent\":\"a\"}", "is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = t_tool(h, f.parent, "background_task", cases[i].args);
        is_int(t_rc, -EINVAL, "bad input %zu refused", i);
        like(out, cases[i].expect, "bad input %zu explained", i);
        free(out);
    }
    is_int(sim_calls(h, "session_create", NULL), 0, "no session created for bad input");
    t_list_empty(h, f.parent, "no task created for bad input");
    t_close(&f);
}

static void host_failures_at_launch(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_fail(h, "session_create", 1, 1, -EIO);
    char *out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'a'}"));
    is_int(t_rc, -EIO, "session create failure is an error");
    like(out, "Failed to create a session for the background task: simulated failure of session_create",
         "the host's reason is given");
    free(out);
    t_list_empty(h, f.parent, "no task after a failed create");

    sim_fail(h, "session_prompt", 1, 1, -EIO);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d2','prompt':'p','agent':'a'}"));
    is_int(t_rc, -EIO, "prompt failure is an error");
    like(out, "could not start", "the model is told the task could not start");
    char *id = t_find_id(out, "bg_");
    ok(id != NULL, "the failed task's id is given");
    free(out);
    is_int(t_wait_status(h, f.parent, id, "error", 2000), 0, "the task ended in error");
    const char *args = J("{'task_id':'%s'}", id);
    out = t_tool(h, f.parent, "background_output", args);
    like(out, "Failed to send the prompt to the sub-agent: simulated failure of session_prompt",
         "its error names the reason");
    free(out);
    is_int(t_wait_messages_with(h, f.parent, "Background task failed", 1, 5000), 0, "the parent is notified of it");
    free(id);
    t_close(&f);
}

int main(void)
{
    launch_creates_child_and_sends_prompt();
    bad_arguments_create_nothing();
    host_failures_at_launch();
    return done_testing();
}

/* A reject ends the turn as OpenCode's does: a model turn (a scripted
 * session of the simulated host) calls ocbg's tools, whose questions the
 * user answers. As in OpenCode 1.18.33's processor, the plain "reject" ends
 * the turn after the failed call: the step that follows (the model's next
 * one) never comes. A reject with the user's words, a deny rule and an
 * approval let the model take another step. Nothing runs, no task, no
 * session after a refusal. And a sub-agent's own question ("ask" step)
 * follows the same rule. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"

/* The assistant message that answered the user's prompt `text` (the first
 * one after it), parsed; NULL when none. Not simply the last message: a
 * task launched in the turn may end at once, and its notification starts a
 * turn of its own. */
static cJSON *answer_to(sim_host *h, const char *session, const char *text)
{
    cJSON *msgs = t_parse(sim_session_messages_json(h, session)), *found = NULL;
    const cJSON *m;
    int asked = 0;
    cJSON_ArrayForEach (m, msgs) {
        const char *role = jstr(m, "info.role") ? jstr(m, "info.role") : "";
        const cJSON *said = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "parts"), 0);
        if (strcmp(role, "user") == 0)
            asked = jstr(said, "text") && strcmp(jstr(said, "text"), text) == 0;
        else if (asked && strcmp(role, "assistant") == 0) {
            found = cJSON_Duplicate(m, 1);
            break;
        }
    }
    cJSON_Delete(msgs);
    return found;
}

/* The part of `type` in message m (for "tool": of that tool), or NULL. */
static const cJSON *part_of(const cJSON *m, const char *type, const char *tool)
{
    const cJSON *p;
    cJSON_ArrayForEach (p, cJSON_GetObjectItemCaseSensitive(m, "parts"))
        if (strcmp(jstr(p, "type") ? jstr(p, "type") : "", type) == 0 &&
            (!tool || strcmp(jstr(p, "tool") ? jstr(p, "tool") : "", tool) == 0))
            return p;
    return NULL;
}

/* The user says `text` (matched by a once script: tool(input), then the
 * reply "after <text>"); waits for the turn's end (the session is busy as
 * soon as the prompt is taken). Returns its answer. */
static cJSON *turn(sim_host *h, const char *session, const char *text, const char *tool, const char *input)
{
    char script[1024], body[256];
    snprintf(script, sizeof script, "{\"steps\":[{\"tool\":\"%s\",\"input\":%s},{\"reply\":\"after %s\"}]}", tool,
             input, text);
    is_int(sim_script(h, text, script, 1), 0, "%s: the model's steps scripted", text);
    snprintf(body, sizeof body, "{\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]}", text);
    is_int(sim_session_prompt(h, session, body), 0, "%s: the user's prompt", text);
    is_int(sim_wait_idle(h, session, tap_timeout_ms(10000)), 0, "%s: the turn ended", text);
    return answer_to(h, session, text);
}

/* The turn's tool part failed with a text holding `want`, and the model's
 * next step came (went_on) or not. */
static void check(cJSON *m, const char *what, const char *tool, const char *want, int went_on)
{
    const cJSON *p = part_of(m, "tool", tool);
    is_str(jstr(p, "state.status"), "error", "%s: the %s part failed", what, tool);
    like(jstr(p, "state.error"), want, "%s: with the refusal", what);
    const cJSON *text = part_of(m, "text", NULL);
    if (went_on)
        ok(text && strncmp(jstr(text, "text"), "after ", 6) == 0, "%s: the model took its next step", what);
    else
        ok(!text, "%s: the turn ended with the call: no next step", what);
    cJSON_Delete(m);
}

static void bash_and_launches(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':{'*':'allow','touch *':'ask','rm *':'deny'},"
                              "'task':{'*':'allow','explore':'ask'}}"));
    const char *file = t_tmp_path("rejected");
    char touch[600], rm[600];
    snprintf(touch, sizeof touch, "{\"command\":\"touch %s\",\"description\":\"d\"}", file);
    snprintf(rm, sizeof rm, "{\"command\":\"rm -f %s\",\"description\":\"d\"}", file);

    sim_permission_auto(h, "reject", NULL);
    check(turn(h, f.parent, "bash-reject", "Bash", touch), "Bash, rejected", "Bash",
          "(permission \"bash\"): The user rejected permission", 0);
    ok(!t_exists(file), "the rejected command never ran");
    const char *launch = J("{'description':'d','prompt':'p','agent':'explore'}");
    check(turn(h, f.parent, "launch-reject", "background_task", launch), "background_task, rejected", "background_task",
          "Permission denied: starting a sub-agent of type \"explore\"", 0);
    check(turn(h, f.parent, "task-reject", "Task", J("{'description':'d','prompt':'p','subagent_type':'explore'}")),
          "Task, rejected", "Task", "No task was started.", 0);
    is_int(sim_calls(h, "session_create", NULL) + sim_calls(h, "session_prompt", NULL), 0,
           "no session created or prompted");

    sim_permission_auto(h, "reject", "use the build script");
    check(turn(h, f.parent, "bash-words", "Bash", touch), "Bash, rejected with words", "Bash",
          ": use the build script.", 1);
    check(turn(h, f.parent, "bash-deny", "Bash", rm), "Bash, denied by a rule", "Bash",
          "specified a rule which prevents", 1);
    check(turn(h, f.parent, "launch-words", "background_task", launch), "background_task, rejected with words",
          "background_task", "No task was started.", 1);
    ok(!t_exists(file), "nothing ran");
    t_list_like(h, f.parent, "No background tasks found", "no task registered");

    sim_permission_auto(h, "once", NULL);
    cJSON *m = turn(h, f.parent, "launch-once", "background_task", launch);
    is_str(jstr(part_of(m, "tool", "background_task"), "state.status"), "completed", "allowed once: launched");
    ok(part_of(m, "text", NULL) != NULL, "and the model took its next step");
    cJSON_Delete(m);
    t_close(&f);
}

/* A sub-agent's own question (its tool asks: the "ask" step), answered
 * each way: the turn's reply comes unless the plain reject ended it. */
static void sub_agent_questions(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':{'*':'ask','rm *':'deny'}}"));
    static const struct {
        const char *reply, *message, *command;
        int goes_on;
    } cases[] = {
        {"reject", NULL, "ls", 0},
        {"reject", "not that", "ls", 1},
        {"once", NULL, "rm -rf x", 1},
        {"once", NULL, "ls", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32], script[256], body[128];
        snprintf(name, sizeof name, "ask-%zu", i);
        snprintf(script, sizeof script,
                 "{\"steps\":[{\"ask\":{\"permission\":\"bash\",\"patterns\":[\"%s\"]}},{\"reply\":\"after %s\"}]}",
                 cases[i].command, name);
        sim_script(h, name, script, 1);
        sim_permission_auto(h, cases[i].reply, cases[i].message);
        snprintf(body, sizeof body, "{\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]}", name);
        is_int(sim_session_prompt(h, f.parent, body), 0, "%s: the user's prompt", name);
        is_int(sim_wait_idle(h, f.parent, tap_timeout_ms(5000)), 0, "%s: the turn ended", name);
        cJSON *m = answer_to(h, f.parent, name);
        const char *how = strcmp(cases[i].command, "ls")   ? "denied by a rule"
                          : cases[i].message               ? "rejected with words"
                          : strcmp(cases[i].reply, "once") ? "rejected"
                                                           : "allowed";
        ok((part_of(m, "text", NULL) != NULL) == cases[i].goes_on, "a sub-agent's question %s: %s", how,
           cases[i].goes_on ? "the model takes its next step" : "the turn ends");
        cJSON_Delete(m);
    }
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("reject_turn");
    bash_and_launches();
    sub_agent_questions();
    t_kill_leftovers();
    t_tmpdir_remove((const char *const[]){"rejected", NULL});
    return done_testing();
}

/* Permissions: every tool that runs a command or starts a
 * sub-agent asks the host first (ABI 1.1 ask_permission), under each answer a
 * host can give: allowed, denied by a rule, asked and answered once / always /
 * reject, asked and abandoned with Esc, and a host that cannot ask. What ran,
 * what the model was told, what the registry holds. And a sub-agent that waits
 * for the user's permission is visible to the parent. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shelltest.h"

static int shells; /* can the plugin run commands here (pidfd_open)? */

/* The nth recorded question's field as text (a string, or an array/object as JSON). */
static char *asked(sim_host *h, int n, const char *field)
{
    char *json = sim_permission_json(h, n);
    cJSON *r = cJSON_Parse(json ? json : "");
    free(json);
    cJSON *f = cJSON_GetObjectItemCaseSensitive(r, field);
    char *s = cJSON_IsString(f) ? strdup(f->valuestring) : f ? cJSON_PrintUnformatted(f) : NULL;
    cJSON_Delete(r);
    return s;
}

static void is_asked(sim_host *h, int n, const char *field, const char *want, const char *what)
{
    char *got = asked(h, n, field);
    is_str(got, want, "%s", what);
    free(got);
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void no_tasks(sim_host *h, const char *session, const char *what)
{
    char *out = t_tool(h, session, "background_list", "{}");
    like(out, "No background tasks found", "%s: no task registered", what);
    free(out);
}

/* ---- Bash ---------------------------------------------------------------- */

static void bash_denied_by_rule(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    is_int(sim_permission_rules(h, J("{'bash':{'*':'allow','touch *':'deny'}}")), 0, "rules set");
    const char *file = t_tmp_path("denied_fg");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "echo hi && touch %s", file);
    for (int background = 0; background < 2; background++) {
        char *out = t_bash(h, f.parent, cmd, "a test command", background, 0);
        is_int(t_rc, -EACCES, "%s Bash: refused", background ? "background" : "foreground");
        like(out, "Permission denied: running `echo hi && touch ", "the answer names the command");
        like(out, "(permission \"bash\"): The user has specified a rule which prevents you", "and the host's reason");
        like(out, "The command was not run.", "and says nothing ran");
        ok(!exists(file), "the command's side effect is absent");
        free(out);
    }
    is_int(sim_permission_count(h), 4, "two questions per call: the directory outside the project, then bash");
    char want[600], dir[300];
    snprintf(dir, sizeof dir, "%s", file);
    *strrchr(dir, '/') = '\0';
    snprintf(want, sizeof want, "[\"%s/*\"]", dir);
    is_asked(h, 0, "permission", "external_directory", "first: the file's directory is outside the project");
    is_asked(h, 0, "patterns", want, "named as <dir>/*");
    is_asked(h, 0, "outcome", "allow", "allowed by the rules");
    snprintf(want, sizeof want, "[\"echo hi\",\"touch %s\"]", file);
    is_asked(h, 1, "patterns", want, "each simple command is a pattern");
    is_asked(h, 1, "always", J("['echo *','touch *']"), "with its prefix as the 'always' pattern");
    is_asked(h, 1, "permission", "bash", "permission bash");
    is_asked(h, 1, "outcome", "deny", "the rule denied it");
    char *meta = asked(h, 1, "metadata");
    like(meta, J("'description':'a test command'"), "the description goes with the question");
    free(meta);
    no_tasks(h, f.parent, "denied Bash");
    t_close(&f);
}

static void bash_asked_once_always_reject(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *file = t_tmp_path("asked_once");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "touch %s", file);

    sim_permission_auto(h, "reject", "not now, use the build script");
    char *out = t_bash(h, f.parent, cmd, "a test command", 0, 0);
    is_int(t_rc, -EACCES, "rejected: refused");
    like(out, "Permission denied: running `touch ", "the answer names the command");
    like(out, ": not now, use the build script. The command was not run.", "with the user's words");
    ok(!exists(file), "rejected: nothing ran");
    is_asked(h, -1, "outcome", "reject", "recorded as rejected");
    free(out);

    sim_permission_auto(h, "once", NULL);
    out = t_bash(h, f.parent, cmd, "a test command", 0, 0);
    is_int(t_rc, 0, "answered once: runs");
    like(out, "(exit code 0)", "with its exit code");
    ok(exists(file), "the command ran");
    is_asked(h, -1, "outcome", "once", "recorded as once");
    free(out);
    out = t_bash(h, f.parent, cmd, "a test command", 1, 0);
    is_int(t_rc, 0, "once approves one call only: asked again, and runs in the background");
    is_int(sim_permission_count(h), 6, "six questions so far (each: its directory, then bash)");
    char *id = t_find_id(out, "bg_");
    free(out);
    ok(id && t_wait_status(h, f.parent, id, "completed", 5000) == 0, "the background command completes");
    free(id);

    sim_permission_auto(h, "always", NULL);
    out = t_bash(h, f.parent, "git status --short >/dev/null 2>&1; true", "a test command", 0, 0);
    is_int(t_rc, 0, "answered always: runs");
    is_asked(h, -1, "always", J("['git status *','true *']"), "'always' approves the subcommand's prefix");
    free(out);
    size_t before = sim_permission_count(h);
    sim_permission_auto(h, "reject", NULL);
    out = t_bash(h, f.parent, "git status; true", "a test command", 0, 0);
    is_int(t_rc, 0, "a later command under the approved prefixes runs without a question");
    is_asked(h, -1, "outcome", "allow", "the host answered from the approval");
    is_int(sim_permission_count(h), before + 1, "and no user question was opened");
    free(out);
    unlink(file);
    t_close(&f);
}

static void bash_esc_while_asking(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *file = t_tmp_path("esc_asking");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "touch %s", file);
    char *args = t_bash_args(cmd, "a test command", 0, 0);
    sim_call *c = sim_tool_start(h, f.parent, "Bash", args);
    free(args);
    is_int(sim_wait(h, t_question_open, f.parent, tap_timeout_ms(5000)), 0, "the question is open, the call waits");
    ok(!sim_tool_done(c), "the call has not returned");
    char *out = t_esc(c, 5000, "Esc ends the call");
    is_int(t_rc, -ECANCELED, "as cancelled");
    like(out, "Cancelled while asking for permission: running `touch ", "the answer says so");
    like(out, "The command was not run.", "and that nothing ran");
    ok(!exists(file), "nothing ran");
    is_asked(h, -1, "outcome", "cancelled", "the question was withdrawn");
    free(out);
    no_tasks(h, f.parent, "Esc while asking");
    t_close(&f);
}

static void bash_question_fails_or_host_cannot_ask(void)
{
    sim_host *h = t_host(NULL);
    char *s = sim_session_new(h, NULL, "main");
    const char *file = t_tmp_path("ask_failed");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "touch %s", file);
    sim_fail(h, "ask_permission", 1, 1, -EIO);
    char *out = t_bash(h, s, cmd, "a test command", 1, 0);
    is_int(t_rc, -EIO, "the question failed: refused");
    like(out, "Could not ask for permission (simulated failure of ask_permission): running `touch ",
         "the answer says why");
    ok(!exists(file), "nothing ran on a failed question");
    free(out);
    no_tasks(h, s, "failed question");
    free(s);
    sim_destroy(h);

    /* A host without a permission system (ABI 1.0): today's behaviour. */
    h = sim_create();
    sim_without(h, "ask_permission");
    sim_permission_rules(h, J("{'bash':'deny'}"));
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    is_int(sim_load_plugins(h, dir, NULL), 1, "ocbg loads into a host that cannot ask");
    s = sim_session_new(h, NULL, "main");
    out = t_bash(h, s, cmd, "a test command", 0, 0);
    is_int(t_rc, 0, "without ask_permission the command runs");
    ok(exists(file), "it ran");
    is_int(sim_calls(h, "ask_permission", NULL), 0, "and nothing was asked");
    free(out);
    unlink(file);
    free(s);
    sim_destroy(h);
}

static void bash_outside_the_project(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'external_directory':{'*':'deny'}}"));
    const char *file = t_tmp_path("outside");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "touch %s", file);
    char *out = t_bash(h, f.parent, cmd, "a test command", 0, 0);
    is_int(t_rc, -EACCES, "a path outside the project, denied: refused");
    like(out, "(permission \"external_directory\")", "the answer names the permission");
    ok(!exists(file), "nothing ran");
    free(out);
    size_t n = sim_permission_count(h);
    out = t_bash(h, f.parent, "cd /usr && ls >/dev/null", "a test command", 0, 0);
    is_int(t_rc, -EACCES, "cd out of the project: refused");
    is_asked(h, -1, "patterns", J("['/usr/*']"), "the directory is asked about");
    is_int(sim_permission_count(h), n + 1, "and bash is not asked after a refusal");
    free(out);
    out = t_bash(h, f.parent, "touch relative-inside.tmp && rm -f relative-inside.tmp", "a test command", 0, 0);
    is_int(t_rc, 0, "paths inside the project ask nothing about directories");
    is_asked(h, -1, "permission", "bash", "only bash");
    free(out);
    t_close(&f);
}

/* ---- sub-agents ---------------------------------------------------------- */

static void task_launches_denied(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'task':{'*':'allow','secret':'deny'}}"));
    static const struct {
        const char *tool, *args;
    } cases[] = {
        {"background_task", "{\"description\":\"d\",\"prompt\":\"p\",\"agent\":\"secret\"}"},
        {"background_task", "{\"description\":\"d\",\"prompt\":\"p\",\"agent\":\"secret\",\"fork\":true}"},
        {"Task", "{\"description\":\"d\",\"prompt\":\"p\",\"subagent_type\":\"secret\"}"},
        {"Task", "{\"description\":\"d\",\"prompt\":\"p\",\"subagent_type\":\"secret\",\"run_in_background\":true}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = t_tool(h, f.parent, cases[i].tool, cases[i].args);
        is_int(t_rc, -EACCES, "%s %s: refused", cases[i].tool, cases[i].args);
        like(out, "Permission denied: starting a sub-agent of type \"secret\" (permission \"task\")",
             "the answer names the agent");
        like(out, "No task was started.", "and says nothing started");
        free(out);
        is_asked(h, -1, "patterns", J("['secret']"), "the agent is the pattern");
        is_asked(h, -1, "always", J("['*']"), "'always' approves every agent, as OpenCode's task tool");
    }
    is_int(sim_calls(h, "session_create", NULL) + sim_calls(h, "session_fork", NULL) +
               sim_calls(h, "session_prompt", NULL),
           0, "no session created, forked or prompted");
    no_tasks(h, f.parent, "denied launches");

    char *out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'explore'}"));
    is_int(t_rc, 0, "another agent is allowed by the rules");
    is_asked(h, -1, "outcome", "allow", "and recorded as allowed");
    free(out);
    t_close(&f);
}

static void resume_denied_keeps_the_task(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *id = t_launch(h, f.parent, "Find auth", "find auth", "explore");
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes");
    /* Prompts to the task's own session (the parent's notification may still
     * be on its way: not counted). */
    char *child = t_task_session(h, 0);
    size_t prompts = sim_calls(h, "session_prompt", child);
    sim_permission_rules(h, J("{'task':{'explore':'ask'}}"));
    sim_permission_auto(h, "reject", NULL);
    const char *args = J("{'task_id':'%s','message':'and the tests?'}", id);
    char *out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, -EACCES, "the resume is refused");
    like(out, "Permission denied: starting a sub-agent of type \"explore\"", "the answer says why");
    like(out, ": The user rejected permission", "with the host's words");
    free(out);
    args = J("{'description':'d','prompt':'more','resume':'%s'}", id);
    out = t_tool(h, f.parent, "background_task", args);
    is_int(t_rc, -EACCES, "background_task(resume=) is refused too");
    free(out);
    is_int(sim_calls(h, "session_prompt", child), prompts, "no follow-up was sent");
    free(child);
    out = t_output(h, f.parent, id);
    like(out, ": completed", "the task is still completed");
    unlike(out, "(resumed)", "and not marked resumed");
    free(out);
    sim_permission_auto(h, "once", NULL);
    args = J("{'task_id':'%s','message':'and the tests?','block':true}", id);
    out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, 0, "allowed once: the resume runs");
    free(out);
    free(id);
    t_close(&f);
}

/* ---- a sub-agent waiting for the user ------------------------------------ */

static void child_waits_for_permission(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *id = t_task(&f, "Clean up",
                            J("{'steps':[{'tool':'read','output':'x'},"
                              "{'ask':{'permission':'bash','patterns':['rm -rf build'],'always':['rm *']}},"
                              "{'tool':'bash','output':'removed'},{'reply':'cleaned'}]}"));
    char *child = t_task_session(h, 0);
    is_int(t_wait_output_with(h, f.parent, id, "Waiting for permission: bash: rm -rf build", 5000), 0,
           "background_output shows what the sub-agent waits for");
    is_int(t_wait_messages_with(h, f.parent, "is waiting for permission: bash: rm -rf build", 1, 5000), 0,
           "the parent is told");
    char *note = t_message_with(h, f.parent, "is waiting for permission");
    like(note, "[ocbg] Background task ", "the notice names the task");
    like(note, "\"Clean up\" (agent: explore) is waiting for permission: bash: rm -rf build", "and the question");
    free(note);
    char *body = sim_call_body(h, "session_prompt", f.parent, -1);
    unlike(body, J("'noReply':true"), "the notice wakes the parent");
    free(body);

    /* The host repeats the event: still one notice. */
    char *req = sim_permission_open(h, child);
    ok(req != NULL, "the question is open in the child's session");
    char ev[512];
    snprintf(ev, sizeof ev,
             "{\"type\":\"permission.asked\",\"properties\":{\"id\":\"%s\",\"sessionID\":\"%s\","
             "\"permission\":\"bash\",\"patterns\":[\"rm -rf build\"]}}",
             req, child);
    sim_emit(h, ev);
    sim_events_flush(h, tap_timeout_ms(5000));

    char *out = t_tool(h, f.parent, "background_list", "{}");
    like(out, "| running, waiting for permission: bash: rm -rf build |", "background_list shows it");
    free(out);
    const char *args = J("{'task_id':'%s','block':false}", id);
    out = t_tool(h, f.parent, "TaskOutput", args);
    like(out, "<waiting_for_permission>bash: rm -rf build</waiting_for_permission>", "TaskOutput shows it");
    free(out);
    out = t_command(h, f.parent, "tasks");
    like(out, "[waiting for permission: bash: rm -rf build]", "/tasks shows it");
    free(out);

    is_int(sim_permission_reply(h, req, "once", NULL), 0, "the user answers once");
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task goes on and completes");
    out = t_output(h, f.parent, id);
    unlike(out, "Waiting for permission", "nothing waits any more");
    like(out, "cleaned", "the result is the sub-agent's answer");
    free(out);
    is_int(t_wait_messages_with(h, f.parent, "Background task completed", 1, 5000), 0, "the completion is notified");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(t_count_messages_with(h, f.parent, "is waiting for permission"), 1, "exactly one permission notice");
    free(req);
    free(child);
    t_close(&f);
}

static void child_question_answered_before_its_notice(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    sim_permission_auto(h, "once", NULL); /* answered as soon as it is asked */
    const char *id = t_task(&f, "Quick",
                            J("{'steps':[{'ask':{'permission':'bash','patterns':['ls']}},"
                              "{'reply':'listed'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    ok(t_count_messages_with(h, f.parent, "is waiting for permission") <= 1, "at most one permission notice");
    char *out = t_output(h, f.parent, id);
    unlike(out, "Waiting for permission", "the finished task shows no question");
    free(out);
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("permission");
    shells = t_shells_work(T_PROBE_DIAG);
    if (shells) {
        bash_denied_by_rule();
        bash_asked_once_always_reject();
        bash_esc_while_asking();
        bash_outside_the_project();
        bash_question_fails_or_host_cannot_ask();
    } else {
        skip(1, "the plugin cannot run commands here (no pidfd_open): the Bash cases need it");
    }
    task_launches_denied();
    resume_denied_keeps_the_task();
    child_waits_for_permission();
    child_question_answered_before_its_notice();
    t_kill_leftovers();
    t_tmpdir_remove((const char *const[]){"denied_fg", "asked_once", "esc_asking", "ask_failed", "outside", NULL});
    return done_testing();
}

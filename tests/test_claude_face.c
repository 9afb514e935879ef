/* The Claude-style face on agent tasks: Task in the
 * background (a task id at once) and in the foreground (the reply; Esc stops
 * the sub-agent; no task left), TaskOutput and TaskStop on agent tasks, also
 * those launched by background_task (one registry), the not-found and
 * already-finished texts, /tasks with no task, and the face options (BashOutput
 * and KillBash never registered). /tasks with tasks: test_tasks_command.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"

static int shells; /* can the plugin run commands here? (not under valgrind 3.19) */

/* ---- Task -------------------------------------------------------------- */

static void task_in_background(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char script[160];
    snprintf(script, sizeof script,
             "{\"steps\":[{\"tool\":\"grep\",\"output\":\"x\"},{\"wait_ms\":%d},{\"reply\":\"the bug is in foo.c\"}]}",
             tap_timeout_ms(300));
    char *out = t_claude_task(h, f.parent, "Find the bug", script, 1);
    is_int(t_rc, 0, "Task run_in_background succeeds");
    char *id = t_find_id(out, "bg_");
    ok(id != NULL, "and returns a task id");
    char want[512];
    snprintf(want, sizeof want,
             "Async agent launched in the background.\ntask_id: %s\nDescription: Find the bug\nAgent: explore\n\n"
             "You will be notified when it finishes. To check on it: TaskOutput(task_id=\"%s\", block=false).",
             id, id);
    is_str(out, want, "the launch answer");
    free(out);
    out = t_task_output(h, f.parent, id, 1, 0);
    is_int(t_rc, 0, "TaskOutput (blocking) succeeds");
    snprintf(want, sizeof want,
             "<retrieval_status>success</retrieval_status>\n<task_id>%s</task_id>\n<task_type>agent</task_type>\n"
             "<status>completed</status>\n<description>Find the bug</description>\n"
             "<output>\nthe bug is in foo.c\n</output>\n",
             id);
    is_str(out, want, "it waits and returns the reply");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, id), 0, "the blocking retrieval replaced the notification");
    free(id);

    /* Non-blocking while it runs: not ready, with progress; the notification comes. */
    out = t_claude_task(h, f.parent, "Slow one", J("{'steps':[{'tool':'read','output':'x'},{'hang':true}]}"), 1);
    id = t_find_id(out, "bg_");
    free(out);
    is_int(t_wait_output_with(h, f.parent, id, "Progress: 1 tool call", 5000), 0, "the sub-agent made a tool call");
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<retrieval_status>not_ready</retrieval_status>\n", "block=false: not ready");
    like(out,
         "<status>running</status>\n<description>Slow one</description>\n<progress>1 tool calls so far</progress>\n",
         "running, with its progress");
    free(out);
    free(id);

    out = t_claude_task(h, f.parent, "Quick one", J("{'steps':[{'reply':'quick reply'}]}"), 1);
    id = t_find_id(out, "bg_");
    free(out);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "an unretrieved Task is notified");
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<output>\nquick reply\n</output>\n", "and non-blocking TaskOutput returns its reply");
    free(out);
    free(id);
    t_close(&f);
}

static void task_in_foreground(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *out = t_claude_task(h, f.parent, "Answer", J("{'steps':[{'wait_ms':50},{'reply':'forty-two'}]}"), 0);
    is_int(t_rc, 0, "foreground Task succeeds");
    is_str(out, "forty-two", "it returns the sub-agent's reply");
    free(out);
    out = t_claude_task(h, f.parent, "Broken", J("{'steps':[{'error':'model overloaded'}]}"), 0);
    is_int(t_rc, -EIO, "a failing sub-agent: -EIO");
    like(out, "The sub-agent failed: ", "and says so");
    like(out, "model overloaded", "with the error");
    free(out);

    static const char *const script = "{\"steps\":[{\"hang\":true}]}";
    if (sim_script(h, "foreground hang", script, 1) != 0)
        bail_out("script");
    char *args = t_task_args("Hangs", "foreground hang", 0);
    sim_call *c = sim_tool_start(h, f.parent, "Task", args);
    free(args);
    is_int(sim_wait_calls(h, "session_prompt", NULL, 3, tap_timeout_ms(5000)), 0, "the sub-agent is prompted");
    char *child = t_task_session(h, 2);
    t_waits(c, 30, "the call waits for the sub-agent");
    out = t_esc(c, 3000, "Esc ends it");
    is_int(t_rc, -ECANCELED, "with -ECANCELED");
    is_str(out, "Cancelled: the sub-agent was stopped.", "saying the sub-agent was stopped");
    free(out);
    ok(child && sim_calls(h, "session_abort", child) >= 1, "its session was aborted");
    free(child);

    out = t_command(h, f.parent, "tasks");
    is_str(out, "No background tasks in this session.", "foreground Tasks leave no task behind");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, "Background task failed"), 0, "and send no notification");
    is_int(t_count_messages_with(h, f.parent, "forty-two"), 0, "not even of their reply");
    t_close(&f);
}

/* ---- one registry ------------------------------------------------------ */

static void task_output_and_stop_on_agents(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    char *id = t_launch_script(h, f.parent, "Via background_task", J("{'steps':[{'reply':'shared registry'}]}"));
    char *out = t_task_output(h, f.parent, id, 1, 0);
    like(out,
         "<task_type>agent</task_type>\n<status>completed</status>\n<description>Via background_task</description>\n"
         "<output>\nshared registry\n</output>\n",
         "TaskOutput reads a task launched by background_task");
    free(out);
    free(id);

    id = t_launch_script(h, f.parent, "Fails", J("{'steps':[{'error':'model overloaded'}]}"));
    out = t_task_output(h, f.parent, id, 1, 0);
    like(out, "<status>failed</status>\n", "error is shown as failed");
    like(out, "<error>", "with an error");
    like(out, "model overloaded", "which says why");
    free(out);
    free(id);

    id = t_launch_script(h, f.parent, "Forever", J("{'steps':[{'hang':true}]}"));
    out = t_tool(h, other, "TaskStop", t_id_args(id));
    is_int(t_rc, -ENOENT, "another session cannot stop it");
    free(out);
    out = t_task_output(h, other, id, 1, 0);
    is_int(t_rc, -ENOENT, "nor read it");
    free(out);
    out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    is_int(t_rc, 0, "TaskStop on a running agent succeeds");
    char want[256];
    snprintf(want, sizeof want, "Stopped task %s (agent): its session was aborted.", id);
    is_str(out, want, "it confirms");
    free(out);
    char *child = t_task_session(h, 2);
    ok(child && sim_calls(h, "session_abort", child) == 1, "the session was aborted once");
    free(child);
    out = t_task_output(h, f.parent, id, 1, 0);
    like(out, "<retrieval_status>success</retrieval_status>\n", "a stopped task is retrieved at once");
    like(out, "<status>stopped</status>\n", "status stopped");
    free(out);
    is_int(t_wait_status(h, f.parent, id, "cancelled", 1000), 0, "background_output says cancelled");
    out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    snprintf(want, sizeof want, "Task %s is not running: it has already finished (status: stopped).", id);
    is_str(out, want, "stopping it again: already finished");
    free(out);
    free(id);

    out = t_task_output(h, f.parent, "bg_00000000", 1, 0);
    is_int(t_rc, -ENOENT, "TaskOutput on an unknown id: -ENOENT");
    is_str(out, "Task not found: bg_00000000. Use /tasks or background_list to see this session's tasks.", "not found");
    free(out);
    out = t_tool(h, f.parent, "TaskStop", t_id_args("bg_00000000"));
    is_int(t_rc, -ENOENT, "TaskStop on an unknown id: -ENOENT");
    is_str(out, "Task not found: bg_00000000. Use /tasks or background_list to see this session's tasks.", "not found");
    free(out);
    free(other);
    t_close(&f);
}

/* ---- faces ------------------------------------------------------------- */

static int has_tool(sim_host *h, const char *name)
{
    const ocp_plugin *p = sim_plugin(h, 0);
    for (size_t i = 0; p && i < p->tool_count; i++)
        if (strcmp(p->tools[i].name, name) == 0)
            return 1;
    return 0;
}

/* How many of the n tools in names h offers. */
static int tools_of(sim_host *h, const char *const *names, size_t n)
{
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found += has_tool(h, names[i]);
    return found;
}

static void faces(void)
{
    static const char *const claude[] = {"Task", "Bash", "TaskOutput", "TaskStop", "Monitor"};
    static const char *const opencode[] = {"background_task",  "background_output", "background_cancel",
                                           "background_list",  "background_clear",  "background_resume",
                                           "background_block", "background_send",   "background_monitor"};
    sim_host *h = t_host(NULL);
    is_int(tools_of(h, claude, 5) + tools_of(h, opencode, 9), 14, "both faces by default");
    is_int(sim_plugin(h, 0)->tool_count, 14, "and nothing else");
    ok(!has_tool(h, "BashOutput") && !has_tool(h, "KillBash"), "no BashOutput, no KillBash");
    sim_destroy(h);

    h = t_host(J("{'face_claude':false}"));
    is_int(tools_of(h, claude, 5), 0, "face_claude false: no Claude tool");
    is_int(sim_plugin(h, 0)->tool_count, 9, "the OpenCode face stays");
    char *s = sim_session_new(h, NULL, "main");
    char *out = t_tool(h, s, "Bash", J("{'command':'true'}"));
    ok(t_rc != 0, "calling Bash fails (rc %d: %s)", t_rc, out);
    free(out);
    free(s);
    sim_destroy(h);

    h = t_host(J("{'face_opencode':false}"));
    is_int(tools_of(h, opencode, 9), 0, "face_opencode false: no background_* tool");
    is_int(sim_plugin(h, 0)->tool_count, 5, "the Claude face stays");
    s = sim_session_new(h, NULL, "main");
    if (shells) {
        out = t_tool(h, s, "Bash", J("{'command':'echo alone'}"));
        is_str(out, "alone\n(exit code 0)", "and works alone");
        free(out);
    } else {
        skip(1, "shell tasks cannot run here");
    }
    out = t_command(h, s, "tasks");
    is_str(out, "No background tasks in this session.", "/tasks too");
    free(out);
    free(s);
    sim_destroy(h);

    h = sim_create();
    is_int(sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), J("{'face_opencode':false,'face_claude':false}")), 0,
           "both faces off: ocbg refuses to load");
    like(sim_load_error(h), "'face_opencode' and 'face_claude' are both false", "and says why");
    sim_destroy(h);
}

int main(void)
{
    shells = t_shells_work(T_PROBE_DIAG);
    task_in_background();
    task_in_foreground();
    task_output_and_stop_on_agents();
    faces();
    return done_testing();
}

/* Long foreground work moves to the background: a
 * foreground Task or Bash still running at auto_background_ms returns the
 * task id and the face's "in the background" text, the work goes on, and the
 * parent is notified once when it ends. A call that ends before the limit
 * answers as before (no task, no notification); Esc still stops the work;
 * 0 turns it off. The sub-agents and commands are gated (a permission
 * question, a fifo) so the test decides when each ends, with no timing but
 * the option itself. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shelltest.h"

/* Long enough for a quick call to end before it, even on a loaded machine. */
static int auto_ms;
static char auto_opts[64];

/* A sub-agent that waits for the test: it asks a bash question nobody
 * answers automatically, then replies. */
static void gate_rules(sim_host *h)
{
    sim_permission_rules(h, J("{'bash':'ask'}"));
    sim_permission_auto(h, NULL, NULL);
}

static void task_moves(void)
{
    t_fixture f;
    sim_host *h = t_host(auto_opts);
    gate_rules(h);
    t_open_with(&f, h);
    sim_script(h, "slow work", J("{'steps':[{'ask':{'permission':'bash','patterns':['make']}},{'reply':'all built'}]}"),
               1);
    char *args = t_task_args("Build it", "slow work", 0);
    sim_call *c = sim_tool_start(h, f.parent, "Task", args);
    free(args);
    /* Asked while the call waits: no notice then (the caller is in the
     * foreground); the answer that moves it says so. */
    is_int(sim_wait(h, t_question_open, NULL, tap_timeout_ms(5000)), 0, "its sub-agent asks a question meanwhile");
    int rc = 0;
    char *out = NULL;
    is_int(sim_tool_wait(c, tap_timeout_ms(10000), &rc, &out), 0, "a foreground Task still running returns");
    sim_tool_free(c);
    is_int(rc, 0, "successfully");
    char *id = t_find_id(out, "bg_");
    char *child = t_prompted_session(h, "slow work", 0);
    t_is_strf(out, "with the task id, the background text and the question it waits on",
              "Still running after %d s, so it was moved to the background (auto_background_ms).\n"
              "Async agent launched in the background.\ntask_id: %s\nDescription: Build it\nAgent: explore\n\n"
              "You will be notified when it finishes. To check on it: TaskOutput(task_id=\"%s\", block=false).\n"
              "It is waiting for permission: bash: make\n"
              "The user must answer the host's permission request (asked in the task's session %s); the task goes on "
              "when they do.",
              auto_ms / 1000, id, id, child ? child : "?");
    free(child);
    free(out);
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<status>running</status>", "the task runs on in the background");
    free(out);
    char *q = sim_permission_open(h, NULL);
    sim_permission_reply(h, q, "once", NULL);
    free(q);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "the parent is notified when it ends");
    char *note = t_message_with(h, f.parent, needle);
    like(note, "all built", "with its answer");
    free(note);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, needle), 1, "exactly once");
    t_output_like(h, f.parent, id, "all built", "background_output has its result");
    free(id);

    /* Before the limit: the reply, as ever; no task, no notification. */
    out = t_claude_task(h, f.parent, "Quick", J("{'steps':[{'reply':'quick answer'}]}"), 0);
    is_int(t_rc, 0, "a Task that ends before the limit");
    is_str(out, "quick answer", "returns its reply");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, "quick answer"), 0, "and sends no notification");
    t_close(&f);
}

/* Esc before the limit stops the sub-agent, as before; with 0 a long call
 * is never moved. */
static void task_esc_and_off(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'auto_background_ms':0}"));
    sim_script(h, "hangs forever", J("{'steps':[{'hang':true}]}"), 1);
    char *args = t_task_args("Hangs", "hangs forever", 0);
    sim_call *c = sim_tool_start(h, f.parent, "Task", args);
    free(args);
    is_int(sim_wait_calls(h, "session_prompt", NULL, 1, tap_timeout_ms(5000)), 0, "the sub-agent is prompted");
    t_waits(c, 100, "with auto_background_ms 0 the call keeps waiting");
    char *out = t_esc(c, 3000, "Esc ends it");
    is_str(out, "Cancelled: the sub-agent was stopped.", "and stops the sub-agent");
    free(out);
    out = t_command(h, f.parent, "tasks");
    is_str(out, "No background tasks in this session.", "no task is left");
    free(out);
    t_close(&f);
}

static void bash_moves(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, auto_opts);
    t_tmpdir_make("autobg");
    if (mkfifo(t_tmp_path("gate"), 0600) != 0)
        bail_out("mkfifo");
    char cmd[256], args[512];
    snprintf(cmd, sizeof cmd, "read x < %s; echo built $x", t_tmp_path("gate"));
    snprintf(args, sizeof args, "{\"command\":\"%s\",\"description\":\"slow build\"}", cmd);
    sim_call *c = sim_tool_start(h, f.parent, "Bash", args);
    int rc = 0;
    char *out = NULL;
    is_int(sim_tool_wait(c, tap_timeout_ms(10000), &rc, &out), 0, "a foreground Bash still running returns");
    sim_tool_free(c);
    is_int(rc, 0, "successfully");
    char *id = t_find_id(out, "bg_");
    t_is_strf(out, "with the task id and the background text",
              "Still running after %d s, so it was moved to the background (auto_background_ms).\n"
              "Command running in the background.\ntask_id: %s\nCommand: %s\n\n"
              "You will be notified when it exits. Its output so far: TaskOutput(task_id=\"%s\", block=false); "
              "to stop it: TaskStop(task_id=\"%s\").",
              auto_ms / 1000, id, cmd, id, id);
    free(out);
    t_release(h, "gate");
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background command completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "the parent is notified when it exits");
    char *note = t_message_with(h, f.parent, needle);
    like(note, "built go", "with its output (the command kept running)");
    free(note);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, needle), 1, "exactly once");
    free(id);

    /* Its own timeout first: stopped at it, as before, never moved. */
    out = t_tool(h, f.parent, "Bash", J("{'command':'sleep 30','timeout':200}"));
    is_int(t_rc, -ETIMEDOUT, "a command whose own timeout comes first is stopped at it");
    like(out, "Command timed out after 200 ms and was stopped.", "as before");
    free(out);
    out = t_tool(h, f.parent, "Bash", J("{'command':'echo quick'}"));
    is_int(t_rc, 0, "a quick command");
    is_str(out, "quick\n(exit code 0)", "answers inline, as before");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, "sleep 30"), 0, "neither is notified");
    static const char *const files[] = {"gate", NULL};
    t_tmpdir_remove(files);
    t_close(&f);
}

int main(void)
{
    auto_ms = tap_timeout_ms(2000);
    snprintf(auto_opts, sizeof auto_opts, "{\"auto_background_ms\":%d}", auto_ms);
    int shells = t_shells_work(T_PROBE_DIAG);
    task_moves();
    task_esc_and_off();
    if (shells)
        bash_moves();
    else
        skip(1, "the plugin cannot run commands here");
    t_kill_leftovers();
    return done_testing();
}

/* Bounded work, time: a busy agent with no progress (stale_ms), a
 * launch's own timeout (background_task in seconds, Task and Bash in
 * milliseconds) and the default runtime limit (max_runtime_ms), for agents
 * and for background commands. The guards measure monotonic time, so the
 * options are small and every wait has a deadline. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"
#include "testlib.h"

#define NOTIFICATION_FAIL "[ocbg] Background task failed: "
#define FAST "\"poll_interval_ms\":50"

/* Launch a hanging sub-agent with background_task and these extra arguments. */
static char *launch_hanging(sim_host *h, const char *s, const char *extra)
{
    static int seq;
    char prompt[64], args[256];
    snprintf(prompt, sizeof prompt, "hanging task #%d#", ++seq);
    sim_script(h, prompt, J("{'steps':[{'hang':true}]}"), 1);
    snprintf(args, sizeof args, "{\"description\":\"Hangs\",\"prompt\":\"%s\",\"agent\":\"explore\"%s}", prompt, extra);
    char *out = t_tool(h, s, "background_task", args);
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("launch failed: %s", out);
    free(out);
    return id;
}

/* Task id ended in error; its report holds both pieces of the guard's text
 * (the measured time between them varies), its session was aborted, and
 * the parent was told once. */
static void ended_in_time(sim_host *h, const char *s, const char *id, const char *child, const char *head,
                          const char *tail)
{
    is_int(t_wait_status(h, s, id, "error", 10000), 0, "the task ends in error");
    char *out = t_output(h, s, id);
    char want[256];
    snprintf(want, sizeof want, "\nError: %s", head);
    like(out, want, "its error names the guard");
    like(out, tail, "and the bound");
    free(out);
    if (child)
        is_int(sim_wait_calls(h, "session_abort", child, 1, tap_timeout_ms(5000)), 0, "its session is aborted");
    char needle[96];
    snprintf(needle, sizeof needle, "failed: %s", id);
    is_int(t_wait_messages_with(h, s, needle, 1, 5000), 0, "the parent is notified");
    is_int(t_sync_notifications(h, s), 0, "notifications flushed");
    is_int(t_count_messages_with(h, s, needle), 1, "once");
}

/* ---- agents ----------------------------------------------------------------- */

static void stale_agent(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, "{" FAST ",\"stale_ms\":1000}");
    sim_permission_rules(h, J("{'bash':'ask'}"));
    /* A sub-agent waiting for the user is silent too, but not stale. */
    const char *asking = t_task(&f, "Asks", J("{'steps':[{'ask':{'permission':'bash','patterns':['x']}}]}"));
    char *asking_child = t_task_session(h, 0);
    is_int(sim_wait(h, t_question_open, asking_child, tap_timeout_ms(5000)), 0, "a question is open");
    char *id = launch_hanging(h, f.parent, "");
    char *child = t_task_session(h, 1);
    ended_in_time(h, f.parent, id, child, "Stopped: no progress for ",
                  "s while its session was busy (stale_ms is 1000).");
    t_output_like(h, f.parent, asking, ": running\n", "the one waiting for permission runs on");
    is_int(sim_calls(h, "session_abort", asking_child), 0, "and its session was not aborted");
    free(asking_child);
    free(child);
    free(id);
    t_close(&f);
}

static void agent_timeouts(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, "{" FAST "}");
    char *id = launch_hanging(h, f.parent, J(",'timeout':1"));
    char *child = t_task_session(h, 0);
    ended_in_time(h, f.parent, id, child, "Stopped by its timeout: this task ran for ", "s (its timeout is 1.0s).");

    /* The Claude face: milliseconds; a foreground Task returns the failure. */
    sim_script(h, "claude hang", J("{'steps':[{'hang':true}]}"), 1);
    char *out = t_tool(h, f.parent, "Task",
                       J("{'description':'d','prompt':'claude hang','subagent_type':'explore',"
                         "'timeout':300}"));
    is_int(t_rc, -EIO, "a foreground Task past its timeout fails");
    like(out, "The sub-agent failed: Stopped by its timeout: this task ran for ", "with the guard's text");
    like(out, "s (its timeout is 0.3s).", "and its timeout");
    free(out);
    char *fg_child = t_task_session(h, 2); /* after the sync point's */
    is_int(sim_wait_calls(h, "session_abort", fg_child, 1, tap_timeout_ms(5000)), 0, "its session is aborted");

    /* Bad values: nothing is created. */
    size_t sessions = sim_session_count(h);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'explore','timeout':0}"));
    is_int(t_rc, -EINVAL, "timeout 0 is refused");
    is_str(out, "background_task: argument 'timeout' must be a positive number of seconds", "with a clear text");
    free(out);
    out = t_tool(h, f.parent, "Task", J("{'description':'d','prompt':'p','subagent_type':'explore','timeout':-5}"));
    is_int(t_rc, -EINVAL, "a negative timeout is refused");
    is_str(out, "Task: argument 'timeout' must be a positive number of milliseconds", "with a clear text");
    free(out);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'explore','timeout':'9'}"));
    is_int(t_rc, -EINVAL, "a timeout that is not a number is refused");
    like(out, "argument 'timeout'", "naming the argument");
    free(out);
    is_int(sim_session_count(h), sessions, "no session was created");
    free(fg_child);
    free(child);
    free(id);
    t_close(&f);
}

static void agent_max_runtime(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, "{" FAST ",\"max_runtime_ms\":1000}");
    /* A launch's timeout cannot go past the limit. */
    char *id = launch_hanging(h, f.parent, J(",'timeout':60"));
    char *child = t_task_session(h, 0);
    ended_in_time(h, f.parent, id, child, "Stopped by the runtime limit: this task ran for ",
                  "s (max_runtime_ms is 1000).");
    free(child);
    free(id);
    t_close(&f);
}

/* ---- commands ---------------------------------------------------------------- */

/* Bash in the background with extra arguments; returns the task id. */
static char *bash_bg(sim_host *h, const char *s, const char *command, const char *extra)
{
    const char *args = J("{'command':'%s','run_in_background':true%s}", command, extra);
    char *out = t_tool(h, s, "Bash", args);
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("Bash failed: %s", out);
    free(out);
    return id;
}

static void command_timeouts(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, "{" FAST ",\"shell_kill_grace_ms\":300}");
    char *id = bash_bg(h, f.parent, "sleep 30", J(",'timeout':300"));
    ended_in_time(h, f.parent, id, NULL, "Stopped by its timeout: this task ran for ", "s (its timeout is 0.3s).");
    char *out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<status>failed</status>\n", "TaskOutput: failed");
    like(out, "<signal>15</signal>\n", "the command got SIGTERM");
    like(out, "<error>Stopped by its timeout: this task ran for ", "TaskOutput: the guard's text");
    unlike(out, "<usage>", "a command has no usage");
    free(out);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background command failed: %s", id);
    char *note = t_message_with(h, f.parent, needle);
    like(note, "\nError: Stopped by its timeout: ", "the notification gives the text");
    unlike(note, "Usage:", "and no usage");
    free(note);
    /* Without a timeout, a background command runs on. */
    char *quick = bash_bg(h, f.parent, "sleep 0.5; echo fine", "");
    is_int(t_wait_status(h, f.parent, quick, "completed", 5000), 0, "a command without a timeout completes");
    free(quick);
    free(id);
    t_close(&f);
}

static void command_max_runtime(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, "{" FAST ",\"shell_kill_grace_ms\":300,\"max_runtime_ms\":1000}");
    char *id = bash_bg(h, f.parent, "sleep 30", "");
    ended_in_time(h, f.parent, id, NULL, "Stopped by the runtime limit: this task ran for ",
                  "s (max_runtime_ms is 1000).");
    /* A foreground command has its own timeout. */
    char *out = t_tool(h, f.parent, "Bash", J("{'command':'sleep 1.3; echo done','timeout':20000}"));
    is_int(t_rc, 0, "a foreground command may outlast max_runtime_ms");
    like(out, "done\n(exit code 0)", "and completes");
    free(out);
    free(id);
    t_close(&f);
}

int main(void)
{
    stale_agent();
    agent_timeouts();
    agent_max_runtime();
    t_tmpdir_make("guards");
    if (t_shells_work(T_PROBE_SKIP)) {
        command_timeouts();
        command_max_runtime();
    }
    t_kill_leftovers();
    t_tmpdir_remove(NULL);
    return done_testing();
}

/* background_output in every mode (docs/tools.md: block, timeout): non-blocking on a running task
 * with progress, on a finished one, blocking until the end, blocking with a
 * timeout, Esc during a block, and unknown or foreign ids. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static char *output_args(const char *id, int block, double timeout)
{
    char *s = NULL;
    if (timeout > 0) {
        if (asprintf(&s, "{\"task_id\":\"%s\",\"block\":%s,\"timeout\":%g}", id, block ? "true" : "false", timeout) < 0)
            bail_out("asprintf");
    } else if (asprintf(&s, "{\"task_id\":\"%s\",\"block\":%s}", id, block ? "true" : "false") < 0) {
        bail_out("asprintf");
    }
    return s;
}

static int starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Non-blocking on a running task: status, running time and progress from the
 * tool parts seen (each call counted once over its pending/running/completed
 * updates), newest tool first. */
static void progress_while_running(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Busy worker",
                            J("{'steps':[{'tool':'read','output':'a'},{'tool':'grep','output':'b'},"
                              "{'tool':'bash','ms':10,'output':'c'},{'hang':true}]}"));
    is_int(t_wait_output_with(h, f.parent, id, "Progress: 3 tool calls", 5000), 0, "three tool calls counted");
    char *out = t_output(h, f.parent, id);
    is_int(t_rc, 0, "non-blocking output succeeds");
    char first[64];
    snprintf(first, sizeof first, "Task %s: running\n", id);
    ok(starts_with(out, first), "first line 'Task <id>: running'");
    like(out, "\nRunning for: ", "running time shown");
    like(out, "Progress: 3 tool calls; recent: bash, grep, read\n", "recent tools, newest first");
    like(out, "\nLast update: ", "last update shown");
    unlike(out, "Result:", "no result yet");
    free(out);
    /* Reading a running task is not a wait: it returns at once every time. */
    t_output_like(h, f.parent, id, ": running\n", "still running on a second look");
    t_close(&f);
}

/* Non-blocking on a task with no tool calls yet. */
static void progress_without_tools(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Thinking", J("{'steps':[{'hang':true}]}"));
    t_output_like(h, f.parent, id, "Progress: 0 tool calls\n", "zero tool calls, no recent list");
    t_close(&f);
}

/* block=true waits for the end and returns the result. */
static void block_returns_result(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *script = J("{'steps':[{'wait_ms':%d},{'reply':'waited for this'}]}", tap_timeout_ms(100));
    const char *id = t_task(&f, "Slow one", script);
    char *args = output_args(id, 1, 0);
    char *out = t_tool(h, f.parent, "background_output", args);
    is_int(t_rc, 0, "blocking output succeeds");
    char first[64];
    snprintf(first, sizeof first, "Task %s: completed\n", id);
    ok(starts_with(out, first), "it returns once completed");
    like(out, "Result:\nwaited for this\n", "with the result");
    free(out);
    /* Block on a finished task: at once, same answer. */
    out = t_tool(h, f.parent, "background_output", args);
    ok(starts_with(out, first), "blocking on a finished task returns at once");
    free(out);
    free(args);
    t_close(&f);
}

/* block=true with a timeout: marked as still running. */
static void block_times_out(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Forever", J("{'steps':[{'hang':true}]}"));
    char *args = output_args(id, 1, 0.2);
    char *out = t_tool(h, f.parent, "background_output", args);
    is_int(t_rc, 0, "a timed-out wait is not an error");
    char first[128];
    snprintf(first, sizeof first, "Timed out after waiting 0.2s: the task is still running.\n\nTask %s: running\n", id);
    ok(starts_with(out, first), "timed out, then the current status");
    like(out, "Progress: ", "with its progress");
    free(out);
    free(args);
    out = t_tool(h, f.parent, "background_output", J("{'task_id':'x','block':true,'timeout':0}"));
    is_int(t_rc, -EINVAL, "timeout 0 refused");
    like(out, "argument 'timeout' must be a positive number of seconds (at most 600)", "and explained");
    free(out);
    t_close(&f);
}

/* Esc during a block: the wait ends with -ECANCELED, the task goes on and
 * completes, and its notification still comes (the wait returned no result). */
static void esc_during_block(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *script = J("{'steps':[{'wait_ms':%d},{'reply':'done after Esc'}]}", tap_timeout_ms(400));
    const char *id = t_task(&f, "Interrupted wait", script);
    char *args = output_args(id, 1, 600);
    sim_call *c = sim_tool_start(h, f.parent, "background_output", args);
    t_waits(c, 50, "the blocking call waits");
    char *out = t_esc(c, 2000, "Esc ends the wait promptly");
    is_int(t_rc, -ECANCELED, "a cancelled wait returns -ECANCELED");
    char want[128];
    snprintf(want, sizeof want, "Wait cancelled; task %s is still running in the background.", id);
    like(out, want, "the answer says the task goes on");
    free(out);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes after Esc");
    char needle[64];
    snprintf(needle, sizeof needle, "Background task completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "and its notification comes");
    free(args);
    t_close(&f);
}

/* A wait on a task that is cleared meanwhile. */
static void block_on_cleared_task(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Cleared", J("{'steps':[{'hang':true}]}"));
    char *args = output_args(id, 1, 600);
    sim_call *c = sim_tool_start(h, f.parent, "background_output", args);
    t_waits(c, 50, "the blocking call waits");
    int rc = 0;
    char *out = NULL;
    char *cl = t_tool(h, f.parent, "background_clear", "{}");
    free(cl);
    is_int(sim_tool_wait(c, tap_timeout_ms(2000), &rc, &out), 0, "the wait ends when the task is cleared");
    is_int(rc, -ENOENT, "with -ENOENT");
    t_is_strf(out, "and says why", "Task %s was removed while waiting (cleared, or its parent session ended).", id);
    free(out);
    sim_tool_free(c);
    free(args);
    t_close(&f);
}

/* Unknown ids, and another session's task id, are "not found". */
static void unknown_and_foreign_ids(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    char *out = t_output(h, f.parent, "bg_00000000");
    is_int(t_rc, -ENOENT, "unknown id: -ENOENT");
    is_str(out, "Task not found: bg_00000000. Use background_list to see available tasks.", "exact text");
    free(out);
    const char *id = t_task(&f, "Mine", J("{'steps':[{'reply':'private'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "task completed");
    out = t_output(h, other, id);
    is_int(t_rc, -ENOENT, "another session cannot read it");
    t_is_strf(out, "it is not found there", "Task not found: %s. Use background_list to see available tasks.", id);
    free(out);
    char *args = output_args(id, 1, 1);
    out = t_tool(h, other, "background_output", args);
    is_int(t_rc, -ENOENT, "nor wait on it");
    free(out);
    free(args);
    free(other);
    t_close(&f);
}

int main(void)
{
    progress_while_running();
    progress_without_tools();
    block_returns_result();
    block_times_out();
    esc_during_block();
    block_on_cleared_task();
    unknown_and_foreign_ids();
    return done_testing();
}

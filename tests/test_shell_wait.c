/* Waiting on a background shell task with TaskOutput: not ready (block=false), a timed-out wait, a bad timeout, three
 * callers waiting on one task at once, Esc on one of them (its wait ends, never
 * the task), the others get the result, and the blocking retrievals replace
 * the notification. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shelltest.h"

/* ---- waiting ---------------------------------------------------------- */

static void waiters_and_esc(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    if (mkfifo(t_tmp_path("fifo"), 0600) != 0)
        bail_out("mkfifo");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "read x < %s; echo got $x", t_tmp_path("fifo"));
    char *id = t_bash_bg(h, f.parent, cmd, "waits for go", T_LAUNCH_OK);
    char *out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<retrieval_status>not_ready</retrieval_status>\n", "block=false on a running task: not ready");
    like(out, "<status>running</status>\n", "status running");
    unlike(out, "<exit_code>", "no exit code yet");
    free(out);
    out = t_task_output(h, f.parent, id, 1, 100);
    like(out, "<retrieval_status>timeout</retrieval_status>\n", "a wait of 100 ms times out");
    like(out, "<status>running</status>\n", "still running");
    free(out);
    out = t_task_output(h, f.parent, id, 1, -1);
    is_int(t_rc, -EINVAL, "a negative timeout is refused");
    is_str(out, "TaskOutput: argument 'timeout' must be a positive number of milliseconds (at most 600000)",
           "and explained");
    free(out);

    sim_call *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = sim_tool_start(h, f.parent, "TaskOutput", t_id_args(id)); /* block defaults to true */
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        out = NULL;
        is_int(sim_tool_wait(c[i], 30, &rc, &out), -ETIMEDOUT, "waiter %d waits (block defaults to true)", i);
    }
    sim_tool_cancel(c[0]);
    is_int(sim_tool_wait(c[0], tap_timeout_ms(2000), &rc, &out), 0, "Esc ends one wait");
    is_int(rc, -ECANCELED, "with -ECANCELED");
    t_is_strf(out, "saying the task goes on", "Wait cancelled; task %s continues in the background.", id);
    free(out);
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<status>running</status>\n", "the task was not stopped by Esc");
    free(out);
    ok(!sim_tool_done(c[1]) && !sim_tool_done(c[2]), "the other waiters still wait");

    t_release(h, "fifo");
    for (int i = 1; i < 3; i++) {
        out = NULL;
        is_int(sim_tool_wait(c[i], tap_timeout_ms(5000), &rc, &out), 0, "waiter %d returns", i);
        is_int(rc, 0, "waiter %d succeeds", i);
        like(out, "<retrieval_status>success</retrieval_status>\n", "waiter %d: success", i);
        like(out,
             "<status>completed</status>\n<description>waits for go</description>\n<exit_code>0</exit_code>\n"
             "<output>\ngot go\n</output>\n",
             "waiter %d: the result", i);
        free(out);
    }
    for (int i = 0; i < 3; i++)
        sim_tool_free(c[i]);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, id), 0, "the blocking waiters replaced the notification");
    unlink(t_tmp_path("fifo"));
    free(id);
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("shellwait");
    if (!t_shells_work(T_PROBE_SKIP)) {
        t_tmpdir_remove(NULL);
        return done_testing();
    }
    waiters_and_esc();
    t_tmpdir_remove(NULL);
    return done_testing();
}

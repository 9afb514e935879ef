/* Background shell tasks: TaskStop ends the command's
 * whole process group (SIGTERM, then SIGKILL after shell_kill_grace_ms) and no
 * process survives; exit codes and signals in TaskOutput and in the
 * notification; a blocking retrieval replaces the notification, a
 * non-blocking one does not. Waiting: test_shell_wait.c; the OpenCode face on
 * shell tasks: test_shell_opencode.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "shelltest.h"

/* ---- TaskStop --------------------------------------------------------- */

static void stop_kills_the_group(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *cmd = t_family_command("stop", "", "echo started; sleep 300");
    char *id = t_bash_bg(h, f.parent, cmd, "two sleepers", T_LAUNCH_OK);
    pid_t pids[2];
    is_int(t_wait_family(h, "stop", pids), 0, "the command and its child run");
    char *out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    is_int(t_rc, 0, "TaskStop succeeds");
    char want[1024];
    snprintf(want, sizeof want, "Stopped task %s (shell): %s", id, cmd);
    is_str(out, want, "it confirms, with the command");
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "no process of the group survives");
    out = t_task_output(h, f.parent, id, 1, 0);
    snprintf(want, sizeof want,
             "<retrieval_status>success</retrieval_status>\n<task_id>%s</task_id>\n<task_type>shell</task_type>\n"
             "<status>stopped</status>\n<description>two sleepers</description>\n<signal>15</signal>\n"
             "<output>\nstarted\n</output>\n",
             id);
    is_str(out, want, "TaskOutput: stopped by SIGTERM, with its output");
    free(out);
    out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    is_int(t_rc, 0, "TaskStop on a finished task is not an error");
    snprintf(want, sizeof want, "Task %s is not running: it has already finished (status: stopped).", id);
    is_str(out, want, "it says the task already finished, with its status");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, id), 0, "a stopped command sends no notification");
    t_kill_leftovers();
    free(cmd);
    free(id);
    t_close(&f);
}

/* A group that ignores SIGTERM gets SIGKILL after the grace period. */
static void stop_escalates_to_sigkill(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *cmd = t_family_command("stubborn", "trap '' TERM; ", "sleep 300");
    char *id = t_bash_bg(h, f.parent, cmd, NULL, T_LAUNCH_OK);
    pid_t pids[2];
    is_int(t_wait_family(h, "stubborn", pids), 0, "the stubborn command runs");
    int64_t t0 = mono_ms();
    char *out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    int64_t took = mono_ms() - t0;
    t_is_strf(out, "TaskStop confirms once it is dead", "Stopped task %s (shell): %s", id, cmd);
    ok(took >= 290, "after the 300 ms grace period (%lld ms)", (long long)took);
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "SIGKILL left no survivor");
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<status>stopped</status>\n", "status stopped");
    like(out, "<signal>9</signal>\n", "killed by SIGKILL");
    free(out);
    t_kill_leftovers();
    free(cmd);
    free(id);
    t_close(&f);
}

/* The leader dies of SIGTERM but a member of its group ignores it: the group
 * ends with its leader, so the member still gets SIGKILL. */
static void stop_reaches_a_term_ignoring_member(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh -c \"trap '' TERM; exec sleep 300\" & echo $! > %s; echo $$ > %s; sleep 300",
             t_tmp_path("member.c"), t_tmp_path("member.l"));
    char *id = t_bash_bg(h, f.parent, cmd, NULL, T_LAUNCH_OK);
    pid_t pids[2];
    is_int(t_wait_family(h, "member", pids), 0, "the command and its TERM-ignoring child run");
    char *out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    like(out, "Stopped task ", "TaskStop confirms");
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "the TERM-ignoring member got SIGKILL");
    t_kill_leftovers();
    free(id);
    t_close(&f);
}

/* ---- exits and notifications ------------------------------------------ */

static void exits_and_notifications(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *failed = t_bash_bg(h, f.parent, "echo bye; exit 4", NULL, T_LAUNCH_OK);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background command failed: %s", failed);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "a non-zero exit is notified as failed");
    is_int(t_count_messages_with(h, f.parent, "($ echo bye; exit 4; exit code 4, "), 1,
           "with the command and exit code");
    is_int(t_count_messages_with(h, f.parent, "\nbye\n"), 1, "and the output");
    char *out = t_task_output(h, f.parent, failed, 0, 0);
    like(out, "<retrieval_status>success</retrieval_status>\n", "a finished task is retrieved");
    like(out, "<status>failed</status>\n", "status failed");
    like(out, "<exit_code>4</exit_code>\n", "exit code 4");
    like(out, "<output>\nbye\n</output>\n<error>The command exited with code 4.</error>\n", "output, then error");
    free(out);

    char *fine = t_bash_bg(h, f.parent, "echo fine", "all good", T_LAUNCH_OK);
    snprintf(needle, sizeof needle, "[ocbg] Background command completed: %s \"all good\"", fine);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "exit 0 is notified as completed");
    out = t_task_output(h, f.parent, fine, 1, 0);
    like(out, "<status>completed</status>\n<description>all good</description>\n<exit_code>0</exit_code>\n",
         "completed, exit code 0");
    unlike(out, "<error>", "no error");
    free(out);

    /* Gated on a fifo so that the blocking call waits before the command ends. */
    if (mkfifo(t_tmp_path("gate"), 0600) != 0)
        bail_out("mkfifo");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "read x < %s; kill -TERM $$", t_tmp_path("gate"));
    char *killed = t_bash_bg(h, f.parent, cmd, NULL, T_LAUNCH_OK);
    const char *args = J("{'task_id':'%s','timeout':%d}", killed, tap_timeout_ms(5000));
    sim_call *c = sim_tool_start(h, f.parent, "TaskOutput", args);
    int rc = 0;
    out = NULL;
    is_int(sim_tool_wait(c, 30, &rc, &out), -ETIMEDOUT, "TaskOutput waits for it");
    t_release(h, "gate");
    is_int(sim_tool_wait(c, tap_timeout_ms(5000), &rc, &out), 0, "and returns when it ends");
    sim_tool_free(c);
    unlink(t_tmp_path("gate"));
    like(out, "<status>failed</status>\n", "a command ended by a signal failed");
    like(out, "<signal>15</signal>\n", "by signal 15");
    unlike(out, "<exit_code>", "with no exit code");
    like(out, "<error>The command was killed by signal 15 (Terminated).</error>", "the error says so");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, killed), 0, "the blocking TaskOutput replaced the notification");
    snprintf(needle, sizeof needle, "Background command failed: %s", failed);
    is_int(t_count_messages_with(h, f.parent, needle), 1, "the non-blocking one did not (still exactly one)");
    free(failed);
    free(fine);
    free(killed);
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("shellbg");
    if (!t_shells_work(T_PROBE_SKIP)) {
        t_tmpdir_remove(NULL);
        return done_testing();
    }
    stop_kills_the_group();
    stop_escalates_to_sigkill();
    stop_reaches_a_term_ignoring_member();
    exits_and_notifications();
    t_kill_leftovers();
    t_tmpdir_remove(
        (const char *const[]){"stop.c", "stop.l", "stubborn.c", "stubborn.l", "member.c", "member.l", NULL});
    return done_testing();
}

/* Shell tasks through the OpenCode face and the engine's ends (one
 * engine, two faces): background_list and background_output show
 * shell tasks, background_cancel and background_clear stop them (no process
 * survives, no session is aborted for them), a batch cancel stops a shell in
 * it, and neither a deleted parent session nor the plugin's shutdown leaves a
 * process behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"

/* ---- the OpenCode face on shell tasks ---------------------------------- */

static void list_and_output(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *cmd = t_family_command("lo", "", "echo started; sleep 300");
    char *id = t_bash_bg(h, f.parent, cmd, "a sleeper", T_LAUNCH_DIAG);
    pid_t pids[2];
    is_int(t_wait_family(h, "lo", pids), 0, "the command runs");
    char *out = t_tool(h, f.parent, "background_list", "{}");
    char want[1024];
    snprintf(want, sizeof want, "- %s | a sleeper | shell | running | ", id);
    like(out, want, "background_list shows the shell task");
    like(out, "Total: 1 task (1 running)", "counted as running");
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'running'}"));
    like(out, id, "and under the status filter");
    free(out);
    is_int(t_wait_output_with(h, f.parent, id, "\nOutput:\nstarted\n", 5000), 0, "background_output shows its output");
    out = t_output(h, f.parent, id);
    snprintf(want, sizeof want, "Task %s: running\nDescription: a sleeper\nCommand: %s\nBatch: batch_", id, cmd);
    ok(strncmp(out, want, strlen(want)) == 0, "with status, description and command");
    like(out, "\nRunning for: ", "running time");
    like(out, "\nExit: running\n", "no exit yet");
    free(out);

    out = t_tool(h, f.parent, "background_cancel", t_id_args(id));
    is_int(t_rc, 0, "background_cancel on a shell task succeeds");
    snprintf(want, sizeof want, "Task %s cancelled: a sleeper\nIts command was stopped; status: cancelled.", id);
    is_str(out, want, "it says the command was stopped");
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "no process of the group survives");
    is_int(sim_calls(h, "session_abort", NULL), 0, "no session was aborted for it");
    out = t_output(h, f.parent, id);
    snprintf(want, sizeof want, "Task %s: cancelled\n", id);
    ok(strncmp(out, want, strlen(want)) == 0, "background_output: cancelled");
    like(out, "\nExit: killed by signal 15 (Terminated)\n", "by SIGTERM");
    free(out);
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<status>stopped</status>\n", "TaskOutput: stopped");
    free(out);
    out = t_tool(h, f.parent, "background_cancel", t_id_args(id));
    is_int(t_rc, -EINVAL, "cancelling it again is refused");
    snprintf(want, sizeof want, "Cannot cancel task %s: its status is cancelled. Only running tasks can be cancelled.",
             id);
    is_str(out, want, "with the spec's words");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, id), 0, "a cancelled command sends no notification");
    t_kill_leftovers();
    free(cmd);
    free(id);
    t_close(&f);
}

/* A batch holding an agent and a shell: cancelling the batch stops both. */
static void batch_cancel_and_clear(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    const char *agent = t_task(&f, "Hangs", J("{'steps':[{'hang':true}]}"));
    char *cmd = t_family_command("batch", "", "sleep 300");
    char *shell = t_bash_bg(h, f.parent, cmd, NULL, T_LAUNCH_DIAG);
    pid_t pids[2];
    is_int(t_wait_family(h, "batch", pids), 0, "the command runs");
    char *out = t_output(h, f.parent, agent);
    char *batch = t_find_id(out, "batch_");
    free(out);
    out = t_output(h, f.parent, shell);
    ok(batch && strstr(out, batch), "the shell task joined the agent's batch");
    free(out);
    const char *args = J("{'task_id':'%s'}", batch ? batch : "batch_none");
    out = t_tool(h, f.parent, "background_cancel", args);
    is_int(t_rc, 0, "cancelling the batch succeeds");
    like(out, "Cancelled 2 running tasks of batch ", "both tasks");
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "the command did not survive");
    is_int(t_wait_status(h, f.parent, shell, "cancelled", 1000), 0, "the shell task is cancelled");
    is_int(t_wait_status(h, f.parent, agent, "cancelled", 1000), 0, "the agent task too");
    free(batch);
    free(cmd);
    free(shell);

    cmd = t_family_command("clear", "trap '' TERM; ", "sleep 300");
    shell = t_bash_bg(h, f.parent, cmd, NULL, T_LAUNCH_DIAG);
    is_int(t_wait_family(h, "clear", pids), 0, "a stubborn command runs");
    out = t_tool(h, f.parent, "background_clear", "{}");
    is_int(t_rc, 0, "background_clear succeeds");
    is_str(out, "Cleared 3 background tasks of this session (1 running task was aborted).", "it clears all three");
    free(out);
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "the command did not survive the clear");
    out = t_tool(h, f.parent, "TaskOutput", t_id_args(shell));
    is_int(t_rc, -ENOENT, "the cleared shell task is gone");
    free(out);
    t_kill_leftovers();
    free(cmd);
    free(shell);
    t_close(&f);
}

/* ---- the engine's ends ------------------------------------------------- */

static void parent_deleted_and_shutdown(void)
{
    sim_host *h = t_host(T_SHELL_SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = t_family_command("del", "", "sleep 300");
    char *id = t_bash_bg(h, s, cmd, NULL, T_LAUNCH_DIAG);
    pid_t pids[2];
    is_int(t_wait_family(h, "del", pids), 0, "the command runs");
    is_int(sim_session_delete(h, s), 0, "the parent session is deleted");
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "its command did not survive");
    free(cmd);
    free(id);
    free(s);

    s = sim_session_new(h, NULL, "again");
    cmd = t_family_command("down", "", "sleep 300");
    id = t_bash_bg(h, s, cmd, NULL, T_LAUNCH_DIAG);
    is_int(t_wait_family(h, "down", pids), 0, "another command runs");
    sim_destroy(h); /* the plugin's shutdown: SIGKILL to the group, the leader reaped */
    ok(!t_proc_alive(pids[1]), "the command's shell is gone when the plugin is");
    h = sim_create(); /* only for waiting: SIGKILL reaches the child a moment later */
    is_int(sim_wait(h, t_pids_gone, pids, tap_timeout_ms(3000)), 0, "no process outlives the plugin");
    sim_destroy(h);
    t_kill_leftovers();
    free(cmd);
    free(id);
    free(s);
}

int main(void)
{
    t_tmpdir_make("shellopc");
    if (!t_shells_work(T_PROBE_SKIP)) {
        t_tmpdir_remove(NULL);
        return done_testing();
    }
    list_and_output();
    batch_cancel_and_clear();
    parent_deleted_and_shutdown();
    t_kill_leftovers();
    t_tmpdir_remove((const char *const[]){"lo.c", "lo.l", "batch.c", "batch.l", "clear.c", "clear.l", "del.c", "del.l",
                                          "down.c", "down.l", NULL});
    return done_testing();
}

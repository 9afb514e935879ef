/* Shell tasks through the OpenCode face and the engine's ends (issue 7, spec
 * README "one engine, two faces"): background_list and background_output show
 * shell tasks, background_cancel and background_clear stop them (no process
 * survives, no session is aborted for them), a batch cancel stops a shell in
 * it, and neither a deleted parent session nor the plugin's shutdown leaves a
 * process behind. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define SMALL "{\"shell_output_cap\":4096,\"shell_kill_grace_ms\":300}"

/* ---- helpers ---------------------------------------------------------- */

static char *bash_bg(sim_host *h, const char *session, const char *command, const char *description)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "command", command);
    if (description)
        cJSON_AddStringToObject(a, "description", description);
    cJSON_AddTrueToObject(a, "run_in_background");
    char *args = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    char *out = t_tool(h, session, "Bash", args);
    free(args);
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("background Bash failed (rc %d): %s", t_rc, out);
    char want[512];
    snprintf(want, sizeof want, "Command running in the background.\ntask_id: %s\nCommand: %s\n\n", id, command);
    if (strncmp(out, want, strlen(want)) != 0)
        diag("unexpected launch answer: %s", out);
    free(out);
    return id;
}

static char *id_args(const char *id)
{
    static char args[4][128];
    static int next;
    char *a = args[next++ % 4];
    snprintf(a, 128, "{\"task_id\":\"%s\"}", id);
    return a;
}

static char *task_output(sim_host *h, const char *session, const char *id, int block, int timeout_ms)
{
    char args[160];
    if (timeout_ms)
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":%s,\"timeout\":%d}", id, block ? "true" : "false",
                 timeout_ms);
    else
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":%s}", id, block ? "true" : "false");
    return t_tool(h, session, "TaskOutput", args);
}

/* Alive and not a zombie (an orphan's zombie may wait on a PID 1 that never
 * reaps: dead all the same). */
static int proc_alive(pid_t pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return 0;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static int pids_gone(sim_host *h, void *arg)
{
    (void)h;
    const pid_t *p = arg;
    return !proc_alive(p[0]) && !proc_alive(p[1]);
}

static pid_t started[64];
static int nstarted;
static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char path[4][128];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 128, "%s/%s", tmpdir, name);
    return p;
}

static pid_t read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid;
}

static int pid_file_ready(sim_host *h, void *arg)
{
    (void)h;
    return read_pid(arg) > 0;
}

/* A command that writes its child's pid to <tag>.c and its own to <tag>.l
 * (the group leader), then runs `rest`. */
static char *family_command(const char *tag, const char *prefix, const char *rest)
{
    char *cmd = NULL, c[128], l[128];
    snprintf(c, sizeof c, "%s/%s.c", tmpdir, tag);
    snprintf(l, sizeof l, "%s/%s.l", tmpdir, tag);
    if (asprintf(&cmd, "%ssleep 300 & echo $! > %s; echo $$ > %s; %s", prefix, c, l, rest) < 0)
        bail_out("asprintf");
    return cmd;
}

/* Wait for both pids of `tag` (child, leader); remembered for cleanup. */
static int wait_family(sim_host *h, const char *tag, pid_t pids[2])
{
    char c[128], l[128];
    snprintf(c, sizeof c, "%s/%s.c", tmpdir, tag);
    snprintf(l, sizeof l, "%s/%s.l", tmpdir, tag);
    pids[0] = pids[1] = 0;
    if (sim_wait(h, pid_file_ready, l, tap_timeout_ms(5000)) != 0)
        return -ETIMEDOUT;
    pids[0] = read_pid(c);
    pids[1] = read_pid(l);
    for (int i = 0; i < 2 && nstarted < 64; i++)
        started[nstarted++] = pids[i];
    return pids[0] > 0 && pids[1] > 0 ? 0 : -EINVAL;
}

static void kill_leftovers(void)
{
    for (int i = 0; i < nstarted; i++)
        if (proc_alive(started[i])) {
            diag("killing left-over process %d", (int)started[i]);
            kill(started[i], SIGKILL);
        }
    nstarted = 0;
}

/* Can the plugin run commands here? (Not without pidfd_open, e.g. under
 * valgrind 3.19: test_shell.c checks the refusal; skip.) */
static int shells_work(void)
{
    sim_host *h = t_host(NULL);
    char *s = sim_session_new(h, NULL, "probe");
    char *out = t_tool(h, s, "Bash", "{\"command\":\"true\"}");
    int works = t_rc == 0;
    if (!works)
        skip(1, "shell tasks cannot run here (the plugin has no pidfd_open, e.g. under valgrind 3.19)");
    free(out);
    free(s);
    sim_destroy(h);
    return works;
}

/* ---- the OpenCode face on shell tasks ---------------------------------- */

static void list_and_output(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = family_command("lo", "", "echo started; sleep 300");
    char *id = bash_bg(h, s, cmd, "a sleeper");
    pid_t pids[2];
    is_int(wait_family(h, "lo", pids), 0, "the command runs");
    char *out = t_tool(h, s, "background_list", "{}");
    char want[1024];
    snprintf(want, sizeof want, "- %s | a sleeper | shell | running | ", id);
    like(out, want, "background_list shows the shell task");
    like(out, "Total: 1 task (1 running)", "counted as running");
    free(out);
    out = t_tool(h, s, "background_list", "{\"status\":\"running\"}");
    like(out, id, "and under the status filter");
    free(out);
    is_int(t_wait_output_with(h, s, id, "\nOutput:\nstarted\n", 5000), 0, "background_output shows its output");
    out = t_output(h, s, id);
    snprintf(want, sizeof want, "Task %s: running\nDescription: a sleeper\nCommand: %s\nBatch: batch_", id, cmd);
    ok(strncmp(out, want, strlen(want)) == 0, "with status, description and command");
    like(out, "\nRunning for: ", "running time");
    like(out, "\nExit: running\n", "no exit yet");
    free(out);

    out = t_tool(h, s, "background_cancel", id_args(id));
    is_int(t_rc, 0, "background_cancel on a shell task succeeds");
    snprintf(want, sizeof want, "Task %s cancelled: a sleeper\nIts command was stopped; status: cancelled.", id);
    is_str(out, want, "it says the command was stopped");
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "no process of the group survives");
    is_int(sim_calls(h, "session_abort", NULL), 0, "no session was aborted for it");
    out = t_output(h, s, id);
    snprintf(want, sizeof want, "Task %s: cancelled\n", id);
    ok(strncmp(out, want, strlen(want)) == 0, "background_output: cancelled");
    like(out, "\nExit: killed by signal 15 (Terminated)\n", "by SIGTERM");
    free(out);
    out = task_output(h, s, id, 0, 0);
    like(out, "<status>stopped</status>\n", "TaskOutput: stopped");
    free(out);
    out = t_tool(h, s, "background_cancel", id_args(id));
    is_int(t_rc, -EINVAL, "cancelling it again is refused");
    snprintf(want, sizeof want, "Cannot cancel task %s: its status is cancelled. Only running tasks can be cancelled.", id);
    is_str(out, want, "with the spec's words");
    free(out);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    is_int(t_count_messages_with(h, s, id), 0, "a cancelled command sends no notification");
    kill_leftovers();
    free(cmd);
    free(id);
    free(s);
    sim_destroy(h);
}

/* A batch holding an agent and a shell: cancelling the batch stops both. */
static void batch_cancel_and_clear(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *agent = t_launch_script(h, s, "Hangs", "{\"steps\":[{\"hang\":true}]}");
    char *cmd = family_command("batch", "", "sleep 300");
    char *shell = bash_bg(h, s, cmd, NULL);
    pid_t pids[2];
    is_int(wait_family(h, "batch", pids), 0, "the command runs");
    char *out = t_output(h, s, agent);
    char *batch = t_find_id(out, "batch_");
    free(out);
    out = t_output(h, s, shell);
    ok(batch && strstr(out, batch), "the shell task joined the agent's batch");
    free(out);
    char args[96];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", batch ? batch : "batch_none");
    out = t_tool(h, s, "background_cancel", args);
    is_int(t_rc, 0, "cancelling the batch succeeds");
    like(out, "Cancelled 2 running tasks of batch ", "both tasks");
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "the command did not survive");
    is_int(t_wait_status(h, s, shell, "cancelled", 1000), 0, "the shell task is cancelled");
    is_int(t_wait_status(h, s, agent, "cancelled", 1000), 0, "the agent task too");
    free(batch);
    free(cmd);
    free(shell);

    cmd = family_command("clear", "trap '' TERM; ", "sleep 300");
    shell = bash_bg(h, s, cmd, NULL);
    is_int(wait_family(h, "clear", pids), 0, "a stubborn command runs");
    out = t_tool(h, s, "background_clear", "{}");
    is_int(t_rc, 0, "background_clear succeeds");
    is_str(out, "Cleared 3 background tasks of this session (1 running task was aborted).", "it clears all three");
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "the command did not survive the clear");
    out = t_tool(h, s, "TaskOutput", id_args(shell));
    is_int(t_rc, -ENOENT, "the cleared shell task is gone");
    free(out);
    kill_leftovers();
    free(cmd);
    free(shell);
    free(agent);
    free(s);
    sim_destroy(h);
}

/* ---- the engine's ends ------------------------------------------------- */

static void parent_deleted_and_shutdown(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = family_command("del", "", "sleep 300");
    char *id = bash_bg(h, s, cmd, NULL);
    pid_t pids[2];
    is_int(wait_family(h, "del", pids), 0, "the command runs");
    is_int(sim_session_delete(h, s), 0, "the parent session is deleted");
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "its command did not survive");
    free(cmd);
    free(id);
    free(s);

    s = sim_session_new(h, NULL, "again");
    cmd = family_command("down", "", "sleep 300");
    id = bash_bg(h, s, cmd, NULL);
    is_int(wait_family(h, "down", pids), 0, "another command runs");
    sim_destroy(h); /* the plugin's shutdown: SIGKILL to the group, the leader reaped */
    ok(!proc_alive(pids[1]), "the command's shell is gone when the plugin is");
    h = sim_create(); /* only for waiting: SIGKILL reaches the child a moment later */
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "no process outlives the plugin");
    sim_destroy(h);
    kill_leftovers();
    free(cmd);
    free(id);
    free(s);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ocbg-test-shellopc-XXXXXX");
    if (!mkdtemp(tmpdir))
        bail_out("mkdtemp");
    if (!shells_work()) {
        rmdir(tmpdir);
        return done_testing();
    }
    list_and_output();
    batch_cancel_and_clear();
    parent_deleted_and_shutdown();
    kill_leftovers();
    const char *tags[] = {"lo", "batch", "clear", "del", "down"};
    for (size_t i = 0; i < sizeof tags / sizeof tags[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s.c", tags[i]);
        unlink(tmp_path(name));
        snprintf(name, sizeof name, "%s.l", tags[i]);
        unlink(tmp_path(name));
    }
    rmdir(tmpdir);
    return done_testing();
}

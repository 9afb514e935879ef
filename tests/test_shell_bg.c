/* Background shell tasks (issue 7, spec 002): TaskStop ends the command's
 * whole process group (SIGTERM, then SIGKILL after shell_kill_grace_ms) and no
 * process survives; exit codes and signals in TaskOutput and in the
 * notification; a blocking retrieval replaces the notification, a
 * non-blocking one does not. Waiting: test_shell_wait.c; the OpenCode face on
 * shell tasks: test_shell_opencode.c. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    ok(strncmp(out, want, strlen(want)) == 0, "Bash in the background answers with the task id and command");
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
static const char *fifo_name;

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

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Open the fifo `name` once a command reads it, and write a line to it. */
static int fifo_open(sim_host *h, void *arg)
{
    (void)h;
    int *fd = arg;
    *fd = open(tmp_path(fifo_name), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    return *fd >= 0;
}

static void release(sim_host *h, const char *name)
{
    int fd = -1;
    fifo_name = name;
    is_int(sim_wait(h, fifo_open, &fd, tap_timeout_ms(5000)), 0, "the command reads the fifo %s", name);
    if (fd >= 0) {
        ssize_t n = write(fd, "go\n", 3);
        is_int(n, 3, "go written to %s", name);
        close(fd);
    }
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

/* ---- TaskStop --------------------------------------------------------- */

static void stop_kills_the_group(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = family_command("stop", "", "echo started; sleep 300");
    char *id = bash_bg(h, s, cmd, "two sleepers");
    pid_t pids[2];
    is_int(wait_family(h, "stop", pids), 0, "the command and its child run");
    char *out = t_tool(h, s, "TaskStop", id_args(id));
    is_int(t_rc, 0, "TaskStop succeeds");
    char want[1024];
    snprintf(want, sizeof want, "Stopped task %s (shell): %s", id, cmd);
    is_str(out, want, "it confirms, with the command");
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "no process of the group survives");
    out = task_output(h, s, id, 1, 0);
    snprintf(want, sizeof want,
             "<retrieval_status>success</retrieval_status>\n<task_id>%s</task_id>\n<task_type>shell</task_type>\n"
             "<status>stopped</status>\n<description>two sleepers</description>\n<signal>15</signal>\n"
             "<output>\nstarted\n</output>\n",
             id);
    is_str(out, want, "TaskOutput: stopped by SIGTERM, with its output");
    free(out);
    out = t_tool(h, s, "TaskStop", id_args(id));
    is_int(t_rc, 0, "TaskStop on a finished task is not an error");
    snprintf(want, sizeof want, "Task %s is not running: it has already finished (status: stopped).", id);
    is_str(out, want, "it says the task already finished, with its status");
    free(out);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    is_int(t_count_messages_with(h, s, id), 0, "a stopped command sends no notification");
    kill_leftovers();
    free(cmd);
    free(id);
    free(s);
    sim_destroy(h);
}

/* A group that ignores SIGTERM gets SIGKILL after the grace period. */
static void stop_escalates_to_sigkill(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = family_command("stubborn", "trap '' TERM; ", "sleep 300");
    char *id = bash_bg(h, s, cmd, NULL);
    pid_t pids[2];
    is_int(wait_family(h, "stubborn", pids), 0, "the stubborn command runs");
    int64_t t0 = now_ms();
    char *out = t_tool(h, s, "TaskStop", id_args(id));
    int64_t took = now_ms() - t0;
    char want[1024];
    snprintf(want, sizeof want, "Stopped task %s (shell): %s", id, cmd);
    is_str(out, want, "TaskStop confirms once it is dead");
    ok(took >= 290, "after the 300 ms grace period (%lld ms)", (long long)took);
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "SIGKILL left no survivor");
    out = task_output(h, s, id, 0, 0);
    like(out, "<status>stopped</status>\n", "status stopped");
    like(out, "<signal>9</signal>\n", "killed by SIGKILL");
    free(out);
    kill_leftovers();
    free(cmd);
    free(id);
    free(s);
    sim_destroy(h);
}

/* The leader dies of SIGTERM but a member of its group ignores it: the group
 * ends with its leader, so the member still gets SIGKILL. */
static void stop_reaches_a_term_ignoring_member(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh -c \"trap '' TERM; exec sleep 300\" & echo $! > %s; echo $$ > %s; sleep 300",
             tmp_path("member.c"), tmp_path("member.l"));
    char *id = bash_bg(h, s, cmd, NULL);
    pid_t pids[2];
    is_int(wait_family(h, "member", pids), 0, "the command and its TERM-ignoring child run");
    char *out = t_tool(h, s, "TaskStop", id_args(id));
    like(out, "Stopped task ", "TaskStop confirms");
    free(out);
    is_int(sim_wait(h, pids_gone, pids, tap_timeout_ms(3000)), 0, "the TERM-ignoring member got SIGKILL");
    kill_leftovers();
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- exits and notifications ------------------------------------------ */

static void exits_and_notifications(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    char *failed = bash_bg(h, s, "echo bye; exit 4", NULL);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background command failed: %s", failed);
    is_int(t_wait_messages_with(h, s, needle, 1, 5000), 0, "a non-zero exit is notified as failed");
    is_int(t_count_messages_with(h, s, "($ echo bye; exit 4; exit code 4, "), 1, "with the command and exit code");
    is_int(t_count_messages_with(h, s, "\nbye\n"), 1, "and the output");
    char *out = task_output(h, s, failed, 0, 0);
    like(out, "<retrieval_status>success</retrieval_status>\n", "a finished task is retrieved");
    like(out, "<status>failed</status>\n", "status failed");
    like(out, "<exit_code>4</exit_code>\n", "exit code 4");
    like(out, "<output>\nbye\n</output>\n<error>The command exited with code 4.</error>\n", "output, then error");
    free(out);

    char *fine = bash_bg(h, s, "echo fine", "all good");
    snprintf(needle, sizeof needle, "[ocbg] Background command completed: %s \"all good\"", fine);
    is_int(t_wait_messages_with(h, s, needle, 1, 5000), 0, "exit 0 is notified as completed");
    out = task_output(h, s, fine, 1, 0);
    like(out, "<status>completed</status>\n<description>all good</description>\n<exit_code>0</exit_code>\n",
         "completed, exit code 0");
    unlike(out, "<error>", "no error");
    free(out);

    /* Gated on a fifo so that the blocking call waits before the command ends. */
    if (mkfifo(tmp_path("gate"), 0600) != 0)
        bail_out("mkfifo");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "read x < %s; kill -TERM $$", tmp_path("gate"));
    char *killed = bash_bg(h, s, cmd, NULL);
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":%d}", killed, tap_timeout_ms(5000));
    sim_call *c = sim_tool_start(h, s, "TaskOutput", args);
    int rc = 0;
    out = NULL;
    is_int(sim_tool_wait(c, 30, &rc, &out), -ETIMEDOUT, "TaskOutput waits for it");
    release(h, "gate");
    is_int(sim_tool_wait(c, tap_timeout_ms(5000), &rc, &out), 0, "and returns when it ends");
    sim_tool_free(c);
    unlink(tmp_path("gate"));
    like(out, "<status>failed</status>\n", "a command ended by a signal failed");
    like(out, "<signal>15</signal>\n", "by signal 15");
    unlike(out, "<exit_code>", "with no exit code");
    like(out, "<error>The command was killed by signal 15 (Terminated).</error>", "the error says so");
    free(out);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    is_int(t_count_messages_with(h, s, killed), 0, "the blocking TaskOutput replaced the notification");
    snprintf(needle, sizeof needle, "Background command failed: %s", failed);
    is_int(t_count_messages_with(h, s, needle), 1, "the non-blocking one did not (still exactly one)");
    free(failed);
    free(fine);
    free(killed);
    free(s);
    sim_destroy(h);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ocbg-test-shellbg-XXXXXX");
    if (!mkdtemp(tmpdir))
        bail_out("mkdtemp");
    if (!shells_work()) {
        rmdir(tmpdir);
        return done_testing();
    }
    stop_kills_the_group();
    stop_escalates_to_sigkill();
    stop_reaches_a_term_ignoring_member();
    exits_and_notifications();
    kill_leftovers();
    for (const char *const *f = (const char *const[]){"stop.c", "stop.l", "stubborn.c", "stubborn.l", "member.c", "member.l", NULL}; *f; f++)
        unlink(tmp_path(*f));
    rmdir(tmpdir);
    return done_testing();
}

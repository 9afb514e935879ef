/* Waiting on a background shell task with TaskOutput (issue 7, spec 002 user
 * story 2): not ready (block=false), a timed-out wait, a bad timeout, three
 * callers waiting on one task at once, Esc on one of them (its wait ends, never
 * the task), the others get the result, and the blocking retrievals replace
 * the notification. */
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

/* ---- waiting ---------------------------------------------------------- */

static void waiters_and_esc(void)
{
    sim_host *h = t_host(SMALL);
    char *s = sim_session_new(h, NULL, "main");
    if (mkfifo(tmp_path("fifo"), 0600) != 0)
        bail_out("mkfifo");
    char cmd[256];
    snprintf(cmd, sizeof cmd, "read x < %s; echo got $x", tmp_path("fifo"));
    char *id = bash_bg(h, s, cmd, "waits for go");
    char *out = task_output(h, s, id, 0, 0);
    like(out, "<retrieval_status>not_ready</retrieval_status>\n", "block=false on a running task: not ready");
    like(out, "<status>running</status>\n", "status running");
    unlike(out, "<exit_code>", "no exit code yet");
    free(out);
    out = task_output(h, s, id, 1, 100);
    like(out, "<retrieval_status>timeout</retrieval_status>\n", "a wait of 100 ms times out");
    like(out, "<status>running</status>\n", "still running");
    free(out);
    out = task_output(h, s, id, 1, -1);
    is_int(t_rc, -EINVAL, "a negative timeout is refused");
    is_str(out, "TaskOutput: argument 'timeout' must be a positive number of milliseconds (at most 600000)",
           "and explained");
    free(out);

    sim_call *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = sim_tool_start(h, s, "TaskOutput", id_args(id)); /* block defaults to true */
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        out = NULL;
        is_int(sim_tool_wait(c[i], 30, &rc, &out), -ETIMEDOUT, "waiter %d waits (block defaults to true)", i);
    }
    sim_tool_cancel(c[0]);
    is_int(sim_tool_wait(c[0], tap_timeout_ms(2000), &rc, &out), 0, "Esc ends one wait");
    is_int(rc, -ECANCELED, "with -ECANCELED");
    char want[160];
    snprintf(want, sizeof want, "Wait cancelled; task %s continues in the background.", id);
    is_str(out, want, "saying the task goes on");
    free(out);
    out = task_output(h, s, id, 0, 0);
    like(out, "<status>running</status>\n", "the task was not stopped by Esc");
    free(out);
    ok(!sim_tool_done(c[1]) && !sim_tool_done(c[2]), "the other waiters still wait");

    release(h, "fifo");
    for (int i = 1; i < 3; i++) {
        out = NULL;
        is_int(sim_tool_wait(c[i], tap_timeout_ms(5000), &rc, &out), 0, "waiter %d returns", i);
        is_int(rc, 0, "waiter %d succeeds", i);
        like(out, "<retrieval_status>success</retrieval_status>\n", "waiter %d: success", i);
        like(out, "<status>completed</status>\n<description>waits for go</description>\n<exit_code>0</exit_code>\n"
                  "<output>\ngot go\n</output>\n",
             "waiter %d: the result", i);
        free(out);
    }
    for (int i = 0; i < 3; i++)
        sim_tool_free(c[i]);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    is_int(t_count_messages_with(h, s, id), 0, "the blocking waiters replaced the notification");
    unlink(tmp_path("fifo"));
    free(id);
    free(s);
    sim_destroy(h);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ocbg-test-shellwait-XXXXXX");
    if (!mkdtemp(tmpdir))
        bail_out("mkdtemp");
    if (!shells_work()) {
        rmdir(tmpdir);
        return done_testing();
    }
    waiters_and_esc();
    rmdir(tmpdir);
    return done_testing();
}

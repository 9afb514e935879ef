/* shelltest.c — see shelltest.h. */
#include "shelltest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tool arguments and calls ---- */

const char *t_id_args(const char *id)
{
    static char args[4][128];
    static int next;
    char *a = args[next++ % 4];
    snprintf(a, 128, "{\"task_id\":\"%s\"}", id);
    return a;
}

char *t_task_output(sim_host *h, const char *session, const char *id, int block, int timeout_ms)
{
    char args[160];
    if (timeout_ms)
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":%s,\"timeout\":%d}", id, block ? "true" : "false",
                 timeout_ms);
    else
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":%s}", id, block ? "true" : "false");
    return t_tool(h, session, "TaskOutput", args);
}

char *t_command(sim_host *h, const char *session, const char *name)
{
    char *out = NULL;
    t_rc = sim_command(h, session, name, "", &out);
    return out ? out : calloc(1, 1);
}

char *t_bash_bg(sim_host *h, const char *session, const char *command, const char *description, t_launch_check check)
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
    if (check != T_LAUNCH_UNCHECKED) {
        char want[512];
        snprintf(want, sizeof want, "Command running in the background.\ntask_id: %s\nCommand: %s\n\n", id, command);
        int same = strncmp(out, want, strlen(want)) == 0;
        if (check == T_LAUNCH_OK)
            ok(same, "Bash in the background answers with the task id and command");
        else if (!same)
            diag("unexpected launch answer: %s", out);
    }
    free(out);
    return id;
}

char *t_bash_args(const char *command, const char *description, int background, int timeout_ms)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "command", command);
    if (description)
        cJSON_AddStringToObject(a, "description", description);
    if (background)
        cJSON_AddTrueToObject(a, "run_in_background");
    if (timeout_ms)
        cJSON_AddNumberToObject(a, "timeout", timeout_ms);
    char *json = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return json;
}

char *t_bash(sim_host *h, const char *session, const char *command, const char *description, int background,
             int timeout_ms)
{
    char *args = t_bash_args(command, description, background, timeout_ms);
    char *out = t_tool(h, session, "Bash", args);
    free(args);
    return out;
}

char *t_task_args(const char *description, const char *prompt, int background)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "description", description);
    cJSON_AddStringToObject(a, "prompt", prompt);
    cJSON_AddStringToObject(a, "subagent_type", "explore");
    if (background)
        cJSON_AddTrueToObject(a, "run_in_background");
    char *json = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return json;
}

char *t_claude_task(sim_host *h, const char *session, const char *description, const char *script, int background)
{
    static int seq;
    char prompt[64];
    snprintf(prompt, sizeof prompt, "claude task #%d#", ++seq);
    if (sim_script(h, prompt, script, 1) != 0)
        bail_out("bad script: %s", script);
    char *args = t_task_args(description, prompt, background);
    char *out = t_tool(h, session, "Task", args);
    free(args);
    return out;
}

/* ---- processes ---- */

int t_proc_alive(pid_t pid)
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

int t_pid_gone(sim_host *h, void *arg)
{
    (void)h;
    return !t_proc_alive(*(pid_t *)arg);
}

int t_pids_gone(sim_host *h, void *arg)
{
    (void)h;
    const pid_t *p = arg;
    return !t_proc_alive(p[0]) && !t_proc_alive(p[1]);
}

/* Every pid a test learned of: killed at the end whatever happened. */
static pid_t started[64];
static int nstarted;

static void remember(pid_t pid)
{
    if (nstarted < 64)
        started[nstarted++] = pid;
}

pid_t t_read_pid(const char *path)
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

int t_pid_file_ready(sim_host *h, void *arg)
{
    (void)h;
    return t_read_pid(arg) > 0;
}

pid_t t_wait_pid_file(sim_host *h, const char *path)
{
    if (sim_wait(h, t_pid_file_ready, (void *)path, tap_timeout_ms(5000)) != 0)
        return 0;
    pid_t pid = t_read_pid(path);
    remember(pid);
    return pid;
}

static char tmpdir[64];

/* The two pid files of a family: <tmpdir>/<tag>.c (child), .l (leader). */
static void family_files(const char *tag, char c[128], char l[128])
{
    snprintf(c, 128, "%s/%s.c", tmpdir, tag);
    snprintf(l, 128, "%s/%s.l", tmpdir, tag);
}

char *t_family_command(const char *tag, const char *prefix, const char *rest)
{
    char *cmd = NULL, c[128], l[128];
    family_files(tag, c, l);
    if (asprintf(&cmd, "%ssleep 300 & echo $! > %s; echo $$ > %s; %s", prefix, c, l, rest) < 0)
        bail_out("asprintf");
    return cmd;
}

int t_wait_family(sim_host *h, const char *tag, pid_t pids[2])
{
    char c[128], l[128];
    family_files(tag, c, l);
    pids[0] = pids[1] = 0;
    if (sim_wait(h, t_pid_file_ready, l, tap_timeout_ms(5000)) != 0)
        return -ETIMEDOUT;
    pids[0] = t_read_pid(c);
    pids[1] = t_read_pid(l);
    remember(pids[0]);
    remember(pids[1]);
    return pids[0] > 0 && pids[1] > 0 ? 0 : -EINVAL;
}

void t_kill_leftovers(void)
{
    for (int i = 0; i < nstarted; i++)
        if (t_proc_alive(started[i])) {
            diag("killing left-over process %d", (int)started[i]);
            kill(started[i], SIGKILL);
        }
    nstarted = 0;
}

/* ---- the temporary directory ---- */

void t_tmpdir_make(const char *name)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ocbg-test-%s-XXXXXX", name);
    if (!mkdtemp(tmpdir))
        bail_out("mkdtemp");
}

const char *t_tmp_path(const char *name)
{
    static char path[4][128];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, 128, "%s/%s", tmpdir, name);
    return p;
}

void t_tmpdir_remove(const char *const *names)
{
    for (; names && *names; names++)
        unlink(t_tmp_path(*names));
    rmdir(tmpdir);
}

static const char *fifo_name;

/* sim_wait predicate: open the fifo `fifo_name` for writing (arg: int *fd);
 * 1 once a reader has it open. */
static int fifo_open(sim_host *h, void *arg)
{
    (void)h;
    int *fd = arg;
    *fd = open(t_tmp_path(fifo_name), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    return *fd >= 0;
}

void t_release(sim_host *h, const char *name)
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

/* ---- can the plugin run commands here? ---- */

int t_shells_work(t_probe on_refusal)
{
    sim_host *h = t_host(NULL);
    char *s = sim_session_new(h, NULL, "probe");
    char *out = t_tool(h, s, "Bash", J("{'command':'true'}"));
    int works = t_rc == 0;
    if (!works) {
        switch (on_refusal) {
        case T_PROBE_CHECK_REFUSAL:
            /* Without pidfd_open the plugin refuses commands: check that it
             * does so cleanly. */
            diag("shell tasks cannot run here; their checks are skipped");
            like(out, "Could not start the command: ", "a command that cannot start is refused, saying why");
            free(out);
            out = t_tool(h, s, "Bash", J("{'command':'true','run_in_background':true}"));
            ok(t_rc != 0, "in the background too (rc %d)", t_rc);
            free(out);
            out = t_tool(h, s, "background_list", "{}");
            like(out, "| shell | error |", "the background one is listed in error");
            unlike(out, "running", "nothing is left running");
            break;
        case T_PROBE_SKIP:
            skip(1, "shell tasks cannot run here (the plugin has no pidfd_open, e.g. under valgrind 3.19)");
            break;
        case T_PROBE_DIAG:
            diag("shell tasks cannot run here, their checks are skipped: %s", out);
            break;
        }
    }
    free(out);
    free(s);
    sim_destroy(h);
    return works;
}

/* shutdown.c — shutdown under load: 100 running agent tasks,
 * blocked waiters of every kind, notifications in flight (a slow host), shell
 * commands running (with a grandchild each) → the plugin's shutdown returns
 * promptly, every blocked call is released with -ECANCELED and a clear text,
 * every plugin thread is joined, no child process is left, and the plugin is
 * dlclose'd safely (sim_unload_plugins) while the host lives on.
 *
 *   shutdown_ms: N   (the shutdown with all of that going on) */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rel.h"
#include "tap.h"
#include "testlib.h"

#define NTASKS 100
#define NSHELL 4

static int threads_now(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

typedef struct pids_arg {
    const char *session, *id;
    long pid, gpid;
} pids_arg;

/* The shell task's output names its pid and its grandchild's. */
static int has_pids(sim_host *h, void *arg)
{
    pids_arg *a = arg;
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":false}", a->id);
    char *out = rel_tool(h, a->session, "TaskOutput", args, NULL);
    const char *o = strstr(out, "<output>");
    const char *p = o ? strstr(o, "SHELL=") : NULL, *g = o ? strstr(o, "GRANDCHILD=") : NULL;
    if (p && g) {
        a->pid = strtol(p + 6, NULL, 10);
        a->gpid = strtol(g + 11, NULL, 10);
    }
    free(out);
    return p && g;
}

/* Has the process exited (for a non-child: gone or a zombie of another)? */
static int process_gone(long pid, int timeout_ms)
{
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0)
        return errno == ESRCH;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    close(fd);
    return n == 1;
}

int main(void)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir)
        bail_out("OCBG_PLUGIN_DIR is not set");
    sim_host *h = sim_create();
    int threads_before = threads_now();
    /* 100 tasks all running at shutdown: the cap raised (the scheduler has its own tests) */
    if (sim_load_plugins(h, dir, "{\"poll_interval_ms\":50,\"shell_kill_grace_ms\":200,\"max_running_agents\":1000}") != 1)
        bail_out("cannot load ocbg: %s", sim_load_error(h));
    char *parent = sim_session_new(h, NULL, "main");
    char *other = sim_session_new(h, NULL, "other");
    sim_script(h, "rel-load#", "{\"steps\":[{\"tool\":\"read\",\"ms\":1},{\"hang\":true}]}", 0);
    sim_script(h, "rel-quick#", "{\"steps\":[{\"wait_ms\":20},{\"reply\":\"quick result\"}]}", 0);

    /* 100 running tasks over two conversations. */
    char *ids[NTASKS];
    int launched = 0;
    for (int i = 0; i < NTASKS; i++) {
        char args[160];
        snprintf(args, sizeof args, "{\"description\":\"Load %d\",\"prompt\":\"rel-load# %d\",\"agent\":\"general\"}",
                 i, i);
        int rc;
        char *out = rel_tool(h, i % 4 ? parent : other, "background_task", args, &rc);
        ids[i] = rel_find_id(out, "bg_");
        launched += rc == 0 && ids[i];
        free(out);
    }
    is_int(launched, NTASKS, "%d tasks launched", NTASKS);
    char *out = rel_tool(h, parent, "background_list", "{\"status\":\"running\"}", NULL);
    like(out, "Total: 75 tasks (75 running)", "75 running in the main conversation");
    free(out);

    /* Shell commands running, each with a grandchild in its process group. */
    pids_arg shells[NSHELL];
    for (int i = 0; i < NSHELL; i++) {
        int rc;
        out = rel_tool(h, parent, "Bash",
                       "{\"command\":\"sleep 300 & echo GRANDCHILD=$!; echo SHELL=$$; wait\",\"run_in_background\":true}",
                       &rc);
        shells[i] = (pids_arg){parent, rel_find_id(out, "bg_"), 0, 0};
        free(out);
        int up = rc == 0 && shells[i].id && sim_wait(h, has_pids, &shells[i], tap_timeout_ms(5000)) == 0;
        ok(up, "shell %d running (pid %ld, grandchild %ld)", i, shells[i].pid, shells[i].gpid);
    }

    /* Blocked waiters of every kind. */
    char args[512];
    sim_call *waiters[8];
    const char *what[8];
    int nw = 0;
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":600}", ids[1]);
    what[nw] = "background_output block", waiters[nw++] = sim_tool_start(h, parent, "background_output", args);
    snprintf(args, sizeof args, "{\"task_ids\":[\"%s\",\"%s\"],\"timeout\":600}", ids[2], ids[3]);
    what[nw] = "background_block", waiters[nw++] = sim_tool_start(h, parent, "background_block", args);
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":600000}", ids[5]);
    what[nw] = "TaskOutput (agent)", waiters[nw++] = sim_tool_start(h, parent, "TaskOutput", args);
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":600000}", shells[0].id);
    what[nw] = "TaskOutput (shell)", waiters[nw++] = sim_tool_start(h, parent, "TaskOutput", args);
    what[nw] = "Task foreground", waiters[nw++] = sim_tool_start(
        h, parent, "Task", "{\"description\":\"Fg\",\"prompt\":\"rel-load# fg\",\"subagent_type\":\"general\"}");
    what[nw] = "Bash foreground", waiters[nw++] =
        sim_tool_start(h, parent, "Bash", "{\"command\":\"sleep 300\",\"timeout\":600000}");
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":600}", ids[0]);
    what[nw] = "background_output block (other)", waiters[nw++] = sim_tool_start(h, other, "background_output", args);

    /* Notifications in flight: quick tasks end while the host is slow to take them. */
    for (int i = 0; i < 10; i++) {
        snprintf(args, sizeof args, "{\"description\":\"Quick %d\",\"prompt\":\"rel-quick# %d\",\"agent\":\"explore\"}",
                 i, i);
        free(rel_tool(h, parent, "background_task", args, NULL));
    }
    size_t prompts = sim_calls(h, "session_prompt", parent);
    sim_slow(h, "session_prompt", 100);
    ok(sim_wait_calls(h, "session_prompt", parent, prompts + 1, tap_timeout_ms(5000)) == 0,
       "a notification push has begun (the host takes 100 ms per prompt)");
    /* The waiters are started; they block (none may have returned). */
    int blocked = 0;
    for (int i = 0; i < nw; i++)
        blocked += !sim_tool_done(waiters[i]);
    is_int(blocked, nw, "all %d waiters blocked", nw);

    size_t pushed_before = sim_calls(h, "session_prompt", parent);
    int64_t t0 = rel_now_ms();
    sim_unload_plugins(h);
    int64_t took = rel_now_ms() - t0;
    ok(took < tap_timeout_ms(3000), "shutdown (and dlclose) took %lld ms", (long long)took);
    printf("shutdown_ms: %lld\n", (long long)took);
    diag("notifications pushed: %zu before the shutdown, %zu after it", pushed_before - prompts,
         sim_calls(h, "session_prompt", parent) - prompts);

    for (int i = 0; i < nw; i++) {
        int rc = 0;
        char *text = NULL;
        int w = sim_tool_wait(waiters[i], tap_timeout_ms(2000), &rc, &text);
        is_int(w, 0, "%s released", what[i]);
        if (w == 0) {
            is_int(rc, -ECANCELED, "%s: -ECANCELED", what[i]);
            like(text, "shutting down", "%s: says the plugin is shutting down", what[i]);
        }
        free(text);
        sim_tool_free(waiters[i]);
    }

    /* No child left: every direct child reaped, every grandchild gone. */
    errno = 0;
    pid_t z = waitpid(-1, NULL, WNOHANG);
    ok(z == -1 && errno == ECHILD, "no child process left, not even a zombie (waitpid: %d, %s)", (int)z,
       strerror(errno));
    for (int i = 0; i < NSHELL; i++) {
        ok(shells[i].pid > 0 && kill((pid_t)shells[i].pid, 0) == -1 && errno == ESRCH, "shell %d's process %ld gone", i,
           shells[i].pid);
        ok(shells[i].gpid > 0 && process_gone(shells[i].gpid, tap_timeout_ms(2000)), "shell %d's grandchild %ld gone",
           i, shells[i].gpid);
    }
    is_int(threads_now(), threads_before, "every plugin thread joined (only the host's remain)");

    /* The host lives on without the plugin. */
    int rc = sim_tool(h, parent, "background_list", "{}", &out);
    ok(rc != 0, "a tool call after unload is refused (rc %d)", rc);
    free(out);
    sim_emit(h, "{\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"ses_x\"}}");
    ok(sim_events_flush(h, tap_timeout_ms(2000)) == 0, "events flow with no plugin");

    for (int i = 0; i < NTASKS; i++)
        free(ids[i]);
    for (int i = 0; i < NSHELL; i++)
        free((char *)shells[i].id);
    free(parent);
    free(other);
    sim_destroy(h);
    return done_testing();
}

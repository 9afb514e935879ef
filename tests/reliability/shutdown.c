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

/* What the shutdown is put under, kept for the checks after it. */
typedef struct load {
    sim_host *h;
    char *parent, *other;
    char *ids[NTASKS];
    pids_arg shells[NSHELL];
    sim_call *waiters[8];
    const char *what[8];
    int nw;
} load;

/* 100 running tasks over two conversations, and shell commands running, each
 * with a grandchild in its process group. */
static void launch_load(load *l)
{
    sim_host *h = l->h;
    int launched = 0;
    for (int i = 0; i < NTASKS; i++) {
        char args[160];
        snprintf(args, sizeof args, "{\"description\":\"Load %d\",\"prompt\":\"rel-load# %d\",\"agent\":\"general\"}",
                 i, i);
        int rc;
        char *out = rel_tool(h, i % 4 ? l->parent : l->other, "background_task", args, &rc);
        l->ids[i] = t_find_id(out, "bg_");
        launched += rc == 0 && l->ids[i];
        free(out);
    }
    is_int(launched, NTASKS, "%d tasks launched", NTASKS);
    char *out = rel_tool(h, l->parent, "background_list", "{\"status\":\"running\"}", NULL);
    like(out, "Total: 75 tasks (75 running)", "75 running in the main conversation");
    free(out);

    for (int i = 0; i < NSHELL; i++) {
        int rc;
        out = rel_tool(
            h, l->parent, "Bash",
            "{\"command\":\"sleep 300 & echo GRANDCHILD=$!; echo SHELL=$$; wait\",\"run_in_background\":true}", &rc);
        l->shells[i] = (pids_arg){l->parent, t_find_id(out, "bg_"), 0, 0};
        free(out);
        int up = rc == 0 && l->shells[i].id && sim_wait(h, has_pids, &l->shells[i], tap_timeout_ms(5000)) == 0;
        ok(up, "shell %d running (pid %ld, grandchild %ld)", i, l->shells[i].pid, l->shells[i].gpid);
    }
}

/* Blocked waiters of every kind. */
static void start_waiters(load *l)
{
    sim_host *h = l->h;
    const char *parent = l->parent;
    char **ids = l->ids;
    char args[512];
    int nw = 0;
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":600}", ids[1]);
    l->what[nw] = "background_output block", l->waiters[nw++] = sim_tool_start(h, parent, "background_output", args);
    snprintf(args, sizeof args, "{\"task_ids\":[\"%s\",\"%s\"],\"timeout\":600}", ids[2], ids[3]);
    l->what[nw] = "background_block", l->waiters[nw++] = sim_tool_start(h, parent, "background_block", args);
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":600000}", ids[5]);
    l->what[nw] = "TaskOutput (agent)", l->waiters[nw++] = sim_tool_start(h, parent, "TaskOutput", args);
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":600000}", l->shells[0].id);
    l->what[nw] = "TaskOutput (shell)", l->waiters[nw++] = sim_tool_start(h, parent, "TaskOutput", args);
    l->what[nw] = "Task foreground",
    l->waiters[nw++] = sim_tool_start(
        h, parent, "Task", "{\"description\":\"Fg\",\"prompt\":\"rel-load# fg\",\"subagent_type\":\"general\"}");
    l->what[nw] = "Bash foreground",
    l->waiters[nw++] = sim_tool_start(h, parent, "Bash", "{\"command\":\"sleep 300\",\"timeout\":600000}");
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":600}", ids[0]);
    l->what[nw] = "background_output block (other)",
    l->waiters[nw++] = sim_tool_start(h, l->other, "background_output", args);
    l->nw = nw;
}

/* Every waiter released with -ECANCELED and a clear text. */
static void check_released(load *l)
{
    for (int i = 0; i < l->nw; i++) {
        int rc = 0;
        char *text = NULL;
        int w = sim_tool_wait(l->waiters[i], tap_timeout_ms(2000), &rc, &text);
        is_int(w, 0, "%s released", l->what[i]);
        if (w == 0) {
            is_int(rc, -ECANCELED, "%s: -ECANCELED", l->what[i]);
            like(text, "shutting down", "%s: says the plugin is shutting down", l->what[i]);
        }
        free(text);
        sim_tool_free(l->waiters[i]);
    }
}

/* No child left: every direct child reaped, every grandchild gone; every
 * plugin thread joined. */
static void check_nothing_left(load *l, int threads_before)
{
    errno = 0;
    pid_t z = waitpid(-1, NULL, WNOHANG);
    ok(z == -1 && errno == ECHILD, "no child process left, not even a zombie (waitpid: %d, %s)", (int)z,
       strerror(errno));
    for (int i = 0; i < NSHELL; i++) {
        ok(l->shells[i].pid > 0 && kill((pid_t)l->shells[i].pid, 0) == -1 && errno == ESRCH,
           "shell %d's process %ld gone", i, l->shells[i].pid);
        ok(l->shells[i].gpid > 0 && process_gone(l->shells[i].gpid, tap_timeout_ms(2000)),
           "shell %d's grandchild %ld gone", i, l->shells[i].gpid);
    }
    is_int(threads_now(), threads_before, "every plugin thread joined (only the host's remain)");
}

int main(void)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir)
        bail_out("OCBG_PLUGIN_DIR is not set");
    load l = {.h = sim_create()};
    sim_host *h = l.h;
    int threads_before = threads_now();
    /* 100 tasks all running at shutdown: the cap raised (the scheduler has its own tests) */
    if (sim_load_plugins(h, dir, "{\"poll_interval_ms\":50,\"shell_kill_grace_ms\":200,\"max_running_agents\":1000}") !=
        1)
        bail_out("cannot load ocbg: %s", sim_load_error(h));
    l.parent = sim_session_new(h, NULL, "main");
    l.other = sim_session_new(h, NULL, "other");
    sim_script(h, "rel-load#", "{\"steps\":[{\"tool\":\"read\",\"ms\":1},{\"hang\":true}]}", 0);
    sim_script(h, "rel-quick#", "{\"steps\":[{\"wait_ms\":20},{\"reply\":\"quick result\"}]}", 0);
    launch_load(&l);
    start_waiters(&l);

    /* Notifications in flight: quick tasks end while the host is slow to take them. */
    char args[512];
    for (int i = 0; i < 10; i++) {
        snprintf(args, sizeof args, "{\"description\":\"Quick %d\",\"prompt\":\"rel-quick# %d\",\"agent\":\"explore\"}",
                 i, i);
        free(rel_tool(h, l.parent, "background_task", args, NULL));
    }
    size_t prompts = sim_calls(h, "session_prompt", l.parent);
    sim_slow(h, "session_prompt", 100);
    ok(sim_wait_calls(h, "session_prompt", l.parent, prompts + 1, tap_timeout_ms(5000)) == 0,
       "a notification push has begun (the host takes 100 ms per prompt)");
    /* The waiters are started; they block (none may have returned). */
    int blocked = 0;
    for (int i = 0; i < l.nw; i++)
        blocked += !sim_tool_done(l.waiters[i]);
    is_int(blocked, l.nw, "all %d waiters blocked", l.nw);

    size_t pushed_before = sim_calls(h, "session_prompt", l.parent);
    int64_t t0 = rel_now_ms();
    sim_unload_plugins(h);
    int64_t took = rel_now_ms() - t0;
    ok(took < tap_timeout_ms(3000), "shutdown (and dlclose) took %lld ms", (long long)took);
    printf("shutdown_ms: %lld\n", (long long)took);
    diag("notifications pushed: %zu before the shutdown, %zu after it", pushed_before - prompts,
         sim_calls(h, "session_prompt", l.parent) - prompts);
    check_released(&l);
    check_nothing_left(&l, threads_before);

    /* The host lives on without the plugin. */
    char *out = NULL;
    int rc = sim_tool(h, l.parent, "background_list", "{}", &out);
    ok(rc != 0, "a tool call after unload is refused (rc %d)", rc);
    free(out);
    sim_emit(h, "{\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"ses_x\"}}");
    ok(sim_events_flush(h, tap_timeout_ms(2000)) == 0, "events flow with no plugin");

    for (int i = 0; i < NTASKS; i++)
        free(l.ids[i]);
    for (int i = 0; i < NSHELL; i++)
        free((char *)l.shells[i].id);
    free(l.parent);
    free(l.other);
    sim_destroy(h);
    return done_testing();
}

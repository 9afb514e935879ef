/* bench_hostcalls — what the plugin costs the host while tasks run and while
 * nothing runs: host calls per minute in steady state (10 running tasks with
 * events delivered, with every event lost, and 100 running tasks, to show the
 * cost per poll tick does not grow with the number of tasks), and the
 * wake-ups of the plugin's own threads with no active task.
 *
 * The simulated host answers at once; the plugin (ocbg.so from
 * $OCBG_PLUGIN_DIR) runs with its default options (poll_interval_ms 1000) but
 * for max_running_agents, raised so that all 100 tasks run.
 * Host calls: the sim's call record, "log" excluded, counted over windows that
 * start and end on a poll tick (a session_status call). Wake-ups: the
 * voluntary + involuntary context switches (/proc/self/task/TID/status) of the
 * threads that loading the plugin created. Prints "name: value unit". */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simhost.h"

#define MAX_THREADS 64
#define TICKS 3

typedef struct tidset {
    int tid[MAX_THREADS];
    int n;
} tidset;

static void list_tids(tidset *s)
{
    s->n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) && s->n < MAX_THREADS;)
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
            s->tid[s->n++] = atoi(e->d_name);
    closedir(d);
}

static int has_tid(const tidset *s, int tid)
{
    for (int i = 0; i < s->n; i++)
        if (s->tid[i] == tid)
            return 1;
    return 0;
}

/* Context switches of one thread so far (voluntary + involuntary). */
static long switches(int tid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    long total = 0, v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
            total += v;
    }
    fclose(f);
    return total;
}

static tidset plugin_threads;

static long plugin_switches(void)
{
    long total = 0;
    for (int i = 0; i < plugin_threads.n; i++)
        total += switches(plugin_threads.tid[i]);
    return total;
}

static size_t host_calls(sim_host *h)
{
    return sim_calls(h, NULL, NULL) - sim_calls(h, "log", NULL);
}

/* Idle: `windows` windows of `ms` each; medians of wake-ups and host calls per minute. */
static void idle_windows(sim_host *h, int windows, int ms, double *wakeups_min, double *calls_min)
{
    double w[16], c[16];
    for (int i = 0; i < windows; i++) {
        long s0 = plugin_switches();
        size_t c0 = host_calls(h);
        int64_t t0 = bench_ns();
        bench_sleep_ms(ms);
        double min = (double)(bench_ns() - t0) / 60e9;
        w[i] = (double)(plugin_switches() - s0) / min;
        c[i] = (double)(host_calls(h) - c0) / min;
    }
    *wakeups_min = bench_median(w, (size_t)windows);
    *calls_min = bench_median(c, (size_t)windows);
}

/* Steady state: a window of TICKS poll ticks, from one session_status call to
 * the TICKS-th after it. Host calls per minute over the window, the median of
 * the calls per tick, and the plugin threads' wake-ups per minute. Returns -1
 * when no tick came (the plugin does not poll). */
static int tick_window(sim_host *h, double *calls_min, double *per_tick, double *wakeups_min)
{
    size_t s = sim_calls(h, "session_status", NULL);
    if (sim_wait_calls(h, "session_status", NULL, s + 1, 5000) != 0)
        return -1;
    int64_t t0 = bench_ns();
    size_t c0 = host_calls(h), prev = c0;
    long w0 = plugin_switches();
    double ticks[TICKS];
    for (int k = 0; k < TICKS; k++) {
        if (sim_wait_calls(h, "session_status", NULL, s + 2 + (size_t)k, 5000) != 0)
            return -1;
        size_t c = host_calls(h);
        ticks[k] = (double)(c - prev);
        prev = c;
    }
    double min = (double)(bench_ns() - t0) / 60e9;
    *calls_min = (double)(prev - c0) / min;
    *wakeups_min = (double)(plugin_switches() - w0) / min;
    *per_tick = bench_median(ticks, TICKS);
    return 0;
}

static int launch(sim_host *h, const char *parent, const char *prompt)
{
    char args[256], *out = NULL;
    snprintf(args, sizeof args, "{\"description\":\"bench\",\"prompt\":\"%s\",\"agent\":\"general\"}", prompt);
    int rc = sim_tool(h, parent, "background_task", args, &out);
    if (rc != 0)
        fprintf(stderr, "bench_hostcalls: launch failed: %s\n", out ? out : "?");
    free(out);
    return rc;
}

static void report_steady(sim_host *h, const char *label)
{
    double calls_min, per_tick, wakeups_min;
    if (tick_window(h, &calls_min, &per_tick, &wakeups_min) != 0) {
        printf("host_calls_per_min_%s: n/a (no poll tick within 5 s)\n", label);
        return;
    }
    printf("host_calls_per_min_%s: %.1f calls/min\n", label, calls_min);
    printf("host_calls_per_tick_%s: %.0f calls\n", label, per_tick);
    printf("wakeups_per_min_%s: %.1f wakeups/min\n", label, wakeups_min);
}

int main(void)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir)
        dir = "build/plugin-dir";
    sim_host *h = sim_create();
    if (!h) {
        fprintf(stderr, "bench_hostcalls: cannot create the simulated host\n");
        return 1;
    }
    tidset before, after;
    list_tids(&before);
    if (sim_load_plugins(h, dir, "{\"max_running_agents\":1000}") < 1) { /* 100 tasks all running */
        fprintf(stderr, "bench_hostcalls: no plugin loaded from %s: %s\n", dir, sim_load_error(h));
        sim_destroy(h);
        return 1;
    }
    list_tids(&after);
    for (int i = 0; i < after.n; i++)
        if (!has_tid(&before, after.tid[i]))
            plugin_threads.tid[plugin_threads.n++] = after.tid[i];
    printf("plugin_threads: %d threads\n", plugin_threads.n);

    /* Idle, freshly loaded (after the new threads' first sleep). */
    double w, c;
    bench_sleep_ms(200);
    idle_windows(h, 1, 1000, &w, &c);
    printf("idle_wakeups_per_min_fresh: %.1f wakeups/min\n", w);

    /* One task runs and finishes (its notification delivered); then idle. */
    char *p0 = sim_session_new(h, NULL, "bench idle");
    if (launch(h, p0, "quick") == 0) {
        sim_wait_calls(h, "session_prompt", p0, 1, 5000);
        sim_wait_idle(h, p0, 5000);
    }
    bench_sleep_ms(100);
    idle_windows(h, 3, 1000, &w, &c);
    printf("idle_wakeups_per_min: %.1f wakeups/min\n", w);
    printf("idle_host_calls_per_min: %.1f calls/min\n", c);

    /* 10 running tasks (their sub-agents never finish). */
    sim_script(h, "HANG", "{\"steps\":[{\"hang\":true}]}", 0);
    char *p1 = sim_session_new(h, NULL, "bench running");
    char prompt[32];
    for (int i = 0; i < 10; i++) {
        snprintf(prompt, sizeof prompt, "HANG %d", i);
        launch(h, p1, prompt);
    }
    report_steady(h, "10_tasks");

    /* Every event lost: only the poll sees the tasks. */
    sim_event_faults(h, 7, 1.0, 0, 0, NULL);
    report_steady(h, "10_tasks_events_lost");

    /* 100 running tasks, events still lost. */
    for (int i = 10; i < 100; i++) {
        snprintf(prompt, sizeof prompt, "HANG %d", i);
        launch(h, p1, prompt);
    }
    report_steady(h, "100_tasks_events_lost");

    sim_event_faults(h, 0, 0, 0, 0, NULL);
    free(p0);
    free(p1);
    sim_destroy(h);
    return 0;
}

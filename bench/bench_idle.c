/* bench_idle — what the plugin costs while nothing runs: the wake-ups and
 * host calls of the plugin with no active task, just after loading and
 * after a task has run and its notification was delivered.
 *
 * The simulated host answers at once; the plugin (ocbg.so from
 * $OCBG_PLUGIN_DIR) runs with its default options. Wake-ups: the voluntary +
 * involuntary context switches (/proc/self/task/TID/status) of the threads
 * that loading the plugin created; host calls: the sim's call record ("log"
 * excluded). Prints "name: value unit". */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simhost.h"

#define MAX_THREADS 64

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

/* Launch a task from parent with this prompt; its id (malloc'd), or NULL. */
static char *launch(sim_host *h, const char *parent, const char *prompt)
{
    char args[256], *out = NULL;
    snprintf(args, sizeof args, "{\"description\":\"bench\",\"prompt\":\"%s\",\"agent\":\"general\"}", prompt);
    int rc = sim_tool(h, parent, "background_task", args, &out);
    char *id = NULL, *at = out ? strstr(out, "bg_") : NULL;
    if (rc == 0 && at)
        id = strndup(at, strspn(at + 3, "0123456789abcdef") + 3);
    else
        fprintf(stderr, "bench_idle: launch failed: %s\n", out ? out : "?");
    free(out);
    return id;
}

int main(void)
{
    const char *plugin_dir = getenv("OCBG_PLUGIN_DIR");
    if (!plugin_dir)
        plugin_dir = "build/plugin-dir";
    sim_host *h = sim_create();
    if (!h) {
        fprintf(stderr, "bench_idle: cannot create the simulated host\n");
        return 1;
    }
    tidset before, after;
    list_tids(&before);
    if (sim_load_plugins(h, plugin_dir, NULL) < 1) {
        fprintf(stderr, "bench_idle: no plugin loaded from %s: %s\n", plugin_dir, sim_load_error(h));
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
    char *id = launch(h, p0, "quick");
    if (id) {
        sim_wait_calls(h, "session_prompt", p0, 1, 5000);
        sim_wait_idle(h, p0, 5000);
    }
    free(id);
    bench_sleep_ms(100);
    idle_windows(h, 3, 1000, &w, &c);
    printf("idle_wakeups_per_min: %.1f wakeups/min\n", w);
    printf("idle_host_calls_per_min: %.1f calls/min\n", c);
    free(p0);
    sim_destroy(h);

    return 0;
}

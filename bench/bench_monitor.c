/* bench_monitor — what one monitor carries, on the real path: a command
 * printing fast, its output read by the shell thread and fed into the watch
 * under the engine lock, events taken by the worker and pushed as waking
 * notifications into the simulated host's parent session.
 *
 * monitor_events_per_s: the watch's bounds opened (an event a line, no rate
 *   bound, no flood stop, no total), `seq 1 20000`: events pushed per second
 *   of wall time from the call to the 20,000th notification in the host.
 *   The path's capacity; the default bounds let 12 events a minute through.
 *   The median of RUNS runs, each on a fresh host; _worst: the slowest run.
 *   Three threads hand each event on (the shell thread, the worker, the
 *   simulated host's turn thread): on a 2-core machine that other work
 *   shares, a run's figure follows how often they find a core. Most of a
 *   run's CPU is the simulated host's (perf): before each woken turn it
 *   prints the whole, growing history for transform_messages (~40%), and it
 *   parses each prompt's body; so the figure bounds ocbg's own capacity
 *   from below.
 * monitor_cpu_us_per_event: the process's CPU time (user + system: the
 *   plugin's threads and the simulated host's, not the command) for a run,
 *   per event (median of the runs).
 * monitor_load_avg: the 1-minute load average when the runs began.
 * monitor_flood_cpu_pct: the default bounds, a command printing as fast as
 *   it can (`yes`): the process's CPU time over 3 s of wall time, in percent
 *   of one core, while the watch holds the flood back (12 events told, the
 *   rest counted). What a flood costs before the 30 s stop.
 * monitor_flood_lines_per_s: the lines the watch read in those 3 s, per
 *   second.
 * shell_flood_cpu_pct, shell_flood_lines_per_s: the same `yes` as a plain
 *   background Bash (no watch): what reading the flood costs without one.
 *
 * Checked: every event arrives, in order of its number; a flood's events are
 *   at most the rate's 12; else it exits 1. Prints "name: value unit". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "engine/engine.h"
#include "engine/monitor.h"
#include "simhost.h"

#define EVENTS 20000
#define RUNS 5

static void fail(const char *what)
{
    fprintf(stderr, "bench_monitor: %s\n", what);
    exit(1);
}

static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static sim_host *host(void)
{
    sim_host *h = sim_create();
    if (!h || sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", "{\"store\":false}") != 1)
        fail("the plugin does not load");
    return h;
}

static char *start(sim_host *h, const char *s, const char *command)
{
    char args[256], *out = NULL;
    snprintf(args, sizeof args, "{\"command\":\"%s\",\"description\":\"bench\",\"timeout_ms\":1800000}", command);
    if (sim_tool(h, s, "background_monitor", args, &out) != 0)
        fail(out ? out : "background_monitor failed");
    char *id = strstr(out, "bg_");
    if (!id)
        fail("no task id");
    id = strndup(id, 11);
    free(out);
    return id;
}

/* One run on a fresh host: its events a second and CPU us an event. */
static void events_run(double *per_s, double *cpu_per_event)
{
    sim_host *h = host();
    engine *eng = sim_plugin(h, 0)->userdata;
    engine_lock(eng);
    watch_limits open = {.quiet_ms = 0,
                         .span_ms = 0,
                         .max_lines = 1,
                         .max_bytes = 4000,
                         .per_minute = EVENTS + 10,
                         .flood_ms = INT64_MAX / 4,
                         .max_events = EVENTS + 10};
    monitor_set_limits(eng, &open);
    engine_unlock(eng);
    char *s = sim_session_new(h, NULL, "main");
    int64_t t0 = bench_ns(), c0 = cpu_us();
    char cmd[64];
    snprintf(cmd, sizeof cmd, "seq 1 %d", EVENTS);
    char *id = start(h, s, cmd);
    int64_t deadline = t0 + 300000000000LL;
    /* The events, then "stream ended", counted by the host's per-function
     * counter: sim_calls scans the whole call record under the host's lock
     * (every 2 ms: ~7% of a run's CPU, and the lock the host's calls take). */
    while (sim_calls_started(h, "session_prompt") < EVENTS + 1) {
        if (bench_ns() > deadline)
            fail("the events did not all arrive in 300 s");
        bench_sleep_ms(2);
    }
    int64_t wall = bench_ns() - t0, cpu = cpu_us() - c0;
    if (sim_wait_calls(h, "session_prompt", s, EVENTS + 1, 10000) != 0)
        fail("the notifications did not all reach the parent");
    char want[128];
    snprintf(want, sizeof want, ", event %d:\\n%d\\n", EVENTS, EVENTS);
    char *body = sim_call_body(h, "session_prompt", s, EVENTS - 1);
    if (!body || !strstr(body, want))
        fail("the last event is not the last line");
    free(body);
    *per_s = EVENTS / ((double)wall / 1e9);
    *cpu_per_event = (double)cpu / EVENTS;
    free(id);
    free(s);
    sim_destroy(h);
}

static void events_per_s(void)
{
    double per_s[RUNS], cpu[RUNS], load = -1;
    getloadavg(&load, 1);
    for (int i = 0; i < RUNS; i++)
        events_run(&per_s[i], &cpu[i]);
    printf("monitor_events_per_s: %.0f events/s\n", bench_median(per_s, RUNS));
    printf("monitor_events_per_s_worst: %.0f events/s\n", per_s[0]); /* sorted by bench_median */
    printf("monitor_cpu_us_per_event: %.1f us\n", bench_median(cpu, RUNS));
    printf("monitor_load_avg: %.2f load\n", load);
}

/* `yes` for 3 s, watched by a monitor or run as a plain background Bash. */
static void flood_cpu(bool watched)
{
    sim_host *h = host();
    engine *eng = sim_plugin(h, 0)->userdata;
    char *s = sim_session_new(h, NULL, "main");
    char *id = NULL, *out = NULL;
    if (watched) {
        id = start(h, s, "yes");
    } else {
        if (sim_tool(h, s, "Bash", "{\"command\":\"yes\",\"run_in_background\":true}", &out) != 0 ||
            !strstr(out, "bg_"))
            fail("Bash yes failed");
        id = strndup(strstr(out, "bg_"), 11);
        free(out);
    }
    int64_t t0 = bench_ns(), c0 = cpu_us();
    bench_sleep_ms(3000);
    int64_t wall = bench_ns() - t0, cpu = cpu_us() - c0;
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    uint64_t bytes = t && t->shell ? t->shell->out.total : 0;
    engine_unlock(eng);
    size_t events = sim_calls(h, "session_prompt", s);
    if (events > 12)
        fail("a flood gave more events than the rate allows");
    const char *name = watched ? "monitor" : "shell";
    printf("%s_flood_cpu_pct: %.1f %%\n", name, 100.0 * (double)cpu * 1000 / (double)wall);
    printf("%s_flood_lines_per_s: %.0f lines/s\n", name, (double)bytes / 2 / ((double)wall / 1e9));
    char args[64];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
    sim_tool(h, s, "background_cancel", args, &out);
    free(out);
    free(id);
    free(s);
    sim_destroy(h);
}

/* `bench_monitor events`: the events' figures only (to profile that path). */
int main(int argc, char **argv)
{
    events_per_s();
    if (argc > 1 && strcmp(argv[1], "events") == 0)
        return 0;
    flood_cpu(true);
    flood_cpu(false);
    return 0;
}

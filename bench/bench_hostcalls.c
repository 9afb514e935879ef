/* bench_hostcalls — what the plugin costs the host while tasks run (while
 * nothing runs: bench_idle): host calls per minute with 10 and 1,000 running
 * tasks whose events arrive, whose events are all lost (the idles with
 * them), and whose events are lost while the status map leaves their
 * sessions out; the status maps asked while 10 tasks make a tool call a
 * second each, out of step; the message reads in the first 10 s after 1,000
 * silent running tasks vanish from the status map; the time to find a lost
 * idle (with the turn-ending events lost, and with every event lost). An
 * argument (names, comma-separated) runs only those scenarios.
 *
 * The simulated host answers at once; the plugin (ocbg.so from
 * $OCBG_PLUGIN_DIR) runs with its default options (poll_interval_ms 1000) but
 * for max_running_agents, raised so that all 1,000 tasks run. Each scenario
 * has its own host and plugin instance.
 * Host calls: the sim's call record ("log" excluded), counted over a window
 * of real time after the scenario has settled, scaled to a minute (the
 * plugin's worker ticks in real time: there is no simulated clock for it).
 * After each window the tasks end and every one is checked to have
 * completed (background_output says so). Prints "name: value unit". */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simhost.h"

static size_t host_calls(sim_host *h)
{
    return sim_calls(h, NULL, NULL) - sim_calls(h, "log", NULL);
}

#define OPTIONS "{\"max_running_agents\":1000}"
/* The events that end a turn: both idles, and the stored answer that ends it
 * (message.updated, which starts a check early): all lost. */
#define IDLE_EVENTS "session.idle,session.status,message.updated"
#define STEP_MS 600 /* an alive task's tool step: a tool event at least this often */

static const char *plugin_dir;
static const char *only; /* argv[1]: the scenarios to run (names, comma-separated); NULL: all */

static int wanted(const char *name)
{
    if (!only)
        return 1;
    size_t len = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += len)
        if ((p == only || p[-1] == ',') && (p[len] == '\0' || p[len] == ','))
            return 1;
    return 0;
}

static sim_host *host_new(void)
{
    sim_host *h = sim_create();
    if (!h || sim_load_plugins(h, plugin_dir, OPTIONS) < 1) {
        fprintf(stderr, "bench_hostcalls: no plugin loaded from %s\n", plugin_dir);
        exit(1);
    }
    return h;
}

/* Launch a task from parent with this prompt; its id (malloc'd), or NULL. */
static char *launch(sim_host *h, const char *parent, const char *prompt)
{
    char args[256], *out = NULL;
    snprintf(args, sizeof args, "{\"description\":\"bench\",\"prompt\":\"%s\",\"agent\":\"general\"}", prompt);
    int rc = sim_tool(h, parent, "background_task", args, &out);
    char *id = NULL, *at = out ? strstr(out, "bg_") : NULL;
    if (rc == 0 && at) {
        size_t n = strspn(at + 3, "0123456789abcdef") + 3;
        id = strndup(at, n);
    } else {
        fprintf(stderr, "bench_hostcalls: launch failed: %s\n", out ? out : "?");
    }
    free(out);
    return id;
}

/* n tasks from a new parent, each prompt "<tag> <i>" (a script matched on
 * tag). The ids are malloc'd. */
static char **launch_n(sim_host *h, const char *parent, const char *tag, int n)
{
    char **ids = calloc((size_t)n, sizeof *ids), prompt[64];
    for (int i = 0; i < n; i++) {
        snprintf(prompt, sizeof prompt, "%s %d", tag, i);
        ids[i] = launch(h, parent, prompt);
    }
    return ids;
}

/* A script: `tools` tool steps of STEP_MS each (wait_ms between steps:
 * a silent model call), then a reply. malloc'd. */
static char *steps_script(int tools, int wait_ms)
{
    size_t cap = (size_t)tools * 128 + 128;
    char *s = malloc(cap);
    size_t len = (size_t)snprintf(s, cap, "{\"steps\":[");
    for (int i = 0; i < tools; i++) {
        len += (size_t)snprintf(s + len, cap - len,
                                "{\"tool\":\"read\",\"input\":{\"n\":%d},\"output\":\"x\",\"ms\":%d},", i, STEP_MS);
        if (wait_ms > 0)
            len += (size_t)snprintf(s + len, cap - len, "{\"wait_ms\":%d},", wait_ms);
    }
    snprintf(s + len, cap - len, "{\"reply\":\"bench done\"}]}");
    return s;
}

/* Host calls per minute over a window of ms of real time. */
static double calls_per_min(sim_host *h, int ms)
{
    size_t c0 = host_calls(h);
    int64_t t0 = bench_ns();
    bench_sleep_ms(ms);
    return (double)(host_calls(h) - c0) / ((double)(bench_ns() - t0) / 60e9);
}

/* Wait (up to timeout_ms) until every task says it completed. Returns
 * how many did. */
static int completed(sim_host *h, const char *parent, char **ids, int n, int timeout_ms)
{
    int64_t end = bench_ns() + (int64_t)timeout_ms * 1000000;
    int done = 0;
    for (int i = 0; i < n; i++) {
        for (;;) {
            char args[96], *out = NULL;
            snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", ids[i] ? ids[i] : "none");
            sim_tool(h, parent, "background_output", args, &out);
            int ok = out && strstr(out, ": completed\n") != NULL;
            free(out);
            if (ok) {
                done++;
                break;
            }
            if (bench_ns() > end)
                break;
            bench_sleep_ms(50);
        }
    }
    return done;
}

static void free_ids(char **ids, int n)
{
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* The figure, and how many of the scenario's tasks then completed (all
 * must: a figure from tasks that never finish would prove nothing). */
static void report(const char *name, double per_min, int done, int n)
{
    printf("%s: %.1f calls/min (then %d of %d tasks completed)\n", name, per_min, done, n);
}

/* Events arrive: each task makes a tool call every STEP_MS (wait_ms 0), or
 * a tool call then a silent model call of wait_ms. Settled for settle_ms
 * (the poll's gap grows), then a window; then the tasks end (idle events
 * delivered). */
static void events_alive(int n, int wait_ms, const char *name)
{
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench alive");
    int settle = 8000, window = 16000;
    int tools = (settle + window + 4000) / (STEP_MS + wait_ms);
    char *script = steps_script(tools, wait_ms);
    sim_script(h, "ALIVE", script, 0);
    char **ids = launch_n(h, parent, "ALIVE", n);
    bench_sleep_ms(settle);
    double per_min = calls_per_min(h, window);
    report(name, per_min, completed(h, parent, ids, n, 60000), n);
    free_ids(ids, n);
    free(script);
    free(parent);
    sim_destroy(h);
}

/* Every event lost while the tasks run (busy in the status map); their
 * idles are lost with the rest when they end. */
static void idle_lost(int n, const char *name)
{
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench lost");
    sim_events_flush(h, 5000);
    sim_event_faults(h, 7, 1.0, 0, 0, NULL);
    sim_script(h, "LOST", "{\"steps\":[{\"wait_ms\":12000},{\"reply\":\"bench done\"}]}", 0);
    char **ids = launch_n(h, parent, "LOST", n);
    bench_sleep_ms(2000);
    double per_min = calls_per_min(h, 8000);
    report(name, per_min, completed(h, parent, ids, n, 60000), n);
    free_ids(ids, n);
    free(parent);
    sim_destroy(h);
}

static int reads_at_least(sim_host *h, void *arg)
{
    return sim_calls(h, "session_messages", NULL) >= *(size_t *)arg;
}

/* Every event lost and the status map lists no session (busy or not):
 * once each task's first check has found it running (at most 10 s: they
 * come one per tick), a window; then the map lists busy sessions again and
 * the tasks end (their idles lost). */
static void missing(int n, const char *name)
{
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench missing");
    sim_events_flush(h, 5000);
    sim_event_faults(h, 7, 1.0, 0, 0, NULL);
    sim_status_omit(h, 1);
    sim_script(h, "MISSING", "{\"steps\":[{\"wait_ms\":32000},{\"reply\":\"bench done\"}]}", 0);
    char **ids = launch_n(h, parent, "MISSING", n);
    size_t first = (size_t)n;
    sim_wait(h, reads_at_least, &first, 10000);
    bench_sleep_ms(1000);
    double per_min = calls_per_min(h, 16000);
    sim_status_omit(h, 0);
    report(name, per_min, completed(h, parent, ids, n, 60000), n);
    free_ids(ids, n);
    free(parent);
    sim_destroy(h);
}

/* Has the parent been told of every task (its completion notice among the
 * parent's messages)? Waits up to timeout_ms; returns how many were. */
static int notified(sim_host *h, const char *parent, char **ids, int n, int timeout_ms)
{
    int64_t end = bench_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        char *json = sim_session_messages_json(h, parent);
        int told = 0;
        for (int i = 0; i < n; i++) {
            char needle[96];
            snprintf(needle, sizeof needle, "Background task completed: %s", ids[i] ? ids[i] : "none");
            told += json && strstr(json, needle) != NULL;
        }
        free(json);
        if (told == n || bench_ns() > end)
            return told;
        bench_sleep_ms(100);
    }
}

/* A tool call a second on average: a quick tool (50 ms: its part at its
 * start and its end), then a model call silent to ocbg (OpenCode streams its
 * text as message.part.delta, not read) of 450 to 1,450 ms, varying from step
 * to step as a real model's do (seed: where in the cycle the task starts).
 * malloc'd. */
static char *second_script(int tools, int seed)
{
    size_t cap = (size_t)tools * 112 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"steps\":[");
    for (int i = 0; i < tools; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "{\"tool\":\"read\",\"input\":{\"n\":%d},\"output\":\"x\",\"ms\":50},{\"wait_ms\":%d},",
                                i, 450 + (seed * 7 + i * 13) % 11 * 100);
    snprintf(s + len, cap - len, "{\"reply\":\"bench done\"}]}");
    return s;
}

/* 10 tasks, each a tool call a second (second_script), launched 100 ms
 * apart so that their events are out of step: the status maps asked per
 * minute over a 20 s window after 6 s of settling; then every task
 * completes and its parent is told. */
static void tools_each_second(void)
{
    enum {
        N = 10,
        SETTLE = 6000,
        WINDOW = 20000,
        TOOLS = (SETTLE + WINDOW + 4000) / 1000
    };
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench 1s");
    char **ids = calloc(N, sizeof *ids);
    for (int i = 0; i < N; i++) {
        char prompt[32], *script = second_script(TOOLS, i);
        snprintf(prompt, sizeof prompt, "EACH1S %d", i);
        sim_script(h, prompt, script, 1);
        free(script);
        ids[i] = launch(h, parent, prompt);
        bench_sleep_ms(100);
    }
    bench_sleep_ms(SETTLE);
    size_t s0 = sim_calls(h, "session_status", NULL), c0 = host_calls(h);
    int64_t t0 = bench_ns();
    bench_sleep_ms(WINDOW);
    double min = (double)(bench_ns() - t0) / 60e9;
    double status = (double)(sim_calls(h, "session_status", NULL) - s0) / min;
    double all = (double)(host_calls(h) - c0) / min;
    int done = completed(h, parent, ids, N, 60000);
    printf("status_calls_per_min_10_tasks_1s_tools: %.1f calls/min (all host calls %.1f; then %d of %d tasks "
           "completed, %d notified)\n",
           status, all, done, N, notified(h, parent, ids, N, 10000));
    free_ids(ids, N);
    free(parent);
    sim_destroy(h);
}

/* n running tasks in a long silent model call (no event; the map lists them
 * busy) vanish from the status map, with no event: the session.messages
 * reads of the next 10 s, as a rate per minute. Then the map lists them
 * again; they end (their idles delivered), every one completes and its
 * parent is told. */
static void vanish(int n, const char *name)
{
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench vanish");
    sim_script(h, "VANISH", "{\"steps\":[{\"wait_ms\":20000},{\"reply\":\"bench done\"}]}", 0);
    char **ids = launch_n(h, parent, "VANISH", n);
    bench_sleep_ms(3000); /* every task running, silent, busy in the map */
    size_t r0 = sim_calls(h, "session_messages", NULL), s0 = sim_calls(h, "session_status", NULL);
    sim_status_omit(h, 1);
    int64_t t0 = bench_ns();
    bench_sleep_ms(10000);
    double min = (double)(bench_ns() - t0) / 60e9;
    double reads = (double)(sim_calls(h, "session_messages", NULL) - r0) / min;
    double maps = (double)(sim_calls(h, "session_status", NULL) - s0) / min;
    sim_status_omit(h, 0);
    int done = completed(h, parent, ids, n, 60000);
    printf("%s: %.1f reads/min (status maps %.1f/min; then %d of %d tasks completed, %d notified)\n", name, reads, maps,
           done, n, notified(h, parent, ids, n, 30000));
    free_ids(ids, n);
    free(parent);
    sim_destroy(h);
}

/* The session the plugin prompted with the task's prompt text, malloc'd. */
static char *session_prompted_with(sim_host *h, const char *text)
{
    char *json = sim_calls_json(h), *sid = NULL;
    cJSON *calls = cJSON_Parse(json);
    free(json);
    const cJSON *c;
    cJSON_ArrayForEach (c, calls) {
        const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(c, "fn"));
        const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(c, "body"));
        const char *session = cJSON_GetStringValue(cJSON_GetObjectItem(c, "session"));
        if (fn && strcmp(fn, "session_prompt") == 0 && body && session && strstr(body, text))
            sid = strdup(session);
    }
    cJSON_Delete(calls);
    return sid;
}

/* 10 tasks calling tools, the events of the types `lost` lost (the ones that
 * end a turn; NULL: every event, the tools' too): 3 of them end, 3.6 s
 * apart (so at different points of a tick and of a 3 s map gap), once the
 * poll has settled. From a task's session going idle in the
 * host to its notification's push. */
static void lost_idle_detect(const char *lost, const char *name)
{
    enum {
        FINISHERS = 3
    };
    sim_host *h = host_new();
    char *parent = sim_session_new(h, NULL, "bench detect");
    sim_event_faults(h, 7, 1.0, 0, 0, lost);
    char *keep = steps_script(60000 / STEP_MS, 0);
    sim_script(h, "KEEP", keep, 0);
    char **ids = launch_n(h, parent, "KEEP", 10 - FINISHERS);
    char *fin_ids[FINISHERS], *sessions[FINISHERS];
    for (int i = 0; i < FINISHERS; i++) {
        char tag[32], prompt[40];
        snprintf(tag, sizeof tag, "FINISH%d", i);
        snprintf(prompt, sizeof prompt, "%s x", tag);
        char *script = steps_script((12000 + 3600 * i) / STEP_MS, 0);
        sim_script(h, tag, script, 1);
        free(script);
        fin_ids[i] = launch(h, parent, prompt);
        sessions[i] = session_prompted_with(h, prompt);
    }
    double ms[FINISHERS];
    int found = 0;
    for (int i = 0; i < FINISHERS; i++) {
        size_t pushed = sim_calls(h, "session_prompt", parent);
        if (!sessions[i] || sim_wait_idle(h, sessions[i], 30000) != 0)
            continue;
        int64_t t0 = bench_ns();
        if (sim_wait_calls(h, "session_prompt", parent, pushed + 1, 10000) != 0)
            continue;
        ms[found++] = (double)(bench_ns() - t0) / 1e6;
    }
    int done = completed(h, parent, fin_ids, FINISHERS, 10000);
    if (found == FINISHERS && done == FINISHERS) {
        double worst = ms[0];
        for (int i = 1; i < FINISHERS; i++)
            worst = ms[i] > worst ? ms[i] : worst;
        printf("%s: %.0f ms (max of %d; median %.0f)\n", name, worst, FINISHERS, bench_median(ms, FINISHERS));
    } else {
        printf("%s: n/a (%d of %d lost idles found)\n", name, found, FINISHERS);
    }
    for (int i = 0; i < FINISHERS; i++) {
        free(fin_ids[i]);
        free(sessions[i]);
    }
    free_ids(ids, 10 - FINISHERS);
    free(keep);
    free(parent);
    sim_destroy(h);
}

int main(int argc, char **argv)
{
    only = argc > 1 ? argv[1] : NULL;
    setvbuf(stdout, NULL, _IOLBF, 0); /* each figure as it comes: the scenarios take minutes */
    plugin_dir = getenv("OCBG_PLUGIN_DIR");
    if (!plugin_dir)
        plugin_dir = "build/plugin-dir";
    if (wanted("host_calls_per_min_10_tasks"))
        events_alive(10, 0, "host_calls_per_min_10_tasks");
    if (wanted("host_calls_per_min_1000_tasks"))
        events_alive(1000, 0, "host_calls_per_min_1000_tasks");
    if (wanted("host_calls_per_min_10_tasks_slow_steps"))
        events_alive(10, 3000, "host_calls_per_min_10_tasks_slow_steps");
    if (wanted("host_calls_per_min_10_tasks_idle_lost"))
        idle_lost(10, "host_calls_per_min_10_tasks_idle_lost");
    if (wanted("host_calls_per_min_1000_tasks_idle_lost"))
        idle_lost(1000, "host_calls_per_min_1000_tasks_idle_lost");
    if (wanted("host_calls_per_min_10_tasks_missing"))
        missing(10, "host_calls_per_min_10_tasks_missing");
    if (wanted("host_calls_per_min_1000_tasks_missing"))
        missing(1000, "host_calls_per_min_1000_tasks_missing");
    if (wanted("status_calls_per_min_10_tasks_1s_tools"))
        tools_each_second();
    if (wanted("messages_reads_per_min_1000_vanished"))
        vanish(1000, "messages_reads_per_min_1000_vanished");
    if (wanted("lost_idle_detect_ms"))
        lost_idle_detect(IDLE_EVENTS, "lost_idle_detect_ms");
    if (wanted("lost_idle_detect_all_lost_ms"))
        lost_idle_detect(NULL, "lost_idle_detect_all_lost_ms");
    return 0;
}

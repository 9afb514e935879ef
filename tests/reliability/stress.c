/* stress.c — stress: many threads making random tool calls (every
 * tool, both faces, /tasks) against thousands of tasks over several
 * conversations, while the host drops, duplicates and delays events and fails
 * host calls at random. At the end, through the tools only: no task lost
 * (every launched id found unless its conversation was cleared after it),
 * every status valid, list totals consistent, nothing left running once all
 * is cancelled. Run under ThreadSanitizer by `make check-stress-tsan`.
 *
 *   stress_tool_calls: N
 *   stress_tasks: N
 *
 * REL_STRESS_THREADS (8), REL_STRESS_OPS per thread (1500), REL_STRESS_SEED. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel.h"
#include "tap.h"
#include "testlib.h"

#define NPARENTS 6
#define MAX_SHELLS 150

typedef struct launched {
    char id[16];
    int parent;
    unsigned epoch; /* the parent's clear count when it was launched */
} launched;

static sim_host *h;
static char *parents[NPARENTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static launched *tasks;
static size_t ntasks, cap_tasks;
static unsigned epochs[NPARENTS]; /* background_clear count per parent */
static long calls_made, shells;
static long ops_per_thread;

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void record(const char *out, int parent)
{
    char *id = t_find_id(out, "bg_");
    if (!id)
        return;
    pthread_mutex_lock(&mu);
    if (ntasks == cap_tasks) {
        cap_tasks = cap_tasks ? cap_tasks * 2 : 1024;
        tasks = realloc(tasks, cap_tasks * sizeof *tasks);
    }
    launched *l = &tasks[ntasks++];
    snprintf(l->id, sizeof l->id, "%s", id);
    l->parent = parent;
    l->epoch = epochs[parent];
    pthread_mutex_unlock(&mu);
    free(id);
}

/* A recorded id at random (or a made-up one now and then). */
static void some_id(uint64_t *rs, char *buf, size_t n)
{
    pthread_mutex_lock(&mu);
    if (ntasks == 0 || next_rand(rs) % 20 == 0)
        snprintf(buf, n, "bg_%08x", (unsigned)next_rand(rs));
    else
        snprintf(buf, n, "%s", tasks[next_rand(rs) % ntasks].id);
    pthread_mutex_unlock(&mu);
}

static const char *const scripts[] = {"rel-s-quick#", "rel-s-quick#", "rel-s-tool#",
                                      "rel-s-err#",   "rel-s-hang#",  "rel-s-slow#"};

static void *worker(void *arg)
{
    uint64_t rs = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    char args[512], id[32];
    long made = 0;
    for (long op = 0; op < ops_per_thread; op++) {
        int p = (int)(next_rand(&rs) % NPARENTS);
        const char *ses = parents[p];
        unsigned r = (unsigned)(next_rand(&rs) % 1000);
        const char *tool = NULL;
        int rc;
        if (op % 40 == 0) { /* the host fails a call now and then */
            sim_fail(h, rel_host_fns[next_rand(&rs) % rel_host_fn_count], (int)(next_rand(&rs) % 4) + 1, 1, -EIO);
        }
        if (r < 380) {
            tool = "background_task";
            snprintf(args, sizeof args, "{\"description\":\"S%ld\",\"prompt\":\"%s %ld\",\"agent\":\"explore\"%s}", op,
                     scripts[next_rand(&rs) % 6], op, next_rand(&rs) % 10 == 0 ? ",\"fork\":true" : "");
        } else if (r < 430) {
            tool = "Task";
            snprintf(args, sizeof args,
                     "{\"description\":\"T%ld\",\"prompt\":\"rel-s-quick# %ld\",\"subagent_type\":\"explore\","
                     "\"run_in_background\":%s}",
                     op, op, next_rand(&rs) % 4 ? "true" : "false");
        } else if (r < 460) {
            pthread_mutex_lock(&mu);
            int allow = shells < MAX_SHELLS;
            shells += allow;
            pthread_mutex_unlock(&mu);
            if (!allow)
                continue;
            tool = "Bash";
            snprintf(args, sizeof args, "{\"command\":\"%s\",\"run_in_background\":%s}",
                     next_rand(&rs) % 2 ? "true" : "sleep 0.01", next_rand(&rs) % 3 ? "true" : "false");
        } else if (r < 600) {
            tool = "background_output";
            some_id(&rs, id, sizeof id);
            snprintf(args, sizeof args, "{\"task_id\":\"%s\"%s}", id,
                     next_rand(&rs) % 8 == 0 ? ",\"block\":true,\"timeout\":0.02" : "");
        } else if (r < 680) {
            tool = "TaskOutput";
            some_id(&rs, id, sizeof id);
            snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":%s,\"timeout\":20}", id,
                     next_rand(&rs) % 2 ? "true" : "false");
        } else if (r < 740) {
            tool = "background_cancel";
            some_id(&rs, id, sizeof id);
            snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
        } else if (r < 770) {
            tool = "TaskStop";
            some_id(&rs, id, sizeof id);
            snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
        } else if (r < 830) {
            tool = next_rand(&rs) % 2 ? "background_resume" : "background_task";
            some_id(&rs, id, sizeof id);
            if (strcmp(tool, "background_resume") == 0)
                snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"message\":\"rel-s-quick# again\"%s}", id,
                         next_rand(&rs) % 5 == 0 ? ",\"block\":true,\"timeout\":0.05" : "");
            else
                snprintf(args, sizeof args, "{\"resume\":\"%s\",\"prompt\":\"rel-s-quick# again\"}", id);
        } else if (r < 870) {
            tool = "background_block";
            char id2[32];
            some_id(&rs, id, sizeof id);
            some_id(&rs, id2, sizeof id2);
            snprintf(args, sizeof args, "{\"task_ids\":[\"%s\",\"%s\"],\"timeout\":0.02}", id, id2);
        } else if (r < 960) {
            tool = "background_list";
            snprintf(args, sizeof args, "%s", next_rand(&rs) % 3 ? "{}" : "{\"status\":\"running\"}");
        } else if (r < 999 || next_rand(&rs) % 4 != 0) { /* background_clear: rare */
            char *out = NULL;
            sim_command(h, ses, next_rand(&rs) % 5 ? "tasks" : "bashes", "", &out);
            free(out);
            made++;
            continue;
        } else {
            tool = "background_clear";
            snprintf(args, sizeof args, "{}");
        }
        char *out = rel_tool(h, ses, tool, args, &rc);
        made++;
        rel_check(rc == 0 || strlen(out) >= 10, "%s failed (rc %d) without a reason: %s", tool, rc, out);
        if (strcmp(tool, "background_clear") == 0) {
            pthread_mutex_lock(&mu);
            epochs[p]++;
            pthread_mutex_unlock(&mu);
        } else if ((strcmp(tool, "background_task") == 0 && !strstr(args, "\"resume\"")) || strcmp(tool, "Bash") == 0 ||
                   strcmp(tool, "Task") == 0) {
            /* A new task (also one whose start failed: it exists, in error). */
            if (strstr(out, "bg_") && (rc == 0 || strstr(out, "could not start")))
                record(out, p);
        }
        free(out);
    }
    pthread_mutex_lock(&mu);
    calls_made += made;
    pthread_mutex_unlock(&mu);
    return NULL;
}

typedef struct quiet_arg {
    const char *ses;
} quiet_arg;

/* Nothing running or being resumed left in the conversation. */
static int quiet(sim_host *hh, void *arg)
{
    quiet_arg *q = arg;
    char *out = rel_tool(hh, q->ses, "background_list", "{}", NULL);
    int busy = strstr(out, "| running |") || strstr(out, "| resumed |") || strstr(out, "| pending |");
    if (busy) { /* cancel what still runs or waits (a cancel may have failed earlier) */
        for (const char *p = out; (p = strstr(p, "\n- bg_")) != NULL; p++) {
            const char *eol = strchr(p + 1, '\n');
            const char *st = strstr(p, "| running |"), *pend = strstr(p, "| pending |");
            if ((st && (!eol || st < eol)) || (pend && (!eol || pend < eol))) {
                char args[64];
                snprintf(args, sizeof args, "{\"task_id\":\"%.11s\"}", p + 3);
                free(rel_tool(hh, q->ses, "background_cancel", args, NULL));
            }
        }
    }
    free(out);
    return !busy;
}

static int run(void *unused)
{
    (void)unused;
    long nthreads = rel_env_long("REL_STRESS_THREADS", 8);
    ops_per_thread = rel_env_long("REL_STRESS_OPS", 1500);
    uint32_t seed = (uint32_t)rel_env_long("REL_STRESS_SEED", 1);
    /* The scheduler is under load too: a small cap and queue; hung sub-agents
     * hold slots until the stale guard stops them (stale_ms 1 s). */
    h = rel_host("{\"poll_interval_ms\":50,\"notify_retry_ms\":5,\"notify_retries\":2,\"shell_kill_grace_ms\":100,"
                 "\"max_running_agents\":16,\"max_queued\":200,\"stale_ms\":1000}");
    if (!h)
        return 3;
    for (int i = 0; i < NPARENTS; i++)
        parents[i] = sim_session_new(h, NULL, "stress");
    sim_script(h, "rel-s-quick#", "{\"steps\":[{\"reply\":\"quick\"}]}", 0);
    sim_script(h, "rel-s-tool#", "{\"steps\":[{\"tool\":\"read\",\"ms\":1},{\"reply\":\"tooled\"}]}", 0);
    sim_script(h, "rel-s-err#", "{\"steps\":[{\"error\":\"overloaded\"}]}", 0);
    sim_script(h, "rel-s-hang#", "{\"steps\":[{\"hang\":true}]}", 0);
    sim_script(h, "rel-s-slow#", "{\"steps\":[{\"wait_ms\":30},{\"reply\":\"slow\"}]}", 0);
    sim_event_faults(h, seed, 0.2, 0.2, 5, NULL);

    int64_t t0 = rel_now_ms();
    pthread_t th[64];
    if (nthreads > 64)
        nthreads = 64;
    for (long i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(seed * 1000 + (uint32_t)i + 1));
    for (long i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    int64_t load_ms = rel_now_ms() - t0;

    /* Calm the host, stop whatever still runs, let everything settle. */
    sim_fail(h, NULL, 0, 0, 0);
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    for (int i = 0; i < NPARENTS; i++) {
        quiet_arg q = {parents[i]};
        rel_check(sim_wait(h, quiet, &q, tap_timeout_ms(60000)) == 0, "conversation %d never settled", i);
    }

    /* Invariants, through the tools. */
    long found = 0, gone = 0;
    for (size_t i = 0; i < ntasks; i++) {
        launched *l = &tasks[i];
        char args[64];
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", l->id);
        int rc;
        char *out = rel_tool(h, parents[l->parent], "background_output", args, &rc);
        if (strncmp(out, "Task not found", 14) == 0) {
            gone++;
            rel_check(epochs[l->parent] > l->epoch, "task %s lost: launched, never cleared, not found", l->id);
        } else {
            found++;
            const char *st = rel_status_of(out);
            rel_check(rel_status_terminal(st), "task %s: status '%s' after everything settled: %.200s", l->id, st, out);
        }
        free(out);
    }
    long listed = 0;
    for (int i = 0; i < NPARENTS; i++) {
        char *out = rel_tool(h, parents[i], "background_list", "{}", NULL);
        long lines = 0, bad = 0;
        for (const char *p = out; (p = strstr(p, "\n- bg_")) != NULL; p++) {
            lines++;
            const char *eol = strchr(p + 1, '\n');
            int valid = 0;
            const char *st[] = {"| completed |", "| error |", "| cancelled |"};
            for (size_t k = 0; k < 3; k++) {
                const char *q = strstr(p, st[k]);
                valid |= q && (!eol || q < eol);
            }
            bad += !valid;
        }
        rel_check(bad == 0, "conversation %d: %ld listed tasks without a final status", i, bad);
        if (lines) {
            /* A listing shows the newest 100 lines; its totals count every task. */
            const char *more = strstr(out, "… and ");
            long older = more ? strtol(more + strlen("… and "), NULL, 10) : 0;
            rel_check(lines <= 100 && (older == 0 || lines == 100), "conversation %d: %ld lines, %ld older", i, lines,
                      older);
            lines += older;
            char total[64];
            snprintf(total, sizeof total, "\nTotal: %ld task%s (", lines, lines == 1 ? "" : "s");
            const char *t = strstr(out, total);
            rel_check(t != NULL, "conversation %d: %ld tasks, total says otherwise", i, lines);
            /* The per-status counts add up to the total. */
            long sum = 0;
            for (const char *q = t ? t + strlen(total) : NULL; q && *q && *q != ')';) {
                sum += strtol(q, (char **)&q, 10);
                while (*q && *q != ',' && *q != ')')
                    q++;
                if (*q == ',')
                    q++;
            }
            rel_check(!t || sum == lines, "conversation %d: status counts add to %ld, not %ld", i, sum, lines);
        }
        listed += lines;
        free(out);
    }
    /* Every found task is listed in its conversation (lists are per
     * conversation; foreground tasks count too, hence >=). */
    rel_check(listed >= found, "%ld tasks listed, %ld found by id", listed, found);

    int64_t t1 = rel_now_ms();
    sim_unload_plugins(h);
    rel_check(rel_now_ms() - t1 < tap_timeout_ms(5000), "shutdown after stress took %lld ms",
              (long long)(rel_now_ms() - t1));
    printf("stress_threads: %ld\n", nthreads);
    printf("stress_tool_calls: %ld\n", calls_made);
    printf("stress_tasks: %zu\n", ntasks);
    printf("stress_tasks_found: %ld\n", found);
    printf("stress_tasks_cleared: %ld\n", gone);
    printf("stress_load_ms: %lld\n", (long long)load_ms);
    fflush(stdout);
    for (int i = 0; i < NPARENTS; i++)
        free(parents[i]);
    free(tasks);
    sim_destroy(h);
    return rel_failures() ? 1 : 0;
}

int main(void)
{
    int64_t ms;
    int st = rel_run_isolated(run, NULL, tap_timeout_ms(600000), &ms);
    ok(st == 0, "stress: invariants hold, no crash, no race report, within the deadline (%lld ms; status %d)",
       (long long)ms, st);
    printf("stress_ms: %lld\n", (long long)ms);
    return done_testing();
}

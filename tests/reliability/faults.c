/* faults.c — the fault sweep: the scripted scenario run once with
 * no fault to count the host calls it makes per function, then once per
 * (function, n) with the n-th call of that function failing (-EIO). Each run
 * is a forked child with a deadline, so a crash, a leak (LeakSanitizer at the
 * child's exit) or a deadlock is pinned to its failure point.
 *
 *   fault_points_tried: N
 *
 * Then the same with the task store on (a temp file) for the SQLite calls
 * the store makes (sqlfault.c, linked in with -Wl,--wrap): the n-th call of
 * sqlite3_open_v2, _exec, _prepare_v2, _prepare_v3, _step, _bind_* fails.
 * The user must see nothing of it (the scenario's strict checks: tasks
 * complete and notify, in memory), and a failure in opening, loading or
 * writing the store must be logged as an ERROR:
 *
 *   store_fault_points_tried: N
 *
 * REL_FAULT_ERRNO=… picks another errno (e.g. 2 for -ENOENT);
 * REL_FAULT_MAX=n caps the failure points per function (0: no cap);
 * REL_STORE_FAULT_MAX=n (default 24) the SQLite ones: the first n/2 calls
 * and n/2 spread over the rest (0: every call);
 * REL_FAULT_ONLY=fn:n runs that point only (either sweep);
 * REL_FAULT_STORE_ONLY=1 runs the SQLite sweep only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rel.h"
#include "sqlfault.h"
#include "tap.h"

#define OPTS "{\"poll_interval_ms\":50,\"notify_retry_ms\":5}"

typedef struct run_arg {
    const char *fn;
    int nth, err;
    int poll_only; /* every event dropped: only the fallback poll sees tasks end */
    int count_fd;  /* baseline: where to write the per-function counts */
} run_arg;

static int run_one(void *p)
{
    run_arg *r = p;
    if (r->fn)
        rel_context("%s%s call #%d failing", r->poll_only ? "[poll] " : "", r->fn, r->nth);
    else
        rel_context("%sno fault", r->poll_only ? "[poll] " : "");
    sim_host *h = rel_host(OPTS);
    if (!h)
        return 3;
    if (r->poll_only) {
        sim_events_flush(h, 5000);
        sim_event_faults(h, 1, 1.0, 0, 0, NULL);
    }
    if (r->fn)
        sim_fail(h, r->fn, r->nth, 1, r->err);
    rel_scenario_cfg cfg = {.faulty = r->fn != NULL, .settle_ms = 10000};
    rel_scenario(h, &cfg);
    if (r->count_fd >= 0) {
        long counts[16] = {0};
        for (size_t i = 0; i < rel_host_fn_count; i++)
            counts[i] = (long)sim_calls(h, rel_host_fns[i], NULL);
        ssize_t n = write(r->count_fd, counts, sizeof counts);
        (void)n;
    }
    sim_destroy(h);
    return rel_failures() ? 1 : 0;
}

static int sweep(int poll_only, int err, long cap, int *tried_total)
{
    int deadline = tap_timeout_ms(60000);
    const char *mode = poll_only ? "poll mode (every event lost)" : "event mode";
    int fds[2];
    if (pipe(fds) != 0)
        bail_out("pipe");
    run_arg base = {NULL, 0, err, poll_only, fds[1]};
    int64_t ms;
    int st = rel_run_isolated(run_one, &base, deadline, &ms);
    close(fds[1]);
    long counts[16] = {0};
    ssize_t got = read(fds[0], counts, sizeof counts);
    close(fds[0]);
    if (!is_int(st, 0, "%s: the scenario passes with no fault (%lld ms)", mode, (long long)ms))
        bail_out("the fault-free scenario fails: the sweep would mean nothing");
    ok(got == (ssize_t)sizeof counts, "host call counts reported");

    int failed = 0;
    const char *only = getenv("REL_FAULT_ONLY"); /* "fn:n": just that point */
    for (size_t f = 0; f < rel_host_fn_count; f++) {
        long n = counts[f];
        if (cap > 0 && n > cap)
            n = cap;
        int fn_failed = 0, fn_tried = 0;
        for (int k = 1; k <= n; k++) {
            char want[64];
            snprintf(want, sizeof want, "%s:%d", rel_host_fns[f], k);
            if (only && *only && strcmp(only, want) != 0)
                continue;
            run_arg r = {rel_host_fns[f], k, err, poll_only, -1};
            st = rel_run_isolated(run_one, &r, deadline, &ms);
            fn_tried++;
            if (st != 0) {
                fn_failed++;
                diag("FAILED: %s: %s call #%d failing (%d): %s (%lld ms)", mode, rel_host_fns[f], k, err,
                     st == -ETIMEDOUT ? "deadline passed (deadlock?)"
                     : st >= 128      ? "crashed (signal)"
                     : st == 1        ? "wrong end state (see above)"
                                      : "sanitizer report or setup failure",
                     (long long)ms);
            }
        }
        *tried_total += fn_tried;
        failed += fn_failed;
        ok(fn_failed == 0, "%s: %s: %ld calls, %d failure points tried: %d bad runs", mode, rel_host_fns[f], counts[f],
           fn_tried, fn_failed);
    }
    return failed;
}

/* ---- SQLite calls failing, the store on ---------------------------------- */

typedef struct store_arg {
    int fn; /* SQLF_… or -1: no fault */
    long nth;
    int count_fd; /* baseline: where to write the per-function counts */
} store_arg;

/* An ERROR line about the store in the host's log? */
static int store_error_logged(sim_host *h)
{
    size_t n = sim_calls(h, "log", NULL);
    for (size_t i = 0; i < n; i++) {
        char *body = sim_call_body(h, "log", NULL, (int)i);
        int found = body && strstr(body, "\"error\"") && strstr(body, "the task store ");
        free(body);
        if (found)
            return 1;
    }
    return 0;
}

static void remove_store(const char *dir)
{
    const char *files[] = {"ocbg.db", "ocbg.db-wal", "ocbg.db-shm", "ocbg.db-journal"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* An earlier instance of the plugin in the same host leaves tasks in the
 * store for the next to restore (a completed one, told; one still running),
 * so that loading has rows to read. Not counted, no fault. */
static int seed_store(sim_host *h, const char *opts)
{
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        return 0;
    char *ses = sim_session_new(h, NULL, "earlier");
    sim_script(h, "rel-seed#", "{\"steps\":[{\"reply\":\"seed result\"}]}", 1);
    sim_script(h, "rel-seedhang#", "{\"steps\":[{\"hang\":true}]}", 1);
    free(rel_tool(h, ses, "background_task",
                  "{\"description\":\"Seed\",\"prompt\":\"rel-seed# x\",\"agent\":\"explore\"}", NULL));
    free(rel_tool(h, ses, "background_task",
                  "{\"description\":\"Seed hang\",\"prompt\":\"rel-seedhang# x\",\"agent\":\"general\"}", NULL));
    rel_check(sim_wait_messages(h, ses, 1, tap_timeout_ms(5000)) == 0, "the seed task's notification never came");
    sim_unload_plugins(h);
    free(ses);
    return 1;
}

static int run_store(void *p)
{
    store_arg *r = p;
    if (r->fn >= 0)
        rel_context("[store] %s call #%ld failing", sqlf_fns[r->fn], r->nth);
    else
        rel_context("[store] no fault");
    char dir[] = "/tmp/ocbg-sqlfault-XXXXXX", opts[512];
    if (!mkdtemp(dir))
        return 3;
    snprintf(opts, sizeof opts, "{\"poll_interval_ms\":50,\"notify_retry_ms\":5,\"store_path\":\"%s/ocbg.db\"}", dir);
    sim_host *h = sim_create();
    int loaded = h && seed_store(h, opts);
    sqlf_arm(r->fn, r->nth);
    if (!loaded || sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1) {
        fprintf(stderr, "# loading the linked-in ocbg: %s\n", h ? sim_load_error(h) : "no host");
        if (h)
            sim_destroy(h);
        remove_store(dir);
        return 3;
    }
    /* Host calls do not fail: the user must see no difference at all. */
    rel_scenario_cfg cfg = {.faulty = 0, .settle_ms = 10000};
    rel_scenario(h, &cfg);
    sqlf_phase ph = SQLF_NONE;
    char what[256] = "";
    int hit = sqlf_hit(&ph, what, sizeof what);
    if (hit && ph != SQLF_IN_CLOSE)
        rel_check(store_error_logged(h), "the failure (in %s: %s) was not logged as an ERROR", sqlf_phase_name(ph),
                  what);
    if (r->fn < 0) {
        rel_check(!store_error_logged(h), "an ERROR about the store with no fault");
        /* The writer's connection, and the reader's once a result is read back. */
        rel_check(sqlf_calls(SQLF_OPEN) >= 1 && sqlf_calls(SQLF_STEP) > 0, "the store was not used");
    }
    if (r->count_fd >= 0) {
        long counts[SQLF_COUNT];
        for (int i = 0; i < SQLF_COUNT; i++)
            counts[i] = sqlf_calls(i);
        ssize_t n = write(r->count_fd, counts, sizeof counts);
        (void)n;
    }
    if (getenv("REL_VERBOSE"))
        fprintf(stderr, "# [store] %s #%ld: %s%s%s\n", r->fn >= 0 ? sqlf_fns[r->fn] : "-", r->nth,
                hit ? sqlf_phase_name(ph) : "not hit", hit ? ": " : "", what);
    sim_destroy(h);
    remove_store(dir);
    return rel_failures() ? 1 : 0;
}

/* The k-th (0-based) of the points tried out of count calls, cap at most:
 * every call, or the first cap/2 and cap/2 spread evenly over the rest. */
static long store_point(long k, long count, long cap)
{
    if (cap <= 0 || count <= cap)
        return k + 1;
    long head = cap / 2, tail = cap - head;
    if (k < head)
        return k + 1;
    return head + ((k - head + 1) * (count - head)) / tail;
}

static int store_sweep(long cap, int *tried_total)
{
    int deadline = tap_timeout_ms(60000);
    int fds[2];
    if (pipe(fds) != 0)
        bail_out("pipe");
    store_arg base = {-1, 0, fds[1]};
    int64_t ms;
    int st = rel_run_isolated(run_store, &base, deadline, &ms);
    close(fds[1]);
    long counts[SQLF_COUNT] = {0};
    ssize_t got = read(fds[0], counts, sizeof counts);
    close(fds[0]);
    if (!is_int(st, 0, "store on: the scenario passes with no fault (%lld ms)", (long long)ms))
        bail_out("the fault-free scenario with the store fails: the sweep would mean nothing");
    ok(got == (ssize_t)sizeof counts, "SQLite call counts reported");

    int failed = 0;
    const char *only = getenv("REL_FAULT_ONLY");
    for (int f = 0; f < SQLF_COUNT; f++) {
        long n = cap > 0 && counts[f] > cap ? cap : counts[f];
        int fn_failed = 0, fn_tried = 0;
        for (long k = 0; k < n; k++) {
            store_arg r = {f, store_point(k, counts[f], cap), -1};
            char want[64];
            snprintf(want, sizeof want, "%s:%ld", sqlf_fns[f], r.nth);
            if (only && *only && strcmp(only, want) != 0)
                continue;
            st = rel_run_isolated(run_store, &r, deadline, &ms);
            fn_tried++;
            if (st != 0) {
                fn_failed++;
                diag("FAILED: store on: %s call #%ld failing: %s (%lld ms)", sqlf_fns[f], r.nth,
                     st == -ETIMEDOUT ? "deadline passed (deadlock?)"
                     : st >= 128      ? "crashed (signal)"
                     : st == 1        ? "wrong end state (see above)"
                                      : "sanitizer report or setup failure",
                     (long long)ms);
            }
        }
        *tried_total += fn_tried;
        failed += fn_failed;
        ok(fn_failed == 0, "store on: %s: %ld calls, %d failure points tried: %d bad runs", sqlf_fns[f], counts[f],
           fn_tried, fn_failed);
    }
    return failed;
}

int main(void)
{
    int err = -(int)rel_env_long("REL_FAULT_ERRNO", EIO);
    long cap = rel_env_long("REL_FAULT_MAX", 0);
    int tried = 0, failed = 0;
    int64_t t0 = rel_now_ms();
    if (!rel_env_long("REL_FAULT_STORE_ONLY", 0)) {
        failed += sweep(0, err, cap, &tried);
        failed += sweep(1, err, cap, &tried);
    }
    printf("fault_points_tried: %d\n", tried);
    printf("fault_points_failed: %d\n", failed);
    printf("fault_sweep_ms: %lld\n", (long long)(rel_now_ms() - t0));
    int stried = 0;
    t0 = rel_now_ms();
    int sfailed = store_sweep(rel_env_long("REL_STORE_FAULT_MAX", 24), &stried);
    printf("store_fault_points_tried: %d\n", stried);
    printf("store_fault_points_failed: %d\n", sfailed);
    printf("store_fault_sweep_ms: %lld\n", (long long)(rel_now_ms() - t0));
    return done_testing();
}

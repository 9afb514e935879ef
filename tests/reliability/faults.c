/* faults.c — the fault sweep (issue 8): the scripted scenario run once with
 * no fault to count the host calls it makes per function, then once per
 * (function, n) with the n-th call of that function failing (-EIO). Each run
 * is a forked child with a deadline, so a crash, a leak (LeakSanitizer at the
 * child's exit) or a deadlock is pinned to its failure point.
 *
 *   fault_points_tried: N
 *
 * REL_FAULT_ERRNO=… picks another errno (e.g. 2 for -ENOENT);
 * REL_FAULT_MAX=n caps the failure points per function (0: no cap). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rel.h"
#include "tap.h"

#define OPTS "{\"poll_interval_ms\":50,\"notify_retry_ms\":5}"

typedef struct run_arg {
    const char *fn;
    int nth, err;
    int poll_only; /* every event dropped: only the fallback poll sees tasks end */
    int count_fd; /* baseline: where to write the per-function counts */
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
        ok(fn_failed == 0, "%s: %s: %ld calls, %d failure points tried: %d bad runs", mode, rel_host_fns[f],
           counts[f], fn_tried, fn_failed);
    }
    return failed;
}

int main(void)
{
    int err = -(int)rel_env_long("REL_FAULT_ERRNO", EIO);
    long cap = rel_env_long("REL_FAULT_MAX", 0);
    int tried = 0, failed = 0;
    int64_t t0 = rel_now_ms();
    failed += sweep(0, err, cap, &tried);
    failed += sweep(1, err, cap, &tried);
    printf("fault_points_tried: %d\n", tried);
    printf("fault_points_failed: %d\n", failed);
    printf("fault_sweep_ms: %lld\n", (long long)(rel_now_ms() - t0));
    return done_testing();
}

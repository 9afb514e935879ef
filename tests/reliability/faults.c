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
    int count_fd; /* baseline: where to write the per-function counts */
} run_arg;

static int run_one(void *p)
{
    run_arg *r = p;
    if (r->fn)
        rel_context("%s call #%d failing", r->fn, r->nth);
    else
        rel_context("no fault");
    sim_host *h = rel_host(OPTS);
    if (!h)
        return 3;
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

int main(void)
{
    int err = -(int)rel_env_long("REL_FAULT_ERRNO", EIO);
    long cap = rel_env_long("REL_FAULT_MAX", 0);
    int deadline = tap_timeout_ms(60000);
    int fds[2];
    if (pipe(fds) != 0)
        bail_out("pipe");
    run_arg base = {NULL, 0, err, fds[1]};
    int64_t ms;
    int st = rel_run_isolated(run_one, &base, deadline, &ms);
    close(fds[1]);
    long counts[16] = {0};
    ssize_t got = read(fds[0], counts, sizeof counts);
    close(fds[0]);
    if (!is_int(st, 0, "the scenario passes with no fault (%lld ms)", (long long)ms))
        bail_out("the fault-free scenario fails: the sweep would mean nothing");
    ok(got == (ssize_t)sizeof counts, "host call counts reported");

    int tried = 0, failed = 0;
    int64_t t0 = rel_now_ms();
    for (size_t f = 0; f < rel_host_fn_count; f++) {
        long n = counts[f];
        if (cap > 0 && n > cap)
            n = cap;
        int fn_failed = 0;
        for (int k = 1; k <= n; k++) {
            run_arg r = {rel_host_fns[f], k, err, -1};
            const char *only = getenv("REL_FAULT_ONLY"); /* "fn:n": just that point */
            char want[64];
            snprintf(want, sizeof want, "%s:%d", rel_host_fns[f], k);
            if (only && *only && strcmp(only, want) != 0)
                continue;
            st = rel_run_isolated(run_one, &r, deadline, &ms);
            tried++;
            if (st != 0) {
                fn_failed++;
                diag("FAILED: %s call #%d failing (%d): %s (%lld ms)", rel_host_fns[f], k, err,
                     st == -ETIMEDOUT ? "deadline passed (deadlock?)"
                     : st >= 128      ? "crashed (signal)"
                     : st == 1        ? "wrong end state (see above)"
                                      : "sanitizer report or setup failure",
                     (long long)ms);
            }
        }
        failed += fn_failed;
        ok(fn_failed == 0, "%s: %ld calls in the scenario, each failing in turn: %d bad runs", rel_host_fns[f],
           counts[f], fn_failed);
    }
    printf("fault_points_tried: %d\n", tried);
    printf("fault_points_failed: %d\n", failed);
    printf("fault_sweep_ms: %lld\n", (long long)(rel_now_ms() - t0));
    return done_testing();
}

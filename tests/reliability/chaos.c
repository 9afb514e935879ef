/* chaos.c — event chaos: the scripted scenario with the host's
 * events dropped (0..100%), duplicated and delayed/reordered by a seeded
 * random source. Every task must still end as scripted, and every
 * notification be sent exactly once. Each seed runs in a forked child with a
 * deadline (and LeakSanitizer at its exit under ASan).
 *
 *   chaos_seeds_tried: N
 *
 * REL_CHAOS_SEEDS=n (default 40), REL_CHAOS_FIRST=seed (default 1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rel.h"
#include "tap.h"

typedef struct chaos_arg {
    uint32_t seed;
    double drop, dup;
    int delay_ms;
} chaos_arg;

static int run_seed(void *p)
{
    chaos_arg *c = p;
    rel_context("seed %u (drop %.2f dup %.2f delay %d ms)", c->seed, c->drop, c->dup, c->delay_ms);
    sim_host *h = rel_host("{\"poll_interval_ms\":50,\"notify_retry_ms\":5}");
    if (!h)
        return 3;
    sim_event_faults(h, c->seed, c->drop, c->dup, c->delay_ms, NULL);
    rel_scenario_cfg cfg = {.chaos = 1, .settle_ms = 10000};
    rel_scenario(h, &cfg);
    sim_destroy(h);
    return rel_failures() ? 1 : 0;
}

int main(void)
{
    long n = rel_env_long("REL_CHAOS_SEEDS", 40);
    long first = rel_env_long("REL_CHAOS_FIRST", 1);
    int failed = 0;
    int64_t t0 = rel_now_ms();
    for (long i = 0; i < n; i++) {
        uint32_t seed = (uint32_t)(first + i);
        /* Spread the rates: drop 0, 10, .., 100%; dup 0..100%; delay 0..30 ms. */
        chaos_arg c = {seed, (double)(seed % 11) / 10.0, (double)((seed * 7) % 5) / 4.0, (int)((seed * 13) % 4) * 10};
        int64_t ms;
        int st = rel_run_isolated(run_seed, &c, tap_timeout_ms(90000), &ms);
        if (st != 0) {
            failed++;
            diag("FAILED: seed %u drop %.2f dup %.2f delay %d: %s (%lld ms)", seed, c.drop, c.dup, c.delay_ms,
                 st == -ETIMEDOUT ? "deadline passed (deadlock?)"
                 : st >= 128      ? "crashed (signal)"
                 : st == 1        ? "wrong end state (see above)"
                                  : "sanitizer report or setup failure",
                 (long long)ms);
        }
    }
    ok(failed == 0, "%ld seeds, each run ends correctly with one notification per task: %d bad", n, failed);
    printf("chaos_seeds_tried: %ld\n", n);
    printf("chaos_seeds_failed: %d\n", failed);
    printf("chaos_ms: %lld\n", (long long)(rel_now_ms() - t0));
    return done_testing();
}

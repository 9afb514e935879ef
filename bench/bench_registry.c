/* bench_registry — the registry's costs with an instant host.
 *
 * launch_per_s: background_task calls per second, one after another from one
 *   thread (median of 10 batches of 1,000 launches, 100 parent sessions).
 * task_struct_bytes: sizeof(task), the fixed part of a task's memory (what a
 *   task costs with typical texts, finished: bench_complete's
 *   heap_per_task_bytes).
 * list_us: background_list for a parent with 100 tasks among 10,000;
 *   output_us: background_output for one task among 10,000 (medians); the same
 *   with only those 100 tasks registered (_100_total) and the ratio, which is
 *   about 1 when no lookup scans the whole registry (5 alternating rounds).
 *
 * The plugin comes from libocbg-internal.a on a fake host whose every function
 * returns at once (bench.h); the poll is pushed out (poll_interval_ms 600000),
 * so the tasks stay running. Prints "name: value unit". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "model/registry.h"

#define TASKS 10000
#define PARENTS 100
#define BATCH 1000
#define ROUNDS 5
#define LIST_RUNS 50
#define OUTPUT_RUNS 500

static const char *const launch_args = "{\"description\":\"d\",\"prompt\":\"p\",\"agent\":\"a\"}";

static void parent_name(char *buf, size_t size, int i)
{
    snprintf(buf, size, "ses_parent%04d", i);
}

/* Median µs of `runs` calls of one tool. */
static double time_tool(const ocp_plugin *p, const char *session, const char *tool, const char *args, int runs)
{
    double *v = malloc((size_t)runs * sizeof *v);
    for (int r = 0; r < runs; r++) {
        int64_t t0 = bench_ns();
        bench_tool(p, session, tool, args, NULL);
        v[r] = (double)(bench_ns() - t0) / 1000.0;
    }
    double m = bench_median(v, (size_t)runs);
    free(v);
    return m;
}

/* Launch n tasks across `parents` parents (task k from parent k % parents);
 * the id of parent 0's first task into id0; launch rates per batch. */
static int launch_many(const ocp_plugin *p, int n, int parents, char *id0, double *rates, int *nrates)
{
    char psid[32];
    *nrates = 0;
    for (int k = 0; k < n; k += BATCH) {
        int64_t t0 = bench_ns();
        for (int i = k; i < k + BATCH && i < n; i++) {
            parent_name(psid, sizeof psid, i % parents);
            char *out = NULL;
            int rc = bench_tool(p, psid, "background_task", launch_args, i == 0 ? &out : NULL);
            if (rc != 0) {
                fprintf(stderr, "bench_registry: launch %d failed (rc %d)\n", i, rc);
                return -1;
            }
            if (i == 0) {
                bench_task_id(out, id0, 32);
                free(out);
            }
        }
        double s = (double)(bench_ns() - t0) / 1e9;
        rates[(*nrates)++] = (double)(n - k < BATCH ? n - k : BATCH) / s;
    }
    return 0;
}

int main(void)
{
    ocp_host host = bench_fake_host();
    /* every task runs (no cap): this measures the registry, bench_sched the queue */
    const char *opts = "{\"poll_interval_ms\":600000,\"max_running_agents\":100000}";

    /* 10,000 tasks among 100 parents (A), and parent 0's 100 tasks alone (B). */
    const ocp_plugin *a = bench_plugin(&host, opts);
    char id_a[32] = "", id_b[32] = "", parent0[32];
    parent_name(parent0, sizeof parent0, 0);
    double rates[TASKS / BATCH + 1];
    int nrates;
    if (launch_many(a, TASKS, PARENTS, id_a, rates, &nrates) != 0)
        return 1;
    const ocp_plugin *b = bench_plugin(&host, opts);
    double small_rates[1];
    int nsmall;
    if (launch_many(b, TASKS / PARENTS, 1, id_b, small_rates, &nsmall) != 0)
        return 1;

    /* Alternate A and B round by round, so that drift in the machine's speed
     * hits both; medians of the rounds' medians. */
    char args_a[96], args_b[96];
    snprintf(args_a, sizeof args_a, "{\"task_id\":\"%s\"}", id_a);
    snprintf(args_b, sizeof args_b, "{\"task_id\":\"%s\"}", id_b);
    double la[ROUNDS], lb[ROUNDS], oa[ROUNDS], ob[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        la[r] = time_tool(a, parent0, "background_list", "{}", LIST_RUNS);
        lb[r] = time_tool(b, parent0, "background_list", "{}", LIST_RUNS);
        oa[r] = time_tool(a, parent0, "background_output", args_a, OUTPUT_RUNS);
        ob[r] = time_tool(b, parent0, "background_output", args_b, OUTPUT_RUNS);
    }
    a->shutdown(a->userdata);
    b->shutdown(b->userdata);
    double list_big = bench_median(la, ROUNDS), list_small = bench_median(lb, ROUNDS);
    double output_big = bench_median(oa, ROUNDS), output_small = bench_median(ob, ROUNDS);

    printf("launch_per_s: %.0f launches/s\n", bench_median(rates, (size_t)nrates));
    printf("task_struct_bytes: %zu bytes\n", sizeof(task));
    printf("list_us: %.1f us\n", list_big);
    printf("list_us_100_total: %.1f us\n", list_small);
    printf("list_vs_100_total: %.2f x\n", list_big / list_small);
    printf("output_us: %.1f us\n", output_big);
    printf("output_us_100_total: %.1f us\n", output_small);
    printf("output_vs_100_total: %.2f x\n", output_big / output_small);
    return 0;
}

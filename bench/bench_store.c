/* bench_store — what the durable task store costs, on the path a launch
 * takes (the tool call returns once its task is committed), with typical
 * texts (a 500-byte prompt, a 40-byte description).
 *
 * launch_per_s_store_off / _on: background_task calls per second from one
 *   thread (median of 10 batches of 1,000 launches, 100 parents); with the
 *   store on each call waits for its commit.
 * launch_per_s_store_on_4_threads: four threads launching at once (their
 *   commits shared: group commit), all launches over the wall time.
 * rows_per_commit_4_threads: tasks written per transaction in that run.
 * bytes_per_task_store_off / _on: heap bytes per task after 10,000 launches
 *   (mallinfo2 delta / 10,000; with the store on it includes SQLite's page
 *   cache and statements, amortised).
 * restore_ms_10000: loading a store of 10,000 tasks when the plugin starts
 *   (ocp_plugin_entry returning).
 * Checked: the file holds every launched task after shutdown, and a task
 *   launched before the restart resolves after it; else it exits 1.
 *
 * The plugin comes from libocbg-internal.a on the instant fake host
 * (bench.h); the poll is pushed out so tasks stay running. */
#include <malloc.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "engine/engine.h"

#define TASKS 10000
#define PARENTS 100
#define BATCH 1000
#define THREADS 4

static char launch_args[1024];

static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void make_args(void)
{
    char prompt[501];
    for (int i = 0; i < 500; i++)
        prompt[i] = "abcdefghij klmnopqrstuvwxyz."[i % 28];
    prompt[500] = '\0';
    snprintf(launch_args, sizeof launch_args,
             "{\"description\":\"Summarise the parser module's error paths\",\"prompt\":\"%s\",\"agent\":\"a\"}",
             prompt);
}

static int launch(const ocp_plugin *p, int i, char *id, size_t id_size)
{
    char psid[32];
    snprintf(psid, sizeof psid, "ses_parent%04d", i % PARENTS);
    char *out = NULL;
    int rc = bench_tool(p, psid, "background_task", launch_args, id ? &out : NULL);
    if (rc == 0 && id)
        bench_task_id(out, id, id_size);
    free(out);
    return rc;
}

/* Launch TASKS from one thread: the median rate of the batches. */
static double launch_serial(const ocp_plugin *p, char *id0)
{
    double rates[TASKS / BATCH];
    for (int k = 0; k < TASKS; k += BATCH) {
        int64_t t0 = bench_ns();
        for (int i = k; i < k + BATCH; i++)
            if (launch(p, i, i == 0 ? id0 : NULL, 32) != 0) {
                fprintf(stderr, "bench_store: launch %d failed\n", i);
                exit(1);
            }
        rates[k / BATCH] = BATCH / ((double)(bench_ns() - t0) / 1e9);
    }
    return bench_median(rates, TASKS / BATCH);
}

typedef struct worker_arg {
    const ocp_plugin *p;
    int from;
} worker_arg;

static void *launch_thread(void *arg)
{
    worker_arg *w = arg;
    for (int i = w->from; i < w->from + TASKS / THREADS; i++)
        if (launch(w->p, i, NULL, 0) != 0) {
            fprintf(stderr, "bench_store: threaded launch %d failed\n", i);
            exit(1);
        }
    return NULL;
}

static double launch_threads(const ocp_plugin *p)
{
    pthread_t th[THREADS];
    worker_arg wa[THREADS];
    int64_t t0 = bench_ns();
    for (int i = 0; i < THREADS; i++) {
        wa[i] = (worker_arg){p, i * (TASKS / THREADS)};
        pthread_create(&th[i], NULL, launch_thread, &wa[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    return TASKS / ((double)(bench_ns() - t0) / 1e9);
}

static long rows_in(const char *db)
{
    sqlite3 *d = NULL;
    sqlite3_stmt *st = NULL;
    long n = -1;
    if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(d, "SELECT count(*) FROM task", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(d);
    return n;
}

int main(void)
{
    mallopt(M_ARENA_MAX, 1);
    make_args();
    ocp_host host = bench_fake_host();
    char dir[] = "/tmp/ocbg-bench-store-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char db[128], db4[128], opts_on[512], opts_on4[512];
    snprintf(db, sizeof db, "%s/serial.db", dir);
    snprintf(db4, sizeof db4, "%s/threads.db", dir);
    const char *base = "\"poll_interval_ms\":600000,\"max_running_agents\":100000,\"max_queued\":0";
    char opts_off[256];
    snprintf(opts_off, sizeof opts_off, "{%s,\"store\":false}", base);
    snprintf(opts_on, sizeof opts_on, "{%s,\"store_path\":\"%s\"}", base, db);
    snprintf(opts_on4, sizeof opts_on4, "{%s,\"store_path\":\"%s\"}", base, db4);

    char id0[32] = "";
    size_t before = heap_used();
    const ocp_plugin *p = bench_plugin(&host, opts_off);
    double off = launch_serial(p, id0);
    double bytes_off = (double)(heap_used() - before) / TASKS;
    p->shutdown(p->userdata);

    before = heap_used();
    p = bench_plugin(&host, opts_on);
    double on = launch_serial(p, id0);
    double bytes_on = (double)(heap_used() - before) / TASKS;
    p->shutdown(p->userdata);
    long rows = rows_in(db);
    if (rows != TASKS) {
        fprintf(stderr, "bench_store: the store holds %ld tasks, not %d\n", rows, TASKS);
        return 1;
    }

    int64_t t0 = bench_ns();
    p = bench_plugin(&host, opts_on);
    double restore_ms = (double)(bench_ns() - t0) / 1e6;
    char args[64], *out = NULL;
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id0);
    bench_tool(p, "ses_parent0000", "background_output", args, &out);
    if (!out || strstr(out, "Task not found") || !strstr(out, id0)) {
        fprintf(stderr, "bench_store: %s does not resolve after the restart: %s\n", id0, out ? out : "(null)");
        return 1;
    }
    free(out);
    p->shutdown(p->userdata);

    p = bench_plugin(&host, opts_on4);
    double on4 = launch_threads(p);
    const engine *eng = p->userdata; /* the instance starts with its engine (plugin/entry.c) */
    double per_commit = eng->ps.writes ? (double)eng->ps.rows_written / (double)eng->ps.writes : 0;
    p->shutdown(p->userdata);
    if (rows_in(db4) != TASKS) {
        fprintf(stderr, "bench_store: the threaded store holds %ld tasks, not %d\n", rows_in(db4), TASKS);
        return 1;
    }

    printf("launch_per_s_store_off: %.0f launches/s\n", off);
    printf("launch_per_s_store_on: %.0f launches/s\n", on);
    printf("launch_per_s_store_on_4_threads: %.0f launches/s\n", on4);
    printf("rows_per_commit_4_threads: %.2f rows\n", per_commit);
    printf("bytes_per_task_store_off: %.0f bytes\n", bytes_off);
    printf("bytes_per_task_store_on: %.0f bytes\n", bytes_on);
    printf("restore_ms_10000: %.1f ms\n", restore_ms);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}

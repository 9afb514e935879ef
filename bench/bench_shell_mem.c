/* bench_shell_mem — what a finished background command keeps in memory.
 *
 * heap_per_shell_task_bytes: 2,000 real commands (`seq 1000 1800`: 801
 *   lines, 4,005 bytes of output, a typical build or test log's tail)
 *   launched with Bash run_in_background from 200 parent sessions (10 each),
 *   run by the plugin's shell runner (16 at a time, the rest queued), each
 *   finished, its notification delivered, and every change written by the
 *   store (on, a fresh database file: a finished, delivered command's
 *   output then lives only in the store). Heap (mallinfo2: the arena plus
 *   mmap'd chunks, so every byte of the output buffers counts) then, less
 *   before the plugin was loaded, per command: SQLite's heap included.
 * heap_per_shell_task_store_off_bytes: the same with `store: false`: each
 *   command's output stays in memory (in buffers of its size).
 * Each in a child process of its own (a fresh heap).
 *
 * Checked: every command notified once with the end of its output; with
 *   the store on none still holds its output buffers, with it off every
 *   one does; background_output of 20 commands (10 with the store on: read
 *   back) gives the exact output and "Exit: exit code 0"; else it exits 1.
 *
 * The plugin comes from libocbg-internal.a on the instant fake host
 * (bench.h): the notifications it pushes are counted, not kept, so the heap
 * is the plugin's own (the simulated host would keep every notification's
 * text in its session history). Prints "name: value unit". */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "engine/engine.h"

#define COMMANDS 2000
#define PER_PARENT 10
#define COMMAND "seq 1000 1800"
#define CHECKED 10

static char store_dir[] = "/tmp/ocbg-bench-shell-XXXXXX";
static char want_output[8192]; /* what `seq 1000 1800` prints */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long pushes, pushes_with_tail;

static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* A notification to a parent session: counted, and whether it carries
 * the output's end ("1799\n1800", JSON-escaped in the body). */
static int count_prompt(void *ud, const char *session_id, const char *body, char **out)
{
    (void)ud;
    *out = NULL;
    if (strncmp(session_id, "ses_fakeparent", 14) != 0)
        return 0;
    int tail = strstr(body, "1799\\n1800") != NULL;
    pthread_mutex_lock(&mu);
    pushes++;
    pushes_with_tail += tail;
    pthread_mutex_unlock(&mu);
    return 0;
}

static void fail(const char *what)
{
    fprintf(stderr, "bench_shell_mem: %s\n", what);
    exit(1);
}

/* Until every command is notified and the store has written every change
 * (an output it may drop is dropped after the commit). */
static void wait_settled(engine *eng)
{
    int64_t deadline = bench_ns() + 120000000000LL;
    for (;;) {
        pthread_mutex_lock(&mu);
        unsigned long n = pushes;
        pthread_mutex_unlock(&mu);
        engine_lock(eng);
        bool idle = !eng->reg.track || (eng->reg.dirty == 0 && eng->reg.nremoved == 0 && !eng->ps.writing);
        engine_unlock(eng);
        if (n >= COMMANDS && idle)
            return;
        if (bench_ns() > deadline) {
            fprintf(stderr, "bench_shell_mem: %lu of %d notifications after 120 s\n", n, COMMANDS);
            exit(1);
        }
        bench_sleep_ms(5);
    }
}

static void count_held(const char *key, void *value, void *arg)
{
    (void)key;
    const task *t = value;
    *(unsigned long *)arg += t->shell && !t->shell->out.stored_only && t->shell->out.head != NULL;
}

/* background_output of the first `n` commands' tasks: each the exact
 * output and its exit. */
static void check_outputs(const ocp_plugin *p, char ids[][TASK_ID_SIZE], int n)
{
    for (int i = 0; i < n; i++) {
        char psid[40], args[64], *out = NULL, want[8300];
        snprintf(psid, sizeof psid, BENCH_PARENT_FMT, i / PER_PARENT);
        snprintf(args, sizeof args, "{\"task_id\":\"%.15s\"}", ids[i]);
        bench_tool(p, psid, "background_output", args, &out);
        snprintf(want, sizeof want, "\nOutput:\n%s\n", want_output);
        if (!out || !strstr(out, want) || !strstr(out, "Exit: exit code 0\n")) {
            fprintf(stderr, "bench_shell_mem: background_output of %s: %.300s\n", ids[i], out ? out : "");
            exit(1);
        }
        free(out);
    }
}

/* COMMANDS commands run to their end and notified; the heap they leave,
 * per command. */
static double run(const ocp_host *host, int stored)
{
    char opts[512];
    snprintf(opts, sizeof opts, "{\"max_running_shells\":16,\"max_queued\":100000,%s%s%s}",
             stored ? "\"store_path\":\"" : "", stored ? store_dir : "\"store\":false", stored ? "/ocbg.db\"" : "");
    static char ids[COMMANDS][TASK_ID_SIZE];
    size_t heap0 = heap_used();
    const ocp_plugin *p = bench_plugin(host, opts);
    for (int i = 0; i < COMMANDS; i++) {
        char psid[40], *out = NULL;
        snprintf(psid, sizeof psid, BENCH_PARENT_FMT, i / PER_PARENT);
        int rc = bench_tool(p, psid, "Bash",
                            "{\"command\":\"" COMMAND "\",\"description\":\"count\",\"run_in_background\":true}", &out);
        if (rc != 0 || bench_task_id(out, ids[i], sizeof ids[i]) != 0) {
            fprintf(stderr, "bench_shell_mem: launch %d failed (%d): %s\n", i, rc, out ? out : "");
            exit(1);
        }
        free(out);
    }
    engine *eng = p->userdata;
    wait_settled(eng);
    bench_sleep_ms(50); /* the worker's last bookkeeping after the last push */
    wait_settled(eng);
    unsigned long held = 0;
    engine_lock(eng);
    map_each(&eng->reg.by_id, count_held, &held);
    engine_unlock(eng);
    double per = ((double)heap_used() - (double)heap0) / COMMANDS;
    if (pushes != COMMANDS || pushes_with_tail != COMMANDS)
        fail("not every command was notified once with its output's end");
    if (held != (stored ? 0ul : (unsigned long)COMMANDS)) {
        fprintf(stderr, "bench_shell_mem: %lu commands hold their output in memory (store %s)\n", held,
                stored ? "on" : "off");
        exit(1);
    }
    check_outputs(p, ids, CHECKED);
    p->shutdown(p->userdata);
    return per;
}

static void memory_row(const ocp_host *host, int stored)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        double per = run(host, stored);
        printf("heap_per_shell_task%s_bytes: %.0f bytes\n", stored ? "" : "_store_off", per);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_shell_mem: the run with the store %s failed\n", stored ? "on" : "off");
        exit(1);
    }
}

int main(void)
{
    mallopt(M_ARENA_MAX, 1); /* every thread's allocations in the one arena mallinfo2 reports */
    size_t n = 0;
    for (int i = 1000; i <= 1800; i++)
        n += (size_t)snprintf(want_output + n, sizeof want_output - n, "%d\n", i);
    if (!mkdtemp(store_dir)) {
        perror("bench_shell_mem: mkdtemp");
        return 1;
    }
    ocp_host host = bench_fake_host();
    host.session_prompt = count_prompt;
    memory_row(&host, 1);
    memory_row(&host, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", store_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_shell_mem: could not remove %s\n", store_dir);
    return 0;
}

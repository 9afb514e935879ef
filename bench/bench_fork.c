/* bench_fork — fork context processing (fork_process) against one cJSON
 * parse of the same text: on the 10 MB history the reference plugin was
 * measured on (bench-data/history10mb.json.gz, the goal: at most 1.5x), and
 * on a generated 10 MB history. Medians of interleaved runs, of wall time
 * (fork_vs_parse) and of CPU time (fork_vs_parse_cpu, steadier on a busy
 * machine); the answer is checked (fork_check.h) before any figure is
 * printed. Prints "name: value unit".
 *
 * Each timed run starts from a settled allocator: glibc defers merging freed
 * chunks to the next large malloc, so without settle_allocator the fork run
 * would pay for freeing the parse's 10 MB tree (untimed), and the parse for
 * the fork's frees.
 *
 *   bench_fork [history.json.gz [parse|fork]]
 * The history defaults to $OCBG_BENCH_HISTORY, else
 * ../shared/bench-data/history10mb.json.gz; when it is missing, its rows are
 * skipped with a line saying so. With parse or fork, one run of that alone on
 * the history ("generated": the generated one) and nothing printed: for
 * instruction counts under valgrind --tool=callgrind, steady on a loaded
 * machine (subtract a run of "none": reading the input). */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "fork/fork.h"
#include "fork_check.h"
#include "base/util.h"

#define RUNS 21
#define DEFAULT_HISTORY "../shared/bench-data/history10mb.json.gz"

static const fork_limits LIM = {1500, 100000};

/* A conversation: user prompts, assistant text, tool calls with outputs of
 * mixed sizes (most short, some long: reads of whole files). */
static char *generated_history(size_t target_bytes)
{
    strbuf sb = {0};
    sb_puts(&sb, "[");
    unsigned seed = 12345;
    for (int i = 0; sb.len < target_bytes; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t out_len = (seed >> 16) % 8 == 0 ? 20000 + (seed >> 8) % 20000 : 200 + (seed >> 8) % 1200;
        char *output = xmalloc(out_len + 1);
        for (size_t k = 0; k < out_len; k++)
            output[k] = (char)('a' + (k * 7 + (size_t)i) % 26);
        output[out_len] = '\0';
        cJSON *m = cJSON_CreateObject(), *info = cJSON_AddObjectToObject(m, "info");
        char id[32];
        snprintf(id, sizeof id, "msg_%06d", i);
        cJSON_AddStringToObject(info, "id", id);
        cJSON_AddStringToObject(info, "role", i % 2 ? "assistant" : "user");
        cJSON *parts = cJSON_AddArrayToObject(m, "parts"), *text = cJSON_CreateObject();
        cJSON_AddStringToObject(text, "type", "text");
        cJSON_AddStringToObject(text, "text", "Let me look at the next file and check how the build handles it.");
        cJSON_AddItemToArray(parts, text);
        cJSON *tool = cJSON_CreateObject();
        cJSON_AddStringToObject(tool, "type", "tool");
        cJSON_AddStringToObject(tool, "tool", "read");
        cJSON_AddStringToObject(tool, "callID", id);
        cJSON *state = cJSON_AddObjectToObject(tool, "state");
        cJSON_AddStringToObject(state, "status", "completed");
        cJSON *input = cJSON_AddObjectToObject(state, "input");
        cJSON_AddStringToObject(input, "filePath", "/work/src/module.c");
        cJSON_AddStringToObject(state, "output", output);
        cJSON_AddItemToArray(parts, tool);
        char *s = cJSON_PrintUnformatted(m);
        if (i)
            sb_puts(&sb, ",");
        sb_puts(&sb, s);
        cJSON_free(s);
        cJSON_Delete(m);
        free(output);
    }
    sb_puts(&sb, "]");
    return sb_take(&sb);
}

/* The uncompressed text of a .gz file (gzip -dc: no library needed), or NULL. */
static char *gunzip_file(const char *path)
{
    if (access(path, R_OK) != 0 || strchr(path, '\''))
        return NULL;
    char *cmd = xasprintf("gzip -dc -- '%s'", path);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return NULL;
    strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        sb_putn(&sb, buf, n);
    if (pclose(p) != 0 || sb.len == 0) {
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

/* Merges the chunks freed so far (a request this large makes glibc do it),
 * so the next timed run does not pay for the previous one's frees. */
static void settle_allocator(void)
{
    free(xmalloc(64 * 1024));
}

/* CPU time of this (single-threaded) process: what a run costs without the
 * time other jobs on a loaded machine hold the core. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double parse_once(const char *h, double *cpu)
{
    double c0 = cpu_s();
    int64_t t0 = bench_ns();
    cJSON *j = cJSON_Parse(h);
    double s = (double)(bench_ns() - t0) / 1e9;
    *cpu = cpu_s() - c0;
    cJSON_Delete(j);
    settle_allocator();
    return s;
}

/* Times fork_process and one parse, interleaved, and checks the answer;
 * prints the rows with the given suffix. Returns 0, or 1 when wrong. */
static int measure(const char *h, const char *suffix)
{
    size_t bytes = strlen(h);
    double parse[RUNS], proc[RUNS], parse_cpu[RUNS], proc_cpu[RUNS];
    char *out = NULL;
    fork_stats st;
    for (int r = 0; r < RUNS; r++) {
        parse[r] = parse_once(h, &parse_cpu[r]);
        free(out);
        double c0 = cpu_s();
        int64_t t0 = bench_ns();
        int rc = fork_process(h, &LIM, &out, &st);
        proc[r] = (double)(bench_ns() - t0) / 1e9;
        proc_cpu[r] = cpu_s() - c0;
        settle_allocator();
        if (rc != 0) {
            printf("fork%s: FAILED (fork_process returned %d)\n", suffix, rc);
            return 1;
        }
    }
    long cuts = 0;
    const char *why = fork_check(h, out, &st, &LIM, &cuts);
    free(out);
    if (why) {
        printf("fork%s: WRONG ANSWER (%s)\n", suffix, why);
        return 1;
    }
    double p = bench_median(parse, RUNS), f = bench_median(proc, RUNS);
    printf("fork_input_mb%s: %.1f MB (%zu messages; kept %zu, %zu tokens; %ld cuts in them, checked)\n", suffix,
           bytes / 1048576.0, st.messages_in, st.messages_kept, st.tokens_after, cuts);
    printf("fork_parse_ms%s: %.1f ms\n", suffix, p * 1000);
    printf("fork_process_ms%s: %.1f ms\n", suffix, f * 1000);
    printf("fork_mb_per_s%s: %.1f MB/s\n", suffix, bytes / 1048576.0 / f);
    printf("fork_vs_parse%s: %.2f x\n", suffix, f / p);
    printf("fork_vs_parse_cpu%s: %.2f x\n", suffix, bench_median(proc_cpu, RUNS) / bench_median(parse_cpu, RUNS));
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : getenv("OCBG_BENCH_HISTORY");
    if (!path || !*path)
        path = DEFAULT_HISTORY;
    bool generated = strcmp(path, "generated") == 0;
    char *shared = generated ? generated_history(10u * 1024 * 1024) : gunzip_file(path);
    if (argc > 2) { /* one run alone, for callgrind */
        char *out = NULL;
        if (!shared)
            return 1;
        if (strcmp(argv[2], "fork") == 0)
            fork_process(shared, &LIM, &out, NULL);
        else if (strcmp(argv[2], "parse") == 0)
            cJSON_Delete(cJSON_Parse(shared));
        free(out);
        free(shared);
        return 0;
    }
    int bad = 0;
    if (shared)
        bad |= measure(shared, "");
    else
        printf("fork_vs_parse: skipped (%s not found or not gzip)\n", path);
    free(shared);
    char *gen = generated_history(10u * 1024 * 1024);
    bad |= measure(gen, "_generated");
    free(gen);
    return bad;
}

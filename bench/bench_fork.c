/* bench_fork — fork context processing on a generated 10 MB history:
 * throughput, and its time over one cJSON parse of the same input (the goal
 * is at most 2). Medians of repeated runs; prints "name: value unit". */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fork.h"
#include "base/util.h"

#define RUNS 7

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A conversation: user prompts, assistant text, tool calls with outputs of
 * mixed sizes (most short, some long: reads of whole files). */
static char *history(size_t target_bytes)
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

int main(void)
{
    char *h = history(10u * 1024 * 1024);
    size_t bytes = strlen(h);
    fork_limits lim = {1500, 100000};
    double parse[RUNS], proc[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t0 = now_s();
        cJSON *j = cJSON_Parse(h);
        parse[r] = now_s() - t0;
        cJSON_Delete(j);
        char *out = NULL;
        t0 = now_s();
        fork_process(h, &lim, &out, NULL);
        proc[r] = now_s() - t0;
        free(out);
    }
    qsort(parse, RUNS, sizeof parse[0], cmp);
    qsort(proc, RUNS, sizeof proc[0], cmp);
    double p = parse[RUNS / 2], f = proc[RUNS / 2];
    printf("fork_input_mb: %.1f MB\n", bytes / 1048576.0);
    printf("fork_parse_ms: %.1f ms\n", p * 1000);
    printf("fork_process_ms: %.1f ms\n", f * 1000);
    printf("fork_mb_per_s: %.1f MB/s\n", bytes / 1048576.0 / f);
    printf("fork_vs_parse: %.2f x\n", f / p);
    free(h);
    return 0;
}

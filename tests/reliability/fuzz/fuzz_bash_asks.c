/* fuzz_bash_asks — a command line's permission questions (ops/bash_asks.c,
 * tree-sitter's parser inside the plugin): any bytes parse without a crash
 * or a leak, every "bash" pattern is a piece of the line, every "always"
 * ends with " *", every directory is absolute and normalized; a line
 * refused for its bounds (its parse out of time, its nested texts over the
 * cap) asks nothing. Run with a per-input time limit (reliability.mk): the
 * reading is linear, so a slow input is a failure. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/bash_asks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool normalized(const char *d)
{
    size_t n = strlen(d);
    return d[0] == '/' && !strstr(d, "//") && !strstr(d, "/./") && !strstr(d, "/../") && (n == 1 || d[n - 1] != '/') &&
           !(n >= 2 && strcmp(d + n - 2, "/.") == 0) && !(n >= 3 && strcmp(d + n - 3, "/..") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    memcpy(line, data, size);
    line[size] = '\0';
    setenv("HOME", "/tmp/ocbg-fuzz-home", 1);
    bash_asks a;
    int rc = bash_asks_of(line, "/tmp/ocbg-fuzz-project", &a);
    if (rc != 0 && rc != -ETIME && rc != -EOVERFLOW && rc != -E2BIG)
        abort();
    if (rc != 0 && cJSON_GetArraySize(a.dirs) + cJSON_GetArraySize(a.patterns) + cJSON_GetArraySize(a.always) != 0)
        abort();
    const cJSON *it;
    cJSON_ArrayForEach (it, a.patterns) {
        if (!strstr(line, it->valuestring))
            abort();
    }
    cJSON_ArrayForEach (it, a.always) {
        size_t n = strlen(it->valuestring);
        if (n < 2 || strcmp(it->valuestring + n - 2, " *") != 0)
            abort();
    }
    cJSON_ArrayForEach (it, a.dirs) {
        if (!normalized(it->valuestring))
            abort();
    }
    bash_asks_free(&a);
    free(line);
    return 0;
}

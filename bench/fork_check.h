/*
 * fork_check.h — what bench_fork checks of fork_process's answer, computed
 * here the slow, plain way from the input (a header, not a bench: only
 * bench/NAME.c files are built into programs). A fast wrong answer must not
 * pass: the kept messages are the newest that fit the token cap, each equal
 * to its input message except its long tool results, which keep exactly
 * their first max_tool_chars characters and say the original length.
 *
 * The reference here handles histories without compactions or a fork point
 * (the bench's inputs); fork_check refuses any other history.
 */
#ifndef OCBG_FORK_CHECK_H
#define OCBG_FORK_CHECK_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork.h"

/* Characters (code points) of s: bytes that do not continue a sequence. */
static inline size_t check_chars(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* The estimate fork.h describes, byte by byte: a quarter token per ASCII
 * character (rounded up per string), one per other code point. */
static inline size_t check_tokens(const cJSON *item)
{
    if (cJSON_IsString(item)) {
        size_t ascii = 0, other = 0;
        for (const unsigned char *p = (const unsigned char *)item->valuestring; *p; p++) {
            ascii += *p < 0x80;
            other += *p >= 0xC0;
        }
        return (ascii + 3) / 4 + other;
    }
    size_t n = 0;
    for (const cJSON *c = item->child; c; c = c->next)
        n += check_tokens(c);
    return n;
}

/* The result strings of a part that fork cuts. */
static inline size_t check_slots(cJSON *part, cJSON **slot)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "type"));
    if (type && strcmp(type, "tool") == 0) {
        cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
        slot[0] = cJSON_GetObjectItemCaseSensitive(state, "output");
        slot[1] = cJSON_GetObjectItemCaseSensitive(state, "error");
        return 2;
    }
    if (type && (strcmp(type, "tool-result") == 0 || strcmp(type, "tool_result") == 0)) {
        slot[0] = cJSON_GetObjectItemCaseSensitive(part, "output");
        slot[1] = cJSON_GetObjectItemCaseSensitive(part, "content");
        slot[2] = cJSON_GetObjectItemCaseSensitive(part, "text");
        return 3;
    }
    return 0;
}

/* Is got the cut of want: want's first max characters, then a marker with
 * want's length in characters? */
static inline bool check_cut(const char *want, const char *got, size_t max)
{
    size_t keep = 0, chars = 0;
    for (const unsigned char *p = (const unsigned char *)want; *p && !(chars == max && (*p & 0xC0) != 0x80);
         p++, keep++)
        chars += (*p & 0xC0) != 0x80;
    char says[96];
    snprintf(says, sizeof says, "the original was %zu characters", check_chars(want));
    return strncmp(want, got, keep) == 0 && strncmp(got + keep, "\n[... cut", 9) == 0 && strstr(got + keep, says);
}

/* Cut msg's long results as fork must, checked against the answer's message
 * got (which may be NULL: a dropped message, cut with fork_cut_text for its
 * estimate). Returns the cuts, or -1 when got's results are wrong. */
static inline long check_cut_message(cJSON *msg, cJSON *got, size_t max)
{
    long cuts = 0;
    cJSON *part, *got_parts = cJSON_GetObjectItemCaseSensitive(got, "parts");
    int k = 0;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        cJSON *slot[3], *got_slot[3];
        size_t n = check_slots(part, slot);
        if (got)
            check_slots(cJSON_GetArrayItem(got_parts, k), got_slot);
        k++;
        for (size_t i = 0; i < n; i++) {
            if (!cJSON_IsString(slot[i]) || check_chars(slot[i]->valuestring) <= max)
                continue;
            cuts++;
            const char *g = got ? cJSON_GetStringValue(got_slot[i]) : NULL;
            if (got && (!g || !check_cut(slot[i]->valuestring, g, max)))
                return -1;
            char *cut = g ? strdup(g) : fork_cut_text(slot[i]->valuestring, max);
            cJSON_SetValuestring(slot[i], cut);
            free(cut);
        }
    }
    return cuts;
}

/* Does a message start or answer a compaction, or mark a fork point? */
static inline bool check_unsupported(const cJSON *msg)
{
    const char *s = cJSON_PrintUnformatted(msg);
    bool bad = strstr(s, "\"compaction\"") || strstr(s, "\"summary\":true") || strstr(s, FORK_PREAMBLE_MARK);
    cJSON_free((void *)s);
    return bad;
}

/* NULL when out is what fork_process must answer for history, else what is
 * wrong. *cuts: the long results of the kept messages. */
static inline const char *fork_check(const char *history, const char *out, const fork_stats *st, const fork_limits *lim,
                                     long *cuts)
{
    cJSON *in = cJSON_Parse(history), *got = cJSON_Parse(out);
    const char *why = NULL;
    int n = cJSON_GetArraySize(in), kept = cJSON_GetArraySize(got), fit = 0;
    size_t total = 0;
    *cuts = 0;
    for (int i = n - 1; i >= 0 && !why; i--) {
        cJSON *m = cJSON_GetArrayItem(in, i), *g = i >= n - kept ? cJSON_GetArrayItem(got, i - (n - kept)) : NULL;
        if (check_unsupported(m))
            why = "the reference handles no compaction or fork point";
        long c = check_cut_message(m, g, lim->max_tool_chars);
        if (c < 0)
            why = "a long tool result is not its cut";
        else if (g && !cJSON_Compare(m, g, true))
            why = "a kept message differs from its input beyond the cuts";
        size_t t = check_tokens(m);
        if (i == n - 1 || total + t <= lim->max_tokens) {
            total += t;
            fit++;
            *cuts += g ? c : 0;
        } else
            break;
    }
    if (!why && (!cJSON_IsArray(got) || kept != fit || (size_t)kept != st->messages_kept))
        why = "not the newest messages that fit the token cap";
    if (!why && (total != st->tokens_after || (kept > 1 && total > lim->max_tokens)))
        why = "the token estimate is not the cap's";
    cJSON_Delete(in);
    cJSON_Delete(got);
    return why;
}

#endif

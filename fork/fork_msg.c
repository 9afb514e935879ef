/* fork_msg.c — see fork_msg.h. */
#include "fork_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* Sixteen bytes as signed lanes (GCC and clang vector extensions: SSE2 on
 * x86-64, NEON on arm64, plain code elsewhere). */
typedef signed char lanes16 __attribute__((vector_size(16)));
typedef unsigned char counts16 __attribute__((vector_size(16)));

/* The sum of the lanes of v, each a count from 0 to 255. */
static size_t lanes_sum(counts16 v)
{
    unsigned char b[16];
    memcpy(b, &v, sizeof b);
    size_t n = 0;
    for (int i = 0; i < 16; i++)
        n += b[i];
    return n;
}

fork_count fork_count_text(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    const lanes16 zero = {0}, lowest_lead = zero - 64; /* 0xC0 as a signed byte */
    size_t high = 0, cont = 0, i = 0;
    /* Sixteen bytes at a time into an unsigned counter per lane (a
     * comparison gives all ones where true: subtracting it adds one): bytes
     * from 0x80 (negative as signed), continuation bytes 0x80..0xBF (below
     * -64), summed every 255 blocks before a lane wraps. Tool results are
     * most of a history: this runs over nearly every byte. */
    while (i + 16 <= n) {
        counts16 hi = {0}, co = {0};
        for (int k = 0; k < 255 && i + 16 <= n; k++, i += 16) {
            lanes16 x;
            memcpy(&x, s + i, 16);
            hi -= (counts16)(x < zero);
            co -= (counts16)(x < lowest_lead);
        }
        high += lanes_sum(hi);
        cont += lanes_sum(co);
    }
    for (; i < n; i++) {
        high += s[i] >> 7;
        cont += (s[i] & 0xC0) == 0x80;
    }
    return (fork_count){n - high, high - cont};
}

/* The continuation bytes (0x80..0xBF) of s[0..n): characters are the
 * other bytes. One comparison per sixteen bytes (fork_count_text makes two):
 * every long tool result is counted whole to say its length. */
static size_t count_continuations(const unsigned char *s, size_t n)
{
    const lanes16 lowest_lead = (lanes16){0} - 64;
    size_t cont = 0, i = 0;
    while (n - i >= 16) {
        size_t blocks = (n - i) / 16 < 255 ? (n - i) / 16 : 255;
        counts16 co = {0};
        for (size_t k = 0; k < blocks; k++, i += 16) {
            lanes16 x;
            memcpy(&x, s + i, 16);
            co -= (counts16)(x < lowest_lead);
        }
        cont += lanes_sum(co);
    }
    for (; i < n; i++)
        cont += (s[i] & 0xC0) == 0x80;
    return cont;
}

size_t fork_count_chars(const char *s, size_t n)
{
    return n - count_continuations((const unsigned char *)s, n);
}

/* Where character number `chars` (from 0) of s[0..n) starts, n when there
 * are no more (utf8_offset). A character is at least a byte: the next
 * `missing` bytes hold at most `missing` starts, so they are counted in
 * one piece, until none is missing (a cut reads up to the limit in every
 * long result). */
size_t fork_char_offset(const char *str, size_t n, size_t chars)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t seen = 0, i = 0;
    while (seen < chars && i < n) {
        size_t step = chars - seen < n - i ? chars - seen : n - i;
        seen += step - count_continuations(s + i, step);
        i += step;
    }
    /* seen == chars starts before i (or i == n): the next start is it. */
    while (i < n && (s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

char *fork_cut_finish(strbuf *sb, size_t chars, size_t *cut_len)
{
    sb_printf(sb, FORK_CUT_MARKER, chars);
    if (cut_len)
        *cut_len = sb->len;
    return sb_take(sb);
}

char *fork_cut_n(const char *s, size_t len, size_t chars, size_t max_chars, size_t *cut_len)
{
    strbuf sb = {0};
    sb_putn(&sb, s, fork_char_offset(s, len, max_chars));
    return fork_cut_finish(&sb, chars, cut_len);
}

bool fork_is_type(const cJSON *part, const char *type)
{
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "type"));
    return t && strcmp(t, type) == 0;
}

const char *fork_info_string(const cJSON *msg, const char *key)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, key));
}

static bool info_is(const cJSON *msg, const char *key, const char *want)
{
    const char *v = fork_info_string(msg, key);
    return v && strcmp(v, want) == 0;
}

bool fork_is_compaction_request(const cJSON *msg)
{
    if (!info_is(msg, "role", "user"))
        return false;
    const cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        if (fork_is_type(part, "compaction"))
            return true;
    }
    return false;
}

/* Called on every message of a 10 MB history, so the common case costs two
 * key lookups: OpenCode gives every assistant message a mode ("compaction"
 * for a summary) and user messages none. */
bool fork_is_completed_summary(const cJSON *msg)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "mode"));
    if (mode ? strcmp(mode, "compaction") != 0 : !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "summary")))
        return false;
    return info_is(msg, "role", "assistant") && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(info, "finish")) &&
           !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(info, "error"));
}

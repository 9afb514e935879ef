/* fork_msg.c — see fork_msg.h. */
#include "fork_msg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The sum of the eight byte lanes of w (each at most 255). */
static size_t lanes_sum(uint64_t w)
{
    w = (w & 0x00FF00FF00FF00FFull) + ((w >> 8) & 0x00FF00FF00FF00FFull);
    return (size_t)((w * 0x0001000100010001ull) >> 48);
}

fork_count fork_count_text(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    const uint64_t ones = 0x0101010101010101ull;
    size_t high = 0, lead = 0, i = 0;
    /* Eight bytes at a time, into a counter per byte lane (bit 7 set: not
     * ASCII; bits 7 and 6: a lead byte), summed every 255 words before a
     * lane overflows. Tool results are most of a history: this runs over
     * nearly every byte of it. */
    while (i + 8 <= n) {
        uint64_t hi = 0, ld = 0;
        for (int k = 0; k < 255 && i + 8 <= n; k++, i += 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            hi += (x >> 7) & ones;
            ld += (x >> 7) & (x >> 6) & ones;
        }
        high += lanes_sum(hi);
        lead += lanes_sum(ld);
    }
    for (; i < n; i++) {
        high += s[i] >> 7;
        lead += s[i] >= 0xC0;
    }
    return (fork_count){n - high, lead};
}

char *fork_cut_n(const char *s, size_t len, size_t chars, size_t max_chars)
{
    size_t keep = utf8_offset(s, len, max_chars);
    strbuf sb = {0};
    sb_putn(&sb, s, keep);
    sb_printf(&sb, FORK_CUT_MARKER, chars);
    return sb_take(&sb);
}

size_t fork_cut_tokens(const char *s, size_t len, size_t chars, size_t max_chars)
{
    fork_count c = fork_count_text(s, utf8_offset(s, len, max_chars));
    int marker = snprintf(NULL, 0, FORK_CUT_MARKER, chars); /* ASCII only */
    c.ascii += marker > 0 ? (size_t)marker : 0;
    return fork_count_tokens(c);
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
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
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

size_t fork_result_slots(cJSON *part, cJSON **slot)
{
    if (fork_is_type(part, "tool")) {
        cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
        slot[0] = cJSON_GetObjectItemCaseSensitive(state, "output");
        slot[1] = cJSON_GetObjectItemCaseSensitive(state, "error");
        return 2;
    }
    if (fork_is_type(part, "tool-result") || fork_is_type(part, "tool_result")) {
        slot[0] = cJSON_GetObjectItemCaseSensitive(part, "output");
        slot[1] = cJSON_GetObjectItemCaseSensitive(part, "content");
        slot[2] = cJSON_GetObjectItemCaseSensitive(part, "text");
        return 3;
    }
    return 0;
}

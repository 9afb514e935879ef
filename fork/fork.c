/* fork.c — see fork.h. */
#include "fork.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

size_t fork_estimate_tokens(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t ascii = 0, lead = 0, i = 0;
    /* Eight bytes at a time: ASCII bytes have bit 7 clear; a multi-byte
     * character's lead byte has bits 7 and 6 set. */
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t high = x & 0x8080808080808080ull;
        ascii += 8 - (size_t)__builtin_popcountll(high);
        lead += (size_t)__builtin_popcountll(high & (x << 1));
    }
    for (; i < n; i++) {
        if (s[i] < 0x80)
            ascii++;
        else if ((s[i] & 0xC0) == 0xC0)
            lead++;
    }
    return (ascii + 3) / 4 + lead;
}

char *fork_cut_text(const char *s, size_t max_chars)
{
    size_t len = strlen(s);
    if (len <= max_chars) /* fewer bytes than the limit: fewer characters too */
        return NULL;
    size_t chars = utf8_count(s, len);
    if (chars <= max_chars)
        return NULL;
    size_t keep = utf8_offset(s, len, max_chars);
    strbuf sb = {0};
    sb_putn(&sb, s, keep);
    sb_printf(&sb, "\n[... cut for the forked context: the original was %zu characters; re-run the tool for all of it]",
              chars);
    return sb_take(&sb);
}

/* Cut obj[key] when it is a long string. */
static bool cut_member(cJSON *obj, const char *key, size_t max_chars)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v))
        return false;
    char *cut = fork_cut_text(v->valuestring, max_chars);
    if (!cut)
        return false;
    cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(cut));
    free(cut);
    return true;
}

static bool is_type(const cJSON *part, const char *type)
{
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "type"));
    return t && strcmp(t, type) == 0;
}

/* Cut every tool result of one message; returns how many were cut. */
static size_t cut_results(cJSON *msg, size_t max_chars)
{
    size_t n = 0;
    cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        if (is_type(part, "tool")) {
            /* state.input, tool and callID stay as they are. */
            cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
            n += cut_member(state, "output", max_chars);
            n += cut_member(state, "error", max_chars);
        } else if (is_type(part, "tool-result") || is_type(part, "tool_result")) {
            n += cut_member(part, "output", max_chars);
            n += cut_member(part, "content", max_chars);
            n += cut_member(part, "text", max_chars);
        }
    }
    return n;
}

/* Does the message hold a text part starting with the preamble mark? */
static bool is_fork_point(const cJSON *msg)
{
    const cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (is_type(part, "text") && t && strncmp(t, FORK_PREAMBLE_MARK, strlen(FORK_PREAMBLE_MARK)) == 0)
            return true;
    }
    return false;
}

static size_t tokens_of(const cJSON *item)
{
    size_t n = 0;
    if (cJSON_IsString(item))
        return fork_estimate_tokens(item->valuestring, strlen(item->valuestring));
    for (const cJSON *c = item ? item->child : NULL; c; c = c->next)
        n += tokens_of(c);
    return n;
}

static bool info_is(const cJSON *msg, const char *key, const char *want)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, key));
    return v && strcmp(v, want) == 0;
}

/* A user message asking for a compaction (its part of type "compaction"). */
static bool is_compaction_request(const cJSON *msg)
{
    if (!info_is(msg, "role", "user"))
        return false;
    const cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        if (is_type(part, "compaction"))
            return true;
    }
    return false;
}

/* A summary OpenCode counts as done: finished and without an error. Called
 * on every message of a 10 MB history, so the common case costs two key
 * lookups: OpenCode gives every assistant message a mode ("compaction" for a
 * summary) and user messages none. */
static bool is_completed_summary(const cJSON *msg)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "mode"));
    if (mode ? strcmp(mode, "compaction") != 0 : !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "summary")))
        return false;
    return info_is(msg, "role", "assistant") && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(info, "finish")) &&
           !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(info, "error"));
}

/* The index of the compaction request answered by the summary at index `at`:
 * the one its parentID names, else the nearest before it (a fork may give
 * messages new ids); 0 when there is none. */
static size_t request_index(const cJSON *summary, size_t at)
{
    const char *parent = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(summary, "info"), "parentID"));
    size_t nearest = 0;
    bool found = false;
    const cJSON *m = summary;
    for (size_t i = at; i-- > 0;) {
        m = m->prev; /* the previous item: i stays >= 0, so never the wrap to the last */
        if (!is_compaction_request(m))
            continue;
        if (!found)
            nearest = i;
        found = true;
        if (!parent || info_is(m, "id", parent))
            return i;
    }
    return nearest;
}

/* Where the model's view begins and where the fork point is (n: none).
 * OpenCode shows its model the history from the compaction request that the
 * newest completed summary answers (its filterCompacted); a fork inherits
 * the same view. */
static void find_marks(const cJSON *msgs, size_t n, size_t *start, size_t *fork_at)
{
    const cJSON *summary = NULL, *m;
    size_t at = 0, i = 0;
    *fork_at = n;
    cJSON_ArrayForEach(m, msgs)
    {
        if (*fork_at == n && is_fork_point(m))
            *fork_at = i;
        if (is_completed_summary(m)) {
            summary = m;
            at = i;
        }
        i++;
    }
    *start = summary ? request_index(summary, at) : 0;
}

int fork_process(const char *messages_json, const fork_limits *lim, char **out, fork_stats *st)
{
    fork_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    *out = NULL;
    cJSON *msgs = messages_json ? cJSON_Parse(messages_json) : NULL;
    if (!cJSON_IsArray(msgs)) {
        cJSON_Delete(msgs);
        return -EINVAL;
    }
    size_t n = (size_t)cJSON_GetArraySize(msgs), start, fork_at;
    find_marks(msgs, n, &start, &fork_at);
    st->messages_in = n;
    /* What comes before the compaction is gone from the model's view; a
     * compaction after the fork point (the sub-agent's own) leaves nothing
     * inherited. */
    for (size_t k = 0; k < start; k++)
        cJSON_DeleteItemFromArray(msgs, 0);
    n -= start;
    size_t inherited = fork_at >= start ? fork_at - start : 0;
    size_t *tokens = xcalloc(n ? n : 1, sizeof *tokens);
    size_t total = 0, i = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, msgs)
    {
        if (i < inherited)
            st->results_cut += cut_results(m, lim->max_tool_chars);
        tokens[i] = tokens_of(m);
        total += tokens[i++];
    }
    /* Drop the oldest inherited messages until it fits; the newest always stays. */
    size_t drop = 0;
    while (total > lim->max_tokens && drop < inherited && drop + 1 < n)
        total -= tokens[drop++];
    for (size_t k = 0; k < drop; k++)
        cJSON_DeleteItemFromArray(msgs, 0);
    st->messages_kept = n - drop;
    st->tokens_after = total;
    free(tokens);
    char *s = cJSON_PrintUnformatted(msgs);
    cJSON_Delete(msgs);
    if (!s)
        return -ENOMEM;
    *out = xstrdup(s);
    cJSON_free(s);
    return 0;
}

char *fork_preamble(const fork_limits *lim)
{
    return xasprintf(
        FORK_PREAMBLE_MARK " from the parent conversation, whose context you inherit. "
        "To keep that context small it may be truncated: tool results longer than %zu characters were cut, "
        "and when the history exceeded about %zu tokens its oldest messages were dropped. When you need the "
        "full content of a file or a tool result, read the file or run the tool again rather than relying on "
        "the history. Your task follows.",
        lim->max_tool_chars, lim->max_tokens);
}

/* One part as a line of text for the rendered history. */
static void render_part(strbuf *sb, const cJSON *part)
{
    if (is_type(part, "text")) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (t)
            sb_printf(sb, "%s\n", t);
    } else if (is_type(part, "tool")) {
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
        const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "tool"));
        char *input = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(state, "input"));
        const char *output = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "output"));
        const char *error = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "error"));
        sb_printf(sb, "[tool %s %s]\n", tool ? tool : "?", input ? input : "{}");
        if (output)
            sb_printf(sb, "[result]\n%s\n", output);
        if (error)
            sb_printf(sb, "[error]\n%s\n", error);
        cJSON_free(input);
    } else if (is_type(part, "compaction")) {
        /* OpenCode shows its model a compaction request as a question; say
         * what it stands for. */
        sb_puts(sb, "[the conversation before this point was compacted; its summary follows]\n");
    }
}

char *fork_render(const char *processed_json)
{
    cJSON *msgs = cJSON_Parse(processed_json ? processed_json : "");
    strbuf sb = {0};
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs)
    {
        const char *role = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "info"), "role"));
        sb_printf(&sb, "--- %s ---\n", role ? role : "message");
        const cJSON *part;
        cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(m, "parts")) render_part(&sb, part);
    }
    cJSON_Delete(msgs);
    return sb_take(&sb);
}

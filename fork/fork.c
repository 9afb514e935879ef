/* fork.c — see fork.h: the texts (estimate, cut, preamble, rendering);
 * fork_process is in fork_process.c. */
#include "fork.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fork_msg.h"

size_t fork_estimate_tokens(const char *s, size_t n)
{
    return fork_count_tokens(fork_count_text(s, n));
}

char *fork_cut_text(const char *s, size_t max_chars)
{
    size_t len = strlen(s);
    if (len <= max_chars) /* fewer bytes than the limit: fewer characters too */
        return NULL;
    size_t chars = fork_count_chars(s, len);
    if (chars <= max_chars)
        return NULL;
    return fork_cut_n(s, len, chars, max_chars, NULL);
}

char *fork_preamble(const fork_limits *lim)
{
    return xasprintf(
        FORK_PREAMBLE_MARK
        " from the parent conversation, whose context you inherit. "
        "To keep that context small it may be truncated: tool results longer than %zu characters were cut, "
        "and when the history exceeded about %zu tokens its oldest messages were dropped. When you need the "
        "full content of a file or a tool result, read the file or run the tool again rather than relying on "
        "the history. Your task follows.",
        lim->max_tool_chars, lim->max_tokens);
}

/* One part as a line of text for the rendered history. */
static void render_part(strbuf *sb, const cJSON *part)
{
    if (fork_is_type(part, "text")) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (t)
            sb_printf(sb, "%s\n", t);
    } else if (fork_is_type(part, "tool")) {
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
    } else if (fork_is_type(part, "compaction")) {
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
    cJSON_ArrayForEach (m, msgs) {
        const char *role =
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "info"), "role"));
        sb_printf(&sb, "--- %s ---\n", role ? role : "message");
        const cJSON *part;
        cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(m, "parts"))
            render_part(&sb, part);
    }
    cJSON_Delete(msgs);
    return sb_take(&sb);
}

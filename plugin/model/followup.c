/* followup.c — see followup.h. */
#include "model/followup.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"

/* The marker line's start; the number ends it, so #1 never matches #12. */
static void marker(char *buf, size_t size, const char *task_id, unsigned n)
{
    snprintf(buf, size, "[ocbg] Follow-up #%u for background task %s ", n, task_id);
}

char *followup_text(const char *task_id, unsigned n, const char *message)
{
    char m[96];
    marker(m, sizeof m, task_id, n);
    return xasprintf("%s(from the session that launched you; take it into account and go on with your task):\n\n%s", m,
                     message);
}

bool followup_seen(const char *messages_json, const char *task_id, unsigned n)
{
    char m[96];
    marker(m, sizeof m, task_id, n);
    size_t len = strlen(m);
    cJSON *root = cJSON_Parse(messages_json ? messages_json : "");
    bool seen = false;
    const cJSON *msg, *all = cJSON_IsArray(root) ? root : NULL;
    cJSON_ArrayForEach (msg, all) {
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role"));
        if (!role || strcmp(role, "user") != 0)
            continue;
        const cJSON *part;
        cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
            const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
            seen |= text && strncmp(text, m, len) == 0;
        }
    }
    cJSON_Delete(root);
    return seen;
}

/* outcome.c — see outcome.h. */
#include "outcome.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char *str_at(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* The text parts of one message joined by newlines, or NULL when none. */
static char *message_text(const cJSON *msg)
{
    strbuf sb = {0};
    const cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        const char *type = str_at(part, "type");
        const char *text = str_at(part, "text");
        if (!type || strcmp(type, "text") != 0 || !text || !*text)
            continue;
        if (sb.len)
            sb_puts(&sb, "\n");
        sb_puts(&sb, text);
    }
    return sb.len ? sb_take(&sb) : NULL;
}

/* "APIError: model overloaded" from {name, data:{message}}. */
static char *error_text(const cJSON *err)
{
    const char *name = str_at(err, "name");
    const char *msg = str_at(cJSON_GetObjectItemCaseSensitive(err, "data"), "message");
    if (!msg)
        msg = str_at(err, "message");
    if (name && msg)
        return xasprintf("%s: %s", name, msg);
    return xstrdup(msg ? msg : name ? name : "unknown error");
}

void outcome_from_messages(const char *messages_json, const char *prev_message_id, outcome *out)
{
    memset(out, 0, sizeof *out);
    cJSON *msgs = cJSON_Parse(messages_json ? messages_json : "");
    int n = cJSON_IsArray(msgs) ? cJSON_GetArraySize(msgs) : 0;
    if (n == 0)
        goto done;
    const cJSON *last = cJSON_GetArrayItem(msgs, n - 1);
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(last, "info");
    const char *role = str_at(info, "role");
    const char *id = str_at(info, "id");
    if (!role || strcmp(role, "assistant") != 0)
        goto done;
    if (id && prev_message_id && strcmp(id, prev_message_id) == 0)
        goto done;
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(info, "time");
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(info, "error");
    bool finished = cJSON_GetObjectItemCaseSensitive(time, "completed") != NULL ||
                    str_at(info, "finish") != NULL || cJSON_IsObject(error);
    if (!finished)
        goto done;
    out->message_id = xstrdup(id);
    if (cJSON_IsObject(error)) {
        out->kind = OUTCOME_ERROR;
        out->text = error_text(error);
        goto done;
    }
    out->kind = OUTCOME_COMPLETED;
    /* Walk back through this turn's assistant messages for the answer text. */
    for (int i = n - 1; i >= 0 && !out->text; i--) {
        const cJSON *m = cJSON_GetArrayItem(msgs, i);
        const char *r = str_at(cJSON_GetObjectItemCaseSensitive(m, "info"), "role");
        if (!r || strcmp(r, "assistant") != 0)
            break;
        out->text = message_text(m);
    }
    if (!out->text)
        out->text = xstrdup("(the sub-agent finished without a text reply)");
done:
    cJSON_Delete(msgs);
}

void outcome_free(outcome *o)
{
    free(o->text);
    free(o->message_id);
    memset(o, 0, sizeof *o);
}

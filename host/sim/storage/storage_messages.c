/* storage_messages.c — layer 1 (storage): messages and parts in OpenCode's
 * shapes: built, given ids, appended to a session, listed (see sim_storage.h).
 * Uses storage_ids.c, storage_journal.c and the core. */
#include "sim_storage.h"

#include <stdlib.h>
#include <string.h>

void sim_message_rebase_locked(sim_storage *st, sim_session *s, cJSON *msg)
{
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    char *mid = sim_new_id_locked(st, "msg");
    cJSON_ReplaceItemInObjectCaseSensitive(info, "id", cJSON_CreateString(mid));
    cJSON_ReplaceItemInObjectCaseSensitive(info, "sessionID", cJSON_CreateString(s->id));
    cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        char *pid = sim_new_id_locked(st, "prt");
        cJSON_ReplaceItemInObjectCaseSensitive(part, "id", cJSON_CreateString(pid));
        cJSON_ReplaceItemInObjectCaseSensitive(part, "sessionID", cJSON_CreateString(s->id));
        cJSON_ReplaceItemInObjectCaseSensitive(part, "messageID", cJSON_CreateString(mid));
        free(pid);
    }
    free(mid);
}

void sim_session_append_locked(sim_storage *st, sim_session *s, cJSON *msg)
{
    cJSON_AddItemToArray(s->messages, msg);
    s->updated = sim_wall_ms(st->core);
    sim_journal_message_locked(st, s, msg);
    sim_changed_locked(st->core);
}

cJSON *sim_session_messages_locked(const sim_session *s, int limit)
{
    int n = cJSON_GetArraySize(s->messages);
    int skip = (limit > 0 && limit < n) ? n - limit : 0;
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    cJSON *m;
    cJSON_ArrayForEach (m, s->messages) {
        if (i++ >= skip)
            cJSON_AddItemToArray(out, cJSON_Duplicate(m, 1));
    }
    return out;
}

char *sim_prompt_text(const cJSON *body)
{
    size_t len = 0, cap = 64;
    char *t = sim_xmalloc(cap);
    t[0] = 0;
    const cJSON *p;
    cJSON_ArrayForEach (p, cJSON_GetObjectItemCaseSensitive(body, "parts")) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "text"));
        if (!type || strcmp(type, "text") != 0 || !text)
            continue;
        size_t n = strlen(text);
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            t = sim_xrealloc(t, cap);
        }
        if (len)
            t[len++] = '\n';
        memcpy(t + len, text, n + 1);
        len += n;
    }
    return t;
}

cJSON *sim_user_message_locked(sim_storage *st, sim_session *s, const cJSON *body)
{
    char *mid = sim_new_id_locked(st, "msg");
    cJSON *msg = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(msg, "info");
    cJSON_AddStringToObject(info, "id", mid);
    cJSON_AddStringToObject(info, "sessionID", s->id);
    cJSON_AddStringToObject(info, "role", "user");
    cJSON *t = cJSON_AddObjectToObject(info, "time");
    cJSON_AddNumberToObject(t, "created", (double)sim_wall_ms(st->core));
    const char *agent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "agent"));
    cJSON_AddStringToObject(info, "agent", agent ? agent : "build");
    cJSON *parts = cJSON_AddArrayToObject(msg, "parts");
    const cJSON *p;
    cJSON_ArrayForEach (p, cJSON_GetObjectItemCaseSensitive(body, "parts")) {
        cJSON *c = cJSON_Duplicate(p, 1);
        char *pid = sim_new_id_locked(st, "prt");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "id");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "sessionID");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "messageID");
        cJSON_AddStringToObject(c, "id", pid);
        cJSON_AddStringToObject(c, "sessionID", s->id);
        cJSON_AddStringToObject(c, "messageID", mid);
        cJSON_AddItemToArray(parts, c);
        free(pid);
    }
    free(mid);
    return msg;
}

cJSON *sim_message_new_locked(sim_storage *st, const sim_session *s, const char *role)
{
    cJSON *msg = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(msg, "info");
    char *id = sim_new_id_locked(st, "msg");
    cJSON_AddStringToObject(info, "id", id);
    free(id);
    cJSON_AddStringToObject(info, "sessionID", s->id);
    cJSON_AddStringToObject(info, "role", role);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(info, "time"), "created", (double)sim_wall_ms(st->core));
    cJSON_AddArrayToObject(msg, "parts");
    return msg;
}

cJSON *sim_part_new_locked(sim_storage *st, cJSON *msg, const char *type)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    cJSON *part = cJSON_CreateObject();
    char *id = sim_new_id_locked(st, "prt");
    cJSON_AddStringToObject(part, "id", id);
    free(id);
    cJSON_AddItemToObject(part, "sessionID", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(info, "sessionID"), 0));
    cJSON_AddItemToObject(part, "messageID", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(info, "id"), 0));
    cJSON_AddStringToObject(part, "type", type);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(msg, "parts"), part);
    return part;
}

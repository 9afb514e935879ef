/* events.c — see events.h. Each event type decoded into a session note. */
#include "events.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* How much of a permission question a task's status shows. */
#define PERMISSION_WHAT_CHARS 200

static const char *str_at(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* session.error: "Name: message", or whichever of the two there is. */
static char *error_text(const cJSON *props)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(props, "error");
    const char *name = str_at(err, "name");
    const char *msg = str_at(cJSON_GetObjectItemCaseSensitive(err, "data"), "message");
    return name && msg ? xasprintf("%s: %s", name, msg)
                       : xstrdup(msg ? msg : name ? name : "the session reported an error");
}

/* What a permission question asks, for the task's status: "bash: rm -rf
 * build, git push" (capped: a pattern may be a whole script). */
static char *permission_what(const cJSON *props)
{
    const char *perm = str_at(props, "permission");
    strbuf sb = {0};
    sb_puts(&sb, perm ? perm : "permission");
    const cJSON *p;
    int i = 0;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(props, "patterns"))
    {
        if (cJSON_IsString(p))
            sb_printf(&sb, "%s%s", i++ ? ", " : ": ", p->valuestring);
    }
    if (utf8_count(sb.buf, sb.len) > PERMISSION_WHAT_CHARS) {
        sb.len = utf8_offset(sb.buf, sb.len, PERMISSION_WHAT_CHARS);
        sb.buf[sb.len] = '\0';
        sb_puts(&sb, "…");
    }
    return sb_take(&sb);
}

static void decode_status(const cJSON *props, session_note *n)
{
    const char *st = str_at(cJSON_GetObjectItemCaseSensitive(props, "status"), "type");
    if (!st)
        n->session_id = NULL;
    n->kind = st && strcmp(st, "idle") == 0 ? NOTE_IDLE : st && strcmp(st, "retry") == 0 ? NOTE_RETRY : NOTE_BUSY;
}

static void decode_part(const cJSON *props, session_note *n)
{
    const cJSON *part = cJSON_GetObjectItemCaseSensitive(props, "part");
    n->kind = NOTE_PART;
    if (str_at(part, "sessionID"))
        n->session_id = str_at(part, "sessionID");
    const char *type = str_at(part, "type");
    if (type && strcmp(type, "tool") == 0) {
        n->call_id = str_at(part, "callID");
        n->tool = str_at(part, "tool");
    }
}

/* The note an event makes (session_id NULL: none); *owned: a string to free. */
static void decode(const char *type, const cJSON *props, session_note *n, char **owned)
{
    n->session_id = str_at(props, "sessionID");
    if (strcmp(type, "session.idle") == 0) {
        n->kind = NOTE_IDLE;
    } else if (strcmp(type, "session.status") == 0) {
        decode_status(props, n);
    } else if (strcmp(type, "session.error") == 0) {
        n->kind = NOTE_ERROR;
        n->text = *owned = n->session_id ? error_text(props) : NULL;
    } else if (strcmp(type, "session.deleted") == 0) {
        n->kind = NOTE_DELETED;
        const char *id = str_at(cJSON_GetObjectItemCaseSensitive(props, "info"), "id");
        if (id)
            n->session_id = id;
    } else if (strcmp(type, "message.part.updated") == 0) {
        decode_part(props, n);
    } else if (strcmp(type, "permission.asked") == 0) {
        n->kind = NOTE_PERMISSION_ASKED;
        n->request_id = str_at(props, "id");
        n->text = *owned = n->request_id ? permission_what(props) : NULL;
    } else if (strcmp(type, "permission.replied") == 0) {
        n->kind = NOTE_PERMISSION_REPLIED;
        n->request_id = str_at(props, "requestID");
    } else {
        n->session_id = NULL;
    }
    if ((n->kind == NOTE_PERMISSION_ASKED || n->kind == NOTE_PERMISSION_REPLIED) && !n->request_id)
        n->session_id = NULL;
}

void hooks_on_event(ocbg *o, const char *event_json)
{
    if (!event_json)
        return;
    /* Streaming text updates are the most frequent events and carry the whole
     * text so far: skip those without parsing them. */
    if (strstr(event_json, "\"message.part.updated\"") && !strstr(event_json, "\"type\":\"tool\""))
        return;
    cJSON *ev = cJSON_Parse(event_json);
    const char *type = str_at(ev, "type");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(ev, "properties");
    if (type && cJSON_IsObject(props)) {
        session_note n = {0};
        char *owned = NULL;
        decode(type, props, &n, &owned);
        engine_note(o, &n);
        free(owned);
    }
    cJSON_Delete(ev);
}

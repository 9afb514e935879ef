/* events.c — see events.h. One handler per event type. */
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

/* The task whose own session this is, if it is active. */
static task *active_task(ocbg *o, const char *session_id)
{
    task *t = session_id ? registry_find_session(&o->reg, session_id) : NULL;
    return t && task_status_active(t->status) ? t : NULL;
}

/* session.idle, or session.status idle: the run may have ended. Duplicates
 * are harmless: one check is queued at a time and it only acts on a finished
 * answer it has not seen. */
static void on_idle(ocbg *o, const char *session_id)
{
    task *t = active_task(o, session_id);
    if (!t)
        return;
    t->last_update_ms = ocbg_now(o);
    engine_request_finalize(o, t);
}

static void on_busy(ocbg *o, const char *session_id)
{
    task *t = active_task(o, session_id);
    if (!t)
        return;
    t->seen_busy = true;
    t->idle_checks = 0;
    t->next_check_mono = 0;
    t->last_update_ms = ocbg_now(o);
}

/* session.error: the run failed; the idle events that follow find the task
 * finished and change nothing. An abort we asked for is not an error. */
static void on_error(ocbg *o, const cJSON *props)
{
    task *t = active_task(o, str_at(props, "sessionID"));
    if (!t || t->cancelling)
        return;
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(props, "error");
    const char *name = str_at(err, "name");
    const char *msg = str_at(cJSON_GetObjectItemCaseSensitive(err, "data"), "message");
    char *text = name && msg ? xasprintf("%s: %s", name, msg)
                             : xstrdup(msg ? msg : name ? name : "the session reported an error");
    engine_finish(o, t, TASK_ERROR, text, NULL);
    free(text);
}

static void on_deleted(ocbg *o, const cJSON *props)
{
    const char *id = str_at(cJSON_GetObjectItemCaseSensitive(props, "info"), "id");
    if (!id)
        id = str_at(props, "sessionID");
    if (!id)
        return;
    task *t = registry_find_session(&o->reg, id);
    if (t)
        engine_session_deleted(o, t);
    parent *p = registry_parent(&o->reg, id);
    if (p)
        engine_drop_parent(o, p);
}

static void on_part(ocbg *o, const cJSON *props)
{
    const cJSON *part = cJSON_GetObjectItemCaseSensitive(props, "part");
    const char *session = str_at(part, "sessionID");
    if (!session)
        session = str_at(props, "sessionID");
    task *t = active_task(o, session);
    if (!t)
        return;
    t->last_update_ms = ocbg_now(o);
    const char *type = str_at(part, "type");
    if (type && strcmp(type, "tool") == 0)
        task_note_tool(t, str_at(part, "callID"), str_at(part, "tool"));
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

/* permission.asked: the task's sub-agent waits for the user. */
static void on_permission_asked(ocbg *o, const cJSON *props)
{
    task *t = active_task(o, str_at(props, "sessionID"));
    const char *id = str_at(props, "id");
    if (!t || !id)
        return;
    char *what = permission_what(props);
    engine_permission_asked(o, t, id, what);
    free(what);
}

static void on_permission_replied(ocbg *o, const cJSON *props)
{
    task *t = active_task(o, str_at(props, "sessionID"));
    const char *id = str_at(props, "requestID");
    if (t && id)
        engine_permission_replied(o, t, id);
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
    if (!type || !cJSON_IsObject(props)) {
        cJSON_Delete(ev);
        return;
    }
    pthread_mutex_lock(&o->mu);
    if (o->stopping) {
        /* nothing: shutdown owns the state now */
    } else if (strcmp(type, "session.idle") == 0) {
        on_idle(o, str_at(props, "sessionID"));
    } else if (strcmp(type, "session.status") == 0) {
        const char *st = str_at(cJSON_GetObjectItemCaseSensitive(props, "status"), "type");
        if (st && strcmp(st, "idle") == 0)
            on_idle(o, str_at(props, "sessionID"));
        else if (st)
            on_busy(o, str_at(props, "sessionID"));
    } else if (strcmp(type, "session.error") == 0) {
        on_error(o, props);
    } else if (strcmp(type, "session.deleted") == 0) {
        on_deleted(o, props);
    } else if (strcmp(type, "message.part.updated") == 0) {
        on_part(o, props);
    } else if (strcmp(type, "permission.asked") == 0) {
        on_permission_asked(o, props);
    } else if (strcmp(type, "permission.replied") == 0) {
        on_permission_replied(o, props);
    }
    pthread_mutex_unlock(&o->mu);
    cJSON_Delete(ev);
}

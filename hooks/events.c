/* events.c — see events.h. Each event type decoded into a session note. */
#include "hooks/events.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "hooks/usage.h"

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
                       : xstrdup(msg    ? msg
                                 : name ? name
                                        : "the session reported an error");
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
    cJSON_ArrayForEach (p, cJSON_GetObjectItemCaseSensitive(props, "patterns")) {
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

/* A tool call's identity for the repeat guard: its tool and its input, once
 * the input is final (any state after "pending"); 0 before. */
static uint64_t call_hash(const char *tool, const cJSON *state)
{
    const char *status = str_at(state, "status");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(state, "input");
    if (!tool || !status || strcmp(status, "pending") == 0 || !input)
        return 0;
    char *text = cJSON_PrintUnformatted(input);
    uint64_t h = fnv64(FNV64_SEED, tool, strlen(tool) + 1);
    if (text)
        h = fnv64(h, text, strlen(text));
    cJSON_free(text);
    return h ? h : 1;
}

static void decode_part(const cJSON *props, session_note *n)
{
    const cJSON *part = cJSON_GetObjectItemCaseSensitive(props, "part");
    n->kind = NOTE_PART;
    if (str_at(part, "sessionID"))
        n->session_id = str_at(part, "sessionID");
    const char *type = str_at(part, "type");
    if (type && strcmp(type, "text") == 0 && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(part, "text"))) {
        n->message_id = str_at(part, "messageID");
        n->part_id = str_at(part, "id");
        n->text = str_at(part, "text");
        n->text_ended = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(part, "time"), "end") != NULL;
    } else if (type && strcmp(type, "tool") == 0) {
        n->call_id = str_at(part, "callID");
        n->tool = str_at(part, "tool");
        n->call_hash = call_hash(n->tool, cJSON_GetObjectItemCaseSensitive(part, "state"));
    }
}

/* A count the host reports: a non-negative number (anything else: 0). */
static uint64_t count_at(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0;
    return d >= 1 ? (d < 1e15 ? (uint64_t)d : (uint64_t)1e15) : 0;
}

/* A compaction's summary (summary: true, or mode "compaction"). */
static bool is_summary(const cJSON *info)
{
    const char *mode = str_at(info, "mode");
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "summary")) || (mode && strcmp(mode, "compaction") == 0);
}

/* Whether an assistant message is an answer that ends the model's turn: a
 * finish reason after which OpenCode's loop stops (not "tool-calls" or
 * "unknown", where it goes on), no error (session.error says that), not a
 * compaction's summary. OpenCode sets the finish when the model's step ends,
 * its text final by then, and only later (after its own housekeeping: the
 * step's snapshot) completes the message and goes idle: checking the run at
 * this moment saves that time on the way to the parent's wake. */
static bool ends_turn(const cJSON *info)
{
    const char *finish = str_at(info, "finish");
    return finish && strcmp(finish, "tool-calls") != 0 && strcmp(finish, "unknown") != 0 &&
           !cJSON_GetObjectItemCaseSensitive(info, "error") && !is_summary(info);
}

/* message.updated: an assistant message's running totals (tokens, cost). */
static void decode_message(const cJSON *props, session_note *n, usage *u)
{
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(props, "info");
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(info, "tokens");
    const cJSON *cache = cJSON_GetObjectItemCaseSensitive(tokens, "cache");
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(info, "cost");
    const char *role = str_at(info, "role");
    n->kind = NOTE_USAGE;
    if (!n->session_id)
        n->session_id = str_at(info, "sessionID");
    n->message_id = str_at(info, "id");
    if (!role || strcmp(role, "assistant") != 0 || !n->message_id ||
        (!cJSON_IsObject(tokens) && !cJSON_IsNumber(cost))) {
        n->session_id = NULL;
        return;
    }
    *u = (usage){count_at(tokens, "input"), count_at(tokens, "output"), count_at(tokens, "reasoning"),
                 count_at(cache, "read"),   count_at(cache, "write"),   0};
    if (cJSON_IsNumber(cost) && cost->valuedouble > 0 && cost->valuedouble < 1e9)
        u->cost = cost->valuedouble;
    n->usage = u;
    n->turn_end = ends_turn(info);
    n->summary = is_summary(info);
    n->in_progress = !cJSON_GetObjectItemCaseSensitive(info, "finish") &&
                     !cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info, "time"), "completed");
}

/* The note an event makes (session_id NULL: none); *owned: a string to free;
 * *u: a usage note's numbers. */
static void decode(const char *type, const cJSON *props, session_note *n, char **owned, usage *u)
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
    } else if (strcmp(type, "message.updated") == 0) {
        decode_message(props, n, u);
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

const char *const hook_event_types[] = {"session.idle",     "session.status",       "session.error",
                                        "session.deleted",  "message.part.updated", "message.updated",
                                        "permission.asked", "permission.replied"};
const size_t hook_event_type_count = sizeof hook_event_types / sizeof hook_event_types[0];

bool event_decode(const char *event_json, decoded_event *d)
{
    memset(d, 0, sizeof *d);
    if (!event_json)
        return false;
    /* Of the part updates, only tool calls and text parts matter (a text
     * part's start and its end: OpenCode streams the text between as
     * message.part.delta, not read); skip the rest without parsing them. */
    if (strstr(event_json, "\"message.part.updated\"") && !strstr(event_json, "\"type\":\"tool\"") &&
        !strstr(event_json, "\"type\":\"text\""))
        return false;
    /* Message updates matter only for an assistant's usage. */
    if (strstr(event_json, "\"message.updated\"") && !strstr(event_json, "\"assistant\""))
        return false;
    d->json = cJSON_Parse(event_json);
    const char *type = str_at(d->json, "type");
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(d->json, "properties");
    if (!type || !cJSON_IsObject(props))
        return false;
    decode(type, props, &d->note, &d->owned, &d->usage);
    return d->note.session_id != NULL;
}

void event_free(decoded_event *d)
{
    cJSON_Delete(d->json);
    free(d->owned);
    memset(d, 0, sizeof *d);
}

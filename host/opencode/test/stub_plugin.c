/*
 * stub_plugin.c — a small ocp plugin that proves the OpenCode adapter before
 * (and independently of) the real engine. Installed as "ocbg.so" beside the
 * addon in the adapter's own tests.
 *
 * Tools:
 *   stub_echo(text, repeat?)  echoes; reports ctx fields, the options seen and
 *                             the host's data_dir (ABI 1.2; null when none)
 *   stub_host(title?)         from a plugin-owned pthread: session_create (child
 *                             of the caller), session_prompt (noReply),
 *                             session_messages, session_get, session_status,
 *                             session_get of a missing id (-ENOENT expected)
 *   stub_block()              blocks until ctx->cancelled (tool_cancel) or shutdown
 *   stub_events(session?)     the event types seen so far, and transform calls;
 *                             with session: also those of that session's events
 *   stub_dir(op, …)           ABI 1.5: directory_watch, session_create_in,
 *                             session_status, session_abort (stub_dirs.c)
 *   stub_ask(permission, patterns, always?, metadata?, raw_patterns?, fail?)
 *                             host->ask_permission with the call's ctx; answers {"rc":"0"|"EACCES"|…,
 *                             "out": text or null} (raw_patterns: patterns_json sent as that text);
 *                             with fail: true a refusal fails the call (that rc, that JSON), as ocbg's do
 * tool_before (ABI 1.5): arguments holding "STUB-WARN" get the warning "stub warning: <tool> in
 * <session>", "STUB-REFUSE" the refusal "stub refusal: <tool>"; every call is counted (stub_events:
 * tool_befores). Command: stubcmd.  transform_messages appends a text part "STUB-MARKER" to the last
 * message (copying that message's last text part). ui_request (ABI 1.4): stub_ui.c.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocp.h"
#include "stub_dirs.h"
#include "stub_ui.h"
#define EXPORT __attribute__((visibility("default")))

struct stub {
    ocp_plugin table;
    const ocp_host *host;
    char *options;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int shutting_down;
    int inside; /* tool calls inside the plugin */
    cJSON *events; /* {type: count} */
    cJSON *by_session; /* {session id: {type: count}} */
    int transforms;
    char last_transform_session[128];
    int tool_befores;
};

static const ocp_tool stub_tools[] = {
    {"stub_echo", "Echo a text back (stub plugin).",
     "{\"type\":\"object\",\"properties\":{"
     "\"text\":{\"type\":\"string\",\"description\":\"The text to echo\"},"
     "\"repeat\":{\"type\":\"integer\",\"description\":\"How many times (optional)\"}},"
     "\"required\":[\"text\"]}"},
    {"stub_host", "Exercise the host table from a plugin thread (stub plugin).",
     "{\"type\":\"object\",\"properties\":{"
     "\"title\":{\"type\":\"string\",\"description\":\"Title of the child session\"}},"
     "\"required\":[]}"},
    {"stub_block", "Block until cancelled (stub plugin).",
     "{\"type\":\"object\",\"properties\":{},\"required\":[]}"},
    {"stub_events", "List the event types seen (stub plugin).",
     "{\"type\":\"object\",\"properties\":{"
     "\"session\":{\"type\":\"string\",\"description\":\"Also this session's events\"}},\"required\":[]}"},
    {"stub_dir", "Sessions in another directory: watch, unwatch, create_in, status, abort (stub plugin).",
     "{\"type\":\"object\",\"properties\":{"
     "\"op\":{\"type\":\"string\",\"description\":\"watch|unwatch|create_in|status|abort\"},"
     "\"directory\":{\"type\":\"string\",\"description\":\"Absolute path\"},"
     "\"session\":{\"type\":\"string\",\"description\":\"Session to abort\"},"
     "\"parent\":{\"type\":\"string\",\"description\":\"Parent of the new session\"},"
     "\"title\":{\"type\":\"string\",\"description\":\"Title of the new session\"}},"
     "\"required\":[\"op\"]}"},
    {"stub_ask", "Ask the host for permission (stub plugin).",
     "{\"type\":\"object\",\"properties\":{"
     "\"permission\":{\"type\":\"string\",\"description\":\"Permission name\"},"
     "\"patterns\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Patterns\"},"
     "\"always\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Always patterns\"},"
     "\"metadata\":{\"type\":\"object\",\"description\":\"Shown with the question\"},"
     "\"raw_patterns\":{\"type\":\"string\",\"description\":\"patterns_json as given\"},"
     "\"fail\":{\"type\":\"boolean\",\"description\":\"A refusal fails the call\"}},"
     "\"required\":[\"permission\"]}"},
};

static const ocp_command stub_commands[] = {
    {"stubcmd", "Stub command: prints its arguments"},
};

static char *xstrdup(const char *s) { return s ? strdup(s) : NULL; }
static int reply(char **out, int rc, const char *text) { return *out = xstrdup(text), rc; }

/* ---- stub_host: host calls from a plugin-owned thread ---- */
struct host_job {
    struct stub *st;
    char *parent;
    char *title;
    cJSON *result;
};

static void add_call(cJSON *res, const char *name, int rc, char *out, const ocp_host *h) {
    cJSON *o = cJSON_AddObjectToObject(res, name);
    cJSON_AddNumberToObject(o, "rc", rc);
    cJSON *parsed = out ? cJSON_Parse(out) : NULL;
    if (parsed)
        cJSON_AddItemToObject(o, "out", parsed);
    else if (out)
        cJSON_AddStringToObject(o, "out", out);
    h->free(h->userdata, out);
}

static void *host_job_main(void *arg) {
    struct host_job *j = arg;
    const ocp_host *h = j->st->host;
    void *ud = h->userdata;
    cJSON *res = cJSON_CreateObject();
    char *out = NULL;
    int rc = h->session_create(ud, j->parent, j->title, &out);
    char child[128] = "";
    if (rc == 0) {
        cJSON *s = cJSON_Parse(out);
        cJSON *id = cJSON_GetObjectItem(s, "id");
        if (cJSON_IsString(id))
            snprintf(child, sizeof child, "%s", id->valuestring);
        cJSON_Delete(s);
    }
    add_call(res, "create", rc, out, h);
    if (child[0]) {
        out = NULL;
        rc = h->session_prompt(ud, child,
                               "{\"parts\":[{\"type\":\"text\",\"text\":\"hello from stub\"}],\"noReply\":true}",
                               &out);
        add_call(res, "prompt", rc, out, h);
        out = NULL;
        rc = h->session_messages(ud, child, 0, &out);
        add_call(res, "messages", rc, out, h);
        out = NULL;
        rc = h->session_get(ud, child, &out);
        add_call(res, "get", rc, out, h);
    }
    out = NULL;
    rc = h->session_status(ud, &out);
    add_call(res, "status", rc, out, h);
    out = NULL;
    rc = h->session_get(ud, "ses_doesnotexist0000000000", &out);
    cJSON *m = cJSON_AddObjectToObject(res, "missing");
    cJSON_AddNumberToObject(m, "rc", rc);
    cJSON_AddBoolToObject(m, "enoent", rc == -ENOENT);
    if (out)
        cJSON_AddStringToObject(m, "message", out);
    h->free(ud, out);
    h->log(ud, OCP_LOG_INFO, "stub_host done");
    j->result = res;
    return NULL;
}

static const char *errno_name(int rc) {
    switch (rc) {
    case 0: return "0";
    case -EACCES: return "EACCES";
    case -ECANCELED: return "ECANCELED";
    case -EINVAL: return "EINVAL";
    case -EIO: return "EIO";
    case -ENOSYS: return "ENOSYS";
    default: return "other";
    }
}

/* stub_ask: one ask_permission with the arguments as the request; *out the JSON answer. */
static int ask_host(struct stub *st, const cJSON *args, ocp_call_ctx *ctx, char **answer) {
    const ocp_host *h = st->host;
    cJSON *r = cJSON_CreateObject();
    int rc = 0;
    if (!OCP_HAS_FIELD(ocp_host, h, ask_permission) || !h->ask_permission) {
        cJSON_AddStringToObject(r, "rc", "no ask_permission");
    } else {
        const cJSON *raw = cJSON_GetObjectItem(args, "raw_patterns");
        const cJSON *pat = cJSON_GetObjectItem(args, "patterns");
        const cJSON *alw = cJSON_GetObjectItem(args, "always");
        const cJSON *meta = cJSON_GetObjectItem(args, "metadata");
        char *p = cJSON_IsString(raw) ? strdup(raw->valuestring) : pat ? cJSON_PrintUnformatted(pat) : strdup("[]");
        char *a = alw ? cJSON_PrintUnformatted(alw) : NULL;
        char *m = meta ? cJSON_PrintUnformatted(meta) : NULL;
        ocp_permission_request req = {sizeof req,
                                      cJSON_GetStringValue(cJSON_GetObjectItem(args, "permission")), p, a, m};
        char *out = NULL;
        rc = h->ask_permission(h->userdata, ctx, &req, &out);
        cJSON_AddStringToObject(r, "rc", errno_name(rc));
        cJSON_AddItemToObject(r, "out", out ? cJSON_CreateString(out) : cJSON_CreateNull());
        h->free(h->userdata, out);
        free(p);
        free(a);
        free(m);
    }
    *answer = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return cJSON_IsTrue(cJSON_GetObjectItem(args, "fail")) ? rc : 0;
}

/* Whether the host's table is big enough to hold a field ending at `end`
 * (a field appended after the host's ABI minor is absent). */
static int host_has(const ocp_host *h, size_t end) {
    return h->struct_size >= end;
}

static int stub_echo(struct stub *st, const cJSON *args, const ocp_call_ctx *ctx, char **out) {
    cJSON *text = cJSON_GetObjectItem(args, "text");
    cJSON *rep = cJSON_GetObjectItem(args, "repeat");
    if (!cJSON_IsString(text))
        return reply(out, -EINVAL, "stub_echo: text is required");
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "echo", text->valuestring);
    cJSON_AddNumberToObject(r, "repeat", cJSON_IsNumber(rep) ? rep->valuedouble : 1);
    cJSON_AddBoolToObject(r, "repeat_given", rep != NULL);
    cJSON_AddStringToObject(r, "session", ctx->session_id ? ctx->session_id : "");
    cJSON_AddStringToObject(r, "message", ctx->message_id ? ctx->message_id : "");
    cJSON_AddStringToObject(r, "agent", ctx->agent ? ctx->agent : "");
    cJSON_AddStringToObject(r, "call", ctx->call_id ? ctx->call_id : "");
    cJSON_AddStringToObject(r, "directory", ctx->directory ? ctx->directory : "");
    cJSON_AddStringToObject(r, "options", st->options ? st->options : "null");
    cJSON_AddStringToObject(r, "host", st->host->host_name ? st->host->host_name : "");
    const char *dd = host_has(st->host, offsetof(ocp_host, data_dir) + sizeof st->host->data_dir)
                         ? st->host->data_dir
                         : NULL;
    if (dd)
        cJSON_AddStringToObject(r, "data_dir", dd);
    else
        cJSON_AddNullToObject(r, "data_dir");
    *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return 0;
}

/* stub_host: the host calls run on a thread of the plugin's own. */
static int stub_host(struct stub *st, const cJSON *args, const ocp_call_ctx *ctx, char **out) {
    cJSON *title = cJSON_GetObjectItem(args, "title");
    struct host_job j = {st, (char *)ctx->session_id, cJSON_IsString(title) ? title->valuestring : NULL, NULL};
    pthread_t t;
    if (pthread_create(&t, NULL, host_job_main, &j) != 0)
        return reply(out, -ENOMEM, "pthread_create failed");
    pthread_join(t, NULL);
    *out = cJSON_PrintUnformatted(j.result);
    cJSON_Delete(j.result);
    return 0;
}

static int stub_block(struct stub *st, const ocp_call_ctx *ctx, char **out) {
    pthread_mutex_lock(&st->mu);
    while (!__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST) && !st->shutting_down)
        pthread_cond_wait(&st->cv, &st->mu);
    int why_shutdown = st->shutting_down;
    pthread_mutex_unlock(&st->mu);
    return reply(out, -ECANCELED, why_shutdown ? "stub_block: shutting down" : "stub_block: cancelled");
}

static int stub_events(struct stub *st, const cJSON *args, char **out) {
    const char *sid = cJSON_GetStringValue(cJSON_GetObjectItem(args, "session"));
    pthread_mutex_lock(&st->mu);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "events", cJSON_Duplicate(st->events, 1));
    cJSON *mine = sid ? cJSON_GetObjectItem(st->by_session, sid) : NULL;
    if (sid)
        cJSON_AddItemToObject(r, "session_events", mine ? cJSON_Duplicate(mine, 1) : cJSON_CreateObject());
    cJSON_AddNumberToObject(r, "transforms", st->transforms);
    cJSON_AddNumberToObject(r, "tool_befores", st->tool_befores);
    cJSON_AddStringToObject(r, "transform_session", st->last_transform_session);
    pthread_mutex_unlock(&st->mu);
    *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return 0;
}

/* One tool call of a stub tool, with args parsed. */
static int run_tool(struct stub *st, const char *tool, const cJSON *args, ocp_call_ctx *ctx, char **out) {
    if (!strcmp(tool, "stub_echo"))
        return stub_echo(st, args, ctx, out);
    if (!strcmp(tool, "stub_host"))
        return stub_host(st, args, ctx, out);
    if (!strcmp(tool, "stub_block"))
        return stub_block(st, ctx, out);
    if (!strcmp(tool, "stub_ask"))
        return ask_host(st, args, ctx, out);
    if (!strcmp(tool, "stub_events"))
        return stub_events(st, args, out);
    if (!strcmp(tool, "stub_dir"))
        return stub_dir(st->host, args, ctx->session_id, out);
    return reply(out, -ENOENT, "no such tool");
}

static int tool_call(void *ud, const char *tool, const char *args_json, ocp_call_ctx *ctx, char **out) {
    struct stub *st = ud;
    *out = NULL;
    pthread_mutex_lock(&st->mu);
    if (st->shutting_down) {
        pthread_mutex_unlock(&st->mu);
        return reply(out, -ECANCELED, "stub is shutting down");
    }
    st->inside++;
    pthread_mutex_unlock(&st->mu);

    cJSON *args = cJSON_Parse(args_json ? args_json : "{}");
    int rc = run_tool(st, tool, args, ctx, out);
    cJSON_Delete(args);

    pthread_mutex_lock(&st->mu);
    st->inside--;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static void tool_cancel(void *ud, ocp_call_ctx *ctx) {
    struct stub *st = ud;
    (void)ctx;
    pthread_mutex_lock(&st->mu);
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static int command_call(void *ud, const char *command, const char *arguments, ocp_call_ctx *ctx, char **out) {
    (void)ud;
    if (strcmp(command, "stubcmd"))
        return reply(out, -ENOENT, "no such command");
    char buf[512];
    snprintf(buf, sizeof buf, "stubcmd ran in %s with arguments [%s]",
             ctx->session_id ? ctx->session_id : "?", arguments ? arguments : "");
    return reply(out, 0, buf);
}

static void count(cJSON *counts, const char *type) {
    cJSON *n = cJSON_GetObjectItem(counts, type);
    if (n)
        cJSON_SetNumberValue(n, n->valuedouble + 1);
    else
        cJSON_AddNumberToObject(counts, type, 1);
}

/* The session an event is about: properties.sessionID, or that of its info
 * (a message) or part, or info.id of a session.* event; NULL if none. */
static const char *event_session(const cJSON *ev, const char *type) {
    const cJSON *p = cJSON_GetObjectItem(ev, "properties");
    const char *sid = cJSON_GetStringValue(cJSON_GetObjectItem(p, "sessionID"));
    const cJSON *info = cJSON_GetObjectItem(p, "info");
    if (!sid)
        sid = cJSON_GetStringValue(cJSON_GetObjectItem(info, "sessionID"));
    if (!sid)
        sid = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "part"), "sessionID"));
    if (!sid && !strncmp(type, "session.", 8))
        sid = cJSON_GetStringValue(cJSON_GetObjectItem(info, "id"));
    return sid;
}

static void on_event(void *ud, const char *event_json) {
    struct stub *st = ud;
    cJSON *ev = cJSON_Parse(event_json);
    cJSON *type = cJSON_GetObjectItem(ev, "type");
    if (cJSON_IsString(type)) {
        const char *sid = event_session(ev, type->valuestring);
        pthread_mutex_lock(&st->mu);
        count(st->events, type->valuestring);
        if (sid) {
            cJSON *mine = cJSON_GetObjectItem(st->by_session, sid);
            if (!mine)
                mine = cJSON_AddObjectToObject(st->by_session, sid);
            count(mine, type->valuestring);
        }
        pthread_mutex_unlock(&st->mu);
    }
    cJSON_Delete(ev);
}

static int transform_messages(void *ud, const char *session_id, const char *messages_json, char **out) {
    struct stub *st = ud;
    *out = NULL;
    pthread_mutex_lock(&st->mu);
    st->transforms++;
    snprintf(st->last_transform_session, sizeof st->last_transform_session, "%s", session_id ? session_id : "");
    pthread_mutex_unlock(&st->mu);
    cJSON *msgs = cJSON_Parse(messages_json);
    int n = cJSON_GetArraySize(msgs);
    if (!cJSON_IsArray(msgs) || n == 0) {
        cJSON_Delete(msgs);
        return 0;
    }
    cJSON *parts = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, n - 1), "parts");
    cJSON *last_text = NULL, *p;
    cJSON_ArrayForEach(p, parts) {
        cJSON *t = cJSON_GetObjectItem(p, "type");
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "text"))
            last_text = p;
    }
    if (!last_text) {
        cJSON_Delete(msgs);
        return 0;
    }
    cJSON *marker = cJSON_Duplicate(last_text, 1);
    cJSON_ReplaceItemInObject(marker, "text", cJSON_CreateString("STUB-MARKER"));
    cJSON *id = cJSON_GetObjectItem(marker, "id");
    if (cJSON_IsString(id)) {
        char idbuf[160];
        snprintf(idbuf, sizeof idbuf, "%s_stubmarker", id->valuestring);
        cJSON_ReplaceItemInObject(marker, "id", cJSON_CreateString(idbuf));
    }
    cJSON_AddItemToArray(parts, marker);
    *out = cJSON_PrintUnformatted(msgs);
    cJSON_Delete(msgs);
    return 0;
}

static int tool_before(void *ud, const char *session_id, const char *tool, const char *args_json, char **out) {
    struct stub *st = ud;
    char buf[256] = "";
    pthread_mutex_lock(&st->mu);
    st->tool_befores++;
    pthread_mutex_unlock(&st->mu);
    int refuse = args_json && strstr(args_json, "STUB-REFUSE"), warn = args_json && strstr(args_json, "STUB-WARN");
    if (refuse || warn)
        snprintf(buf, sizeof buf, refuse ? "stub refusal: %s" : "stub warning: %s in %s", tool, session_id);
    *out = buf[0] ? xstrdup(buf) : NULL;
    return refuse ? -EACCES : 0;
}

static void stub_free(void *ud, char *p) {
    (void)ud;
    free(p);
}

static void shutdown_(void *ud) {
    struct stub *st = ud;
    pthread_mutex_lock(&st->mu);
    st->shutting_down = 1;
    pthread_cond_broadcast(&st->cv);
    while (st->inside > 0)
        pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    cJSON_Delete(st->events);
    cJSON_Delete(st->by_session);
    free(st->options);
    free(st);
}

static int ui_request(void *ud, const char *request_json, char **out) {
    return stub_ui_request(((struct stub *)ud)->host, request_json, out);
}

EXPORT const ocp_plugin *ocp_plugin_entry(const ocp_host *host, const char *options_json, char *err,
                                          size_t err_size) {
    if (!host || host->abi_major != OCP_ABI_MAJOR || host->struct_size < OCP_HOST_MIN_SIZE) {
        if (err && err_size)
            snprintf(err, err_size, "stub: unsupported host ABI");
        return NULL;
    }
    if (options_json) {
        cJSON *o = cJSON_Parse(options_json);
        cJSON *bad = cJSON_GetObjectItem(o, "refuse");
        int refuse = !cJSON_IsObject(o) || bad != NULL;
        cJSON_Delete(o);
        if (refuse) {
            if (err && err_size)
                snprintf(err, err_size, "stub: options refused: %s", options_json);
            return NULL;
        }
    }
    struct stub *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->host = host;
    st->options = xstrdup(options_json);
    st->events = cJSON_CreateObject();
    st->by_session = cJSON_CreateObject();
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    ocp_plugin *t = &st->table;
    t->struct_size = sizeof *t;
    t->abi_major = OCP_ABI_MAJOR;
    t->abi_minor = OCP_ABI_MINOR;
    t->userdata = st;
    t->name = "stub";
    t->version = "0.0.1";
    t->tool_count = sizeof stub_tools / sizeof stub_tools[0];
    t->tools = stub_tools;
    t->command_count = 1;
    t->commands = stub_commands;
    t->tool_call = tool_call;
    t->tool_cancel = tool_cancel;
    t->command_call = command_call;
    t->on_event = on_event;
    t->transform_messages = transform_messages;
    t->shutdown = shutdown_;
    t->free = stub_free;
    t->tool_before = tool_before;
    t->ui_request = ui_request;
    return t;
}

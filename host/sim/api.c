/* api.c — the ocp_host functions the plugins call. Each one: optional
 * slowness and injected fault (calls.c), the work under mu, then a record. */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_out(char **out, char *s)
{
    if (out)
        *out = s;
    else
        free(s);
}

static char *msgf(const char *fmt, const char *arg)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, arg ? arg : "(null)");
    return sim_strdup(buf);
}

/* Body for the record: the call's arguments as JSON; takes o. */
static char *args_text(cJSON *o)
{
    char *s = sim_print(o);
    cJSON_Delete(o);
    return s;
}

/* The common tail: record the call (takes body), return rc. */
static int finish(sim_host *h, const char *fn, const char *sid, char *body, int rc, int64_t t)
{
    sim_call_record(h, fn, sid, body, rc, t);
    free(body);
    return rc;
}

/* An injected fault: *out = "simulated failure of <fn>". */
static int injected(sim_host *h, const char *fn, const char *sid, char *body, int rc, int64_t t,
                    char **out)
{
    set_out(out, msgf("simulated failure of %s", fn));
    return finish(h, fn, sid, body, rc, t);
}

/* The head of every host function: *out cleared, the call's time and the
 * body to record (takes args), and an injected fault. Returns 0 to go on, or
 * the fault's rc, already recorded with *out = "simulated failure of <fn>". */
static int begin(sim_host *h, const char *fn, const char *sid, cJSON *args, char **out, int64_t *t,
                 char **body)
{
    if (out)
        *out = NULL;
    *t = sim_now_ms(h);
    *body = args_text(args);
    int rc = sim_call_begin(h, fn);
    return rc ? injected(h, fn, sid, *body, rc, *t, out) : 0;
}

static int h_session_create(void *ud, const char *parent_id, const char *title, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    if (parent_id)
        cJSON_AddStringToObject(a, "parentID", parent_id);
    if (title)
        cJSON_AddStringToObject(a, "title", title);
    int64_t t;
    char *body;
    int rc = begin(h, "session_create", parent_id, a, out, &t, &body);
    if (rc)
        return rc;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_session_create_locked(&h->store, parent_id, title);
    char *res = NULL;
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&h->core.mu);
    if (!s) {
        set_out(out, msgf("Session not found: %s", parent_id));
        rc = -ENOENT;
    } else {
        set_out(out, res);
    }
    /* Recorded against the parent: that is the session the call is about
     * (the new id is in the result). */
    return finish(h, "session_create", parent_id, body, rc, t);
}

static int h_session_get(void *ud, const char *sid, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "sessionID", sid ? sid : "");
    int64_t t;
    char *body;
    int rc = begin(h, "session_get", sid, a, out, &t, &body);
    if (rc)
        return rc;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(&h->store, sid);
    char *res = NULL;
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&h->core.mu);
    if (!res) {
        rc = -ENOENT;
        res = msgf("Session not found: %s", sid);
    }
    set_out(out, res);
    return finish(h, "session_get", sid, body, rc, t);
}

static int h_session_messages(void *ud, const char *sid, int limit, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "sessionID", sid ? sid : "");
    cJSON_AddNumberToObject(a, "limit", limit);
    int64_t t;
    char *body;
    int rc = begin(h, "session_messages", sid, a, out, &t, &body);
    if (rc)
        return rc;
    char *res = NULL;
    if (limit < 0) {
        rc = -EINVAL;
        res = sim_strdup("limit must be >= 0");
    } else {
        pthread_mutex_lock(&h->core.mu);
        sim_session *s = sim_find_live_locked(&h->store, sid);
        if (s) {
            cJSON *j = sim_session_messages_locked(s, limit);
            res = sim_print(j);
            cJSON_Delete(j);
        }
        pthread_mutex_unlock(&h->core.mu);
        if (!res) {
            rc = -ENOENT;
            res = msgf("Session not found: %s", sid);
        }
    }
    set_out(out, res);
    return finish(h, "session_messages", sid, body, rc, t);
}

/* Is body a prompt body OpenCode would accept? Returns NULL or the reason. */
static const char *bad_body(const cJSON *b)
{
    if (!cJSON_IsObject(b))
        return "prompt body is not a JSON object";
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(b, "parts");
    if (!cJSON_IsArray(parts))
        return "prompt body needs a \"parts\" array";
    const cJSON *p;
    cJSON_ArrayForEach(p, parts)
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        if (!cJSON_IsObject(p) || !type)
            return "each part needs a \"type\"";
        if (strcmp(type, "text") == 0 && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "text")))
            return "a text part needs a \"text\" string";
    }
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(b, "agent");
    if (agent && !cJSON_IsString(agent))
        return "\"agent\" must be a string";
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(b, "tools");
    if (tools && !cJSON_IsObject(tools))
        return "\"tools\" must be an object";
    const cJSON *nr = cJSON_GetObjectItemCaseSensitive(b, "noReply");
    if (nr && !cJSON_IsBool(nr))
        return "\"noReply\" must be a boolean";
    return NULL;
}

/* Accept a prompt body for sid: validate, then store (noReply) or run/queue
 * it. Returns 0, -EINVAL or -ENOENT with *why set to a malloc'd message.
 * Takes mu itself. */
static int apply_prompt(sim_host *h, const char *sid, const char *body_json, char **why)
{
    *why = NULL;
    cJSON *b = body_json ? cJSON_Parse(body_json) : NULL;
    const char *bad = b ? bad_body(b) : "prompt body is not valid JSON";
    if (bad) {
        cJSON_Delete(b);
        *why = sim_strdup(bad);
        return -EINVAL;
    }
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(&h->store, sid);
    if (!s) {
        cJSON_Delete(b);
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "noReply"))) {
        /* Stored without a model turn and, per the ABI, without events. */
        sim_session_append_locked(&h->store, s, sim_user_message_locked(&h->store, s, b));
        cJSON_Delete(b);
    } else {
        sim_agent_prompt_locked(&h->agents, s, b);
    }
    pthread_mutex_unlock(&h->core.mu);
    if (!s) {
        *why = msgf("Session not found: %s", sid);
        return -ENOENT;
    }
    return 0;
}

static int h_session_prompt(void *ud, const char *sid, const char *body_json, char **out)
{
    sim_host *h = ud;
    if (out)
        *out = NULL;
    int64_t t = sim_now_ms(h);
    char *body = sim_strdup(body_json);
    int rc = sim_call_begin(h, "session_prompt");
    if (rc)
        return injected(h, "session_prompt", sid, body, rc, t, out);
    char *why = NULL;
    rc = apply_prompt(h, sid, body_json, &why);
    if (why)
        set_out(out, why);
    return finish(h, "session_prompt", sid, body, rc, t);
}

int sim_session_prompt(sim_host *h, const char *session_id, const char *body_json)
{
    char *why = NULL;
    int rc = apply_prompt(h, session_id, body_json, &why);
    free(why);
    return rc;
}

int sim_session_abort(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    if (s)
        sim_agent_abort_locked(&h->agents, s);
    pthread_mutex_unlock(&h->core.mu);
    return s ? 0 : -ENOENT;
}

static int h_session_abort(void *ud, const char *sid, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "sessionID", sid ? sid : "");
    int64_t t;
    char *body;
    int rc = begin(h, "session_abort", sid, a, out, &t, &body);
    if (rc)
        return rc;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, sid);
    if (s)
        sim_agent_abort_locked(&h->agents, s);
    pthread_mutex_unlock(&h->core.mu);
    if (!s) {
        rc = -ENOENT;
        set_out(out, msgf("Session not found: %s", sid));
    }
    return finish(h, "session_abort", sid, body, rc, t);
}

static int h_session_status(void *ud, char **out)
{
    sim_host *h = ud;
    if (out)
        *out = NULL;
    int64_t t = sim_now_ms(h);
    int rc = sim_call_begin(h, "session_status");
    if (rc)
        return injected(h, "session_status", NULL, sim_strdup("{}"), rc, t, out);
    cJSON *m = cJSON_CreateObject();
    pthread_mutex_lock(&h->core.mu);
    for (sim_session *s = h->store.first; s; s = s->next)
        if (s->busy)
            cJSON_AddStringToObject(cJSON_AddObjectToObject(m, s->id), "type", "busy");
    pthread_mutex_unlock(&h->core.mu);
    set_out(out, args_text(m));
    return finish(h, "session_status", NULL, sim_strdup("{}"), 0, t);
}

static int h_session_fork(void *ud, const char *sid, const char *message_id, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "sessionID", sid ? sid : "");
    if (message_id)
        cJSON_AddStringToObject(a, "messageID", message_id);
    int64_t t;
    char *body;
    int rc = begin(h, "session_fork", sid, a, out, &t, &body);
    if (rc)
        return rc;
    char *res = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(&h->store, sid);
    if (s) {
        sim_session *f = sim_session_fork_locked(&h->store, s, message_id);
        cJSON *j = sim_session_info_locked(f);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&h->core.mu);
    if (!res) {
        rc = -ENOENT;
        res = msgf("Session not found: %s", sid);
    }
    set_out(out, res);
    return finish(h, "session_fork", sid, body, rc, t);
}

static void h_log(void *ud, enum ocp_log_level level, const char *message)
{
    sim_host *h = ud;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    const char *lv = (unsigned)level < 4 ? names[level] : "unknown";
    int64_t t = sim_now_ms(h);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "level", lv);
    cJSON_AddStringToObject(a, "message", message ? message : "");
    char *body = args_text(a);
    /* Only shown when asked: a test's TAP output stays readable. */
    if (getenv("OCBG_SIM_LOG"))
        fprintf(stderr, "# [plugin %s] %s\n", lv, message ? message : "");
    sim_call_record(h, "log", NULL, body, 0, t);
    free(body);
}

static void h_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

static int64_t h_now_ms(void *ud)
{
    /* Not recorded: plugins read the clock far too often for a useful record. */
    return sim_now_ms(ud);
}

static int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    sim_host *h = ud;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "permission", req && req->permission ? req->permission : "");
    cJSON_AddStringToObject(a, "patterns", req && req->patterns_json ? req->patterns_json : "");
    const char *sid = ctx ? ctx->session_id : NULL;
    int64_t t;
    char *body;
    int rc = begin(h, "ask_permission", sid, a, out, &t, &body);
    if (rc)
        return rc;
    if (!req || req->struct_size < sizeof *req) {
        set_out(out, sim_strdup("malformed permission request"));
        rc = -EINVAL;
    } else {
        rc = sim_ask_permission(h, ctx, req, out);
    }
    return finish(h, "ask_permission", sid, body, rc, t);
}

void sim_api_fill(sim_host *h)
{
    ocp_host *t = &h->table;
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->abi_major = OCP_ABI_MAJOR;
    t->abi_minor = OCP_ABI_MINOR;
    t->userdata = h;
    t->host_name = "ocbg-sim";
    t->host_version = "0.1.0";
    t->session_create = h_session_create;
    t->session_get = h_session_get;
    t->session_messages = h_session_messages;
    t->session_prompt = h_session_prompt;
    t->session_abort = h_session_abort;
    t->session_status = h_session_status;
    t->session_fork = h_session_fork;
    t->log = h_log;
    t->free = h_free;
    t->now_ms = h_now_ms;
    t->ask_permission = h_ask_permission;
}

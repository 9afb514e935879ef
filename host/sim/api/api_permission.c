/* api_permission.c — permission questions, shaped like OpenCode's: asked
 * (permission.asked) when the rules (api_perm_rules.c) say "ask", answered
 * once / always / reject (permission.replied) by the user or automatically.
 * Two askers: a tool call, through the ABI 1.1 ask_permission host function
 * (it waits for the answer or Esc), and a sub-agent's "ask" step (the agents'
 * ask callback; its turn waits and is told the answer). Layer 3 (API); uses
 * api_perm_rules.c, the agents, the storage and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sim_perm_req {
    char *id; /* "per_…" */
    char *session;
    cJSON *info;       /* {id, sessionID, permission, patterns, metadata, always, tool?} */
    cJSON *record;     /* the entry in a->perm_log (its "outcome" is updated) */
    const char *reply; /* NULL while open; "once", "always", "reject" */
    char *message;     /* the user's words with a reject; may be NULL */
    int for_turn;      /* asked by a sub-agent's turn (not a tool call) */
    sim_perm_req *next;
};

static void log_request_locked(sim_api *a, cJSON *info, const char *outcome, cJSON **record)
{
    cJSON *r = cJSON_Duplicate(info, 1);
    cJSON_AddStringToObject(r, "outcome", outcome);
    cJSON_AddItemToArray(a->perm_log, r);
    if (record)
        *record = r;
    sim_changed_locked(a->core);
}

static void set_outcome(cJSON *record, const char *outcome)
{
    cJSON_ReplaceItemInObjectCaseSensitive(record, "outcome", cJSON_CreateString(outcome));
}

/* A new open question: logged, permission.asked emitted. mu held. */
static sim_perm_req *open_locked(sim_api *a, cJSON *info, const char *session, int for_turn)
{
    sim_perm_req *r = sim_xcalloc(1, sizeof *r);
    r->id = sim_strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id")));
    r->session = sim_strdup(session);
    r->info = info;
    r->for_turn = for_turn;
    log_request_locked(a, info, "pending", &r->record);
    r->next = a->perm_open;
    a->perm_open = r;
    sim_emit_props_locked(a->core, "permission.asked", cJSON_Duplicate(info, 1));
    return r;
}

static cJSON *request_info_locked(sim_api *a, const char *session, const char *perm, const cJSON *patterns,
                                  const cJSON *always, const cJSON *metadata, const char *message_id,
                                  const char *call_id)
{
    cJSON *info = cJSON_CreateObject();
    char *id = sim_new_id_locked(a->store, "per");
    cJSON_AddStringToObject(info, "id", id);
    free(id);
    cJSON_AddStringToObject(info, "sessionID", session);
    cJSON_AddStringToObject(info, "permission", perm);
    cJSON_AddItemToObject(info, "patterns", cJSON_Duplicate(patterns, 1));
    cJSON_AddItemToObject(info, "metadata", metadata ? cJSON_Duplicate(metadata, 1) : cJSON_CreateObject());
    cJSON_AddItemToObject(info, "always", always ? cJSON_Duplicate(always, 1) : cJSON_Duplicate(patterns, 1));
    if (message_id || call_id) {
        cJSON *tool = cJSON_AddObjectToObject(info, "tool");
        cJSON_AddStringToObject(tool, "messageID", message_id ? message_id : "");
        cJSON_AddStringToObject(tool, "callID", call_id ? call_id : "");
    }
    return info;
}

static void unlink_locked(sim_api *a, sim_perm_req *r)
{
    for (sim_perm_req **pp = &a->perm_open; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
}

static void req_free(sim_perm_req *r)
{
    free(r->id);
    free(r->session);
    cJSON_Delete(r->info);
    free(r->message);
    free(r);
}

static void remember_always_locked(sim_api *a, const sim_perm_req *r)
{
    cJSON *list = cJSON_GetObjectItemCaseSensitive(a->perm_always, r->session);
    if (!list)
        list = cJSON_AddArrayToObject(a->perm_always, r->session);
    const char *perm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->info, "permission"));
    const cJSON *pat;
    cJSON_ArrayForEach (pat, cJSON_GetObjectItemCaseSensitive(r->info, "always")) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateString(perm ? perm : ""));
        cJSON_AddItemToArray(pair, cJSON_CreateString(cJSON_GetStringValue(pat) ? pat->valuestring : ""));
        cJSON_AddItemToArray(list, pair);
    }
}

/* Does a turn go on after its question got this reply? As in OpenCode
 * 1.18.33's processor: only the plain "reject" (its RejectedError) ends the
 * turn; "reject" with the user's words (CorrectedError) lets the model take
 * another step, as do a deny rule (DeniedError) and an approval. */
static int goes_on(const char *reply, const char *message)
{
    return strcmp(reply, "reject") != 0 || message != NULL;
}

/* Answer an open question: reply "once", "always", "reject", or "cancelled"
 * (Esc: replied as a reject). permission.replied is emitted. A sub-agent's
 * question is then closed here (tell_turn: its turn goes on or ends); a tool
 * call's is closed by the waiting call. mu held. */
static void answer_locked(sim_api *a, sim_perm_req *r, const char *reply, const char *message, int tell_turn)
{
    if (r->reply)
        return;
    r->reply = strcmp(reply, "always") == 0 ? "always" : strcmp(reply, "once") == 0 ? "once" : "reject";
    r->message = sim_strdup(message);
    set_outcome(r->record, strcmp(reply, "cancelled") == 0 ? "cancelled" : r->reply);
    if (message && strcmp(r->reply, "reject") == 0)
        cJSON_AddStringToObject(r->record, "message", message);
    if (strcmp(r->reply, "always") == 0)
        remember_always_locked(a, r);
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", r->session);
    cJSON_AddStringToObject(props, "requestID", r->id);
    cJSON_AddStringToObject(props, "reply", r->reply);
    sim_emit_props_locked(a->core, "permission.replied", props);
    sim_changed_locked(a->core);
    if (!r->for_turn)
        return; /* the waiting tool call wakes (state_cv) and frees it */
    unlink_locked(a, r);
    if (tell_turn)
        sim_agent_permission_answered_locked(a->agents, r->session, r->id, goes_on(r->reply, r->message));
    req_free(r);
}

int sim_api_perm_reply(sim_api *a, const char *request_id, const char *reply, const char *message)
{
    if (!reply || (strcmp(reply, "once") && strcmp(reply, "always") && strcmp(reply, "reject")))
        return -EINVAL;
    pthread_mutex_lock(&a->core->mu);
    sim_perm_req *r = a->perm_open;
    while (r && (r->reply || strcmp(r->id, request_id ? request_id : "") != 0))
        r = r->next;
    if (r)
        answer_locked(a, r, reply, message, 1);
    pthread_mutex_unlock(&a->core->mu);
    return r ? 0 : -ENOENT;
}

/* ---- the host function (ABI 1.1) --------------------------------------- */

static int ask_args(const ocp_permission_request *req, cJSON **patterns, cJSON **always, cJSON **meta)
{
    *patterns = cJSON_Parse(req->patterns_json ? req->patterns_json : "");
    *always = req->always_json ? cJSON_Parse(req->always_json) : NULL;
    *meta = req->metadata_json ? cJSON_Parse(req->metadata_json) : NULL;
    if (!req->permission || !cJSON_IsArray(*patterns) || cJSON_GetArraySize(*patterns) == 0 ||
        (req->always_json && !cJSON_IsArray(*always)) || (req->metadata_json && !cJSON_IsObject(*meta)))
        return -EINVAL;
    return 0;
}

/* A question the rules answered (allow or deny): logged, not asked. */
static int ruled_locked(sim_api *a, cJSON *info, const char *action, char **out)
{
    log_request_locked(a, info, action, NULL);
    cJSON_Delete(info);
    if (strcmp(action, "deny") != 0)
        return 0;
    *out = sim_strdup("The user has specified a rule which prevents you from using this specific tool call.");
    return -EACCES;
}

/* Wait for the answer to a tool call's question r, or for Esc (re-checked
 * often: the flag is the caller's and changes without a host state change);
 * then collect r. Returns ask_permission's result. */
static int await_answer_locked(sim_api *a, sim_perm_req *r, const ocp_call_ctx *ctx, char **out)
{
    while (!r->reply && !__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST) && !a->core->stopping)
        sim_cond_wait_until(&a->core->state_cv, &a->core->mu, sim_mono_ms() + 10);
    if (!r->reply)
        answer_locked(a, r, "cancelled", NULL, 0);
    int rc = 0;
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->record, "outcome")), "cancelled") == 0) {
        rc = -ECANCELED;
    } else if (strcmp(r->reply, "reject") == 0) {
        *out = sim_strdup(r->message ? r->message : "The user rejected permission to use this specific tool call.");
        rc = -EACCES;
    }
    unlink_locked(a, r);
    req_free(r);
    return rc;
}

int sim_api_ask_permission(sim_api *a, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    cJSON *patterns, *always, *meta;
    if (ask_args(req, &patterns, &always, &meta) != 0 || !ctx || !ctx->session_id) {
        cJSON_Delete(patterns);
        cJSON_Delete(always);
        cJSON_Delete(meta);
        *out = sim_strdup("malformed permission request");
        return -EINVAL;
    }
    pthread_mutex_lock(&a->core->mu);
    const char *action = sim_api_perm_decide_locked(a, ctx->session_id, req->permission, patterns);
    cJSON *info =
        request_info_locked(a, ctx->session_id, req->permission, patterns, always, meta, ctx->message_id, ctx->call_id);
    cJSON_Delete(patterns);
    cJSON_Delete(always);
    cJSON_Delete(meta);
    int rc;
    if (strcmp(action, "ask") != 0) {
        rc = ruled_locked(a, info, action, out);
    } else {
        sim_perm_req *r = open_locked(a, info, ctx->session_id, 0);
        if (a->perm_auto)
            answer_locked(a, r, a->perm_auto, a->perm_auto_msg, 0);
        rc = await_answer_locked(a, r, ctx, out);
    }
    pthread_mutex_unlock(&a->core->mu);
    return rc;
}

/* ---- a sub-agent's question (the script's "ask" step) ------------------ */

int sim_api_ask_step_locked(void *ctx, const char *session_id, const char *message_id, const cJSON *ask,
                            char **request_id)
{
    sim_api *a = ctx;
    const char *perm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ask, "permission"));
    const cJSON *patterns = cJSON_GetObjectItemCaseSensitive(ask, "patterns");
    *request_id = NULL;
    if (!perm || !cJSON_IsArray(patterns))
        return 1; /* malformed: the step is skipped */
    const char *action = sim_api_perm_decide_locked(a, session_id, perm, patterns);
    const cJSON *always = cJSON_GetObjectItemCaseSensitive(ask, "always");
    const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(ask, "metadata");
    cJSON *info = request_info_locked(a, session_id, perm, patterns, always, metadata, message_id, NULL);
    if (strcmp(action, "ask") != 0) {
        log_request_locked(a, info, action, NULL);
        cJSON_Delete(info);
        return 1; /* allowed, or denied by a rule: the model takes another step */
    }
    sim_perm_req *r = open_locked(a, info, session_id, 1);
    if (a->perm_auto) {
        /* answered at once: the step goes on (or the turn ends) now */
        int go_on = goes_on(a->perm_auto, a->perm_auto_msg);
        answer_locked(a, r, a->perm_auto, a->perm_auto_msg, 0);
        return go_on;
    }
    *request_id = sim_strdup(r->id);
    return -1;
}

void sim_api_turn_gone_locked(void *ctx, const char *session_id)
{
    sim_api *a = ctx;
    for (sim_perm_req *r = a->perm_open, *next; r; r = next) {
        next = r->next;
        if (r->for_turn && !r->reply && strcmp(r->session, session_id) == 0)
            answer_locked(a, r, "reject", NULL, 0); /* the turn is over: nothing to resume */
    }
}

/* ---- configuration and the record -------------------------------------- */

int sim_api_perm_user_rejected(sim_api *a, const char *call_id)
{
    int found = 0;
    pthread_mutex_lock(&a->core->mu);
    const cJSON *r;
    cJSON_ArrayForEach (r, a->perm_log) {
        const cJSON *tool = cJSON_GetObjectItemCaseSensitive(r, "tool");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tool, "callID"));
        const char *outcome = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "outcome"));
        if (call_id && id && strcmp(id, call_id) == 0 && outcome && strcmp(outcome, "reject") == 0 &&
            !goes_on(outcome, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "message"))))
            found = 1;
    }
    pthread_mutex_unlock(&a->core->mu);
    return found;
}

void sim_api_perm_auto(sim_api *a, const char *reply, const char *message)
{
    pthread_mutex_lock(&a->core->mu);
    free(a->perm_auto);
    free(a->perm_auto_msg);
    a->perm_auto = reply ? sim_strdup(reply) : NULL;
    a->perm_auto_msg = sim_strdup(message);
    pthread_mutex_unlock(&a->core->mu);
}

size_t sim_api_perm_count(sim_api *a)
{
    pthread_mutex_lock(&a->core->mu);
    size_t n = (size_t)cJSON_GetArraySize(a->perm_log);
    pthread_mutex_unlock(&a->core->mu);
    return n;
}

char *sim_api_perm_json(sim_api *a, int n)
{
    pthread_mutex_lock(&a->core->mu);
    int size = cJSON_GetArraySize(a->perm_log);
    const cJSON *r = cJSON_GetArrayItem(a->perm_log, n < 0 ? size + n : n);
    char *s = r ? sim_print(r) : NULL;
    pthread_mutex_unlock(&a->core->mu);
    return s;
}

char *sim_api_perm_open(sim_api *a, const char *session_id)
{
    pthread_mutex_lock(&a->core->mu);
    const sim_perm_req *found = NULL;
    for (const sim_perm_req *r = a->perm_open; r; r = r->next)
        if (!r->reply && (!session_id || strcmp(r->session, session_id) == 0))
            found = r; /* the list is newest first: keep the oldest */
    char *id = found ? sim_strdup(found->id) : NULL;
    pthread_mutex_unlock(&a->core->mu);
    return id;
}

void sim_api_perm_free_locked(sim_api *a)
{
    while (a->perm_open) {
        sim_perm_req *r = a->perm_open;
        a->perm_open = r->next;
        req_free(r);
    }
    cJSON_Delete(a->perm_rules);
    cJSON_Delete(a->perm_always);
    cJSON_Delete(a->perm_log);
    free(a->perm_auto);
    free(a->perm_auto_msg);
    a->perm_rules = a->perm_always = a->perm_log = NULL;
    a->perm_auto = a->perm_auto_msg = NULL;
}

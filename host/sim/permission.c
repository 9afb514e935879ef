/* permission.c — the simulated host's permission system, shaped like
 * OpenCode's: rules from a "permission" config, questions (permission.asked /
 * permission.replied events), answers once / always / reject, and the
 * ABI 1.1 ask_permission host function that a tool call uses to ask. A
 * sub-agent's script asks too (the "ask" step, agent.c). */
#include "sim_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sim_perm_req {
    char *id;            /* "per_…" */
    char *session;
    cJSON *info;         /* {id, sessionID, permission, patterns, metadata, always, tool?} */
    cJSON *record;       /* the entry in h->perm_log (its "outcome" is updated) */
    const char *reply;   /* NULL while open; "once", "always", "reject" */
    char *message;       /* the user's words with a reject; may be NULL */
    int for_turn;        /* asked by a sub-agent's turn (not a tool call) */
    sim_perm_req *next;
};

/* OpenCode's wildcard: '*' any run of characters, '?' one; a pattern that
 * ends in " *" also matches without its tail ("ls *" matches "ls"). */
static int wild(const char *s, const char *p)
{
    for (; *p; p++, s++) {
        if (*p == '*') {
            if (p[1] == '\0')
                return 1;
            for (; *s; s++)
                if (wild(s, p + 1))
                    return 1;
            return wild(s, p + 1);
        }
        if (!*s || (*p != '?' && *p != *s))
            return 0;
    }
    return *s == '\0';
}

static int wildcard(const char *s, const char *p)
{
    size_t n = strlen(p);
    if (n >= 2 && strcmp(p + n - 2, " *") == 0) {
        char *head = sim_strdup(p);
        head[n - 2] = '\0';
        int m = strcmp(s, head) == 0;
        free(head);
        if (m)
            return 1;
    }
    return wild(s, p);
}

/* The action for one pattern: the last matching rule wins; none → allow (as
 * OpenCode's default configuration). mu held. */
static const char *evaluate_locked(sim_host *h, const char *perm, const char *pattern)
{
    const char *action = "allow";
    const cJSON *rule;
    cJSON_ArrayForEach(rule, h->perm_rules)
    {
        if (!wildcard(perm, rule->string))
            continue;
        if (cJSON_IsString(rule)) {
            action = rule->valuestring;
            continue;
        }
        const cJSON *pr;
        cJSON_ArrayForEach(pr, rule)
        {
            if (cJSON_IsString(pr) && wildcard(pattern, pr->string))
                action = pr->valuestring;
        }
    }
    return action;
}

/* Approved for good in this session by an earlier "always"? mu held. */
static int approved_locked(sim_host *h, const char *session, const char *perm, const char *pattern)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(h->perm_always, session))
    {
        const char *p = cJSON_GetStringValue(cJSON_GetArrayItem(a, 0));
        const char *pat = cJSON_GetStringValue(cJSON_GetArrayItem(a, 1));
        if (p && pat && strcmp(p, perm) == 0 && wildcard(pattern, pat))
            return 1;
    }
    return 0;
}

/* "deny", "ask" or "allow" for a whole request. mu held. */
static const char *decide_locked(sim_host *h, const char *session, const char *perm, const cJSON *patterns)
{
    int ask = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, patterns)
    {
        const char *pat = cJSON_GetStringValue(p);
        const char *a = pat ? evaluate_locked(h, perm, pat) : "deny";
        if (strcmp(a, "deny") == 0)
            return "deny";
        if (strcmp(a, "ask") == 0 && !approved_locked(h, session, perm, pat))
            ask = 1;
    }
    return ask ? "ask" : "allow";
}

static void log_request_locked(sim_host *h, cJSON *info, const char *outcome, cJSON **record)
{
    cJSON *r = cJSON_Duplicate(info, 1);
    cJSON_AddStringToObject(r, "outcome", outcome);
    cJSON_AddItemToArray(h->perm_log, r);
    if (record)
        *record = r;
    sim_changed_locked(&h->core);
}

static void set_outcome(cJSON *record, const char *outcome)
{
    cJSON_ReplaceItemInObjectCaseSensitive(record, "outcome", cJSON_CreateString(outcome));
}

/* A new open question: logged, permission.asked emitted. mu held. */
static sim_perm_req *open_locked(sim_host *h, cJSON *info, const char *session, int for_turn)
{
    sim_perm_req *r = sim_xcalloc(1, sizeof *r);
    r->id = sim_strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id")));
    r->session = sim_strdup(session);
    r->info = info;
    r->for_turn = for_turn;
    log_request_locked(h, info, "pending", &r->record);
    r->next = h->perm_open;
    h->perm_open = r;
    sim_emit_props_locked(&h->core, "permission.asked", cJSON_Duplicate(info, 1));
    return r;
}

static cJSON *request_info_locked(sim_host *h, const char *session, const char *perm, const cJSON *patterns,
                                  const cJSON *always, const cJSON *metadata, const char *message_id,
                                  const char *call_id)
{
    cJSON *info = cJSON_CreateObject();
    char *id = sim_new_id_locked(&h->store, "per");
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

static void unlink_locked(sim_host *h, sim_perm_req *r)
{
    for (sim_perm_req **pp = &h->perm_open; *pp; pp = &(*pp)->next)
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

static void remember_always_locked(sim_host *h, const sim_perm_req *r)
{
    cJSON *list = cJSON_GetObjectItemCaseSensitive(h->perm_always, r->session);
    if (!list)
        list = cJSON_AddArrayToObject(h->perm_always, r->session);
    const char *perm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->info, "permission"));
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(r->info, "always"))
    {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateString(perm ? perm : ""));
        cJSON_AddItemToArray(pair, cJSON_CreateString(cJSON_GetStringValue(a) ? a->valuestring : ""));
        cJSON_AddItemToArray(list, pair);
    }
}

/* Answer an open question: reply "once", "always", "reject", or "cancelled"
 * (Esc: replied as a reject). permission.replied is emitted. A sub-agent's
 * question is then closed here (tell_turn: its turn goes on or ends); a tool
 * call's is closed by the waiting call. mu held. */
static void answer_locked(sim_host *h, sim_perm_req *r, const char *reply, const char *message, int tell_turn)
{
    if (r->reply)
        return;
    r->reply = strcmp(reply, "always") == 0 ? "always" : strcmp(reply, "once") == 0 ? "once" : "reject";
    r->message = sim_strdup(message);
    set_outcome(r->record, strcmp(reply, "cancelled") == 0 ? "cancelled" : r->reply);
    if (strcmp(r->reply, "always") == 0)
        remember_always_locked(h, r);
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", r->session);
    cJSON_AddStringToObject(props, "requestID", r->id);
    cJSON_AddStringToObject(props, "reply", r->reply);
    sim_emit_props_locked(&h->core, "permission.replied", props);
    sim_changed_locked(&h->core);
    if (!r->for_turn)
        return; /* the waiting tool call wakes (state_cv) and frees it */
    unlink_locked(h, r);
    if (tell_turn)
        sim_agent_permission_answered_locked(&h->agents, r->session, r->id, strcmp(r->reply, "reject") != 0);
    req_free(r);
}

int sim_permission_reply(sim_host *h, const char *request_id, const char *reply, const char *message)
{
    if (!reply || (strcmp(reply, "once") && strcmp(reply, "always") && strcmp(reply, "reject")))
        return -EINVAL;
    pthread_mutex_lock(&h->core.mu);
    sim_perm_req *r = h->perm_open;
    while (r && (r->reply || strcmp(r->id, request_id ? request_id : "") != 0))
        r = r->next;
    if (r)
        answer_locked(h, r, reply, message, 1);
    pthread_mutex_unlock(&h->core.mu);
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

int sim_ask_permission(sim_host *h, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    cJSON *patterns, *always, *meta;
    if (ask_args(req, &patterns, &always, &meta) != 0 || !ctx || !ctx->session_id) {
        cJSON_Delete(patterns);
        cJSON_Delete(always);
        cJSON_Delete(meta);
        *out = sim_strdup("malformed permission request");
        return -EINVAL;
    }
    pthread_mutex_lock(&h->core.mu);
    const char *action = decide_locked(h, ctx->session_id, req->permission, patterns);
    cJSON *info = request_info_locked(h, ctx->session_id, req->permission, patterns, always, meta,
                                      ctx->message_id, ctx->call_id);
    cJSON_Delete(patterns);
    cJSON_Delete(always);
    cJSON_Delete(meta);
    int rc = 0;
    if (strcmp(action, "ask") != 0) {
        log_request_locked(h, info, action, NULL);
        cJSON_Delete(info);
        if (strcmp(action, "deny") == 0) {
            *out = sim_strdup("The user has specified a rule which prevents you from using this specific "
                              "tool call.");
            rc = -EACCES;
        }
        pthread_mutex_unlock(&h->core.mu);
        return rc;
    }
    sim_perm_req *r = open_locked(h, info, ctx->session_id, 0);
    if (h->perm_auto)
        answer_locked(h, r, h->perm_auto, h->perm_auto_msg, 0);
    /* Wait for the answer, or for Esc (re-checked often: the flag is the
     * caller's and changes without a host state change). */
    while (!r->reply && !__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST) && !h->core.stopping)
        sim_cond_wait_until(&h->core.state_cv, &h->core.mu, sim_mono_ms() + 10);
    if (!r->reply)
        answer_locked(h, r, "cancelled", NULL, 0);
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r->record, "outcome")), "cancelled") == 0) {
        rc = -ECANCELED;
    } else if (strcmp(r->reply, "reject") == 0) {
        *out = sim_strdup(r->message ? r->message : "The user rejected permission to use this specific tool call.");
        rc = -EACCES;
    }
    unlink_locked(h, r);
    req_free(r);
    pthread_mutex_unlock(&h->core.mu);
    return rc;
}

/* ---- a sub-agent's question (the script's "ask" step) ------------------ */

int sim_permission_ask_step_locked(void *ctx, const char *session_id, const char *message_id, const cJSON *ask,
                                   char **request_id)
{
    sim_host *h = ctx;
    const char *perm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ask, "permission"));
    const cJSON *patterns = cJSON_GetObjectItemCaseSensitive(ask, "patterns");
    *request_id = NULL;
    if (!perm || !cJSON_IsArray(patterns))
        return 1; /* malformed: the step is skipped */
    const char *action = decide_locked(h, session_id, perm, patterns);
    cJSON *info = request_info_locked(h, session_id, perm, patterns, cJSON_GetObjectItemCaseSensitive(ask, "always"),
                                      cJSON_GetObjectItemCaseSensitive(ask, "metadata"), message_id, NULL);
    if (strcmp(action, "ask") != 0) {
        log_request_locked(h, info, action, NULL);
        cJSON_Delete(info);
        return strcmp(action, "allow") == 0 ? 1 : 0;
    }
    sim_perm_req *r = open_locked(h, info, session_id, 1);
    if (h->perm_auto) {
        /* answered at once: the step goes on (or the turn ends) now */
        int go_on = strcmp(h->perm_auto, "reject") != 0;
        answer_locked(h, r, h->perm_auto, h->perm_auto_msg, 0);
        return go_on;
    }
    *request_id = sim_strdup(r->id);
    return -1;
}

void sim_permission_turn_gone_locked(void *ctx, const char *session_id)
{
    sim_host *h = ctx;
    for (sim_perm_req *r = h->perm_open, *next; r; r = next) {
        next = r->next;
        if (r->for_turn && !r->reply && strcmp(r->session, session_id) == 0)
            answer_locked(h, r, "reject", NULL, 0); /* the turn is over: nothing to resume */
    }
}

/* ---- configuration and the record -------------------------------------- */

int sim_permission_rules(sim_host *h, const char *rules_json)
{
    cJSON *rules = rules_json ? cJSON_Parse(rules_json) : cJSON_CreateObject();
    if (!cJSON_IsObject(rules)) {
        cJSON_Delete(rules);
        return -EINVAL;
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, rules)
    {
        if (!cJSON_IsString(r) && !cJSON_IsObject(r)) {
            cJSON_Delete(rules);
            return -EINVAL;
        }
    }
    pthread_mutex_lock(&h->core.mu);
    cJSON_Delete(h->perm_rules);
    h->perm_rules = rules;
    pthread_mutex_unlock(&h->core.mu);
    return 0;
}

void sim_permission_auto(sim_host *h, const char *reply, const char *message)
{
    pthread_mutex_lock(&h->core.mu);
    free(h->perm_auto);
    free(h->perm_auto_msg);
    h->perm_auto = reply ? sim_strdup(reply) : NULL;
    h->perm_auto_msg = sim_strdup(message);
    pthread_mutex_unlock(&h->core.mu);
}

size_t sim_permission_count(sim_host *h)
{
    pthread_mutex_lock(&h->core.mu);
    size_t n = (size_t)cJSON_GetArraySize(h->perm_log);
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

char *sim_permission_json(sim_host *h, int n)
{
    pthread_mutex_lock(&h->core.mu);
    int size = cJSON_GetArraySize(h->perm_log);
    const cJSON *r = cJSON_GetArrayItem(h->perm_log, n < 0 ? size + n : n);
    char *s = r ? sim_print(r) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return s;
}

char *sim_permission_open(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    const sim_perm_req *found = NULL;
    for (const sim_perm_req *r = h->perm_open; r; r = r->next)
        if (!r->reply && (!session_id || strcmp(r->session, session_id) == 0))
            found = r; /* the list is newest first: keep the oldest */
    char *id = found ? sim_strdup(found->id) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return id;
}

void sim_permission_free_locked(sim_host *h)
{
    while (h->perm_open) {
        sim_perm_req *r = h->perm_open;
        h->perm_open = r->next;
        req_free(r);
    }
    cJSON_Delete(h->perm_rules);
    cJSON_Delete(h->perm_always);
    cJSON_Delete(h->perm_log);
    free(h->perm_auto);
    free(h->perm_auto_msg);
    h->perm_rules = h->perm_always = h->perm_log = NULL;
    h->perm_auto = h->perm_auto_msg = NULL;
}

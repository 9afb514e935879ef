/*
 * ask.c — ABI 1.1 ask_permission: the worker of a tool call asks OpenCode's
 * own permission question through the ToolContext execute() got (ctx.ask()),
 * on the JS thread, and waits for the promise without a time limit (the user
 * may take minutes). Esc (tools.c, on_abort) and shutdown end the wait at
 * once with -ECANCELED: after an abort OpenCode never settles ctx.ask().
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The JSON array of strings in text, or NULL when it is not one. */
static cJSON *string_array(const char *text)
{
    cJSON *a = text ? cJSON_Parse(text) : NULL;
    const cJSON *e;
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return NULL;
    }
    cJSON_ArrayForEach (e, a)
        if (!cJSON_IsString(e)) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

/* The ctx.ask() argument {permission, patterns, always, metadata} as JSON text
 * (malloc'd), or NULL with *why saying what is wrong with req. Any thread. */
static char *ask_input(const ocp_permission_request *req, const char **why)
{
    if (req->struct_size < offsetof(ocp_permission_request, patterns_json) + sizeof req->patterns_json ||
        !req->permission || !*req->permission) {
        *why = "ask_permission: no permission name";
        return NULL;
    }
    cJSON *patterns = string_array(req->patterns_json);
    if (!patterns) {
        *why = "ask_permission: patterns_json is not a JSON array of strings";
        return NULL;
    }
    const char *always_json = OCP_HAS_FIELD(ocp_permission_request, req, always_json) ? req->always_json : NULL;
    const char *meta_json = OCP_HAS_FIELD(ocp_permission_request, req, metadata_json) ? req->metadata_json : NULL;
    cJSON *always = always_json ? string_array(always_json) : cJSON_Duplicate(patterns, 1);
    cJSON *meta = meta_json ? cJSON_Parse(meta_json) : cJSON_CreateObject();
    char *text = NULL;
    if (!always)
        *why = "ask_permission: always_json is not a JSON array of strings";
    else if (!cJSON_IsObject(meta))
        *why = "ask_permission: metadata_json is not a JSON object";
    else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "permission", req->permission);
        cJSON_AddItemToObject(o, "patterns", patterns);
        cJSON_AddItemToObject(o, "always", always);
        cJSON_AddItemToObject(o, "metadata", meta);
        patterns = always = meta = NULL;
        text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!text)
            *why = "out of memory";
    }
    cJSON_Delete(patterns);
    cJSON_Delete(always);
    cJSON_Delete(meta);
    return text;
}

/* The deny rules of OpenCode's ruleset [{permission, pattern, action}] as
 * `bash "rm *": deny, …` (malloc'd), or NULL when there are none. */
static char *deny_rules(const char *ruleset_json)
{
    cJSON *rules = ruleset_json ? cJSON_Parse(ruleset_json) : NULL;
    char *acc = NULL;
    const cJSON *r;
    cJSON_ArrayForEach (r, rules) {
        const char *perm = cJSON_GetStringValue(cJSON_GetObjectItem(r, "permission"));
        const char *pat = cJSON_GetStringValue(cJSON_GetObjectItem(r, "pattern"));
        const char *act = cJSON_GetStringValue(cJSON_GetObjectItem(r, "action"));
        if (!perm || !pat || !act || strcmp(act, "deny"))
            continue;
        char *next = xprintf("%s%s%s \"%s\": deny", acc ? acc : "", acc ? ", " : "", perm, pat);
        free(acc);
        acc = next;
    }
    cJSON_Delete(rules);
    return acc;
}

static napi_value ask_on_fulfilled(napi_env env, napi_callback_info info)
{
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    jsreq_complete(data, 0, NULL);
    return NULL;
}

/* ctx.ask() rejected (JS thread). OpenCode 1.18.33 rejects with its own error
 * classes, told apart by `_tag` (= name): PermissionDeniedError {ruleset} for
 * a deny rule, PermissionRejectedError for the user's "reject",
 * PermissionCorrectedError {feedback} for a reject with a message. The
 * PermissionV2 names (DeclinedError, CorrectedError, BlockedError) map alike.
 * Everything else means OpenCode could not ask: -EIO. (The plugin's refusal
 * is text; ocbg.js makes a call that fails after a PermissionRejectedError
 * fail with that object, so that OpenCode ends the turn: endTurnOnReject.) */
static napi_value ask_on_rejected(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value err = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &err, NULL, &data);
    jsreq *rq = data;
    if (argc < 1)
        err = NULL;
    char *tag = js_string(env, js_get(env, err, "_tag"));
    if (!tag)
        tag = js_string(env, js_get(env, err, "name"));
    int rc = -EACCES;
    char *text;
    if (tag && (strstr(tag, "DeniedError") || strstr(tag, "BlockedError"))) {
        napi_value rs = js_get(env, err, "ruleset");
        if (!rs)
            rs = js_get(env, err, "rules");
        char *rs_json = rs ? js_stringify(env, rs) : NULL;
        char *rules = deny_rules(rs_json);
        text = rules ? xprintf("OpenCode's permission rules deny it (%s)", rules)
                     : xstrdup("OpenCode's permission rules deny it");
        free(rules);
        free(rs_json);
    } else if (tag && strstr(tag, "CorrectedError")) {
        char *fb = js_string(env, js_get(env, err, "feedback"));
        text = fb && *fb ? xprintf("the user rejected it, saying: \"%s\"", fb) : xstrdup("the user rejected it");
        free(fb);
    } else if (tag && (strstr(tag, "RejectedError") || strstr(tag, "DeclinedError"))) {
        text = xstrdup("the user rejected it");
    } else {
        rc = -EIO;
        char *msg = js_string(env, js_get(env, err, "message"));
        if (!msg && err) {
            napi_value sv;
            if (napi_coerce_to_string(env, err, &sv) == napi_ok)
                msg = js_string(env, sv);
            else
                free(take_exception(env));
        }
        text = xprintf("OpenCode could not ask: %s%s%s", tag ? tag : "", tag ? ": " : "", msg ? msg : "unknown error");
        free(msg);
    }
    free(tag);
    jsreq_complete(rq, rc, text);
    return NULL;
}

static void ask_cb_finalize(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    jsreq_unref(data);
}

/* A promise callback holding its own reference to rq until it is garbage
 * collected: OpenCode may never settle the promise (it does not after an
 * abort), so neither callback can count on running. 0, or -1 (not usable). */
static int ask_callback(napi_env env, jsreq *rq, const char *name, napi_callback cb, napi_value *fn)
{
    if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, rq, fn) != napi_ok)
        return -1;
    jsreq_ref(rq);
    if (napi_add_finalizer(env, *fn, rq, ask_cb_finalize, NULL, NULL) != napi_ok) {
        jsreq_unref(rq);
        return -1;
    }
    return 0;
}

/* A JSREQ_ASK's start (host_tsfn_call runs it on the JS thread): calls
 * ctx.ask(input) for the waiting worker; the promise's callbacks (or a
 * failure here) complete rq. Keeps no reference of its own beyond the
 * callbacks'. */
static void ask_start(napi_env env, adapter *ad, jsreq *rq)
{
    if (jsreq_is_done(rq))
        return; /* cancelled while queued: the call may be gone already */
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    call *c = rq->call;
    napi_value tctx = NULL, fn, arg, promise, cbs[2];
    if (c->tctx_ref && napi_get_reference_value(env, c->tctx_ref, &tctx) != napi_ok)
        tctx = NULL;
    fn = js_get(env, tctx, "ask");
    if (!js_is(env, fn, napi_function)) {
        /* No ToolContext.ask: this OpenCode checks no permission for plugin
         * tools, so ocbg acts as it did before ABI 1.1 (see NOTES.md). */
        if (!ad->warned_no_ask) {
            ad->warned_no_ask = 1;
            h_log(ad, OCP_LOG_WARN,
                  "ocbg: this OpenCode's tool context has no ask(): commands and sub-agents start without "
                  "permission questions");
        }
        jsreq_complete(rq, 0, NULL);
    } else if (!(arg = js_parse(env, rq->opts_json))) {
        jsreq_complete(rq, -EIO, xstrdup("OpenCode could not ask: the question is not valid JSON"));
    } else if (napi_call_function(env, tctx, fn, 1, &arg, &promise) != napi_ok) {
        char *e = take_exception(env);
        jsreq_complete(rq, -EIO, xprintf("OpenCode could not ask: %s", e ? e : "ctx.ask() failed"));
        free(e);
    } else {
        bool is_promise = false;
        napi_is_promise(env, promise, &is_promise);
        if (!is_promise) {
            jsreq_complete(rq, 0, NULL); /* returned without throwing: allowed */
        } else if (ask_callback(env, rq, "ocbgAskOk", ask_on_fulfilled, &cbs[0]) != 0 ||
                   ask_callback(env, rq, "ocbgAskErr", ask_on_rejected, &cbs[1]) != 0 ||
                   !js_call_method(env, promise, "then", 2, cbs)) {
            free(take_exception(env));
            jsreq_complete(rq, -EIO, xstrdup("OpenCode could not ask: cannot wait for ctx.ask()"));
        }
    }
    napi_close_handle_scope(env, scope);
}

/* Removes rq from the adapter's open questions. Caller holds ad->mu. */
static void asks_remove(adapter *ad, jsreq *rq)
{
    for (jsreq **p = &ad->asks; *p; p = &(*p)->next)
        if (*p == rq) {
            *p = rq->next;
            return;
        }
}

void asks_cancel(adapter *ad, const call *c, const char *why)
{
    for (jsreq *rq = ad->asks; rq; rq = rq->next)
        if (!c || rq->call == c)
            jsreq_complete(rq, -ECANCELED, xstrdup(why));
}

/* The call whose context ctx is, if it may ask: NULL with *rc and *out
 * set when ctx is not one of this adapter's calls (-EINVAL), or the caller is
 * on the JS thread or runs a command (-EIO). */
static call *ask_call(adapter *ad, const ocp_call_ctx *ctx, int *rc, char **out)
{
    call *c = (call *)(void *)((char *)(uintptr_t)ctx - offsetof(call, ctx));
    if (c->magic != CALL_MAGIC || c->ad != ad) {
        *out = xstrdup("ask_permission: not the call context of a tool call of this host");
        *rc = -EINVAL;
        return NULL;
    }
    if (on_js_thread(ad)) {
        *out = xstrdup("ocbg: permission question on OpenCode's event thread refused (it would deadlock)");
        *rc = -EIO;
        return NULL;
    }
    if (c->kind != CALL_TOOL) {
        *out = xstrdup("OpenCode asks for permission only inside a tool call (a slash command has no ToolContext)");
        *rc = -EIO;
        return NULL;
    }
    return c;
}

/* A new JSREQ_ASK record for c owning input, with two references: the waiting
 * worker's and the queued item's. NULL when out of memory (input untouched). */
static jsreq *ask_new(call *c, char *input)
{
    jsreq *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->kind = JSREQ_ASK;
    rq->refs = 2;
    pthread_mutex_init(&rq->mu, NULL);
    pthread_cond_init(&rq->cv, NULL);
    rq->opts_json = input;
    rq->call = c;
    rq->start = ask_start;
    return rq;
}

/* Adds rq to the open questions. Under ad->mu, where on_abort sets
 * `cancelled`: an Esc either came before (seen here) or finds the question in
 * the list. Returns NULL, or why it is refused (then rq is not added). */
static const char *ask_register(adapter *ad, jsreq *rq, const ocp_call_ctx *ctx)
{
    const char *refused = NULL;
    pthread_mutex_lock(&ad->mu);
    if (ad->closing || ad->tsfn_gone)
        refused = "ocbg is shutting down";
    else if (__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST))
        refused = "cancelled before OpenCode asked the user";
    else {
        rq->next = ad->asks;
        ad->asks = rq;
    }
    pthread_mutex_unlock(&ad->mu);
    return refused;
}

/* Queues a registered rq for the JS thread and waits for the answer with no
 * time limit; then removes it from the open questions and drops the worker's
 * reference. Returns its rc, its text in *out. */
static int ask_wait(adapter *ad, jsreq *rq, char **out)
{
    if (napi_call_threadsafe_function(ad->host_tsfn, rq, napi_tsfn_blocking) != napi_ok) {
        jsreq_complete(rq, -ECANCELED, xstrdup("OpenCode is shutting down"));
        jsreq_unref(rq); /* never queued */
    }
    pthread_mutex_lock(&rq->mu);
    while (!rq->done)
        pthread_cond_wait(&rq->cv, &rq->mu);
    int rc = rq->rc;
    *out = rq->out;
    rq->out = NULL;
    pthread_mutex_unlock(&rq->mu);
    pthread_mutex_lock(&ad->mu);
    asks_remove(ad, rq);
    pthread_mutex_unlock(&ad->mu);
    jsreq_unref(rq);
    return rc;
}

/* h_ask_permission with out never NULL. */
static int ask_permission(adapter *ad, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    *out = NULL;
    if (!ctx || !req) {
        *out = xstrdup("ask_permission: no call context or request");
        return -EINVAL;
    }
    int rc = 0;
    call *c = ask_call(ad, ctx, &rc, out);
    if (!c)
        return rc;
    const char *why = NULL;
    char *input = ask_input(req, &why);
    if (!input) {
        *out = xstrdup(why);
        return -EINVAL;
    }
    jsreq *rq = ask_new(c, input);
    if (!rq) {
        free(input);
        return -ENOMEM;
    }
    const char *refused = ask_register(ad, rq, ctx);
    if (refused) {
        rq->refs = 1; /* never queued: only ours */
        jsreq_unref(rq);
        *out = xstrdup(refused);
        return -ECANCELED;
    }
    return ask_wait(ad, rq, out);
}

/* ask_permission [worker]: ctx.ask() on the JS thread, and the tool call's
 * worker waits for the answer, without a time limit (the user may take
 * minutes); Esc (on_abort) and shutdown end the wait at once with -ECANCELED.
 * ctx must be the ocp_call_ctx of one of this adapter's calls. *out: the
 * reason on failure (malloc'd, freed with h_free), else NULL; out may be NULL. */
int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    char *dummy = NULL;
    int rc = ask_permission(ud, ctx, req, out ? out : &dummy);
    free(dummy);
    return rc;
}

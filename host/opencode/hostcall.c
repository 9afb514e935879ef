/*
 * hostcall.c — a host call crossing from a worker or plugin thread to the JS
 * thread and back: the refcounted record, host_tsfn's callback, the SDK
 * request with its answer (then/catch -> rc and text), and the log.
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void jsreq_ref(jsreq *rq)
{
    pthread_mutex_lock(&rq->mu);
    rq->refs++;
    pthread_mutex_unlock(&rq->mu);
}

void jsreq_unref(jsreq *rq)
{
    pthread_mutex_lock(&rq->mu);
    int left = --rq->refs;
    pthread_mutex_unlock(&rq->mu);
    if (left == 0) {
        pthread_mutex_destroy(&rq->mu);
        pthread_cond_destroy(&rq->cv);
        free(rq->opts_json);
        free(rq->out);
        free(rq);
    }
}

/* Completes the request once and wakes its caller; takes ownership of out
 * (freed when it was already complete). Any thread. Returns 1 if this call
 * completed it. Drops no reference. */
int jsreq_complete(jsreq *rq, int rc, char *out)
{
    pthread_mutex_lock(&rq->mu);
    if (rq->done) {
        pthread_mutex_unlock(&rq->mu);
        free(out);
        return 0;
    }
    rq->done = 1;
    rq->rc = rc;
    rq->out = out;
    pthread_cond_broadcast(&rq->cv);
    pthread_mutex_unlock(&rq->mu);
    return 1;
}

/* JSREQ_SDK: completes the request (JS thread); the first completion drops the JS
 * side's reference. */
static void jsreq_finish(jsreq *rq, int rc, char *out)
{
    if (jsreq_complete(rq, rc, out))
        jsreq_unref(rq);
}

int jsreq_is_done(jsreq *rq)
{
    pthread_mutex_lock(&rq->mu);
    int d = rq->done;
    pthread_mutex_unlock(&rq->mu);
    return d;
}

/* A readable message for an SDK error value (the parsed error body or an Error). */
static char *error_text(napi_env env, napi_value err, int status)
{
    napi_value data = js_get(env, err, "data");
    char *msg = js_string(env, js_get(env, data, "message"));
    if (!msg)
        msg = js_string(env, js_get(env, err, "message"));
    char *name = js_string(env, js_get(env, err, "name"));
    if (!msg) {
        msg = js_stringify(env, err);
        if (!msg) {
            napi_value s;
            if (err && napi_coerce_to_string(env, err, &s) == napi_ok)
                msg = js_string(env, s);
        }
    }
    char *t = status > 0
                  ? xprintf("OpenCode: %s%s%s (HTTP %d)", name ? name : "", name ? ": " : "",
                            msg ? msg : "request failed", status)
                  : xprintf("OpenCode: %s%s%s", name ? name : "", name ? ": " : "", msg ? msg : "request failed");
    free(msg);
    free(name);
    return t;
}

static int error_is_not_found(napi_env env, napi_value err, int status)
{
    if (status == 404)
        return 1;
    char *name = js_string(env, js_get(env, err, "name"));
    int nf = name && !strcmp(name, "NotFoundError");
    free(name);
    return nf;
}

static napi_value jsreq_on_fulfilled(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value res = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &res, NULL, &data);
    jsreq *rq = data;
    if (argc < 1)
        res = NULL;
    int status = 0;
    napi_value response = js_get(env, res, "response");
    napi_value st = js_get(env, response, "status");
    if (st)
        napi_get_value_int32(env, st, &status);
    napi_value err = js_get(env, res, "error");
    if (err || (status >= 400)) {
        int rc = error_is_not_found(env, err, status) ? -ENOENT : -EIO;
        jsreq_finish(rq, rc, error_text(env, err, status));
        return NULL;
    }
    char *out = NULL;
    if (rq->want_out) {
        napi_value d = js_get(env, res, "data");
        out = d ? js_stringify(env, d) : NULL;
        if (!out) {
            jsreq_finish(rq, -EIO,
                         xprintf("OpenCode: empty answer to %s.%s", rq->group ? rq->group : "watcher", rq->method));
            return NULL;
        }
    }
    jsreq_finish(rq, 0, out);
    return NULL;
}

static napi_value jsreq_on_rejected(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value err = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &err, NULL, &data);
    jsreq *rq = data;
    int status = 0;
    napi_value cause = js_get(env, err, "cause");
    napi_value st = js_get(env, cause, "status");
    if (st)
        napi_get_value_int32(env, st, &status);
    napi_value body = js_get(env, cause, "body");
    int rc = error_is_not_found(env, body ? body : err, status) ? -ENOENT : -EIO;
    jsreq_finish(rq, rc, error_text(env, body ? body : err, status));
    return NULL;
}

/* Every request gets a timeout: opts.signal = AbortSignal.timeout(ms). */
static void with_timeout(napi_env env, napi_value opts)
{
    napi_value abort_signal = js_global(env, "AbortSignal"), ms, sig;
    napi_create_int32(env, HOST_CALL_TIMEOUT_MS, &ms);
    sig = js_call_method(env, abort_signal, "timeout", 1, &ms);
    if (sig)
        napi_set_named_property(env, opts, "signal", sig);
    else
        free(take_exception(env));
}

/* Runs on the JS thread: starts the SDK call; its promise finishes rq later. */
static void jsreq_start(napi_env env, adapter *ad, jsreq *rq)
{
    napi_value root, group, opts, promise, args[2];
    napi_ref ref = rq->group ? ad->client_ref : ad->watcher_ref;
    if (!ref || napi_get_reference_value(env, ref, &root) != napi_ok || !root) {
        jsreq_finish(rq, -EIO, xstrdup(rq->group ? "OpenCode: no SDK client" : "ocbg: ocbg.js gave no watcher"));
        return;
    }
    group = rq->group ? js_get(env, root, rq->group) : root;
    opts = js_parse(env, rq->opts_json ? rq->opts_json : "{}");
    if (!group || !opts) {
        jsreq_finish(rq, -EIO, xprintf("OpenCode: the SDK has no %s", rq->group ? rq->group : "watcher"));
        return;
    }
    with_timeout(env, opts);
    promise = js_call_method(env, group, rq->method, 1, &opts);
    if (!promise) {
        char *e = take_exception(env);
        jsreq_finish(rq, -EIO,
                     xprintf("OpenCode: %s.%s failed: %s", rq->group ? rq->group : "watcher", rq->method,
                             e ? e : "not a function"));
        free(e);
        return;
    }
    napi_create_function(env, "ocbgHostOk", NAPI_AUTO_LENGTH, jsreq_on_fulfilled, rq, &args[0]);
    napi_create_function(env, "ocbgHostErr", NAPI_AUTO_LENGTH, jsreq_on_rejected, rq, &args[1]);
    bool is_promise = false;
    napi_is_promise(env, promise, &is_promise);
    if (!is_promise || !js_call_method(env, promise, "then", 2, args)) {
        free(take_exception(env));
        /* not a promise: treat the value itself as the result */
        napi_value argv[1] = {promise}, dummy;
        napi_value fn = args[0];
        if (napi_call_function(env, js_undefined(env), fn, 1, argv, &dummy) != napi_ok)
            free(take_exception(env));
    }
}

static napi_value js_noop(napi_env env, napi_callback_info info)
{
    (void)env;
    (void)info;
    return NULL;
}

static void log_on_js(napi_env env, adapter *ad, jsreq *rq)
{
    static const char *levels[] = {"debug", "info", "warn", "error"};
    napi_value client, app;
    int sent = 0;
    if (napi_get_reference_value(env, ad->client_ref, &client) == napi_ok && client &&
        (app = js_get(env, client, "app"))) {
        cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
        cJSON_AddStringToObject(b, "service", "ocbg");
        cJSON_AddStringToObject(b, "level", levels[rq->level <= OCP_LOG_ERROR ? rq->level : 3]);
        cJSON_AddStringToObject(b, "message", rq->out ? rq->out : "");
        char *t = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        napi_value opts = t ? js_parse(env, t) : NULL;
        free(t);
        napi_value p = opts ? js_call_method(env, app, "log", 1, &opts) : NULL;
        if (p) {
            sent = 1;
            /* swallow a rejection so that it is not reported as unhandled */
            napi_value args[2];
            args[0] = js_undefined(env);
            napi_create_function(env, "ocbgLogErr", NAPI_AUTO_LENGTH, js_noop, NULL, &args[1]);
            if (!js_call_method(env, p, "then", 2, args))
                free(take_exception(env));
        } else {
            free(take_exception(env));
        }
    }
    if (!sent || rq->level >= OCP_LOG_WARN)
        stderr_log(rq->level, rq->out ? rq->out : "");
}

int host_send_from_js(napi_env env, adapter *ad, const char *group, const char *method, cJSON *opts)
{
    char *text = cJSON_PrintUnformatted(opts);
    cJSON_Delete(opts);
    napi_value client, grp, args[2];
    napi_value o = text ? js_parse(env, text) : NULL;
    free(text);
    if (!o || napi_get_reference_value(env, ad->client_ref, &client) != napi_ok || !client ||
        !(grp = js_get(env, client, group)))
        return -1;
    with_timeout(env, o);
    napi_value p = js_call_method(env, grp, method, 1, &o);
    if (!p) {
        free(take_exception(env));
        return -1;
    }
    /* a rejection is swallowed, so that it is not reported as unhandled */
    args[0] = js_undefined(env);
    napi_create_function(env, "ocbgSendErr", NAPI_AUTO_LENGTH, js_noop, NULL, &args[1]);
    if (!js_call_method(env, p, "then", 2, args))
        free(take_exception(env));
    return 0;
}

/* The table's log (hostfns.c puts it there; ask.c and lifecycle.c log with
 * it too): a JSREQ_LOG record queued without waiting, run by log_on_js. */
void h_log(void *ud, enum ocp_log_level level, const char *message)
{
    adapter *ad = ud;
    if ((int)level < ad->log_level)
        return;
    pthread_mutex_lock(&ad->mu);
    int gone = ad->tsfn_gone;
    pthread_mutex_unlock(&ad->mu);
    if (gone || on_js_thread(ad)) {
        stderr_log(level, message ? message : "");
        return;
    }
    jsreq *rq = calloc(1, sizeof *rq);
    if (!rq)
        return;
    rq->kind = JSREQ_LOG;
    rq->level = level;
    rq->out = xstrdup(message ? message : "");
    if (napi_call_threadsafe_function(ad->host_tsfn, rq, napi_tsfn_nonblocking) != napi_ok) {
        stderr_log(level, rq->out ? rq->out : "");
        free(rq->out);
        free(rq);
    }
}

/* Thread-safe function callback (JS thread). env is NULL when the function
 * is being torn down: fail what is still queued. */
void host_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data)
{
    (void)js_cb;
    adapter *ad = context;
    jsreq *rq = data;
    if (rq->kind == JSREQ_LOG) {
        if (env)
            log_on_js(env, ad, rq);
        else
            stderr_log(rq->level, rq->out ? rq->out : "");
        free(rq->out);
        free(rq);
        return;
    }
    if (rq->kind == JSREQ_ASK) {
        if (!env)
            jsreq_complete(rq, -ECANCELED, xstrdup("OpenCode is shutting down"));
        else
            rq->start(env, ad, rq);
        jsreq_unref(rq); /* the queued item's reference */
        return;
    }
    if (!env) {
        jsreq_finish(rq, -ECANCELED, xstrdup("OpenCode is shutting down"));
        return;
    }
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    jsreq_start(env, ad, rq);
    napi_close_handle_scope(env, scope);
}

/* A new JSREQ_SDK record owning opts_json, with two references: the waiting
 * caller's and the JS side's. NULL when out of memory (opts_json untouched). */
static jsreq *jsreq_new_sdk(const char *group, const char *method, char *opts_json, int want_out)
{
    jsreq *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->kind = JSREQ_SDK;
    rq->refs = 2;
    pthread_mutex_init(&rq->mu, NULL);
    /* CLOCK_MONOTONIC: a clock change must not shorten or stretch the wait */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&rq->cv, &ca);
    pthread_condattr_destroy(&ca);
    rq->group = group;
    rq->method = method;
    rq->opts_json = opts_json;
    rq->want_out = want_out;
    return rq;
}

/* Queues rq on host_tsfn. 0, or -1 when the TSFNs are gone or closing (rq
 * was not queued). */
static int jsreq_queue(adapter *ad, jsreq *rq)
{
    pthread_mutex_lock(&ad->mu);
    int gone = ad->tsfn_gone;
    pthread_mutex_unlock(&ad->mu);
    napi_status s = gone ? napi_closing : napi_call_threadsafe_function(ad->host_tsfn, rq, napi_tsfn_blocking);
    return s == napi_ok ? 0 : -1;
}

/* CLOCK_MONOTONIC now + ms. */
static struct timespec deadline_in(long long ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    return dl;
}

/* Waits for the JS side to complete rq, at most until the SDK's own timeout
 * plus a grace period (the JS thread may never answer). Returns its rc and
 * moves its text to *out (out may be NULL); -EIO on timeout. */
static int jsreq_wait(jsreq *rq, char **out)
{
    struct timespec dl = deadline_in(HOST_CALL_TIMEOUT_MS + HOST_CALL_GRACE_MS);
    pthread_mutex_lock(&rq->mu);
    int timed_out = 0;
    while (!rq->done) {
        if (pthread_cond_timedwait(&rq->cv, &rq->mu, &dl) == ETIMEDOUT && !rq->done) {
            timed_out = 1;
            break;
        }
    }
    int rc;
    if (timed_out) {
        rc = -EIO;
        if (out)
            *out = xprintf("OpenCode did not answer %s.%s in time", rq->group ? rq->group : "watcher", rq->method);
    } else {
        rc = rq->rc;
        if (out) {
            *out = rq->out;
            rq->out = NULL;
        }
    }
    pthread_mutex_unlock(&rq->mu);
    return rc;
}

/* host_request and watcher_request: group NULL names the watcher. */
static int request_to(adapter *ad, const char *group, const char *method, cJSON *opts, int want_out, char **out)
{
    if (out)
        *out = NULL;
    char *opts_json = cJSON_PrintUnformatted(opts);
    cJSON_Delete(opts);
    if (!opts_json)
        return -ENOMEM;
    if (on_js_thread(ad)) {
        free(opts_json);
        if (out)
            *out = xstrdup("ocbg: host call on OpenCode's event thread refused (it would deadlock)");
        return -EIO;
    }
    jsreq *rq = jsreq_new_sdk(group, method, opts_json, want_out);
    if (!rq) {
        free(opts_json);
        return -ENOMEM;
    }
    if (jsreq_queue(ad, rq) != 0) {
        rq->refs = 1; /* the JS side never got it */
        jsreq_unref(rq);
        if (out)
            *out = xstrdup("OpenCode is shutting down");
        return -ECANCELED;
    }
    int rc = jsreq_wait(rq, out);
    jsreq_unref(rq);
    return rc;
}

/* Sends one SDK request and blocks the calling (non-JS) thread until it ends. */
int host_request(adapter *ad, const char *group, const char *method, cJSON *opts, int want_out, char **out)
{
    if (!group) { /* NULL is the watcher's: a caller's mistake must not reach it */
        cJSON_Delete(opts);
        return -EINVAL;
    }
    return request_to(ad, group, method, opts, want_out, out);
}

int watcher_request(adapter *ad, const char *method, cJSON *opts, char **out)
{
    return request_to(ad, NULL, method, opts, 0, out);
}

/*
 * addon.c — ocbg_opencode.node: runs an ocp plugin (ocbg.so, found beside this
 * file) inside OpenCode. OpenCode runs plugins as JavaScript on one Bun event
 * loop; ocbg.js (a few lines) loads this Node-API addon and calls init().
 *
 * Threads (see NOTES.md for the full story):
 *   JS thread   OpenCode's event loop. Runs every hook: event (on_event),
 *               messages.transform, tool execute() and command hooks (they only
 *               start a worker and return a Promise), the settling of those
 *               Promises, and every SDK call. It never waits for C.
 *   workers     one detached pthread per tool call / command: plugin->tool_call
 *               may block as long as it likes there.
 *   plugin's    the plugin's own threads (poller, notifier, ...).
 *   shutdown    one pthread started by dispose(): plugin->shutdown may wait for
 *               plugin threads blocked in host calls, which need the JS thread.
 *
 * A host call (session_create, ...) made on a worker or plugin thread becomes a
 * `hostcall` record handed to the JS thread through a Node-API thread-safe
 * function; the JS side calls the SDK `client`, and its promise's then/catch
 * fill the record and signal its condition variable. Only the calling thread
 * waits. A host call on the JS thread itself fails at once (-EIO) rather than
 * deadlocking; the ABI forbids it anyway.
 *
 * ask_permission (ABI 1.1) takes the same road with the tool call's own
 * ToolContext: ctx.ask() on the JS thread, the worker waiting for its promise
 * with no time limit; Esc (the tool's AbortSignal) or shutdown ends the wait.
 *
 * Options: the adapter adds "face_claude": false unless the user chose (see
 * plugin_options), because OpenCode's own bash/task tools would otherwise sit
 * beside Bash/Task.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocp.h"

#define PLUGIN_FILE "ocbg.so"
/* How long the SDK may take for one request before it is aborted (ms). */
#define HOST_CALL_TIMEOUT_MS 30000
/* A safety margin on the C side: if the JS thread never answers at all. */
#define HOST_CALL_GRACE_MS 15000

typedef struct adapter adapter;

struct adapter {
    napi_env env;
    pthread_t js_thread;
    void *dl;
    const ocp_plugin *plugin;
    /* copies from the plugin table, which is gone once shutdown returned: a
     * worker released by shutdown frees its result with them afterwards */
    void (*plugin_free)(void *userdata, char *p);
    void *plugin_ud;
    ocp_host host;
    napi_ref client_ref;
    napi_ref zod_ref;         /* may be NULL: no zod, raw JSON Schema per argument */
    napi_threadsafe_function host_tsfn; /* plugin/worker thread -> JS: SDK calls, logs */
    napi_threadsafe_function done_tsfn; /* worker/shutdown thread -> JS: settle promises */
    pthread_mutex_t mu;       /* guards the fields below; held around JS-thread calls into the plugin */
    pthread_cond_t cv;
    int closing;              /* shutdown has begun: start no new call into the plugin */
    int workers;              /* worker threads not yet finished */
    int tsfn_gone;            /* the thread-safe functions were released */
    int log_level;            /* minimum level written */
    int js_pending;           /* JS thread only: promises waiting on workers */
    struct hostcall *asks;    /* permission questions a worker waits on (under mu) */
    int warned_no_ask;        /* JS thread only: "this OpenCode has no ctx.ask" logged */
    size_t ncmd;              /* copies of the plugin's commands (its table */
    char **cmd_name;          /* is gone after shutdown) */
    char **cmd_desc;
};

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */
/* ------------------------------------------------------------------------ */

static char *xstrdup(const char *s) {
    return s ? strdup(s) : NULL;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static int on_js_thread(adapter *ad) {
    return pthread_equal(pthread_self(), ad->js_thread);
}

static void stderr_log(enum ocp_log_level level, const char *msg) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    fprintf(stderr, "ocbg [%s] %s\n", names[level <= OCP_LOG_ERROR ? level : OCP_LOG_ERROR], msg);
}

/* Throws a JS Error with the message and returns NULL (for callbacks). */
static napi_value throw_msg(napi_env env, const char *msg) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending)
        napi_throw_error(env, NULL, msg);
    return NULL;
}

/* Clears a pending JS exception, returning its text (malloc'd) or NULL. */
static char *take_exception(napi_env env) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending)
        return NULL;
    napi_value e, s;
    napi_get_and_clear_last_exception(env, &e);
    char *out = NULL;
    if (napi_coerce_to_string(env, e, &s) == napi_ok) {
        size_t n = 0;
        napi_get_value_string_utf8(env, s, NULL, 0, &n);
        out = malloc(n + 1);
        if (out)
            napi_get_value_string_utf8(env, s, out, n + 1, &n);
    }
    return out ? out : xstrdup("JavaScript exception");
}

/* A JS string value as a malloc'd UTF-8 string; NULL when not a string. */
static char *js_string(napi_env env, napi_value v) {
    napi_valuetype t;
    if (!v || napi_typeof(env, v, &t) != napi_ok || t != napi_string)
        return NULL;
    size_t n = 0;
    if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok)
        return NULL;
    char *s = malloc(n + 1);
    if (s)
        napi_get_value_string_utf8(env, v, s, n + 1, &n);
    return s;
}

static napi_value js_str(napi_env env, const char *s) {
    napi_value v;
    napi_create_string_utf8(env, s ? s : "", NAPI_AUTO_LENGTH, &v);
    return v;
}

static napi_value js_undefined(napi_env env) {
    napi_value v;
    napi_get_undefined(env, &v);
    return v;
}

static napi_value js_get(napi_env env, napi_value obj, const char *key) {
    napi_valuetype t;
    if (!obj || napi_typeof(env, obj, &t) != napi_ok || (t != napi_object && t != napi_function))
        return NULL;
    napi_value v;
    if (napi_get_named_property(env, obj, key, &v) != napi_ok)
        return NULL;
    if (napi_typeof(env, v, &t) != napi_ok || t == napi_undefined || t == napi_null)
        return NULL;
    return v;
}

static int js_is(napi_env env, napi_value v, napi_valuetype want) {
    napi_valuetype t;
    return v && napi_typeof(env, v, &t) == napi_ok && t == want;
}

/* Calls obj[method](...args); NULL on exception (left pending). */
static napi_value js_call_method(napi_env env, napi_value obj, const char *method, size_t argc,
                                 const napi_value *argv) {
    napi_value fn = js_get(env, obj, method), res;
    if (!js_is(env, fn, napi_function))
        return NULL;
    if (napi_call_function(env, obj, fn, argc, argv, &res) != napi_ok)
        return NULL;
    return res;
}

static napi_value js_global(napi_env env, const char *name) {
    napi_value g;
    napi_get_global(env, &g);
    return js_get(env, g, name);
}

/* JSON.stringify(v) as a malloc'd string (NULL for undefined or on error). */
static char *js_stringify(napi_env env, napi_value v) {
    napi_value json = js_global(env, "JSON");
    napi_value s = js_call_method(env, json, "stringify", 1, &v);
    if (!s) {
        free(take_exception(env));
        return NULL;
    }
    return js_string(env, s);
}

/* JSON.parse(text); NULL on error (exception cleared). */
static napi_value js_parse(napi_env env, const char *text) {
    napi_value json = js_global(env, "JSON"), arg = js_str(env, text);
    napi_value v = js_call_method(env, json, "parse", 1, &arg);
    if (!v)
        free(take_exception(env));
    return v;
}

/* Replaces the contents of the JS array `arr` with those of `items`, in place
 * (OpenCode keeps its own reference to the array it passed to the hook). */
static int js_array_replace(napi_env env, napi_value arr, napi_value items) {
    bool is_arr = false;
    if (napi_is_array(env, arr, &is_arr) != napi_ok || !is_arr)
        return -1;
    if (napi_is_array(env, items, &is_arr) != napi_ok || !is_arr)
        return -1;
    uint32_t n = 0, m = 0;
    napi_get_array_length(env, items, &m);
    napi_value len0;
    napi_create_uint32(env, 0, &len0);
    if (napi_set_named_property(env, arr, "length", len0) != napi_ok)
        return -1;
    (void)n;
    for (uint32_t i = 0; i < m; i++) {
        napi_value it;
        napi_get_element(env, items, i, &it);
        napi_set_element(env, arr, i, it);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* host calls: plugin/worker thread -> JS thread -> SDK -> back              */
/* ------------------------------------------------------------------------ */

/* HC_SDK: client[group][method](opts). HC_LOG: fire and forget.
 * HC_ASK: ctx.ask(request) of a tool call's ToolContext (ask_permission). */
enum hc_kind { HC_SDK, HC_LOG, HC_ASK };

struct job;

typedef struct hostcall {
    enum hc_kind kind;
    int refs; /* HC_SDK: the waiting caller + the JS side. HC_ASK: the waiting
               * worker + the queued item + each promise callback (released by
               * its finalizer: a promise may never settle). Guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    const char *group;  /* client[group][method](opts) */
    const char *method;
    char *opts_json;    /* HC_ASK: the ctx.ask argument */
    int want_out;       /* put JSON.stringify(data) into out */
    int rc;
    char *out;
    /* HC_LOG */
    enum ocp_log_level level;
    /* HC_ASK: the asking tool call. Read on the JS thread only while !done:
     * the job lives until its worker has left the wait, and is freed on the
     * JS thread (done_tsfn), so it cannot go away during one JS callback. */
    struct job *job;
    struct hostcall *next; /* in adapter.asks while the worker waits (ad->mu) */
} hostcall;

static void hc_ref(hostcall *hc) {
    pthread_mutex_lock(&hc->mu);
    hc->refs++;
    pthread_mutex_unlock(&hc->mu);
}

static void hc_unref(hostcall *hc) {
    pthread_mutex_lock(&hc->mu);
    int left = --hc->refs;
    pthread_mutex_unlock(&hc->mu);
    if (left == 0) {
        pthread_mutex_destroy(&hc->mu);
        pthread_cond_destroy(&hc->cv);
        free(hc->opts_json);
        free(hc->out);
        free(hc);
    }
}

/* Completes the call once and wakes its caller; takes ownership of out (freed
 * when the call was already complete). Any thread. Returns 1 if this call
 * completed it. Drops no reference. */
static int hc_complete(hostcall *hc, int rc, char *out) {
    pthread_mutex_lock(&hc->mu);
    if (hc->done) {
        pthread_mutex_unlock(&hc->mu);
        free(out);
        return 0;
    }
    hc->done = 1;
    hc->rc = rc;
    hc->out = out;
    pthread_cond_broadcast(&hc->cv);
    pthread_mutex_unlock(&hc->mu);
    return 1;
}

/* HC_SDK: completes the call (JS thread); the first completion drops the JS
 * side's reference. */
static void hc_finish(hostcall *hc, int rc, char *out) {
    if (hc_complete(hc, rc, out))
        hc_unref(hc);
}

static int hc_is_done(hostcall *hc) {
    pthread_mutex_lock(&hc->mu);
    int d = hc->done;
    pthread_mutex_unlock(&hc->mu);
    return d;
}

/* A readable message for an SDK error value (the parsed error body or an Error). */
static char *error_text(napi_env env, napi_value err, int status) {
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
    char *t = status > 0 ? xprintf("OpenCode: %s%s%s (HTTP %d)", name ? name : "", name ? ": " : "",
                                   msg ? msg : "request failed", status)
                         : xprintf("OpenCode: %s%s%s", name ? name : "", name ? ": " : "",
                                   msg ? msg : "request failed");
    free(msg);
    free(name);
    return t;
}

static int error_is_not_found(napi_env env, napi_value err, int status) {
    if (status == 404)
        return 1;
    char *name = js_string(env, js_get(env, err, "name"));
    int nf = name && !strcmp(name, "NotFoundError");
    free(name);
    return nf;
}

static napi_value hc_on_fulfilled(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value res = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &res, NULL, &data);
    hostcall *hc = data;
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
        hc_finish(hc, rc, error_text(env, err, status));
        return NULL;
    }
    char *out = NULL;
    if (hc->want_out) {
        napi_value d = js_get(env, res, "data");
        out = d ? js_stringify(env, d) : NULL;
        if (!out) {
            hc_finish(hc, -EIO, xprintf("OpenCode: empty answer to %s.%s", hc->group, hc->method));
            return NULL;
        }
    }
    hc_finish(hc, 0, out);
    return NULL;
}

static napi_value hc_on_rejected(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value err = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &err, NULL, &data);
    hostcall *hc = data;
    int status = 0;
    napi_value cause = js_get(env, err, "cause");
    napi_value st = js_get(env, cause, "status");
    if (st)
        napi_get_value_int32(env, st, &status);
    napi_value body = js_get(env, cause, "body");
    int rc = error_is_not_found(env, body ? body : err, status) ? -ENOENT : -EIO;
    hc_finish(hc, rc, error_text(env, body ? body : err, status));
    return NULL;
}

/* Runs on the JS thread: starts the SDK call; its promise finishes hc later. */
static void hc_start(napi_env env, adapter *ad, hostcall *hc) {
    napi_value client, group, opts, promise, args[2];
    if (napi_get_reference_value(env, ad->client_ref, &client) != napi_ok || !client) {
        hc_finish(hc, -EIO, xstrdup("OpenCode: no SDK client"));
        return;
    }
    group = js_get(env, client, hc->group);
    opts = js_parse(env, hc->opts_json ? hc->opts_json : "{}");
    if (!group || !opts) {
        hc_finish(hc, -EIO, xprintf("OpenCode: the SDK has no %s", hc->group));
        return;
    }
    /* every request gets a timeout: AbortSignal.timeout(ms) */
    napi_value abort_signal = js_global(env, "AbortSignal"), ms, sig;
    napi_create_int32(env, HOST_CALL_TIMEOUT_MS, &ms);
    sig = js_call_method(env, abort_signal, "timeout", 1, &ms);
    if (sig)
        napi_set_named_property(env, opts, "signal", sig);
    else
        free(take_exception(env));
    promise = js_call_method(env, group, hc->method, 1, &opts);
    if (!promise) {
        char *e = take_exception(env);
        hc_finish(hc, -EIO, xprintf("OpenCode: %s.%s failed: %s", hc->group, hc->method,
                                    e ? e : "not a function"));
        free(e);
        return;
    }
    napi_create_function(env, "ocbgHostOk", NAPI_AUTO_LENGTH, hc_on_fulfilled, hc, &args[0]);
    napi_create_function(env, "ocbgHostErr", NAPI_AUTO_LENGTH, hc_on_rejected, hc, &args[1]);
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

static napi_value js_noop(napi_env env, napi_callback_info info) {
    (void)env;
    (void)info;
    return NULL;
}

static void log_on_js(napi_env env, adapter *ad, hostcall *hc) {
    static const char *levels[] = {"debug", "info", "warn", "error"};
    napi_value client, app;
    int sent = 0;
    if (napi_get_reference_value(env, ad->client_ref, &client) == napi_ok && client &&
        (app = js_get(env, client, "app"))) {
        cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
        cJSON_AddStringToObject(b, "service", "ocbg");
        cJSON_AddStringToObject(b, "level", levels[hc->level <= OCP_LOG_ERROR ? hc->level : 3]);
        cJSON_AddStringToObject(b, "message", hc->out ? hc->out : "");
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
    if (!sent || hc->level >= OCP_LOG_WARN)
        stderr_log(hc->level, hc->out ? hc->out : "");
}

static void ask_start(napi_env env, adapter *ad, hostcall *hc);

/* Thread-safe function callback (JS thread). env is NULL when the function
 * is being torn down: fail what is still queued. */
static void host_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)js_cb;
    adapter *ad = context;
    hostcall *hc = data;
    if (hc->kind == HC_LOG) {
        if (env)
            log_on_js(env, ad, hc);
        else
            stderr_log(hc->level, hc->out ? hc->out : "");
        free(hc->out);
        free(hc);
        return;
    }
    if (hc->kind == HC_ASK) {
        if (!env)
            hc_complete(hc, -ECANCELED, xstrdup("OpenCode is shutting down"));
        else
            ask_start(env, ad, hc);
        hc_unref(hc); /* the queued item's reference */
        return;
    }
    if (!env) {
        hc_finish(hc, -ECANCELED, xstrdup("OpenCode is shutting down"));
        return;
    }
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    hc_start(env, ad, hc);
    napi_close_handle_scope(env, scope);
}

/* Sends one SDK request and blocks the calling (non-JS) thread until it ends. */
static int host_request(adapter *ad, const char *group, const char *method, cJSON *opts, int want_out,
                        char **out) {
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
    hostcall *hc = calloc(1, sizeof *hc);
    if (!hc) {
        free(opts_json);
        return -ENOMEM;
    }
    hc->kind = HC_SDK;
    hc->refs = 2;
    pthread_mutex_init(&hc->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&hc->cv, &ca);
    pthread_condattr_destroy(&ca);
    hc->group = group;
    hc->method = method;
    hc->opts_json = opts_json;
    hc->want_out = want_out;

    pthread_mutex_lock(&ad->mu);
    int gone = ad->tsfn_gone;
    pthread_mutex_unlock(&ad->mu);
    napi_status s = gone ? napi_closing : napi_call_threadsafe_function(ad->host_tsfn, hc, napi_tsfn_blocking);
    if (s != napi_ok) {
        hc->refs = 1;
        hc_unref(hc);
        if (out)
            *out = xstrdup("OpenCode is shutting down");
        return -ECANCELED;
    }
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    long long ms = HOST_CALL_TIMEOUT_MS + HOST_CALL_GRACE_MS;
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&hc->mu);
    int timed_out = 0;
    while (!hc->done) {
        if (pthread_cond_timedwait(&hc->cv, &hc->mu, &dl) == ETIMEDOUT && !hc->done) {
            timed_out = 1;
            break;
        }
    }
    int rc;
    if (timed_out) {
        rc = -EIO;
        if (out)
            *out = xprintf("OpenCode did not answer %s.%s in time", group, method);
    } else {
        rc = hc->rc;
        if (out) {
            *out = hc->out;
            hc->out = NULL;
        }
    }
    pthread_mutex_unlock(&hc->mu);
    hc_unref(hc);
    return rc;
}

static cJSON *opts_path(const char *id) {
    cJSON *o = cJSON_CreateObject();
    cJSON *p = cJSON_AddObjectToObject(o, "path");
    cJSON_AddStringToObject(p, "id", id ? id : "");
    return o;
}

static int h_session_create(void *ud, const char *parent_id, const char *title, char **out) {
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    if (parent_id)
        cJSON_AddStringToObject(b, "parentID", parent_id);
    if (title)
        cJSON_AddStringToObject(b, "title", title);
    return host_request(ud, "session", "create", o, 1, out);
}

static int h_session_get(void *ud, const char *id, char **out) {
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    return host_request(ud, "session", "get", opts_path(id), 1, out);
}

static int h_session_messages(void *ud, const char *id, int limit, char **out) {
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id);
    if (limit > 0)
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "query"), "limit", limit);
    return host_request(ud, "session", "messages", o, 1, out);
}

static int h_session_prompt(void *ud, const char *id, const char *body_json, char **out) {
    cJSON *body = cJSON_Parse(body_json ? body_json : "");
    if (!id || !cJSON_IsObject(body)) {
        cJSON_Delete(body);
        *out = xstrdup(id ? "prompt body is not a JSON object" : "session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id);
    cJSON_AddItemToObject(o, "body", body);
    char *msg = NULL;
    int rc = host_request(ud, "session", "promptAsync", o, 0, &msg);
    if (rc == 0) {
        free(msg);
        msg = NULL;
    }
    *out = msg;
    return rc;
}

static int h_session_abort(void *ud, const char *id, char **out) {
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    char *msg = NULL;
    int rc = host_request(ud, "session", "abort", opts_path(id), 0, &msg);
    if (rc == 0) {
        free(msg);
        msg = NULL;
    }
    *out = msg;
    return rc;
}

static int h_session_status(void *ud, char **out) {
    return host_request(ud, "session", "status", cJSON_CreateObject(), 1, out);
}

static int h_session_fork(void *ud, const char *id, const char *message_id, char **out) {
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id), *b = cJSON_AddObjectToObject(o, "body");
    if (message_id)
        cJSON_AddStringToObject(b, "messageID", message_id);
    return host_request(ud, "session", "fork", o, 1, out);
}

static void h_log(void *ud, enum ocp_log_level level, const char *message) {
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
    hostcall *hc = calloc(1, sizeof *hc);
    if (!hc)
        return;
    hc->kind = HC_LOG;
    hc->level = level;
    hc->out = xstrdup(message ? message : "");
    if (napi_call_threadsafe_function(ad->host_tsfn, hc, napi_tsfn_nonblocking) != napi_ok) {
        stderr_log(level, hc->out ? hc->out : "");
        free(hc->out);
        free(hc);
    }
}

static void h_free(void *ud, char *p) {
    (void)ud;
    free(p);
}

/* ------------------------------------------------------------------------ */
/* tool calls and commands: JS -> worker thread -> JS                        */
/* ------------------------------------------------------------------------ */

enum job_kind { JOB_TOOL, JOB_COMMAND, JOB_DISPOSE };

/* Marks a live job, so that ask_permission can check the ocp_call_ctx it is
 * given really is one of ours before stepping back to its job. */
#define JOB_MAGIC 0x6f63626au

typedef struct job {
    uint32_t magic;
    enum job_kind kind;
    adapter *ad;
    napi_deferred deferred;
    char *name;          /* tool or command */
    char *args;          /* args JSON (tool) or the argument text (command) */
    ocp_call_ctx ctx;
    char *s_session, *s_message, *s_agent, *s_call, *s_dir;
    pthread_mutex_t mu;  /* orders tool_cancel against the end of tool_call */
    int returned;        /* tool_call has returned */
    napi_ref signal_ref; /* the AbortSignal and our listener, to remove it */
    napi_ref listener_ref;
    napi_ref parts_ref;  /* command: output.parts, replaced in place */
    napi_ref tctx_ref;   /* tool: the ToolContext execute() got (its ask()) */
    int rc;
    char *out;
} job;

static void job_free(napi_env env, job *j) {
    if (env) {
        if (j->signal_ref && j->listener_ref) {
            napi_value sig, fn, args[2];
            if (napi_get_reference_value(env, j->signal_ref, &sig) == napi_ok && sig &&
                napi_get_reference_value(env, j->listener_ref, &fn) == napi_ok && fn) {
                args[0] = js_str(env, "abort");
                args[1] = fn;
                if (!js_call_method(env, sig, "removeEventListener", 2, args))
                    free(take_exception(env));
            }
        }
        if (j->signal_ref)
            napi_delete_reference(env, j->signal_ref);
        if (j->listener_ref)
            napi_delete_reference(env, j->listener_ref);
        if (j->parts_ref)
            napi_delete_reference(env, j->parts_ref);
        if (j->tctx_ref)
            napi_delete_reference(env, j->tctx_ref);
    }
    j->magic = 0;
    pthread_mutex_destroy(&j->mu);
    free(j->name);
    free(j->args);
    free(j->s_session);
    free(j->s_message);
    free(j->s_agent);
    free(j->s_call);
    free(j->s_dir);
    free(j->out);
    free(j);
}

static job *job_new(adapter *ad, enum job_kind kind) {
    job *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->magic = JOB_MAGIC;
    j->kind = kind;
    j->ad = ad;
    j->ctx.struct_size = sizeof j->ctx;
    pthread_mutex_init(&j->mu, NULL);
    return j;
}

static void job_set_ctx(job *j) {
    j->ctx.session_id = j->s_session;
    j->ctx.message_id = j->s_message;
    j->ctx.agent = j->s_agent;
    j->ctx.call_id = j->s_call;
    j->ctx.directory = j->s_dir;
}

/* Settles a job's promise (JS thread) and frees it. */
static void job_settle(napi_env env, job *j) {
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    if (j->kind == JOB_COMMAND && j->parts_ref) {
        napi_value parts;
        if (napi_get_reference_value(env, j->parts_ref, &parts) == napi_ok && parts) {
            /* [{type:"text", text}] replaces the command's template parts */
            napi_value part, arr;
            napi_create_object(env, &part);
            napi_set_named_property(env, part, "type", js_str(env, "text"));
            napi_set_named_property(env, part, "text", js_str(env, j->out ? j->out : ""));
            napi_create_array_with_length(env, 1, &arr);
            napi_set_element(env, arr, 0, part);
            js_array_replace(env, parts, arr);
        }
        napi_resolve_deferred(env, j->deferred, js_undefined(env));
    } else if (j->kind == JOB_DISPOSE || j->rc == 0) {
        napi_resolve_deferred(env, j->deferred, j->kind == JOB_DISPOSE ? js_undefined(env) : js_str(env, j->out));
    } else {
        napi_value msg = js_str(env, j->out ? j->out : strerror(-j->rc)), err;
        napi_create_error(env, NULL, msg, &err);
        napi_reject_deferred(env, j->deferred, err);
    }
    napi_close_handle_scope(env, scope);
    job_free(env, j);
}

static void release_tsfns(adapter *ad);
static void pending_add(napi_env env, adapter *ad, int d);

static void done_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data) {
    (void)js_cb;
    (void)context;
    job *j = data;
    if (!env) { /* torn down: nothing left to settle */
        job_free(NULL, j);
        return;
    }
    adapter *ad = j->ad;
    int dispose = j->kind == JOB_DISPOSE;
    job_settle(env, j);
    if (!ad->tsfn_gone)
        pending_add(env, ad, -1);
    if (dispose)
        release_tsfns(ad);
}

/* JS thread: while a promise waits on a worker, the loop must stay alive. */
static void pending_add(napi_env env, adapter *ad, int d) {
    int before = ad->js_pending;
    ad->js_pending += d;
    if (before == 0 && ad->js_pending > 0)
        napi_ref_threadsafe_function(env, ad->done_tsfn);
    else if (before > 0 && ad->js_pending == 0)
        napi_unref_threadsafe_function(env, ad->done_tsfn);
}

static void *worker_main(void *arg) {
    job *j = arg;
    adapter *ad = j->ad;
    const ocp_plugin *p = ad->plugin;
    char *out = NULL;
    int rc;
    pthread_mutex_lock(&ad->mu);
    int closing = ad->closing;
    pthread_mutex_unlock(&ad->mu);
    if (closing) {
        rc = -ECANCELED;
        j->out = xstrdup("ocbg is shutting down");
    } else {
        if (j->kind == JOB_TOOL)
            rc = p->tool_call(p->userdata, j->name, j->args, &j->ctx, &out);
        else
            rc = p->command_call(p->userdata, j->name, j->args ? j->args : "", &j->ctx, &out);
        /* after this no tool_cancel on ctx is running or will start */
        pthread_mutex_lock(&j->mu);
        j->returned = 1;
        pthread_mutex_unlock(&j->mu);
        j->out = xstrdup(out);
        ad->plugin_free(ad->plugin_ud, out); /* shutdown may have returned */
    }
    j->rc = rc;
    if (rc != 0 && j->kind == JOB_COMMAND && !j->out)
        j->out = xprintf("/%s failed: %s", j->name, strerror(-rc));
    else if (rc != 0 && j->kind == JOB_COMMAND) {
        char *t = xprintf("/%s failed: %s", j->name, j->out);
        free(j->out);
        j->out = t;
    }
    if (napi_call_threadsafe_function(ad->done_tsfn, j, napi_tsfn_blocking) != napi_ok)
        job_free(NULL, j); /* torn down: the promise is gone with the loop */
    pthread_mutex_lock(&ad->mu);
    ad->workers--;
    pthread_cond_broadcast(&ad->cv);
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

/* Starts a worker for j (JS thread). Returns 0, or -1 with j untouched. */
static int start_worker(napi_env env, adapter *ad, job *j) {
    pthread_mutex_lock(&ad->mu);
    if (ad->closing) {
        pthread_mutex_unlock(&ad->mu);
        return -1;
    }
    ad->workers++;
    pthread_mutex_unlock(&ad->mu);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int e = pthread_create(&t, &attr, worker_main, j);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        pthread_mutex_lock(&ad->mu);
        ad->workers--;
        pthread_cond_broadcast(&ad->cv);
        pthread_mutex_unlock(&ad->mu);
        return -1;
    }
    pending_add(env, ad, 1);
    return 0;
}

/* The tool's AbortSignal fired (JS thread): the ABI's cancellation. */
static napi_value on_abort(napi_env env, napi_callback_info info) {
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    job *j = data;
    adapter *ad = j->ad;
    pthread_mutex_lock(&ad->mu);
    if (!ad->closing) {
        pthread_mutex_lock(&j->mu);
        if (!j->returned) {
            __atomic_store_n(&j->ctx.cancelled, 1, __ATOMIC_SEQ_CST);
            /* Esc ends an open permission question at once: OpenCode never
             * settles ctx.ask() after an abort (the question stays listed). */
            for (hostcall *hc = ad->asks; hc; hc = hc->next)
                if (hc->job == j)
                    hc_complete(hc, -ECANCELED, xstrdup("cancelled while OpenCode was asking the user"));
            ad->plugin->tool_cancel(ad->plugin->userdata, &j->ctx);
        }
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

typedef struct tool_ref {
    adapter *ad;
    char name[]; /* a copy: the plugin's table is gone after shutdown (dlclose) */
} tool_ref;

static napi_value rejected(napi_env env, const char *msg) {
    napi_deferred d;
    napi_value p, err;
    napi_create_promise(env, &d, &p);
    napi_create_error(env, NULL, js_str(env, msg), &err);
    napi_reject_deferred(env, d, err);
    return p;
}

static napi_value resolved(napi_env env) {
    napi_deferred d;
    napi_value p;
    napi_create_promise(env, &d, &p);
    napi_resolve_deferred(env, d, js_undefined(env));
    return p;
}

/* tool.execute(args, ctx) */
static napi_value tool_execute(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    tool_ref *tr = data;
    adapter *ad = tr->ad;
    job *j = job_new(ad, JOB_TOOL);
    if (!j)
        return rejected(env, "ocbg: out of memory");
    j->name = xstrdup(tr->name);
    j->args = argc >= 1 ? js_stringify(env, argv[0]) : NULL;
    if (!j->args)
        j->args = xstrdup("{}");
    napi_value c = argc >= 2 ? argv[1] : NULL;
    j->s_session = js_string(env, js_get(env, c, "sessionID"));
    j->s_message = js_string(env, js_get(env, c, "messageID"));
    j->s_agent = js_string(env, js_get(env, c, "agent"));
    j->s_call = js_string(env, js_get(env, c, "callID"));
    j->s_dir = js_string(env, js_get(env, c, "directory"));
    job_set_ctx(j);
    if (c && js_is(env, c, napi_object))
        napi_create_reference(env, c, 1, &j->tctx_ref);

    napi_value signal = js_get(env, c, "abort");
    if (signal) {
        napi_value aborted = js_get(env, signal, "aborted");
        bool b = false;
        if (aborted)
            napi_get_value_bool(env, aborted, &b);
        if (b) {
            j->ctx.cancelled = 1;
        } else {
            napi_value fn, args[2];
            napi_create_function(env, "ocbgAbort", NAPI_AUTO_LENGTH, on_abort, j, &fn);
            args[0] = js_str(env, "abort");
            args[1] = fn;
            if (js_call_method(env, signal, "addEventListener", 2, args)) {
                napi_create_reference(env, signal, 1, &j->signal_ref);
                napi_create_reference(env, fn, 1, &j->listener_ref);
            } else {
                free(take_exception(env));
            }
        }
    }
    napi_value promise;
    napi_create_promise(env, &j->deferred, &promise);
    if (start_worker(env, ad, j) != 0) {
        napi_value err;
        napi_create_error(env, NULL, js_str(env, "ocbg is shutting down"), &err);
        napi_reject_deferred(env, j->deferred, err);
        job_free(env, j);
    }
    return promise;
}

/* ------------------------------------------------------------------------ */
/* permission questions (ABI 1.1 ask_permission): worker -> JS ctx.ask()     */
/* ------------------------------------------------------------------------ */

/* The JSON array of strings in text, or NULL when it is not one. */
static cJSON *string_array(const char *text) {
    cJSON *a = text ? cJSON_Parse(text) : NULL;
    const cJSON *e;
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        return NULL;
    }
    cJSON_ArrayForEach(e, a) if (!cJSON_IsString(e)) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

/* The ctx.ask() argument {permission, patterns, always, metadata} as JSON text
 * (malloc'd), or NULL with *why saying what is wrong with req. Any thread. */
static char *ask_input(const ocp_permission_request *req, const char **why) {
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
static char *deny_rules(const char *ruleset_json) {
    cJSON *rules = ruleset_json ? cJSON_Parse(ruleset_json) : NULL;
    char *acc = NULL;
    const cJSON *r;
    cJSON_ArrayForEach(r, rules) {
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

static napi_value ask_on_fulfilled(napi_env env, napi_callback_info info) {
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    hc_complete(data, 0, NULL);
    return NULL;
}

/* ctx.ask() rejected (JS thread). OpenCode 1.18.33 rejects with its own error
 * classes, told apart by `_tag` (= name): PermissionDeniedError {ruleset} for
 * a deny rule, PermissionRejectedError for the user's "reject",
 * PermissionCorrectedError {feedback} for a reject with a message. The
 * PermissionV2 names (DeclinedError, CorrectedError, BlockedError) map alike.
 * Everything else means OpenCode could not ask: -EIO. */
static napi_value ask_on_rejected(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value err = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &err, NULL, &data);
    hostcall *hc = data;
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
    hc_complete(hc, rc, text);
    return NULL;
}

static void ask_cb_finalize(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    hc_unref(data);
}

/* A promise callback holding its own reference to hc until it is garbage
 * collected: OpenCode may never settle the promise (it does not after an
 * abort), so neither callback can count on running. 0, or -1 (not usable). */
static int ask_callback(napi_env env, hostcall *hc, const char *name, napi_callback cb, napi_value *fn) {
    if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, hc, fn) != napi_ok)
        return -1;
    hc_ref(hc);
    if (napi_add_finalizer(env, *fn, hc, ask_cb_finalize, NULL, NULL) != napi_ok) {
        hc_unref(hc);
        return -1;
    }
    return 0;
}

/* JS thread: calls ctx.ask(input) for the waiting worker; the promise's
 * callbacks complete hc. */
static void ask_start(napi_env env, adapter *ad, hostcall *hc) {
    if (hc_is_done(hc))
        return; /* cancelled while queued: the job may be gone already */
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    job *j = hc->job;
    napi_value tctx = NULL, fn, arg, promise, cbs[2];
    if (j->tctx_ref && napi_get_reference_value(env, j->tctx_ref, &tctx) != napi_ok)
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
        hc_complete(hc, 0, NULL);
    } else if (!(arg = js_parse(env, hc->opts_json))) {
        hc_complete(hc, -EIO, xstrdup("OpenCode could not ask: the question is not valid JSON"));
    } else if (napi_call_function(env, tctx, fn, 1, &arg, &promise) != napi_ok) {
        char *e = take_exception(env);
        hc_complete(hc, -EIO, xprintf("OpenCode could not ask: %s", e ? e : "ctx.ask() failed"));
        free(e);
    } else {
        bool is_promise = false;
        napi_is_promise(env, promise, &is_promise);
        if (!is_promise) {
            hc_complete(hc, 0, NULL); /* returned without throwing: allowed */
        } else if (ask_callback(env, hc, "ocbgAskOk", ask_on_fulfilled, &cbs[0]) != 0 ||
                   ask_callback(env, hc, "ocbgAskErr", ask_on_rejected, &cbs[1]) != 0 ||
                   !js_call_method(env, promise, "then", 2, cbs)) {
            free(take_exception(env));
            hc_complete(hc, -EIO, xstrdup("OpenCode could not ask: cannot wait for ctx.ask()"));
        }
    }
    napi_close_handle_scope(env, scope);
}

/* Removes hc from the adapter's open questions. Caller holds ad->mu. */
static void asks_remove(adapter *ad, hostcall *hc) {
    for (hostcall **p = &ad->asks; *p; p = &(*p)->next)
        if (*p == hc) {
            *p = hc->next;
            return;
        }
}

/* ask_permission [worker]: ctx.ask() on the JS thread, and the tool call's
 * worker waits for the answer, without a time limit (the user may take
 * minutes); Esc (on_abort) and shutdown end the wait at once with -ECANCELED.
 * ctx must be the ocp_call_ctx of one of this adapter's jobs. *out: the
 * reason on failure (malloc'd, freed with h_free), else NULL. */
static int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out) {
    adapter *ad = ud;
    char *dummy = NULL;
    if (!out)
        out = &dummy;
    *out = NULL;
    if (!ctx || !req) {
        *out = xstrdup("ask_permission: no call context or request");
        return -EINVAL;
    }
    job *j = (job *)(void *)((char *)(uintptr_t)ctx - offsetof(job, ctx));
    if (j->magic != JOB_MAGIC || j->ad != ad) {
        *out = xstrdup("ask_permission: not the call context of a tool call of this host");
        return -EINVAL;
    }
    if (on_js_thread(ad)) {
        *out = xstrdup("ocbg: permission question on OpenCode's event thread refused (it would deadlock)");
        return -EIO;
    }
    if (j->kind != JOB_TOOL) {
        *out = xstrdup("OpenCode asks for permission only inside a tool call (a slash command has no ToolContext)");
        return -EIO;
    }
    const char *why = NULL;
    char *input = ask_input(req, &why);
    if (!input) {
        *out = xstrdup(why);
        return -EINVAL;
    }
    hostcall *hc = calloc(1, sizeof *hc);
    if (!hc) {
        free(input);
        return -ENOMEM;
    }
    hc->kind = HC_ASK;
    hc->refs = 2; /* this worker + the queued item */
    pthread_mutex_init(&hc->mu, NULL);
    pthread_cond_init(&hc->cv, NULL);
    hc->opts_json = input;
    hc->job = j;

    /* Registered under ad->mu, where on_abort sets `cancelled`: an Esc either
     * came before (seen here) or finds the question in the list. */
    const char *refused = NULL;
    pthread_mutex_lock(&ad->mu);
    if (ad->closing || ad->tsfn_gone)
        refused = "ocbg is shutting down";
    else if (__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST))
        refused = "cancelled before OpenCode asked the user";
    else {
        hc->next = ad->asks;
        ad->asks = hc;
    }
    pthread_mutex_unlock(&ad->mu);
    if (refused) {
        hc->refs = 1;
        hc_unref(hc);
        *out = xstrdup(refused);
        return -ECANCELED;
    }
    if (napi_call_threadsafe_function(ad->host_tsfn, hc, napi_tsfn_blocking) != napi_ok) {
        hc_complete(hc, -ECANCELED, xstrdup("OpenCode is shutting down"));
        hc_unref(hc); /* never queued */
    }
    pthread_mutex_lock(&hc->mu);
    while (!hc->done)
        pthread_cond_wait(&hc->cv, &hc->mu);
    int rc = hc->rc;
    *out = hc->out;
    hc->out = NULL;
    pthread_mutex_unlock(&hc->mu);
    pthread_mutex_lock(&ad->mu);
    asks_remove(ad, hc);
    pthread_mutex_unlock(&ad->mu);
    hc_unref(hc);
    free(dummy);
    return rc;
}

/* event({event}) — on_event on the JS thread; never blocks. */
static napi_value hook_event(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value arg = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &arg, NULL, &data);
    adapter *ad = data;
    napi_value ev = argc >= 1 ? js_get(env, arg, "event") : NULL;
    char *json = ev ? js_stringify(env, ev) : NULL;
    if (json) {
        pthread_mutex_lock(&ad->mu);
        if (!ad->closing)
            ad->plugin->on_event(ad->plugin->userdata, json);
        pthread_mutex_unlock(&ad->mu);
        free(json);
    }
    return resolved(env);
}

/* experimental.chat.messages.transform(input, output{messages}).
 * OpenCode 1.18.33 passes input = {} and keeps using its own array, so the
 * session id comes from the messages and the array is replaced in place. */
static napi_value hook_transform(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    napi_value input = argc >= 1 ? argv[0] : NULL, output = argc >= 2 ? argv[1] : NULL;
    napi_value msgs = js_get(env, output, "messages");
    bool is_arr = false;
    if (!msgs || napi_is_array(env, msgs, &is_arr) != napi_ok || !is_arr)
        return resolved(env);
    char *sid = js_string(env, js_get(env, input, "sessionID"));
    uint32_t n = 0;
    napi_get_array_length(env, msgs, &n);
    if (!sid && n > 0) {
        napi_value last, inf;
        napi_get_element(env, msgs, n - 1, &last);
        inf = js_get(env, last, "info");
        sid = js_string(env, js_get(env, inf, "sessionID"));
    }
    char *json = js_stringify(env, msgs);
    char *out = NULL;
    int rc = -1;
    if (json) {
        /* under mu: shutdown cannot begin until the plugin's string is freed */
        pthread_mutex_lock(&ad->mu);
        if (!ad->closing) {
            rc = ad->plugin->transform_messages(ad->plugin->userdata, sid, json, &out);
            if (rc == 0 && out) {
                napi_value repl = js_parse(env, out);
                if (!repl || js_array_replace(env, msgs, repl) != 0)
                    stderr_log(OCP_LOG_WARN, "transform_messages returned something that is not a message array");
            }
            if (out)
                ad->plugin->free(ad->plugin->userdata, out);
        }
        pthread_mutex_unlock(&ad->mu);
    }
    free(json);
    free(sid);
    return resolved(env);
}

/* config(cfg): adds the plugin's slash commands (cfg.command[name]) so that
 * OpenCode lists them; command.execute.before then runs them. */
static napi_value hook_config(napi_env env, napi_callback_info info) {
    size_t argc = 1;
    napi_value cfg = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &cfg, NULL, &data);
    adapter *ad = data;
    if (argc < 1 || !js_is(env, cfg, napi_object))
        return resolved(env);
    napi_value cmds = js_get(env, cfg, "command");
    if (!cmds) {
        napi_create_object(env, &cmds);
        napi_set_named_property(env, cfg, "command", cmds);
    }
    for (size_t i = 0; i < ad->ncmd; i++) {
        if (js_get(env, cmds, ad->cmd_name[i]))
            continue; /* the user's own definition wins */
        napi_value def;
        napi_create_object(env, &def);
        char *tmpl = xprintf("/%s $ARGUMENTS (handled by the ocbg plugin)", ad->cmd_name[i]);
        napi_set_named_property(env, def, "template", js_str(env, tmpl));
        free(tmpl);
        napi_set_named_property(env, def, "description", js_str(env, ad->cmd_desc[i]));
        napi_set_named_property(env, cmds, ad->cmd_name[i], def);
    }
    return resolved(env);
}

/* command.execute.before({command, sessionID, arguments}, output{parts}) */
static napi_value hook_command(napi_env env, napi_callback_info info) {
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    char *name = argc >= 1 ? js_string(env, js_get(env, argv[0], "command")) : NULL;
    int ours = 0;
    for (size_t i = 0; name && i < ad->ncmd; i++)
        if (!strcmp(ad->cmd_name[i], name))
            ours = 1;
    napi_value parts = argc >= 2 ? js_get(env, argv[1], "parts") : NULL;
    if (!ours || !parts) {
        free(name);
        return resolved(env);
    }
    job *j = job_new(ad, JOB_COMMAND);
    if (!j) {
        free(name);
        return rejected(env, "ocbg: out of memory");
    }
    j->name = name;
    j->args = js_string(env, js_get(env, argv[0], "arguments"));
    j->s_session = js_string(env, js_get(env, argv[0], "sessionID"));
    job_set_ctx(j);
    napi_create_reference(env, parts, 1, &j->parts_ref);
    napi_value promise;
    napi_create_promise(env, &j->deferred, &promise);
    if (start_worker(env, ad, j) != 0) {
        napi_resolve_deferred(env, j->deferred, js_undefined(env));
        job_free(env, j);
    }
    return promise;
}

/* ------------------------------------------------------------------------ */
/* shutdown                                                                  */
/* ------------------------------------------------------------------------ */

static void release_tsfns(adapter *ad) {
    pthread_mutex_lock(&ad->mu);
    int already = ad->tsfn_gone;
    ad->tsfn_gone = 1;
    pthread_mutex_unlock(&ad->mu);
    if (already)
        return;
    napi_release_threadsafe_function(ad->host_tsfn, napi_tsfn_abort);
    napi_release_threadsafe_function(ad->done_tsfn, napi_tsfn_abort);
    /* the adapter itself stays allocated: a late plugin thread may still read
     * ad->tsfn_gone (the plugin was shut down, so none should). */
}

/* The shutdown thread: never on the JS thread, because plugin->shutdown waits
 * for plugin threads that may be blocked in host calls served by that thread. */
static void *shutdown_main(void *arg) {
    job *j = arg;
    adapter *ad = j->ad;
    pthread_mutex_lock(&ad->mu);
    ad->closing = 1; /* no new on_event / transform / tool_cancel / tool_call */
    /* open permission questions end now: shutdown waits for their tool calls */
    for (hostcall *hc = ad->asks; hc; hc = hc->next)
        hc_complete(hc, -ECANCELED, xstrdup("ocbg is shutting down"));
    pthread_mutex_unlock(&ad->mu);
    ad->plugin->shutdown(ad->plugin->userdata);
    pthread_mutex_lock(&ad->mu);
    while (ad->workers > 0)
        pthread_cond_wait(&ad->cv, &ad->mu);
    pthread_mutex_unlock(&ad->mu);
    if (ad->dl)
        dlclose(ad->dl);
    ad->dl = NULL;
    if (napi_call_threadsafe_function(ad->done_tsfn, j, napi_tsfn_blocking) != napi_ok)
        job_free(NULL, j);
    return NULL;
}

static napi_value hook_dispose(napi_env env, napi_callback_info info) {
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    adapter *ad = data;
    pthread_mutex_lock(&ad->mu);
    int started = ad->closing;
    ad->closing = 1;
    pthread_mutex_unlock(&ad->mu);
    if (started)
        return resolved(env);
    job *j = job_new(ad, JOB_DISPOSE);
    if (!j)
        return resolved(env);
    napi_value promise;
    napi_create_promise(env, &j->deferred, &promise);
    pending_add(env, ad, 1); /* the loop stays alive until shutdown has finished */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &attr, shutdown_main, j) != 0) {
        napi_resolve_deferred(env, j->deferred, js_undefined(env));
        job_free(env, j);
    }
    pthread_attr_destroy(&attr);
    return promise;
}

/* ------------------------------------------------------------------------ */
/* tool argument schemas: JSON Schema -> zod (tool.schema)                   */
/* ------------------------------------------------------------------------ */

static napi_value zcall(napi_env env, napi_value recv, const char *m, size_t argc, const napi_value *argv) {
    napi_value v = js_call_method(env, recv, m, argc, argv);
    if (!v)
        free(take_exception(env));
    return v;
}

static napi_value zod_type(napi_env env, napi_value z, const cJSON *s) {
    const cJSON *type = cJSON_GetObjectItem(s, "type");
    const char *t = NULL;
    if (cJSON_IsString(type))
        t = type->valuestring;
    else if (cJSON_IsArray(type)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, type) if (cJSON_IsString(e) && strcmp(e->valuestring, "null")) t = e->valuestring;
    }
    const cJSON *en = cJSON_GetObjectItem(s, "enum");
    napi_value v = NULL;
    if (cJSON_IsArray(en) && cJSON_GetArraySize(en) > 0 && (!t || !strcmp(t, "string"))) {
        napi_value arr;
        napi_create_array(env, &arr);
        uint32_t i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, en) if (cJSON_IsString(e)) napi_set_element(env, arr, i++, js_str(env, e->valuestring));
        v = zcall(env, z, "enum", 1, &arr);
    } else if (t && !strcmp(t, "string")) {
        v = zcall(env, z, "string", 0, NULL);
    } else if (t && !strcmp(t, "number")) {
        v = zcall(env, z, "number", 0, NULL);
    } else if (t && !strcmp(t, "integer")) {
        v = zcall(env, z, "number", 0, NULL);
        napi_value iv = v ? zcall(env, v, "int", 0, NULL) : NULL;
        if (iv)
            v = iv;
    } else if (t && !strcmp(t, "boolean")) {
        v = zcall(env, z, "boolean", 0, NULL);
    } else if (t && !strcmp(t, "array")) {
        const cJSON *items = cJSON_GetObjectItem(s, "items");
        napi_value it = cJSON_IsObject(items) ? zod_type(env, z, items) : NULL;
        if (!it)
            it = zcall(env, z, "any", 0, NULL);
        v = it ? zcall(env, z, "array", 1, &it) : NULL;
    } else if (t && !strcmp(t, "object")) {
        napi_value k = zcall(env, z, "string", 0, NULL), a = zcall(env, z, "any", 0, NULL);
        napi_value args[2] = {k, a};
        v = k && a ? zcall(env, z, "record", 2, args) : NULL;
    }
    if (!v)
        v = zcall(env, z, "any", 0, NULL);
    return v;
}

/* args for one tool: {name: zod} (or raw JSON Schema per property without zod). */
static napi_value tool_args(napi_env env, napi_value z, const char *schema_json) {
    napi_value shape;
    napi_create_object(env, &shape);
    cJSON *schema = cJSON_Parse(schema_json ? schema_json : "{}");
    const cJSON *props = cJSON_GetObjectItem(schema, "properties");
    const cJSON *req = cJSON_GetObjectItem(schema, "required");
    const cJSON *p;
    cJSON_ArrayForEach(p, props) {
        int required = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, req) if (cJSON_IsString(r) && !strcmp(r->valuestring, p->string)) required = 1;
        napi_value v = NULL;
        if (z) {
            v = zod_type(env, z, p);
            const cJSON *d = cJSON_GetObjectItem(p, "description");
            if (v && cJSON_IsString(d)) {
                napi_value ds = js_str(env, d->valuestring), dv = zcall(env, v, "describe", 1, &ds);
                if (dv)
                    v = dv;
            }
            if (v && !required) {
                napi_value ov = zcall(env, v, "optional", 0, NULL);
                if (ov)
                    v = ov;
            }
        }
        if (!v) {
            char *t = cJSON_PrintUnformatted(p);
            v = t ? js_parse(env, t) : NULL;
            free(t);
        }
        if (v)
            napi_set_named_property(env, shape, p->string, v);
    }
    cJSON_Delete(schema);
    return shape;
}

/* ------------------------------------------------------------------------ */
/* init(input, options, z) -> hooks                                          */
/* ------------------------------------------------------------------------ */

static void finalize_free(napi_env env, void *data, void *hint) {
    (void)env;
    (void)hint;
    free(data);
}

static int plugin_path(char *buf, size_t n) {
    Dl_info info;
    if (!dladdr((void *)plugin_path, &info) || !info.dli_fname)
        return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
    const char *dir = slash ? info.dli_fname : ".";
    if (snprintf(buf, n, "%.*s/%s", dirlen, dir, PLUGIN_FILE) >= (int)n)
        return -1;
    return 0;
}

static napi_value add_fn(napi_env env, napi_value obj, const char *key, napi_callback cb, void *data) {
    napi_value fn;
    napi_create_function(env, key, NAPI_AUTO_LENGTH, cb, data, &fn);
    napi_set_named_property(env, obj, key, fn);
    return fn;
}

/* The options the plugin gets: the user's (JSON text, or NULL when none were
 * given), with "face_claude": false added unless the user set face_claude, or
 * set face_opencode to false (then the Claude face is all that is left).
 * Why: OpenCode has its own `bash` and `task` tools, and the model would see
 * `Bash`/`bash` and `Task`/`task` side by side, differing only by case.
 * Text that is not a JSON object is passed on unchanged (the plugin refuses
 * it with its own message). Returns malloc'd text, or NULL (no options). */
static char *plugin_options(const char *user_json) {
    cJSON *o = user_json ? cJSON_Parse(user_json) : cJSON_CreateObject();
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return xstrdup(user_json);
    }
    if (!cJSON_HasObjectItem(o, "face_claude") && !cJSON_IsFalse(cJSON_GetObjectItem(o, "face_opencode")))
        cJSON_AddFalseToObject(o, "face_claude");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text ? text : xstrdup(user_json);
}

static napi_value addon_init(napi_env env, napi_callback_info info) {
    size_t argc = 3;
    napi_value argv[3] = {NULL, NULL, NULL};
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_value input = argc >= 1 ? argv[0] : NULL;
    napi_value options = argc >= 2 ? argv[1] : NULL;
    napi_value z = argc >= 3 && js_is(env, argv[2], napi_object) ? argv[2] : NULL;
    napi_value client = js_get(env, input, "client");
    if (!client)
        return throw_msg(env, "ocbg: the plugin input has no SDK client");

    adapter *ad = calloc(1, sizeof *ad);
    if (!ad)
        return throw_msg(env, "ocbg: out of memory");
    ad->env = env;
    ad->js_thread = pthread_self();
    pthread_mutex_init(&ad->mu, NULL);
    pthread_cond_init(&ad->cv, NULL);
    const char *lv = getenv("OCBG_LOG_LEVEL");
    ad->log_level = lv ? atoi(lv) : OCP_LOG_INFO;

    char path[4096];
    if (plugin_path(path, sizeof path) != 0) {
        free(ad);
        return throw_msg(env, "ocbg: cannot find the addon's own directory");
    }
    ad->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!ad->dl) {
        char *m = xprintf("ocbg: cannot load %s: %s", path, dlerror());
        throw_msg(env, m ? m : "ocbg: cannot load ocbg.so");
        free(m);
        free(ad);
        return NULL;
    }
    ocp_plugin_entry_fn entry = (ocp_plugin_entry_fn)dlsym(ad->dl, OCP_ENTRY_SYMBOL);
    if (!entry) {
        char *m = xprintf("ocbg: %s has no %s", path, OCP_ENTRY_SYMBOL);
        throw_msg(env, m ? m : "ocbg: no entry point");
        free(m);
        dlclose(ad->dl);
        free(ad);
        return NULL;
    }

    ocp_host *h = &ad->host;
    h->struct_size = sizeof *h;
    h->abi_major = OCP_ABI_MAJOR;
    h->abi_minor = OCP_ABI_MINOR;
    h->userdata = ad;
    h->host_name = "opencode";
    h->host_version = NULL;
    h->session_create = h_session_create;
    h->session_get = h_session_get;
    h->session_messages = h_session_messages;
    h->session_prompt = h_session_prompt;
    h->session_abort = h_session_abort;
    h->session_status = h_session_status;
    h->session_fork = h_session_fork;
    h->log = h_log;
    h->free = h_free;
    h->now_ms = NULL;
    h->ask_permission = h_ask_permission;

    /* The thread-safe functions exist before the plugin starts: its threads
     * may call the host at once. Unref'd: they never keep OpenCode alive. */
    napi_value name = js_str(env, "ocbg");
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, ad, host_tsfn_call,
                                        &ad->host_tsfn) != napi_ok ||
        napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, ad, done_tsfn_call,
                                        &ad->done_tsfn) != napi_ok) {
        dlclose(ad->dl);
        free(ad);
        return throw_msg(env, "ocbg: napi_create_threadsafe_function failed");
    }
    napi_unref_threadsafe_function(env, ad->host_tsfn);
    napi_unref_threadsafe_function(env, ad->done_tsfn);
    napi_create_reference(env, client, 1, &ad->client_ref);
    if (z)
        napi_create_reference(env, z, 1, &ad->zod_ref);

    char *user_opts = NULL;
    if (options && (js_is(env, options, napi_object)))
        user_opts = js_stringify(env, options);
    char *opts = plugin_options(user_opts);
    free(user_opts);
    char err[512] = "";
    ad->plugin = entry(&ad->host, opts, err, sizeof err);
    free(opts);
    if (!ad->plugin) {
        char *m = xprintf("ocbg: the plugin refused to load: %s", err[0] ? err : "(no reason given)");
        release_tsfns(ad);
        dlclose(ad->dl);
        throw_msg(env, m ? m : "ocbg: the plugin refused to load");
        free(m);
        return NULL; /* ad leaks on purpose: queued tsfn finalisation may read it */
    }

    ad->plugin_free = ad->plugin->free;
    ad->plugin_ud = ad->plugin->userdata;
    napi_value hooks, tools;
    napi_create_object(env, &hooks);
    napi_create_object(env, &tools);
    for (size_t i = 0; i < ad->plugin->tool_count; i++) {
        const ocp_tool *t = &ad->plugin->tools[i];
        tool_ref *tr = calloc(1, sizeof *tr + strlen(t->name) + 1);
        if (!tr)
            continue;
        tr->ad = ad;
        strcpy(tr->name, t->name);
        napi_value def;
        napi_create_object(env, &def);
        napi_set_named_property(env, def, "description", js_str(env, t->description));
        napi_set_named_property(env, def, "args", tool_args(env, z, t->parameters_json));
        napi_value fn = add_fn(env, def, "execute", tool_execute, tr);
        napi_add_finalizer(env, fn, tr, finalize_free, NULL, NULL);
        napi_set_named_property(env, tools, t->name, def);
    }
    napi_set_named_property(env, hooks, "tool", tools);
    add_fn(env, hooks, "event", hook_event, ad);
    if (ad->plugin->transform_messages)
        add_fn(env, hooks, "experimental.chat.messages.transform", hook_transform, ad);
    ad->ncmd = ad->plugin->command_count;
    ad->cmd_name = calloc(ad->ncmd + 1, sizeof *ad->cmd_name);
    ad->cmd_desc = calloc(ad->ncmd + 1, sizeof *ad->cmd_desc);
    if (!ad->cmd_name || !ad->cmd_desc)
        ad->ncmd = 0;
    for (size_t i = 0; i < ad->ncmd; i++) {
        ad->cmd_name[i] = xstrdup(ad->plugin->commands[i].name);
        ad->cmd_desc[i] = xstrdup(ad->plugin->commands[i].description ? ad->plugin->commands[i].description : "");
    }
    if (ad->ncmd > 0) {
        add_fn(env, hooks, "config", hook_config, ad);
        add_fn(env, hooks, "command.execute.before", hook_command, ad);
    }
    add_fn(env, hooks, "dispose", hook_dispose, ad);
    if (!z)
        h_log(ad, OCP_LOG_WARN, "ocbg: @opencode-ai/plugin (zod) not found: tool arguments are all required");
    return hooks;
}

static napi_value module_init(napi_env env, napi_value exports) {
    napi_value fn;
    napi_create_function(env, "init", NAPI_AUTO_LENGTH, addon_init, NULL, &fn);
    napi_set_named_property(env, exports, "init", fn);
    return exports;
}

/* What NAPI_MODULE() expands to, with prototypes (-Wmissing-prototypes). */
NAPI_MODULE_EXPORT int32_t node_api_module_get_api_version_v1(void);
NAPI_MODULE_EXPORT napi_value napi_register_module_v1(napi_env env, napi_value exports);

NAPI_MODULE_EXPORT int32_t node_api_module_get_api_version_v1(void) {
    return NAPI_VERSION;
}

NAPI_MODULE_EXPORT napi_value napi_register_module_v1(napi_env env, napi_value exports) {
    return module_init(env, exports);
}

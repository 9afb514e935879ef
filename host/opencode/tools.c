/*
 * tools.c — a tool's execute(args, ctx) [js]: copy what the call needs into a
 * call, listen to the tool's AbortSignal (the ABI's cancellation), start the
 * worker, return a Promise.
 */
#include "adapter.h"

#include <stdlib.h>

/* The tool's AbortSignal fired (JS thread): the ABI's cancellation. */
static napi_value on_abort(napi_env env, napi_callback_info info)
{
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    call *c = data;
    adapter *ad = c->ad;
    pthread_mutex_lock(&ad->mu);
    if (!ad->closing) {
        pthread_mutex_lock(&c->mu);
        if (!c->returned) {
            __atomic_store_n(&c->ctx.cancelled, 1, __ATOMIC_SEQ_CST);
            /* Esc ends an open permission question at once: OpenCode never
             * settles ctx.ask() after an abort (the question stays listed). */
            asks_cancel(ad, c, "cancelled while OpenCode was asking the user");
            ad->plugin->tool_cancel(ad->plugin->userdata, &c->ctx);
        }
        pthread_mutex_unlock(&c->mu);
    }
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

/* Copies the arguments and the ToolContext's ids into c (the worker reads
 * them after execute() has returned), and keeps the ToolContext for
 * ask_permission. */
static void call_from_execute(napi_env env, call *c, size_t argc, napi_value *argv)
{
    c->args = argc >= 1 ? js_stringify(env, argv[0]) : NULL;
    if (!c->args)
        c->args = xstrdup("{}");
    napi_value tctx = argc >= 2 ? argv[1] : NULL;
    c->s_session = js_string(env, js_get(env, tctx, "sessionID"));
    c->s_message = js_string(env, js_get(env, tctx, "messageID"));
    c->s_agent = js_string(env, js_get(env, tctx, "agent"));
    c->s_call = js_string(env, js_get(env, tctx, "callID"));
    c->s_dir = js_string(env, js_get(env, tctx, "directory"));
    call_set_ctx(c);
    if (tctx && js_is(env, tctx, napi_object))
        napi_create_reference(env, tctx, 1, &c->tctx_ref);
}

/* Listens to the ToolContext's AbortSignal (tctx.abort); one already aborted
 * sets `cancelled` before the call starts. The listener is removed when the
 * call is freed. */
static void listen_abort(napi_env env, call *c, napi_value tctx)
{
    napi_value signal = js_get(env, tctx, "abort");
    if (!signal)
        return;
    napi_value aborted = js_get(env, signal, "aborted");
    bool b = false;
    if (aborted)
        napi_get_value_bool(env, aborted, &b);
    if (b) {
        c->ctx.cancelled = 1;
        return;
    }
    napi_value fn, args[2];
    napi_create_function(env, "ocbgAbort", NAPI_AUTO_LENGTH, on_abort, c, &fn);
    args[0] = js_str(env, "abort");
    args[1] = fn;
    if (js_call_method(env, signal, "addEventListener", 2, args)) {
        napi_create_reference(env, signal, 1, &c->signal_ref);
        napi_create_reference(env, fn, 1, &c->listener_ref);
    } else {
        free(take_exception(env));
    }
}

/* tool.execute(args, ctx) */
napi_value tool_execute(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    tool_ref *tr = data;
    adapter *ad = tr->ad;
    call *c = call_new(ad, CALL_TOOL);
    if (!c)
        return rejected(env, "ocbg: out of memory");
    c->name = xstrdup(tr->name);
    call_from_execute(env, c, argc, argv);
    listen_abort(env, c, argc >= 2 ? argv[1] : NULL);
    napi_value promise;
    napi_create_promise(env, &c->deferred, &promise);
    if (start_worker(env, ad, c) != 0) {
        napi_value err;
        napi_create_error(env, NULL, js_str(env, "ocbg is shutting down"), &err);
        napi_reject_deferred(env, c->deferred, err);
        call_free(env, c);
    }
    return promise;
}

/*
 * tools.c — a tool's execute(args, ctx) [js]: copy what the call needs into a
 * job, listen to the tool's AbortSignal (the ABI's cancellation), start the
 * worker, return a Promise.
 */
#include "adapter.h"

#include <stdlib.h>

/* The tool's AbortSignal fired (JS thread): the ABI's cancellation. */
static napi_value on_abort(napi_env env, napi_callback_info info)
{
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
            asks_cancel(ad, j, "cancelled while OpenCode was asking the user");
            ad->plugin->tool_cancel(ad->plugin->userdata, &j->ctx);
        }
        pthread_mutex_unlock(&j->mu);
    }
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

/* Copies the arguments and the ToolContext's ids into j (the worker reads
 * them after execute() has returned), and keeps the ToolContext for
 * ask_permission. */
static void job_from_call(napi_env env, job *j, size_t argc, napi_value *argv)
{
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
}

/* Listens to the ToolContext's AbortSignal (c.abort); one already aborted
 * sets `cancelled` before the call starts. The listener is removed when the
 * job is freed. */
static void listen_abort(napi_env env, job *j, napi_value c)
{
    napi_value signal = js_get(env, c, "abort");
    if (!signal)
        return;
    napi_value aborted = js_get(env, signal, "aborted");
    bool b = false;
    if (aborted)
        napi_get_value_bool(env, aborted, &b);
    if (b) {
        j->ctx.cancelled = 1;
        return;
    }
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

/* tool.execute(args, ctx) */
napi_value tool_execute(napi_env env, napi_callback_info info)
{
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
    job_from_call(env, j, argc, argv);
    listen_abort(env, j, argc >= 2 ? argv[1] : NULL);
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

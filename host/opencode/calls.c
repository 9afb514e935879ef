/*
 * calls.c — calls into the plugin (tool calls, commands, the dispose): JS ->
 * worker thread -> JS. A hook makes a call and starts a detached worker
 * (plugin->tool_call / command_call may block for minutes); the worker hands
 * the call back through done_tsfn and the JS thread settles its Promise and
 * frees it. Own pthreads, not napi_create_async_work: its small shared pool
 * would starve (NOTES.md). The panel's requests have a thread of their own
 * (ui.c): they come from outside, and a burst must not start one each.
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void call_free(napi_env env, call *c)
{
    if (env) {
        if (c->signal_ref && c->listener_ref) {
            napi_value sig, fn, args[2];
            if (napi_get_reference_value(env, c->signal_ref, &sig) == napi_ok && sig &&
                napi_get_reference_value(env, c->listener_ref, &fn) == napi_ok && fn) {
                args[0] = js_str(env, "abort");
                args[1] = fn;
                if (!js_call_method(env, sig, "removeEventListener", 2, args))
                    free(take_exception(env));
            }
        }
        if (c->signal_ref)
            napi_delete_reference(env, c->signal_ref);
        if (c->listener_ref)
            napi_delete_reference(env, c->listener_ref);
        if (c->parts_ref)
            napi_delete_reference(env, c->parts_ref);
        if (c->tctx_ref)
            napi_delete_reference(env, c->tctx_ref);
    }
    c->magic = 0;
    pthread_mutex_destroy(&c->mu);
    free(c->name);
    free(c->args);
    free(c->s_session);
    free(c->s_message);
    free(c->s_agent);
    free(c->s_call);
    free(c->s_dir);
    free(c->out);
    free(c);
}

call *call_new(adapter *ad, enum call_kind kind)
{
    call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->magic = CALL_MAGIC;
    c->kind = kind;
    c->ad = ad;
    c->ctx.struct_size = sizeof c->ctx;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void call_set_ctx(call *c)
{
    c->ctx.session_id = c->s_session;
    c->ctx.message_id = c->s_message;
    c->ctx.agent = c->s_agent;
    c->ctx.call_id = c->s_call;
    c->ctx.directory = c->s_dir;
}

/* Settles a call's promise (JS thread) and frees it. */
static void call_settle(napi_env env, call *c)
{
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    if (c->kind == CALL_COMMAND && c->parts_ref) {
        napi_value parts;
        if (napi_get_reference_value(env, c->parts_ref, &parts) == napi_ok && parts) {
            /* [{type:"text", text}] replaces the command's template parts */
            napi_value part, arr;
            napi_create_object(env, &part);
            napi_set_named_property(env, part, "type", js_str(env, "text"));
            napi_set_named_property(env, part, "text", js_str(env, c->out ? c->out : ""));
            napi_create_array_with_length(env, 1, &arr);
            napi_set_element(env, arr, 0, part);
            js_array_replace(env, parts, arr);
        }
        napi_resolve_deferred(env, c->deferred, js_undefined(env));
    } else if (c->kind == CALL_DISPOSE || c->rc == 0) {
        napi_resolve_deferred(env, c->deferred, c->kind == CALL_DISPOSE ? js_undefined(env) : js_str(env, c->out));
    } else {
        napi_value msg = js_str(env, c->out ? c->out : strerror(-c->rc)), err;
        napi_create_error(env, NULL, msg, &err);
        napi_reject_deferred(env, c->deferred, err);
    }
    napi_close_handle_scope(env, scope);
    call_free(env, c);
}

void done_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data)
{
    (void)js_cb;
    (void)context;
    call *c = data;
    if (!env) { /* torn down: nothing left to settle */
        call_free(NULL, c);
        return;
    }
    adapter *ad = c->ad;
    void (*settled)(adapter *) = c->settled;
    call_settle(env, c);
    if (!ad->tsfn_gone)
        pending_add(env, ad, -1);
    if (settled)
        settled(ad);
}

/* JS thread: while a promise waits on a worker, the loop must stay alive. */
void pending_add(napi_env env, adapter *ad, int d)
{
    int before = ad->js_pending;
    ad->js_pending += d;
    if (before == 0 && ad->js_pending > 0)
        napi_ref_threadsafe_function(env, ad->done_tsfn);
    else if (before > 0 && ad->js_pending == 0)
        napi_unref_threadsafe_function(env, ad->done_tsfn);
}

static void *worker_main(void *arg)
{
    call *c = arg;
    adapter *ad = c->ad;
    const ocp_plugin *p = ad->plugin;
    char *out = NULL;
    int rc;
    pthread_mutex_lock(&ad->mu);
    int closing = ad->closing;
    pthread_mutex_unlock(&ad->mu);
    if (closing) {
        rc = -ECANCELED;
        c->out = xstrdup("ocbg is shutting down");
    } else {
        if (c->kind == CALL_TOOL)
            rc = p->tool_call(p->userdata, c->name, c->args, &c->ctx, &out);
        else
            rc = p->command_call(p->userdata, c->name, c->args ? c->args : "", &c->ctx, &out);
        /* after this no tool_cancel on ctx is running or will start */
        pthread_mutex_lock(&c->mu);
        c->returned = 1;
        pthread_mutex_unlock(&c->mu);
        c->out = xstrdup(out);
        ad->plugin_free(ad->plugin_ud, out); /* shutdown may have returned */
    }
    c->rc = rc;
    if (rc != 0 && c->kind == CALL_COMMAND && !c->out)
        c->out = xprintf("/%s failed: %s", c->name, strerror(-rc));
    else if (rc != 0 && c->kind == CALL_COMMAND) {
        char *t = xprintf("/%s failed: %s", c->name, c->out);
        free(c->out);
        c->out = t;
    }
    if (napi_call_threadsafe_function(ad->done_tsfn, c, napi_tsfn_blocking) != napi_ok)
        call_free(NULL, c); /* torn down: the promise is gone with the loop */
    pthread_mutex_lock(&ad->mu);
    ad->workers--;
    pthread_cond_broadcast(&ad->cv);
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

/* Starts a worker for c (JS thread). Returns 0, or -1 with c untouched. */
int start_worker(napi_env env, adapter *ad, call *c)
{
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
    int e = pthread_create(&t, &attr, worker_main, c);
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

/*
 * jobs.c — tool calls and commands: JS -> worker thread -> JS. A hook makes a
 * job and starts a detached worker (plugin->tool_call / command_call may
 * block for minutes); the worker hands the job back through done_tsfn and the
 * JS thread settles its Promise and frees it. Own pthreads, not
 * napi_create_async_work: its small shared pool would starve (NOTES.md).
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void job_free(napi_env env, job *j)
{
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

job *job_new(adapter *ad, enum job_kind kind)
{
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

void job_set_ctx(job *j)
{
    j->ctx.session_id = j->s_session;
    j->ctx.message_id = j->s_message;
    j->ctx.agent = j->s_agent;
    j->ctx.call_id = j->s_call;
    j->ctx.directory = j->s_dir;
}

/* Settles a job's promise (JS thread) and frees it. */
static void job_settle(napi_env env, job *j)
{
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    if (j->kind == JOB_UI) {
        /* no promise: its reply was published */
    } else if (j->kind == JOB_COMMAND && j->parts_ref) {
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

void done_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data)
{
    (void)js_cb;
    (void)context;
    job *j = data;
    if (!env) { /* torn down: nothing left to settle */
        job_free(NULL, j);
        return;
    }
    adapter *ad = j->ad;
    void (*settled)(adapter *) = j->settled;
    job_settle(env, j);
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
    } else if (j->kind == JOB_UI) {
        ui_run(ad, j);
        rc = j->rc;
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
int start_worker(napi_env env, adapter *ad, job *j)
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

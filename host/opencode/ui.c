/*
 * ui.c — the channel between ocbg and its TUI panel (docs/panel.md): views go
 * out, requests come in, replies go out, all as OpenCode bus events of the one
 * type a client may publish and every TUI receives, tui.command.execute,
 * whose command is a prefix, a space and a JSON object. The TUI ignores a
 * command name it does not know, so these do nothing else there.
 *
 * Requests come from outside (any client of the server's HTTP API may
 * publish one): they wait in a bounded queue (UI_QUEUE_MAX) for one thread
 * of the adapter's, which runs them in order; one that finds the queue full
 * is refused at once, so a burst costs neither threads nor memory.
 */
#include "adapter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options of POST /tui/publish for "<prefix> <json>" (every TUI
 * attached to the server gets it); NULL when out of memory. */
static cJSON *publish_opts(const char *prefix, const char *json)
{
    char *command = xprintf("%s %s", prefix, json);
    if (!command)
        return NULL;
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    cJSON_AddStringToObject(b, "type", "tui.command.execute");
    cJSON_AddObjectToObject(b, "properties");
    cJSON_AddStringToObject(cJSON_GetObjectItem(b, "properties"), "command", command);
    free(command);
    return o;
}

/* Publishes "<prefix> <json>" and waits for it. [any thread but the JS thread] */
static int publish(adapter *ad, const char *prefix, const char *json)
{
    cJSON *o = publish_opts(prefix, json);
    if (!o)
        return -ENOMEM;
    char *msg = NULL;
    int rc = host_request(ad, "tui", "publish", o, 0, &msg);
    free(msg);
    return rc;
}

int h_publish_view(void *ud, const char *session_id, const char *view_json)
{
    (void)session_id; /* the view names it */
    return publish(ud, "ocbg.view", view_json);
}

char *ui_request_of(napi_env env, napi_value ev, const char *type)
{
    if (strcmp(type, "tui.command.execute") != 0)
        return NULL;
    char *command = js_string(env, js_get(env, js_get(env, ev, "properties"), "command"));
    const char *json = ui_request_json(command);
    char *request = json ? xstrdup(json) : NULL;
    free(command);
    return request;
}

/* Runs one request: the plugin's ui_request, then its reply published. */
static void ui_serve(adapter *ad, const char *request)
{
    const ocp_plugin *p = ad->plugin;
    char *out = NULL;
    int rc = -ENOSYS;
    if (OCP_HAS_FIELD(ocp_plugin, p, ui_request) && p->ui_request)
        rc = p->ui_request(p->userdata, request, &out);
    /* None for a sync (the views answer it), nor when this copy's plugin
     * takes no requests or does not know the task: another copy of ocbg
     * loaded on the same server (a global and a project install) may own
     * it, and its answer is the one that counts. */
    if (ui_reply_due(request, rc)) {
        char *reply = ui_reply_json(request, rc, out);
        if (reply)
            publish(ad, "ocbg.reply", reply);
        free(reply);
    }
    if (out)
        ad->plugin_free(ad->plugin_ud, out);
}

/* The panel's thread: serves the queue in order until shutdown. */
static void *ui_main(void *arg)
{
    adapter *ad = arg;
    pthread_mutex_lock(&ad->mu);
    for (;;) {
        while (ad->ui_count == 0 && !ad->closing)
            pthread_cond_wait(&ad->ui_cv, &ad->mu);
        if (ad->closing)
            break;
        char *request = ad->ui_queue[ad->ui_head];
        ad->ui_head = (ad->ui_head + 1) % UI_QUEUE_MAX;
        ad->ui_count--;
        pthread_mutex_unlock(&ad->mu);
        ui_serve(ad, request);
        free(request);
        pthread_mutex_lock(&ad->mu);
    }
    for (; ad->ui_count > 0; ad->ui_count--, ad->ui_head = (ad->ui_head + 1) % UI_QUEUE_MAX)
        free(ad->ui_queue[ad->ui_head]);
    pthread_mutex_unlock(&ad->mu);
    return NULL;
}

/* [js] Publishes the refusal of request from the JS thread, not waiting (a
 * host call from here would deadlock); none for a request without an id. */
static void refuse(napi_env env, adapter *ad, const char *request, const char *why)
{
    cJSON *req = cJSON_Parse(request);
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(req, "id"))) {
        char *reply = ui_reply_json(request, -EBUSY, why);
        cJSON *o = reply ? publish_opts("ocbg.reply", reply) : NULL;
        if (!o || host_send_from_js(env, ad, "tui", "publish", o) != 0)
            stderr_log(OCP_LOG_WARN, "ocbg: a refused panel request could not be answered");
        free(reply);
    }
    cJSON_Delete(req);
}

void ui_take(napi_env env, adapter *ad, char *request)
{
    const char *refusal = NULL;
    char busy[96];
    pthread_mutex_lock(&ad->mu);
    if (ad->closing) {
        pthread_mutex_unlock(&ad->mu);
        free(request);
        return;
    }
    if (!ad->ui_started && pthread_create(&ad->ui_thread, NULL, ui_main, ad) == 0)
        ad->ui_started = 1;
    if (!ad->ui_started) {
        refusal = "ocbg cannot take panel requests: no thread to serve them";
    } else if (ad->ui_count == UI_QUEUE_MAX) {
        snprintf(busy, sizeof busy, "ocbg is busy: %d panel requests are waiting; try again", UI_QUEUE_MAX);
        refusal = busy;
    } else {
        ad->ui_queue[(ad->ui_head + ad->ui_count++) % UI_QUEUE_MAX] = request;
        request = NULL;
        pthread_cond_signal(&ad->ui_cv);
    }
    pthread_mutex_unlock(&ad->mu);
    if (refusal)
        refuse(env, ad, request, refusal);
    free(request);
}

void ui_stop(adapter *ad)
{
    pthread_mutex_lock(&ad->mu);
    int started = ad->ui_started;
    pthread_cond_broadcast(&ad->ui_cv);
    pthread_mutex_unlock(&ad->mu);
    if (started)
        pthread_join(ad->ui_thread, NULL);
}

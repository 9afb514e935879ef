/*
 * ui.c — the channel between ocbg and its TUI panel (docs/panel.md): views go
 * out, requests come in, replies go out, all as OpenCode bus events of the one
 * type a client may publish and every TUI receives, tui.command.execute,
 * whose command is a prefix, a space and a JSON object. The TUI ignores a
 * command name it does not know, so these do nothing else there.
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define UI_REQUEST_PREFIX "ocbg.ui "

/* POST /tui/publish of "<prefix> <json>": every TUI attached to the server
 * gets it. [any thread but the JS thread] */
static int publish(adapter *ad, const char *prefix, const char *json)
{
    char *command = xprintf("%s %s", prefix, json);
    if (!command)
        return -ENOMEM;
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    cJSON_AddStringToObject(b, "type", "tui.command.execute");
    cJSON_AddObjectToObject(b, "properties");
    cJSON_AddStringToObject(cJSON_GetObjectItem(b, "properties"), "command", command);
    free(command);
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
    if (!command || strncmp(command, UI_REQUEST_PREFIX, strlen(UI_REQUEST_PREFIX)) != 0) {
        free(command);
        return NULL;
    }
    char *request = xstrdup(command + strlen(UI_REQUEST_PREFIX));
    free(command);
    return request ? request : xstrdup("");
}

/* The reply to request req: {"v":1, "id", "ok", and "error" or "detail"}. */
static char *reply_json(const cJSON *req, int rc, const char *out)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "v", 1);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "id"));
    if (id)
        cJSON_AddStringToObject(r, "id", id);
    cJSON_AddBoolToObject(r, "ok", rc == 0);
    cJSON *detail = rc == 0 && out ? cJSON_Parse(out) : NULL;
    if (detail)
        cJSON_AddItemToObject(r, "detail", detail);
    else if (rc != 0)
        cJSON_AddStringToObject(r, "error", out ? out : strerror(-rc));
    char *text = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return text;
}

void ui_run(adapter *ad, call *c)
{
    const ocp_plugin *p = ad->plugin;
    char *out = NULL;
    int rc = -ENOSYS;
    if (OCP_HAS_FIELD(ocp_plugin, p, ui_request) && p->ui_request)
        rc = p->ui_request(p->userdata, c->args, &out);
    cJSON *req = cJSON_Parse(c->args);
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    /* A sync is answered by the views. No answer either when this copy's
     * plugin takes no requests or does not know the task: another copy of
     * ocbg loaded on the same server (a global and a project install) may
     * own it, and its answer is the one that counts. */
    if ((!action || strcmp(action, "sync") != 0) && rc != -ENOSYS && rc != -ENOENT) {
        char *reply = reply_json(req, rc, out);
        if (reply)
            publish(ad, "ocbg.reply", reply);
        free(reply);
    }
    cJSON_Delete(req);
    if (out)
        ad->plugin_free(ad->plugin_ud, out);
    c->rc = rc;
}

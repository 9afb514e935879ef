/* stub_ui.c — see stub_ui.h. */
#include "stub_ui.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int stub_ui_request(const ocp_host *h, const char *request_json, char **out) {
    *out = NULL;
    cJSON *req = cJSON_Parse(request_json);
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    const char *task = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "task_id"));
    int rc = 0;
    /* Only its own tasks ("stub_…"): loaded beside the real ocbg (the e2e
     * suite's stub part), it must not answer for ocbg's tasks, as a second
     * copy of ocbg does not (-ENOENT: no reply). */
    bool mine = task && strncmp(task, "stub_", 5) == 0;
    if (action && (!strcmp(action, "detail") || !strcmp(action, "stop")) && !mine) {
        rc = -ENOENT;
    } else if (action && !strcmp(action, "detail")) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "id", task);
        cJSON_AddStringToObject(d, "status", "running");
        *out = cJSON_PrintUnformatted(d);
        cJSON_Delete(d);
    } else if (action && !strcmp(action, "toast")) {
        const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "title"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "text"));
        rc = OCP_HAS_FIELD(ocp_host, h, notify_user) && h->notify_user
                 ? h->notify_user(h->userdata, OCP_NOTICE_INFO, title, text ? text : "")
                 : -ENOSYS;
    } else if (!action || (strcmp(action, "sync") && strcmp(action, "stop"))) {
        rc = -EINVAL;
        *out = strdup("stub: unknown panel request");
    }
    cJSON_Delete(req);
    return rc;
}

/* ui_reply.c — see ui_reply.h. It includes ui_reply.h only (not adapter.h,
 * which needs Node-API's headers): the fuzzer builds it without them. */
#include "ui_reply.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *ui_request_json(const char *command)
{
    if (!command || strncmp(command, UI_REQUEST_PREFIX, strlen(UI_REQUEST_PREFIX)) != 0)
        return NULL;
    return command + strlen(UI_REQUEST_PREFIX);
}

int ui_reply_due(const char *request_json, int rc)
{
    cJSON *req = request_json ? cJSON_Parse(request_json) : NULL;
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    int due = (!action || strcmp(action, "sync") != 0) && rc != -ENOSYS && rc != -ENOENT;
    cJSON_Delete(req);
    return due;
}

char *ui_reply_json(const char *request_json, int rc, const char *out)
{
    cJSON *req = request_json ? cJSON_Parse(request_json) : NULL;
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
    cJSON_Delete(req);
    return text;
}

/* hostapi.c — see hostapi.h. */
#include "hostapi/hostapi.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lock.h"
#include "base/util.h"

void hostapi_log(hostapi *a, enum ocp_log_level level, const char *fmt, ...)
{
    ASSERT_NO_PLUGIN_LOCK();
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    a->host.log(a->host.userdata, level, line);
}

void hostapi_free(hostapi *a, char *p)
{
    ASSERT_NO_PLUGIN_LOCK();
    if (p)
        a->host.free(a->host.userdata, p);
}

int64_t hostapi_now(const hostapi *a)
{
    return a->host.now_ms ? a->host.now_ms(a->host.userdata) : wall_ms();
}

/* Turns a failed call's result into *err and logs it; returns rc. */
static int failed(hostapi *a, const char *fn, const char *session, int rc, char *host_msg, char **err)
{
    char *msg = xasprintf("%s", host_msg && *host_msg ? host_msg : strerror(-rc));
    hostapi_free(a, host_msg);
    hostapi_log(a, OCP_LOG_WARN, "ocbg: %s(%s) failed: %s", fn, session ? session : "", msg);
    if (err)
        *err = msg;
    else
        free(msg);
    return rc < 0 ? rc : -EIO;
}

/* The id of a Session JSON the host returned (freed here); -EIO without one. */
static int session_id_of(hostapi *a, const char *fn, char *out, char **id_out, char **err)
{
    cJSON *s = cJSON_Parse(out);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));
    int rc = 0;
    if (id && *id) {
        *id_out = xstrdup(id);
    } else {
        hostapi_log(a, OCP_LOG_WARN, "ocbg: %s returned no session id", fn);
        if (err)
            *err = xstrdup("the host returned a session without an id");
        rc = -EIO;
    }
    cJSON_Delete(s);
    hostapi_free(a, out);
    return rc;
}

int hostapi_session_create(hostapi *a, const char *parent_id, const char *title, char **id_out, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    char *out = NULL;
    int rc = a->host.session_create(a->host.userdata, parent_id, title, &out);
    if (rc != 0)
        return failed(a, "session_create", parent_id, rc, out, err);
    return session_id_of(a, "session_create", out, id_out, err);
}

int hostapi_session_fork(hostapi *a, const char *session_id, const char *message_id, char **id_out, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    if (!a->host.session_fork) {
        if (err)
            *err = xstrdup("the host cannot fork sessions");
        return -ENOSYS;
    }
    char *out = NULL;
    int rc = a->host.session_fork(a->host.userdata, session_id, message_id, &out);
    if (rc != 0)
        return failed(a, "session_fork", session_id, rc, out, err);
    return session_id_of(a, "session_fork", out, id_out, err);
}

int hostapi_session_get(hostapi *a, const char *session_id, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    char *out = NULL;
    int rc = a->host.session_get(a->host.userdata, session_id, &out);
    if (rc != 0)
        return failed(a, "session_get", session_id, rc, out, err);
    hostapi_free(a, out);
    return 0;
}

int hostapi_session_messages(hostapi *a, const char *session_id, int limit, char **json, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    char *out = NULL;
    int rc = a->host.session_messages(a->host.userdata, session_id, limit, &out);
    if (rc != 0)
        return failed(a, "session_messages", session_id, rc, out, err);
    *json = out;
    return 0;
}

int hostapi_session_prompt(hostapi *a, const char *session_id, const char *text, const char *agent, bool no_reply,
                           bool deny_tools, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    cJSON *body = cJSON_CreateObject();
    cJSON *parts = cJSON_AddArrayToObject(body, "parts");
    cJSON *part = cJSON_CreateObject();
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", text);
    cJSON_AddItemToArray(parts, part);
    if (agent && *agent)
        cJSON_AddStringToObject(body, "agent", agent);
    if (no_reply)
        cJSON_AddTrueToObject(body, "noReply");
    if (deny_tools) {
        cJSON *tools = cJSON_AddObjectToObject(body, "tools");
        for (size_t i = 0; i < a->tool_count; i++)
            cJSON_AddFalseToObject(tools, a->tools[i].name);
    }
    char *json = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!json) {
        if (err)
            *err = xstrdup("out of memory");
        return -ENOMEM;
    }
    char *out = NULL;
    int rc = a->host.session_prompt(a->host.userdata, session_id, json, &out);
    cJSON_free(json);
    if (rc != 0)
        return failed(a, "session_prompt", session_id, rc, out, err);
    hostapi_free(a, out);
    return 0;
}

int hostapi_session_abort(hostapi *a, const char *session_id, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    char *out = NULL;
    int rc = a->host.session_abort(a->host.userdata, session_id, &out);
    if (rc != 0)
        return failed(a, "session_abort", session_id, rc, out, err);
    hostapi_free(a, out);
    return 0;
}

int hostapi_session_status(hostapi *a, char **json, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    char *out = NULL;
    int rc = a->host.session_status(a->host.userdata, &out);
    if (rc != 0)
        return failed(a, "session_status", NULL, rc, out, err);
    *json = out;
    return 0;
}

int hostapi_ask_permission(hostapi *a, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    ASSERT_NO_PLUGIN_LOCK();
    *out = NULL;
    return a->host.ask_permission ? a->host.ask_permission(a->host.userdata, ctx, req, out) : 0;
}

void hostapi_notify_user(hostapi *a, enum ocp_notice_level level, const char *message)
{
    ASSERT_NO_PLUGIN_LOCK();
    if (a->host.notify_user)
        a->host.notify_user(a->host.userdata, level, "ocbg", message);
}

int hostapi_publish_view(hostapi *a, const char *session_id, const char *view_json)
{
    ASSERT_NO_PLUGIN_LOCK();
    if (!a->host.publish_view)
        return -ENOSYS;
    return a->host.publish_view(a->host.userdata, session_id, view_json);
}

bool hostapi_has_views(const hostapi *a)
{
    return a->host.publish_view != NULL;
}

int hostapi_session_create_in(hostapi *a, const char *parent_id, const char *title, const char *directory,
                              char **id_out, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    if (!a->host.session_create_in) {
        if (err)
            *err = xstrdup("the host cannot run a session in another folder");
        return -ENOSYS;
    }
    char *out = NULL;
    int rc = a->host.session_create_in(a->host.userdata, parent_id, title, directory, &out);
    if (rc != 0)
        return failed(a, "session_create_in", directory, rc, out, err);
    return session_id_of(a, "session_create_in", out, id_out, err);
}

int hostapi_directory_watch(hostapi *a, const char *directory, bool watch, char **err)
{
    ASSERT_NO_PLUGIN_LOCK();
    int rc = a->host.directory_watch ? a->host.directory_watch(a->host.userdata, directory, watch ? 1 : 0) : -ENOSYS;
    if (rc != 0 && err)
        *err = xasprintf("the host could not %s the folder %s (%s)", watch ? "follow" : "let go of", directory,
                         strerror(-rc));
    return rc;
}

bool hostapi_has_directories(const hostapi *a)
{
    return a->host.session_create_in != NULL && a->host.directory_watch != NULL;
}

bool hostapi_has_permissions(const hostapi *a)
{
    return a->host.ask_permission != NULL;
}

bool hostapi_has_toasts(const hostapi *a)
{
    return a->host.notify_user != NULL;
}

bool hostapi_has_fork(const hostapi *a)
{
    return a->host.session_fork != NULL;
}

const char *hostapi_data_dir(const hostapi *a)
{
    return a->host.data_dir && a->host.data_dir[0] ? a->host.data_dir : NULL;
}

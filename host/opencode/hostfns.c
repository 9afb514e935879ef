/*
 * hostfns.c — the ocp_host table the plugin gets: each session_* function
 * turns its arguments into the SDK's options ({path:{id}, body, query}) and
 * makes a host_request; log is hostcall.c's h_log; the ABI 1.5 functions
 * (sessions in other directories) are dirs.c's.
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>

static cJSON *opts_path(const char *id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *p = cJSON_AddObjectToObject(o, "path");
    cJSON_AddStringToObject(p, "id", id ? id : "");
    return o;
}

static int h_session_create(void *ud, const char *parent_id, const char *title, char **out)
{
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    if (parent_id)
        cJSON_AddStringToObject(b, "parentID", parent_id);
    if (title)
        cJSON_AddStringToObject(b, "title", title);
    return host_request(ud, "session", "create", o, 1, out);
}

static int h_session_get(void *ud, const char *id, char **out)
{
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    int rc = host_request(ud, "session", "get", opts_path(id), 1, out);
    if (rc == 0)
        dirs_remember_session(ud, *out);
    return rc;
}

static int h_session_messages(void *ud, const char *id, int limit, char **out)
{
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id);
    if (limit > 0)
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(o, "query"), "limit", limit);
    return host_request(ud, "session", "messages", o, 1, out);
}

static int h_session_prompt(void *ud, const char *id, const char *body_json, char **out)
{
    cJSON *body = cJSON_Parse(body_json ? body_json : "");
    if (!id || !cJSON_IsObject(body)) {
        cJSON_Delete(body);
        *out = xstrdup(id ? "prompt body is not a JSON object" : "session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id);
    cJSON_AddItemToObject(o, "body", body);
    /* a session elsewhere (a task's worktree): its folder named, as for an
     * abort, so the prompt never depends on the row routing it */
    char *dir = dirs_of_session(ud, id), *msg = NULL;
    if (dir)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "query"), "directory", dir);
    free(dir);
    int rc = host_request(ud, "session", "promptAsync", o, 0, &msg);
    if (rc == 0) {
        free(msg);
        msg = NULL;
    }
    *out = msg;
    return rc;
}

static int h_session_abort(void *ud, const char *id, char **out)
{
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    /* a session elsewhere: its directory, or once its row is gone (its parent
     * deleted) the abort reaches this instance and stops nothing */
    cJSON *o = opts_path(id);
    char *dir = dirs_of_session(ud, id), *msg = NULL;
    if (dir)
        cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "query"), "directory", dir);
    free(dir);
    int rc = host_request(ud, "session", "abort", o, 0, &msg);
    if (rc == 0) {
        free(msg);
        msg = NULL;
    }
    *out = msg;
    return rc;
}

/* The instance's own map, and those of the watched directories. */
static int h_session_status(void *ud, char **out)
{
    int rc = host_request(ud, "session", "status", cJSON_CreateObject(), 1, out);
    adapter *ad = ud;
    pthread_mutex_lock(&ad->mu);
    size_t n = ad->nwatched;
    pthread_mutex_unlock(&ad->mu);
    if (rc != 0 || n == 0)
        return rc;
    cJSON *map = cJSON_Parse(*out);
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(map);
        return rc;
    }
    dirs_status_merge(ad, map);
    char *merged = cJSON_PrintUnformatted(map);
    cJSON_Delete(map);
    if (merged) {
        free(*out);
        *out = merged;
    }
    return rc;
}

static int h_session_fork(void *ud, const char *id, const char *message_id, char **out)
{
    if (!id) {
        *out = xstrdup("session id missing");
        return -EINVAL;
    }
    cJSON *o = opts_path(id), *b = cJSON_AddObjectToObject(o, "body");
    if (message_id)
        cJSON_AddStringToObject(b, "messageID", message_id);
    return host_request(ud, "session", "fork", o, 1, out);
}

/* A toast in the TUI: client.tui.showToast({body: {title, message, variant}}).
 * Its texts name tasks (model-written descriptions): made screen_text here,
 * the last point before OpenCode's renderer, so that none moves the cursor,
 * rewrites the screen or sets the terminal's title. */
static int h_notify_user(void *ud, enum ocp_notice_level level, const char *title, const char *message)
{
    static const char *const variants[] = {"info", "success", "warning", "error"};
    char *t = title ? screen_text(title, 0) : NULL, *m = screen_text(message, 1);
    if ((title && !t) || !m) {
        free(t);
        free(m);
        return -ENOMEM;
    }
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    if (t)
        cJSON_AddStringToObject(b, "title", t);
    cJSON_AddStringToObject(b, "message", m);
    free(t);
    free(m);
    cJSON_AddStringToObject(b, "variant", (unsigned)level < 4 ? variants[level] : "info");
    char *msg = NULL;
    int rc = host_request(ud, "tui", "showToast", o, 0, &msg);
    free(msg);
    return rc;
}

static void h_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

void host_table_init(adapter *ad)
{
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
    h->notify_user = h_notify_user;
    h->publish_view = h_publish_view;
    h->session_create_in = h_session_create_in;
    h->directory_watch = h_directory_watch;
}

/* api_sessions.c — layer 3 (API): the session functions of the host table
 * (ocp.h): session_create, _get, _messages, _abort, _status, _fork, over the
 * store and the agents; each in the frame of api_frame.c (fault, record).
 * Uses api_frame.c, api_calls.c, the agents, the storage and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdlib.h>

cJSON *sim_api_create_args(const char *parent_id, const char *title)
{
    cJSON *args = cJSON_CreateObject();
    if (parent_id)
        cJSON_AddStringToObject(args, "parentID", parent_id);
    if (title)
        cJSON_AddStringToObject(args, "title", title);
    return args;
}

char *sim_api_new_session(sim_api *a, const char *parent_id, const char *title, const char *dir_key, int *rc)
{
    pthread_mutex_lock(&a->core->mu);
    sim_session *s = sim_session_create_in_locked(a->store, parent_id, title, dir_key);
    char *res = NULL;
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&a->core->mu);
    *rc = s ? 0 : -ENOENT;
    return s ? res : sim_api_msgf("Session not found: %s", parent_id);
}

int sim_hf_session_create(void *ud, const char *parent_id, const char *title, char **out)
{
    sim_api *a = ud;
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_create", parent_id, sim_api_create_args(parent_id, title), out, &t, &body);
    if (rc)
        return rc;
    sim_api_set_out(out, sim_api_new_session(a, parent_id, title, NULL, &rc));
    /* Recorded against the parent: that is the session the call is about
     * (the new id is in the result). */
    return sim_api_finish(a, "session_create", parent_id, body, rc, t);
}

int sim_hf_session_get(void *ud, const char *sid, char **out)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionID", sid ? sid : "");
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_get", sid, args, out, &t, &body);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->core->mu);
    sim_session *s = sim_find_live_locked(a->store, sid);
    char *res = NULL;
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&a->core->mu);
    if (!res) {
        rc = -ENOENT;
        res = sim_api_msgf("Session not found: %s", sid);
    }
    sim_api_set_out(out, res);
    return sim_api_finish(a, "session_get", sid, body, rc, t);
}

int sim_hf_session_messages(void *ud, const char *sid, int limit, char **out)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionID", sid ? sid : "");
    cJSON_AddNumberToObject(args, "limit", limit);
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_messages", sid, args, out, &t, &body);
    if (rc)
        return rc;
    char *res = NULL;
    if (limit < 0) {
        rc = -EINVAL;
        res = sim_strdup("limit must be >= 0");
    } else {
        pthread_mutex_lock(&a->core->mu);
        sim_session *s = sim_find_live_locked(a->store, sid);
        if (s) {
            cJSON *j = sim_session_messages_locked(s, limit);
            res = sim_print(j);
            cJSON_Delete(j);
        }
        pthread_mutex_unlock(&a->core->mu);
        if (!res) {
            rc = -ENOENT;
            res = sim_api_msgf("Session not found: %s", sid);
        }
    }
    sim_api_set_out(out, res);
    return sim_api_finish(a, "session_messages", sid, body, rc, t);
}

int sim_hf_session_abort(void *ud, const char *sid, char **out)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionID", sid ? sid : "");
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_abort", sid, args, out, &t, &body);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->core->mu);
    sim_session *s = sim_find_locked(a->store, sid);
    if (s)
        sim_agent_abort_locked(a->agents, s);
    pthread_mutex_unlock(&a->core->mu);
    if (!s) {
        rc = -ENOENT;
        sim_api_set_out(out, sim_api_msgf("Session not found: %s", sid));
    }
    return sim_api_finish(a, "session_abort", sid, body, rc, t);
}

int sim_hf_session_status(void *ud, char **out)
{
    sim_api *a = ud;
    if (out)
        *out = NULL;
    int64_t t = sim_wall_ms(a->core);
    int rc = sim_api_call_begin(a, "session_status");
    if (rc)
        return sim_api_injected(a, "session_status", NULL, sim_strdup("{}"), rc, t, out);
    cJSON *m = cJSON_CreateObject();
    /* As OpenCode's main status map: a session of another folder is listed
     * only while the plugin follows that folder's instance. */
    pthread_mutex_lock(&a->core->mu);
    for (sim_session *s = a->store->first; s; s = s->next)
        if (s->busy && !a->status_omit && sim_dir_visible_locked(a->store, s->directory))
            cJSON_AddStringToObject(cJSON_AddObjectToObject(m, s->id), "type", "busy");
    pthread_mutex_unlock(&a->core->mu);
    sim_api_set_out(out, sim_api_args_text(m));
    return sim_api_finish(a, "session_status", NULL, sim_strdup("{}"), 0, t);
}

int sim_hf_session_fork(void *ud, const char *sid, const char *message_id, char **out)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sessionID", sid ? sid : "");
    if (message_id)
        cJSON_AddStringToObject(args, "messageID", message_id);
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_fork", sid, args, out, &t, &body);
    if (rc)
        return rc;
    char *res = NULL;
    pthread_mutex_lock(&a->core->mu);
    sim_session *s = sim_find_live_locked(a->store, sid);
    if (s) {
        sim_session *f = sim_session_fork_locked(a->store, s, message_id);
        cJSON *j = sim_session_info_locked(f);
        res = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&a->core->mu);
    if (!res) {
        rc = -ENOENT;
        res = sim_api_msgf("Session not found: %s", sid);
    }
    sim_api_set_out(out, res);
    return sim_api_finish(a, "session_fork", sid, body, rc, t);
}

/* host_sessions.c — layer 4 (host): the user's view of the sessions
 * (simhost.h): what a test reads and does as the user would, over the storage
 * (and the API's prompt, the agents' abort). Uses no other host file. */
#include "sim_host_int.h"

#include <errno.h>
#include <stdlib.h>

int sim_journal_open(sim_host *h, const char *path)
{
    if (!path)
        return -EINVAL;
    pthread_mutex_lock(&h->core.mu);
    int rc = sim_storage_journal_open_locked(&h->store, path);
    pthread_mutex_unlock(&h->core.mu);
    return rc;
}

char *sim_session_new(sim_host *h, const char *parent_id, const char *title)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_session_create_locked(&h->store, parent_id, title);
    char *id = s ? sim_strdup(s->id) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return id;
}

int sim_session_delete(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(&h->store, session_id);
    if (s)
        sim_session_delete_locked(&h->store, s);
    pthread_mutex_unlock(&h->core.mu);
    return s ? 0 : -ENOENT;
}

int sim_session_prompt(sim_host *h, const char *session_id, const char *body_json)
{
    char *why = NULL;
    int rc = sim_api_prompt(&h->api, session_id, body_json, &why);
    free(why);
    return rc;
}

int sim_session_abort(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    if (s)
        sim_agent_abort_locked(&h->agents, s);
    pthread_mutex_unlock(&h->core.mu);
    return s ? 0 : -ENOENT;
}

int sim_session_exists(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    int r = sim_find_live_locked(&h->store, session_id) != NULL;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

int sim_session_busy(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    int r = s && s->busy;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

char *sim_session_messages_json(sim_host *h, const char *session_id)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    if (s) {
        cJSON *m = sim_session_messages_locked(s, 0);
        out = sim_print(m);
        cJSON_Delete(m);
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

int sim_session_message_count(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    int n = s ? cJSON_GetArraySize(s->messages) : -1;
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

char *sim_session_message_text(sim_host *h, const char *session_id, int n)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    if (s) {
        int count = cJSON_GetArraySize(s->messages);
        int i = n < 0 ? count + n : n;
        if (i >= 0 && i < count)
            out = sim_prompt_text(cJSON_GetArrayItem(s->messages, i));
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

char *sim_session_get_json(sim_host *h, const char *session_id)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(&h->store, session_id);
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        out = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

char *sim_session_directory(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    char *out = s ? sim_strdup(s->directory) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

size_t sim_session_count(sim_host *h)
{
    pthread_mutex_lock(&h->core.mu);
    size_t n = h->store.nsessions - h->store.ndeleted;
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

int sim_session_tool_denied(sim_host *h, const char *session_id, const char *tool)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    int r = -1;
    if (s)
        r = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->denied, tool)) ? 1 : 0;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

char *sim_session_model_input(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(&h->store, session_id);
    char *out = s ? sim_strdup(s->model_input) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

/* api_views.c — layer 3 (api): the views plugins publish for the host's UI
 * (ABI 1.4 publish_view), kept apart from the call record: they come from
 * the plugin's own thread at its own pace, and a test that counts calls
 * should not see them. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_api_publish_view(void *ud, const char *session_id, const char *view_json)
{
    sim_api *a = ud;
    cJSON *view = view_json ? cJSON_Parse(view_json) : NULL;
    if (!session_id || !cJSON_IsObject(view)) {
        cJSON_Delete(view);
        return -EINVAL;
    }
    if (getenv("OCBG_SIM_LOG"))
        fprintf(stderr, "# [view %s] %s\n", session_id, view_json);
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "session", session_id);
    cJSON_AddItemToObject(rec, "view", view);
    pthread_mutex_lock(&a->core->mu);
    if (!a->views)
        a->views = cJSON_CreateArray();
    cJSON_AddItemToArray(a->views, rec);
    sim_changed_locked(a->core);
    pthread_mutex_unlock(&a->core->mu);
    return 0;
}

static int view_matches(const cJSON *rec, const char *sid)
{
    return !sid || strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rec, "session")), sid) == 0;
}

size_t sim_api_views(sim_api *a, const char *session_id)
{
    size_t n = 0;
    pthread_mutex_lock(&a->core->mu);
    const cJSON *rec;
    cJSON_ArrayForEach (rec, a->views)
        n += view_matches(rec, session_id);
    pthread_mutex_unlock(&a->core->mu);
    return n;
}

char *sim_api_view(sim_api *a, const char *session_id, int n)
{
    char *out = NULL;
    pthread_mutex_lock(&a->core->mu);
    int count = 0;
    const cJSON *rec;
    cJSON_ArrayForEach (rec, a->views)
        count += view_matches(rec, session_id);
    int want = n < 0 ? count + n : n, i = 0;
    cJSON_ArrayForEach (rec, a->views) {
        if (!view_matches(rec, session_id))
            continue;
        if (i++ == want) {
            out = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(rec, "view"));
            break;
        }
    }
    pthread_mutex_unlock(&a->core->mu);
    return out;
}

void sim_api_views_free_locked(sim_api *a)
{
    cJSON_Delete(a->views);
    a->views = NULL;
}

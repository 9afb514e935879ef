/* api_prompt.c — layer 3 (API): session_prompt: a prompt body checked as
 * OpenCode would, then stored (noReply: no turn, no events) or run or queued
 * by the agents; in the frame of api_frame.c (fault, record). Uses
 * api_frame.c, api_calls.c, the agents, the storage and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Is body a prompt body OpenCode would accept? Returns NULL or the reason. */
static const char *bad_body(const cJSON *b)
{
    if (!cJSON_IsObject(b))
        return "prompt body is not a JSON object";
    const cJSON *parts = cJSON_GetObjectItemCaseSensitive(b, "parts");
    if (!cJSON_IsArray(parts))
        return "prompt body needs a \"parts\" array";
    const cJSON *p;
    cJSON_ArrayForEach (p, parts) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        if (!cJSON_IsObject(p) || !type)
            return "each part needs a \"type\"";
        if (strcmp(type, "text") == 0 && !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "text")))
            return "a text part needs a \"text\" string";
    }
    const cJSON *agent = cJSON_GetObjectItemCaseSensitive(b, "agent");
    if (agent && !cJSON_IsString(agent))
        return "\"agent\" must be a string";
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(b, "tools");
    if (tools && !cJSON_IsObject(tools))
        return "\"tools\" must be an object";
    const cJSON *nr = cJSON_GetObjectItemCaseSensitive(b, "noReply");
    if (nr && !cJSON_IsBool(nr))
        return "\"noReply\" must be a boolean";
    return NULL;
}

int sim_api_prompt(sim_api *a, const char *sid, const char *body_json, char **why)
{
    *why = NULL;
    cJSON *b = body_json ? cJSON_Parse(body_json) : NULL;
    const char *bad = b ? bad_body(b) : "prompt body is not valid JSON";
    if (bad) {
        cJSON_Delete(b);
        *why = sim_strdup(bad);
        return -EINVAL;
    }
    pthread_mutex_lock(&a->core->mu);
    sim_session *s = sim_find_live_locked(a->store, sid);
    if (!s) {
        cJSON_Delete(b);
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "noReply"))) {
        /* Stored without a model turn and, per the ABI, without events. */
        sim_session_append_locked(a->store, s, sim_user_message_locked(a->store, s, b));
        cJSON_Delete(b);
    } else {
        sim_agent_prompt_locked(a->agents, s, b);
    }
    pthread_mutex_unlock(&a->core->mu);
    if (!s) {
        *why = sim_api_msgf("Session not found: %s", sid);
        return -ENOENT;
    }
    return 0;
}

int sim_hf_session_prompt(void *ud, const char *sid, const char *body_json, char **out)
{
    sim_api *a = ud;
    if (out)
        *out = NULL;
    int64_t t = sim_wall_ms(a->core);
    char *body = sim_strdup(body_json);
    int rc = sim_api_call_begin(a, "session_prompt");
    if (rc)
        return sim_api_injected(a, "session_prompt", sid, body, rc, t, out);
    char *why = NULL;
    rc = sim_api_prompt(a, sid, body_json, &why);
    if (why)
        sim_api_set_out(out, why);
    return sim_api_finish(a, "session_prompt", sid, body, rc, t);
}

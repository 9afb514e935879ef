/* agent_scripts.c — layer 2 (agents), its lowest file: the script rules a
 * test adds (sim_script) and the choice of a prompt's steps among them. Uses
 * the core only. */
#include "sim_agent_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sim_agents_script(sim_agents *ag, const char *match, const char *script_json, int once)
{
    cJSON *j = script_json ? cJSON_Parse(script_json) : NULL;
    if (!j || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "steps"))) {
        cJSON_Delete(j);
        return -EINVAL;
    }
    const cJSON *st;
    cJSON_ArrayForEach (st, cJSON_GetObjectItemCaseSensitive(j, "steps")) {
        if (!cJSON_IsObject(st)) {
            cJSON_Delete(j);
            return -EINVAL;
        }
    }
    sim_rule *r = sim_xcalloc(1, sizeof *r);
    r->match = sim_strdup(match ? match : "");
    r->script = j;
    r->once = once;
    pthread_mutex_lock(&ag->core->mu);
    sim_rule **pp = &ag->rules;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
    pthread_mutex_unlock(&ag->core->mu);
    return 0;
}

static void rule_free(sim_rule *r)
{
    free(r->match);
    cJSON_Delete(r->script);
    free(r);
}

void sim_agent_rules_free_locked(sim_agents *ag)
{
    while (ag->rules) {
        sim_rule *r = ag->rules;
        ag->rules = r->next;
        rule_free(r);
    }
}

cJSON *sim_agent_choose_steps_locked(sim_agents *ag, const char *text)
{
    for (sim_rule **pp = &ag->rules; *pp; pp = &(*pp)->next) {
        sim_rule *r = *pp;
        if (*r->match && !strstr(text, r->match))
            continue;
        cJSON *steps = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r->script, "steps"), 1);
        if (r->once) {
            *pp = r->next;
            rule_free(r);
        }
        return steps;
    }
    cJSON *steps = cJSON_CreateArray();
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddStringToObject(reply, "reply", "ok");
    cJSON_AddItemToArray(steps, reply);
    return steps;
}

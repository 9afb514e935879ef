/* api_perm_rules.c — layer 3 (API), low: the permission rules, shaped like
 * OpenCode's "permission" config: per permission an action or a
 * {pattern: action} map, wildcards, the last matching rule winning, and what
 * an "always" answer approved for good; the decision (allow, ask, deny) for a
 * request. Uses the core only. */
#include "sim_api_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* OpenCode's wildcard: '*' any run of characters, '?' one; a pattern that
 * ends in " *" also matches without its tail ("ls *" matches "ls"). */
static int wild(const char *s, const char *p)
{
    for (; *p; p++, s++) {
        if (*p == '*') {
            if (p[1] == '\0')
                return 1;
            for (; *s; s++)
                if (wild(s, p + 1))
                    return 1;
            return wild(s, p + 1);
        }
        if (!*s || (*p != '?' && *p != *s))
            return 0;
    }
    return *s == '\0';
}

static int wildcard(const char *s, const char *p)
{
    size_t n = strlen(p);
    if (n >= 2 && strcmp(p + n - 2, " *") == 0) {
        char *head = sim_strdup(p);
        head[n - 2] = '\0';
        int m = strcmp(s, head) == 0;
        free(head);
        if (m)
            return 1;
    }
    return wild(s, p);
}

/* The action for one pattern: the last matching rule wins; none → allow (as
 * OpenCode's default configuration). mu held. */
static const char *evaluate_locked(sim_api *a, const char *perm, const char *pattern)
{
    const char *action = "allow";
    const cJSON *rule;
    cJSON_ArrayForEach (rule, a->perm_rules) {
        if (!wildcard(perm, rule->string))
            continue;
        if (cJSON_IsString(rule)) {
            action = rule->valuestring;
            continue;
        }
        const cJSON *pr;
        cJSON_ArrayForEach (pr, rule) {
            if (cJSON_IsString(pr) && wildcard(pattern, pr->string))
                action = pr->valuestring;
        }
    }
    return action;
}

/* Approved for good in this session by an earlier "always"? mu held. */
static int approved_locked(sim_api *a, const char *session, const char *perm, const char *pattern)
{
    const cJSON *pair;
    cJSON_ArrayForEach (pair, cJSON_GetObjectItemCaseSensitive(a->perm_always, session)) {
        const char *p = cJSON_GetStringValue(cJSON_GetArrayItem(pair, 0));
        const char *pat = cJSON_GetStringValue(cJSON_GetArrayItem(pair, 1));
        if (p && pat && strcmp(p, perm) == 0 && wildcard(pattern, pat))
            return 1;
    }
    return 0;
}

const char *sim_api_perm_decide_locked(sim_api *a, const char *session, const char *perm, const cJSON *patterns)
{
    int ask = 0;
    const cJSON *p;
    cJSON_ArrayForEach (p, patterns) {
        const char *pat = cJSON_GetStringValue(p);
        const char *action = pat ? evaluate_locked(a, perm, pat) : "deny";
        if (strcmp(action, "deny") == 0)
            return "deny";
        if (strcmp(action, "ask") == 0 && !approved_locked(a, session, perm, pat))
            ask = 1;
    }
    return ask ? "ask" : "allow";
}

int sim_api_perm_rules(sim_api *a, const char *rules_json)
{
    cJSON *rules = rules_json ? cJSON_Parse(rules_json) : cJSON_CreateObject();
    if (!cJSON_IsObject(rules)) {
        cJSON_Delete(rules);
        return -EINVAL;
    }
    const cJSON *r;
    cJSON_ArrayForEach (r, rules) {
        if (!cJSON_IsString(r) && !cJSON_IsObject(r)) {
            cJSON_Delete(rules);
            return -EINVAL;
        }
    }
    pthread_mutex_lock(&a->core->mu);
    cJSON_Delete(a->perm_rules);
    a->perm_rules = rules;
    pthread_mutex_unlock(&a->core->mu);
    return 0;
}

/* options.c — see options.h. One table row per integer option. */
#include "base/options.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct int_option {
    const char *name;
    size_t offset;
    int min, max, def;
} int_option;

static const int_option int_options[] = {
    {"poll_interval_ms", offsetof(options, poll_interval_ms), 50, 600000, 1000},
    {"notify_max_chars", offsetof(options, notify_max_chars), 200, 1000000, 4000},
    {"notify_retries", offsetof(options, notify_retries), 0, 20, 4},
    {"notify_retry_ms", offsetof(options, notify_retry_ms), 1, 60000, 250},
    {"fork_tool_chars", offsetof(options, fork_tool_chars), 100, 1000000, 1500},
    {"fork_max_tokens", offsetof(options, fork_max_tokens), 1000, 10000000, 100000},
    {"shell_output_cap", offsetof(options, shell_output_cap), 1024, 64 * 1024 * 1024, 1024 * 1024},
    {"shell_kill_grace_ms", offsetof(options, shell_kill_grace_ms), 0, 60000, 2000},
    {"max_running_agents", offsetof(options, max_running_agents), 1, 100000, 5},
    {"max_running_shells", offsetof(options, max_running_shells), 1, 100000, 8},
    {"max_queued", offsetof(options, max_queued), 0, 100000, 20},
    {"max_depth", offsetof(options, max_depth), 1, OPTIONS_MAX_DEPTH, 1},
    {"max_task_tokens", offsetof(options, max_task_tokens), 1000, 2000000000, 20000000},
    {"max_tool_calls", offsetof(options, max_tool_calls), 1, 1000000, 1000},
    {"max_repeat_calls", offsetof(options, max_repeat_calls), 2, 1000, 5},
    {"stale_ms", offsetof(options, stale_ms), 1000, 86400000, 1200000},
    {"max_runtime_ms", offsetof(options, max_runtime_ms), 1000, 604800000, 14400000},
    {"auto_background_ms", offsetof(options, auto_background_ms), 0, 86400000, 60000},
};
#define N_INT_OPTIONS (sizeof int_options / sizeof int_options[0])

/* Numbers that need not be whole (amounts of money). */
typedef struct num_option {
    const char *name;
    size_t offset;
    double min, max, def;
    const char *unit;
} num_option;

static const num_option num_options[] = {
    {"max_task_cost_usd", offsetof(options, max_task_cost_usd), 0.01, 1000000, 5, "US dollars"},
    {"max_session_cost_usd", offsetof(options, max_session_cost_usd), 0.01, 1000000, 20, "US dollars"},
};
#define N_NUM_OPTIONS (sizeof num_options / sizeof num_options[0])

typedef struct bool_option {
    const char *name;
    size_t offset;
    bool def;
} bool_option;

static const bool_option bool_options[] = {
    {"face_opencode", offsetof(options, face_opencode), true},
    {"face_claude", offsetof(options, face_claude), true},
    {"store", offsetof(options, store), true},
};
#define N_BOOL_OPTIONS (sizeof bool_options / sizeof bool_options[0])

void options_default(options *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < N_INT_OPTIONS; i++)
        *(int *)((char *)o + int_options[i].offset) = int_options[i].def;
    for (size_t i = 0; i < N_NUM_OPTIONS; i++)
        *(double *)((char *)o + num_options[i].offset) = num_options[i].def;
    for (size_t i = 0; i < N_BOOL_OPTIONS; i++)
        *(bool *)((char *)o + bool_options[i].offset) = bool_options[i].def;
    o->wake = WAKE_LAST;
}

int options_agent_cap(const options *o, const char *agent)
{
    for (int i = 0; agent && i < o->agent_cap_count; i++)
        if (strcmp(o->agent_caps[i].agent, agent) == 0)
            return o->agent_caps[i].max;
    return 0;
}

/* max_running_per_agent: {"explore": 3, ...} */
static int parse_agent_caps(options *o, const cJSON *item, char *err, size_t err_size)
{
    if (!cJSON_IsObject(item)) {
        snprintf(err, err_size,
                 "option 'max_running_per_agent' must be an object of agent names to caps, "
                 "like {\"explore\": 3}");
        return -EINVAL;
    }
    o->agent_cap_count = 0;
    for (const cJSON *c = item->child; c; c = c->next) {
        double v = c->valuedouble;
        if (!cJSON_IsNumber(c) || v != floor(v) || v < 1 || v > 1000) {
            snprintf(err, err_size,
                     "option 'max_running_per_agent': the cap of '%s' must be a whole number "
                     "from 1 to 1000",
                     c->string);
            return -EINVAL;
        }
        if (!*c->string || strlen(c->string) >= AGENT_NAME_MAX || o->agent_cap_count == AGENT_CAPS_MAX) {
            snprintf(err, err_size,
                     "option 'max_running_per_agent': at most %d agents, names of 1 to %d "
                     "characters",
                     AGENT_CAPS_MAX, AGENT_NAME_MAX - 1);
            return -EINVAL;
        }
        agent_cap *ac = &o->agent_caps[o->agent_cap_count++];
        snprintf(ac->agent, sizeof ac->agent, "%s", c->string);
        ac->max = (int)v;
    }
    return 0;
}

/* isolation: "none", "worktree" or "worktree_with_changes". */
static int parse_isolation(options *o, const cJSON *item, char *err, size_t err_size)
{
    static const char *const names[] = {"none", "worktree", "worktree_with_changes"};
    const char *v = cJSON_GetStringValue(item);
    for (int i = 0; v && i < 3; i++)
        if (strcmp(v, names[i]) == 0) {
            o->isolation = i;
            return 0;
        }
    snprintf(err, err_size, "option 'isolation' must be \"none\", \"worktree\" or \"worktree_with_changes\"");
    return -EINVAL;
}

/* on_collision: "warn" or "refuse" (engine/collide.h). */
static int parse_on_collision(options *o, const cJSON *item, char *err, size_t err_size)
{
    const char *v = cJSON_GetStringValue(item);
    if (v && (strcmp(v, "warn") == 0 || strcmp(v, "refuse") == 0)) {
        o->refuse_collisions = strcmp(v, "refuse") == 0;
        return 0;
    }
    snprintf(err, err_size, "option 'on_collision' must be \"warn\" or \"refuse\"");
    return -EINVAL;
}

/* store_path: an absolute file name ("" for the host's data_dir). */
static int parse_store_path(options *o, const cJSON *item, char *err, size_t err_size)
{
    const char *v = cJSON_GetStringValue(item);
    if (!v || (*v && *v != '/') || strlen(v) >= sizeof o->store_path) {
        snprintf(err, err_size,
                 "option 'store_path' must be an absolute file name (under %d bytes), or \"\" "
                 "for the host's data directory",
                 OPTIONS_PATH_MAX);
        return -EINVAL;
    }
    snprintf(o->store_path, sizeof o->store_path, "%s", v);
    return 0;
}

static int parse_num(options *o, const num_option *no, const cJSON *item, char *err, size_t err_size)
{
    double v = item->valuedouble;
    if (!cJSON_IsNumber(item) || !isfinite(v) || v < no->min || v > no->max) {
        snprintf(err, err_size, "option '%s' must be a number from %.15g to %.15g (%s)", no->name, no->min, no->max,
                 no->unit);
        return -EINVAL;
    }
    *(double *)((char *)o + no->offset) = v;
    return 0;
}

static int parse_one(options *o, const cJSON *item, char *err, size_t err_size)
{
    const char *key = item->string;
    for (size_t i = 0; i < N_INT_OPTIONS; i++) {
        const int_option *io = &int_options[i];
        if (strcmp(key, io->name) != 0)
            continue;
        double v = item->valuedouble;
        if (!cJSON_IsNumber(item) || v != floor(v) || v < io->min || v > io->max) {
            snprintf(err, err_size, "option '%s' must be a whole number from %d to %d", key, io->min, io->max);
            return -EINVAL;
        }
        *(int *)((char *)o + io->offset) = (int)v;
        return 0;
    }
    for (size_t i = 0; i < N_NUM_OPTIONS; i++)
        if (strcmp(key, num_options[i].name) == 0)
            return parse_num(o, &num_options[i], item, err, err_size);
    for (size_t i = 0; i < N_BOOL_OPTIONS; i++) {
        if (strcmp(key, bool_options[i].name) != 0)
            continue;
        if (!cJSON_IsBool(item)) {
            snprintf(err, err_size, "option '%s' must be true or false", key);
            return -EINVAL;
        }
        *(bool *)((char *)o + bool_options[i].offset) = cJSON_IsTrue(item);
        return 0;
    }
    if (strcmp(key, "wake") == 0) {
        const char *v = cJSON_GetStringValue(item);
        if (v && strcmp(v, "last") == 0)
            o->wake = WAKE_LAST;
        else if (v && strcmp(v, "always") == 0)
            o->wake = WAKE_ALWAYS;
        else {
            snprintf(err, err_size, "option 'wake' must be \"last\" or \"always\"");
            return -EINVAL;
        }
        return 0;
    }
    if (strcmp(key, "isolation") == 0)
        return parse_isolation(o, item, err, err_size);
    if (strcmp(key, "on_collision") == 0)
        return parse_on_collision(o, item, err, err_size);
    if (strcmp(key, "max_running_per_agent") == 0)
        return parse_agent_caps(o, item, err, err_size);
    if (strcmp(key, "store_path") == 0)
        return parse_store_path(o, item, err, err_size);
    /* Unknown: noted, not refused (see options.h). Echo at most 40 bytes of it. */
    size_t used = strlen(o->unknown);
    if (used + 48 < sizeof o->unknown)
        snprintf(o->unknown + used, sizeof o->unknown - used, "%s'%.40s%s'", used ? ", " : "", key,
                 strlen(key) > 40 ? "…" : "");
    else if (used + 6 < sizeof o->unknown && !strstr(o->unknown, ", …"))
        snprintf(o->unknown + used, sizeof o->unknown - used, ", …");
    (void)err;
    (void)err_size;
    return 0;
}

int options_parse(options *o, const char *json, char *err, size_t err_size)
{
    options_default(o);
    if (!json || !*json)
        return 0;
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        snprintf(err, err_size, "plugin options must be a JSON object");
        cJSON_Delete(root);
        return -EINVAL;
    }
    options parsed = *o;
    int rc = 0;
    for (const cJSON *item = root->child; item && rc == 0; item = item->next)
        rc = parse_one(&parsed, item, err, err_size);
    if (rc == 0 && !parsed.face_opencode && !parsed.face_claude) {
        snprintf(err, err_size, "options 'face_opencode' and 'face_claude' are both false: no tool would be left");
        rc = -EINVAL;
    }
    if (rc == 0)
        *o = parsed;
    cJSON_Delete(root);
    return rc;
}

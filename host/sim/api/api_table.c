/* api_table.c — layer 3 (API), its top file: the host table (ocp.h) the
 * plugins get, pointing to the host functions of api_sessions.c,
 * api_prompt.c and api_dirs.c and to the small ones here: log, free, now_ms,
 * and ask_permission's frame (its work is api_permission.c's); the API's
 * setup and teardown. Uses api_sessions.c, api_prompt.c, api_dirs.c,
 * api_permission.c, api_frame.c, api_calls.c, the agents and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void h_log(void *ud, enum ocp_log_level level, const char *message)
{
    sim_api *a = ud;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    const char *lv = (unsigned)level < 4 ? names[level] : "unknown";
    int64_t t = sim_wall_ms(a->core);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "level", lv);
    cJSON_AddStringToObject(args, "message", message ? message : "");
    char *body = sim_api_args_text(args);
    /* Only shown when asked: a test's TAP output stays readable. */
    if (getenv("OCBG_SIM_LOG"))
        fprintf(stderr, "# [plugin %s] %s\n", lv, message ? message : "");
    sim_api_call_record(a, "log", NULL, body, 0, t);
    free(body);
}

static void h_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

static int64_t h_now_ms(void *ud)
{
    sim_api *a = ud;
    /* Not recorded: plugins read the clock far too often for a useful record. */
    return sim_wall_ms(a->core);
}

static int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "permission", req && req->permission ? req->permission : "");
    cJSON_AddStringToObject(args, "patterns", req && req->patterns_json ? req->patterns_json : "");
    const char *sid = ctx ? ctx->session_id : NULL;
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "ask_permission", sid, args, out, &t, &body);
    if (rc)
        return rc;
    if (!req || req->struct_size < sizeof *req) {
        sim_api_set_out(out, sim_strdup("malformed permission request"));
        rc = -EINVAL;
    } else {
        rc = sim_api_ask_permission(a, ctx, req, out);
    }
    return sim_api_finish(a, "ask_permission", sid, body, rc, t);
}

/* A notice to the user (a toast in OpenCode): recorded, with its level,
 * title and message, as "notify_user" (sim_calls counts them). */
static int h_notify_user(void *ud, enum ocp_notice_level level, const char *title, const char *message)
{
    sim_api *a = ud;
    static const char *const names[] = {"info", "success", "warning", "error"};
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "level", (unsigned)level < 4 ? names[level] : "unknown");
    cJSON_AddStringToObject(args, "title", title ? title : "");
    cJSON_AddStringToObject(args, "message", message ? message : "");
    char *body = sim_api_args_text(args);
    if (getenv("OCBG_SIM_LOG"))
        fprintf(stderr, "# [toast %s] %s\n", names[(unsigned)level < 4 ? level : 0], message ? message : "");
    sim_api_call_record(a, "notify_user", NULL, body, 0, sim_wall_ms(a->core));
    free(body);
    return 0;
}

/* The table, as the plugins get it. */
static void fill(sim_api *a)
{
    ocp_host *t = &a->table;
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->abi_major = OCP_ABI_MAJOR;
    t->abi_minor = OCP_ABI_MINOR;
    t->userdata = a;
    t->host_name = "ocbg-sim";
    t->host_version = "0.1.0";
    t->session_create = sim_hf_session_create;
    t->session_get = sim_hf_session_get;
    t->session_messages = sim_hf_session_messages;
    t->session_prompt = sim_hf_session_prompt;
    t->session_abort = sim_hf_session_abort;
    t->session_status = sim_hf_session_status;
    t->session_fork = sim_hf_session_fork;
    t->log = h_log;
    t->free = h_free;
    t->now_ms = h_now_ms;
    t->ask_permission = h_ask_permission;
    t->notify_user = h_notify_user;
    t->publish_view = sim_api_publish_view;
    t->session_create_in = sim_hf_session_create_in;
    t->directory_watch = sim_hf_directory_watch;
}

void sim_api_init(sim_api *a, sim_agents *agents)
{
    memset(a, 0, sizeof *a);
    a->core = agents->core;
    a->store = agents->store;
    a->agents = agents;
    a->perm_rules = cJSON_CreateObject();
    a->perm_always = cJSON_CreateObject();
    a->perm_log = cJSON_CreateArray();
    fill(a);
    agents->callbacks.ask = sim_api_ask_step_locked;
    agents->callbacks.turn_gone = sim_api_turn_gone_locked;
    agents->callbacks.perm_ctx = a;
}

void sim_api_free_locked(sim_api *a)
{
    sim_api_calls_free_locked(a);
    sim_api_perm_free_locked(a);
    sim_api_views_free_locked(a);
    free(a->data_dir);
    a->data_dir = NULL;
}

int sim_api_without(sim_api *a, const char *fn)
{
    int rc = 0;
    pthread_mutex_lock(&a->core->mu);
    if (strcmp(fn, "session_fork") == 0)
        a->table.session_fork = NULL;
    else if (strcmp(fn, "now_ms") == 0)
        a->table.now_ms = NULL;
    else if (strcmp(fn, "ask_permission") == 0)
        a->table.ask_permission = NULL;
    else if (strcmp(fn, "notify_user") == 0)
        a->table.notify_user = NULL;
    else if (strcmp(fn, "publish_view") == 0)
        a->table.publish_view = NULL;
    else if (strcmp(fn, "session_create_in") == 0)
        a->table.session_create_in = NULL;
    else if (strcmp(fn, "directory_watch") == 0)
        a->table.directory_watch = NULL;
    else
        rc = -1;
    pthread_mutex_unlock(&a->core->mu);
    return rc;
}

int sim_api_abi(sim_api *a, int minor)
{
    /* Where each minor's table ends: the offset of the next minor's first
     * field (1.0 ends after now_ms, which it has as an optional field). */
    static const size_t ends[] = {
        offsetof(ocp_host, ask_permission), offsetof(ocp_host, data_dir),          offsetof(ocp_host, notify_user),
        offsetof(ocp_host, publish_view),   offsetof(ocp_host, session_create_in), sizeof(ocp_host),
    };
    if (minor < 0 || minor > OCP_ABI_MINOR || (size_t)minor >= sizeof ends / sizeof ends[0])
        return -EINVAL;
    pthread_mutex_lock(&a->core->mu);
    fill(a);
    ocp_host *t = &a->table;
    t->data_dir = a->data_dir;
    t->abi_minor = (uint16_t)minor;
    t->struct_size = (uint32_t)ends[minor];
    /* The fields past the end are NULL as well, so a plugin that reads one
     * without OCP_HAS_FIELD finds nothing rather than a working function. */
    if (ends[minor] < sizeof *t)
        memset((char *)t + ends[minor], 0, sizeof *t - ends[minor]);
    pthread_mutex_unlock(&a->core->mu);
    return 0;
}

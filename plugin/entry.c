/* entry.c — ocp_plugin_entry: checks the host, builds the plugin table, and
 * routes the table's calls to the tools, the hooks and the engine. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/collide.h"
#include "engine/engine.h"
#include "engine/persist.h"
#include "engine/view.h"
#include "hooks/events.h"
#include "fork/fork.h"
#include "face/tools.h"
#include "ops/ops.h"
#include "base/util.h"

#define OCBG_VERSION "0.1.0"

/* The instance: the engine plus what the table points to. */
typedef struct instance {
    engine eng; /* first: the table's userdata is the instance */
    ocp_tool *tools;
    const tool_spec **specs;
    size_t ntools;
} instance;

static void set_err(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t size, const char *fmt, ...)
{
    if (!err || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
}

static const tool_spec *find_tool(instance *in, const char *name)
{
    for (size_t i = 0; i < in->ntools; i++)
        if (name && strcmp(in->specs[i]->name, name) == 0)
            return in->specs[i];
    return NULL;
}

/* Every call into the plugin from a host worker is counted, so that shutdown
 * can wait until none is left inside. Returns false when shutting down. */
static bool enter_call(engine *eng)
{
    engine_lock(eng);
    bool ok = !eng->stopping;
    if (ok)
        eng->calls_in_flight++;
    engine_unlock(eng);
    return ok;
}

static void leave_call(engine *eng)
{
    engine_lock(eng);
    if (--eng->calls_in_flight == 0 && eng->stopping)
        pthread_cond_broadcast(&eng->drain_cv);
    engine_unlock(eng);
}

static int plugin_tool_call(void *ud, const char *tool, const char *args_json, ocp_call_ctx *ctx, char **out)
{
    instance *in = ud;
    engine *eng = &in->eng;
    *out = NULL;
    const tool_spec *spec = find_tool(in, tool);
    if (!spec) {
        *out = xasprintf("Unknown tool: %.*s%s", ECHO(tool ? tool : "(null)"));
        return -ENOENT;
    }
    if (!ctx) {
        *out = xasprintf("%s: called without a call context", spec->name);
        return -EINVAL;
    }
    if (!enter_call(eng)) {
        *out = xstrdup("ocbg is shutting down.");
        return -ECANCELED;
    }
    /* Notifications the host would not take earlier ride on this answer. */
    engine_lock(eng);
    char *held = ctx->session_id ? engine_take_held(eng, ctx->session_id) : NULL;
    engine_unlock(eng);

    cJSON *args = NULL;
    char *err = NULL;
    int rc = tool_args_check(spec, args_json, &args, &err);
    strbuf answer = {0};
    if (rc != 0) {
        sb_puts(&answer, err);
        free(err);
    } else {
        rc = spec->run(eng, args, ctx, &answer);
        cJSON_Delete(args);
    }
    if (held) {
        sb_puts(&answer, held);
        free(held);
    }
    /* What the answer tells the model (a task id, a result taken) is on
     * disk before the model sees it. */
    engine_lock(eng);
    persist_sync(eng);
    engine_unlock(eng);
    *out = sb_take(&answer);
    leave_call(eng);
    return rc;
}

static void plugin_tool_cancel(void *ud, ocp_call_ctx *ctx)
{
    instance *in = ud;
    if (ctx)
        engine_cancel_wait(&in->eng, ctx);
}

static const ocp_command commands[] = {
    {"tasks", "List this session's background tasks: shell commands and agents"},
    {"bashes", "Deprecated: use /tasks"},
};

static int plugin_command_call(void *ud, const char *command, const char *arguments, ocp_call_ctx *ctx, char **out)
{
    instance *in = ud;
    engine *eng = &in->eng;
    const char *name = command && command[0] == '/' ? command + 1 : command;
    if (!name || (strcmp(name, "tasks") != 0 && strcmp(name, "bashes") != 0)) {
        *out = xasprintf("Unknown command: /%.*s%s", ECHO(name ? name : "(null)"));
        return -ENOENT;
    }
    if (!enter_call(eng)) {
        *out = xstrdup("ocbg is shutting down.");
        return -ECANCELED;
    }
    strbuf sb = {0};
    int rc = command_tasks(eng, name, arguments ? arguments : "", ctx, &sb);
    *out = sb_take(&sb);
    leave_call(eng);
    return rc;
}

static void plugin_on_event(void *ud, const char *event_json)
{
    instance *in = ud;
    decoded_event d;
    if (event_decode(event_json, &d))
        engine_note(&in->eng, &d.note);
    event_free(&d);
}

/* Whether plugin_transform_messages would rewrite session_id's history: the
 * host then skips serializing every other session's (ABI 1.3). */
static int plugin_wants_messages(void *ud, const char *session_id)
{
    instance *in = ud;
    engine *eng = &in->eng;
    engine_lock(eng);
    task *t = session_id ? registry_find_session(&eng->reg, session_id) : NULL;
    int wants = t && t->forked;
    engine_unlock(eng);
    return wants;
}

/* A forked task's session: its model sees the inherited context processed
 * (tool results cut, oldest messages dropped). Every other session: unchanged. */
static int plugin_transform_messages(void *ud, const char *session_id, const char *messages_json, char **out)
{
    instance *in = ud;
    engine *eng = &in->eng;
    *out = NULL;
    engine_lock(eng);
    task *t = session_id ? registry_find_session(&eng->reg, session_id) : NULL;
    bool forked = t && t->forked;
    fork_limits lim = {(size_t)eng->opt.fork_tool_chars, (size_t)eng->opt.fork_max_tokens};
    engine_unlock(eng);
    if (!forked)
        return 0;
    return fork_process(messages_json, &lim, out, NULL);
}

/* Before a host runs a tool call that edits files (ocp.h tool_before):
 * a collision with another writer of the same launching session is
 * warned, or refused (engine/collide.h). */
static int plugin_tool_before(void *ud, const char *session_id, const char *tool, const char *args_json, char **out)
{
    instance *in = ud;
    return collide_tool_before(&in->eng, session_id, tool, args_json, out);
}

/* A request from the person through the host's UI (ocp.h ui_request). */
static int plugin_ui_request(void *ud, const char *request_json, char **out)
{
    instance *in = ud;
    engine *eng = &in->eng;
    *out = NULL;
    if (!enter_call(eng)) {
        *out = xstrdup("ocbg is shutting down.");
        return -ECANCELED;
    }
    strbuf sb = {0};
    int rc = -EINVAL;
    cJSON *req = request_json ? cJSON_Parse(request_json) : NULL;
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "task_id"));
    if (!cJSON_IsObject(req) || !action) {
        sb_puts(&sb, "A request is a JSON object with a string \"action\".");
    } else if (strcmp(action, "sync") == 0) {
        engine_lock(eng);
        view_sync_all(eng);
        engine_unlock(eng);
        rc = 0;
    } else if ((strcmp(action, "stop") == 0 || strcmp(action, "detail") == 0) && !id) {
        sb_printf(&sb, "The %s request needs a string \"task_id\".", action);
    } else if (strcmp(action, "stop") == 0) {
        rc = op_panel_stop(eng, id, &sb);
    } else if (strcmp(action, "detail") == 0) {
        rc = op_panel_detail(eng, id, &sb);
    } else {
        sb_printf(&sb, "Unknown action \"%.40s\" (sync, stop or detail).", action);
    }
    cJSON_Delete(req);
    *out = sb.len ? sb_take(&sb) : NULL;
    sb_free(&sb);
    leave_call(eng);
    return rc;
}

static void free_instance(instance *in)
{
    for (size_t i = 0; i < in->ntools; i++)
        free((char *)in->tools[i].parameters_json);
    free(in->tools);
    free(in->specs);
    free(in);
}

static void plugin_shutdown(void *ud)
{
    instance *in = ud;
    engine_stop(&in->eng);
    free_instance(in);
}

static void plugin_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

/* The host functions the plugin cannot work without, by name. */
static const char *missing_host_function(const ocp_host *h)
{
    if (!h->session_create)
        return "session_create";
    if (!h->session_get)
        return "session_get";
    if (!h->session_messages)
        return "session_messages";
    if (!h->session_prompt)
        return "session_prompt";
    if (!h->session_abort)
        return "session_abort";
    if (!h->session_status)
        return "session_status";
    if (!h->log)
        return "log";
    if (!h->free)
        return "free";
    return NULL;
}

/* Is the host's table one this plugin can use? If not, err says why. */
static bool host_ok(const ocp_host *host, char *err, size_t err_size)
{
    if (host->abi_major != OCP_ABI_MAJOR) {
        set_err(err, err_size, "ocbg: the host speaks ocp ABI %u.%u; this plugin needs ABI %d.x",
                (unsigned)host->abi_major, (unsigned)host->abi_minor, OCP_ABI_MAJOR);
        return false;
    }
    if (host->struct_size < OCP_HOST_MIN_SIZE) {
        set_err(err, err_size, "ocbg: the host table is too small (%u bytes; ABI %d.0 needs at least %u)",
                (unsigned)host->struct_size, OCP_ABI_MAJOR, (unsigned)OCP_HOST_MIN_SIZE);
        return false;
    }
    const char *missing = missing_host_function(host);
    if (missing) {
        set_err(err, err_size, "ocbg: the host table has no %s function", missing);
        return false;
    }
    return true;
}

/* The plugin table: the tools of the faces the options turn on (one
 * registry serves both), the commands, the entry points. */
static void build_table(instance *in)
{
    engine *eng = &in->eng;
    const options opt = eng->opt;
    /* The faces the options turn on: one registry serves both. */
    size_t max = background_tool_count + claude_tool_count;
    in->specs = xcalloc(max, sizeof *in->specs);
    in->tools = xcalloc(max, sizeof *in->tools);
    for (size_t i = 0; opt.face_opencode && i < background_tool_count; i++)
        in->specs[in->ntools++] = &background_tools[i];
    for (size_t i = 0; opt.face_claude && i < claude_tool_count; i++)
        in->specs[in->ntools++] = &claude_tools[i];
    for (size_t i = 0; i < in->ntools; i++) {
        in->tools[i].name = in->specs[i]->name;
        in->tools[i].description = in->specs[i]->description;
        in->tools[i].parameters_json = tool_schema_json(in->specs[i]);
    }

    ocp_plugin *t = &eng->table;
    t->struct_size = sizeof *t;
    t->abi_major = OCP_ABI_MAJOR;
    t->abi_minor = OCP_ABI_MINOR;
    t->userdata = in;
    t->name = "ocbg";
    t->version = OCBG_VERSION;
    t->tool_count = in->ntools;
    t->tools = in->tools;
    eng->api.tools = in->tools;
    eng->api.tool_count = in->ntools;
    t->command_count = sizeof commands / sizeof commands[0];
    t->commands = commands;
    t->tool_call = plugin_tool_call;
    t->tool_cancel = plugin_tool_cancel;
    t->command_call = plugin_command_call;
    t->on_event = plugin_on_event;
    t->transform_messages = plugin_transform_messages;
    t->shutdown = plugin_shutdown;
    t->free = plugin_free;
    t->event_types = hook_event_types;
    t->event_type_count = hook_event_type_count;
    t->wants_messages = plugin_wants_messages;
    t->ui_request = plugin_ui_request;
    t->tool_before = plugin_tool_before;
}

__attribute__((visibility("default"))) const ocp_plugin *
ocp_plugin_entry(const ocp_host *host, const char *options_json, char *err, size_t err_size)
{
    if (!host) {
        set_err(err, err_size, "ocbg: no host table given");
        return NULL;
    }
    if (!host_ok(host, err, err_size))
        return NULL;
    options opt;
    char why[512];
    if (options_parse(&opt, options_json, why, sizeof why) != 0) {
        set_err(err, err_size, "ocbg: invalid options: %s", why);
        return NULL;
    }

    instance *in = xcalloc(1, sizeof *in);
    engine *eng = &in->eng;
    /* Copy what the host's table holds; fields of a newer minor it lacks stay
     * NULL, fields of a newer host we do not know are ignored. */
    memcpy(&eng->api.host, host, host->struct_size < sizeof eng->api.host ? host->struct_size : sizeof eng->api.host);
    eng->api.host.struct_size = (uint32_t)sizeof eng->api.host;
    eng->opt = opt;
    if (opt.unknown[0]) /* shown once the worker runs: the user is told, not only the log */
        eng->toast.warning = xasprintf("ocbg ignored unknown option%s %s in its plugin options (written for a newer "
                                       "ocbg, or misspelt?)",
                                       strchr(opt.unknown, ',') ? "s" : "", opt.unknown);

    build_table(in);

    int rc = engine_start(eng, agent_runner_open, shell_runner_open);
    if (rc != 0) {
        set_err(err, err_size, "ocbg: could not start its worker thread: %s", strerror(rc));
        free_instance(in);
        return NULL;
    }
    return &eng->table;
}

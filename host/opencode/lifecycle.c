/*
 * lifecycle.c — init(input, options, z): load ocbg.so from the addon's own
 * directory, give it the host table, build the hooks object; dispose(): shut
 * the plugin down on a thread of its own; and the Node-API module entry (the
 * only symbols the addon exports).
 */
#include "adapter.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* shutdown                                                                  */
/* ------------------------------------------------------------------------ */

/* [js] Releases both thread-safe functions once (later host calls get
 * -ECANCELED). The adapter stays allocated. The dispose call's settled. */
static void release_tsfns(adapter *ad)
{
    pthread_mutex_lock(&ad->mu);
    int already = ad->tsfn_gone;
    ad->tsfn_gone = 1;
    pthread_mutex_unlock(&ad->mu);
    if (already)
        return;
    napi_release_threadsafe_function(ad->host_tsfn, napi_tsfn_abort);
    napi_release_threadsafe_function(ad->done_tsfn, napi_tsfn_abort);
    /* the adapter itself stays allocated: a late plugin thread may still read
     * ad->tsfn_gone (the plugin was shut down, so none should). */
}

/* The shutdown thread: never on the JS thread, because plugin->shutdown waits
 * for plugin threads that may be blocked in host calls served by that thread. */
static void *shutdown_main(void *arg)
{
    call *c = arg;
    adapter *ad = c->ad;
    pthread_mutex_lock(&ad->mu);
    ad->closing = 1; /* no new on_event / transform / tool_cancel / tool_call */
    /* open permission questions end now: shutdown waits for their tool calls */
    asks_cancel(ad, NULL, "ocbg is shutting down");
    pthread_mutex_unlock(&ad->mu);
    ui_stop(ad); /* no panel request runs during or after the plugin's shutdown */
    ad->plugin->shutdown(ad->plugin->userdata);
    pthread_mutex_lock(&ad->mu);
    while (ad->workers > 0)
        pthread_cond_wait(&ad->cv, &ad->mu);
    pthread_mutex_unlock(&ad->mu);
    if (ad->dl)
        dlclose(ad->dl);
    ad->dl = NULL;
    if (napi_call_threadsafe_function(ad->done_tsfn, c, napi_tsfn_blocking) != napi_ok)
        call_free(NULL, c);
    return NULL;
}

static napi_value hook_dispose(napi_env env, napi_callback_info info)
{
    void *data;
    napi_get_cb_info(env, info, NULL, NULL, NULL, &data);
    adapter *ad = data;
    pthread_mutex_lock(&ad->mu);
    int started = ad->closing;
    ad->closing = 1;
    pthread_mutex_unlock(&ad->mu);
    if (started)
        return resolved(env);
    call *c = call_new(ad, CALL_DISPOSE);
    if (!c)
        return resolved(env);
    c->settled = release_tsfns; /* once its promise is resolved */
    napi_value promise;
    napi_create_promise(env, &c->deferred, &promise);
    pending_add(env, ad, 1); /* the loop stays alive until shutdown has finished */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &attr, shutdown_main, c) != 0) {
        napi_resolve_deferred(env, c->deferred, js_undefined(env));
        call_free(env, c);
    }
    pthread_attr_destroy(&attr);
    return promise;
}

/* ------------------------------------------------------------------------ */
/* init(input, options, z) -> hooks                                          */
/* ------------------------------------------------------------------------ */

static void finalize_free(napi_env env, void *data, void *hint)
{
    (void)env;
    (void)hint;
    free(data);
}

static int plugin_path(char *buf, size_t n)
{
    Dl_info info;
    if (!dladdr((void *)plugin_path, &info) || !info.dli_fname)
        return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
    const char *dir = slash ? info.dli_fname : ".";
    if (snprintf(buf, n, "%.*s/%s", dirlen, dir, PLUGIN_FILE) >= (int)n)
        return -1;
    return 0;
}

/* The options the plugin gets: the user's (JSON text, or NULL when none were
 * given), with "face_claude": false added unless the user set face_claude, or
 * set face_opencode to false (then the Claude face is all that is left).
 * Why: OpenCode has its own `bash` and `task` tools, and the model would see
 * `Bash`/`bash` and `Task`/`task` side by side, differing only by case.
 * Text that is not a JSON object is passed on unchanged (the plugin refuses
 * it with its own message). Returns malloc'd text, or NULL (no options). */
static char *plugin_options(const char *user_json)
{
    cJSON *o = user_json ? cJSON_Parse(user_json) : cJSON_CreateObject();
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return xstrdup(user_json);
    }
    if (!cJSON_HasObjectItem(o, "face_claude") && !cJSON_IsFalse(cJSON_GetObjectItem(o, "face_opencode")))
        cJSON_AddFalseToObject(o, "face_claude");
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text ? text : xstrdup(user_json);
}

/* A new adapter, on the JS thread; NULL when out of memory. */
static adapter *adapter_new(napi_env env)
{
    adapter *ad = calloc(1, sizeof *ad);
    if (!ad)
        return NULL;
    ad->env = env;
    ad->js_thread = pthread_self();
    pthread_mutex_init(&ad->mu, NULL);
    pthread_mutex_init(&ad->dirs_mu, NULL);
    pthread_cond_init(&ad->cv, NULL);
    pthread_cond_init(&ad->ui_cv, NULL);
    const char *lv = getenv("OCBG_LOG_LEVEL");
    ad->log_level = lv ? atoi(lv) : OCP_LOG_INFO;
    return ad;
}

/* dlopens ocbg.so from the addon's directory into ad->dl and finds its entry
 * point. NULL, with a JS exception thrown and nothing left open, on failure. */
static ocp_plugin_entry_fn plugin_open(napi_env env, adapter *ad)
{
    char path[4096];
    if (plugin_path(path, sizeof path) != 0) {
        throw_msg(env, "ocbg: cannot find the addon's own directory");
        return NULL;
    }
    ad->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!ad->dl) {
        char *m = xprintf("ocbg: cannot load %s: %s", path, dlerror());
        throw_msg(env, m ? m : "ocbg: cannot load ocbg.so");
        free(m);
        return NULL;
    }
    ocp_plugin_entry_fn entry = (ocp_plugin_entry_fn)dlsym(ad->dl, OCP_ENTRY_SYMBOL);
    if (!entry) {
        char *m = xprintf("ocbg: %s has no %s", path, OCP_ENTRY_SYMBOL);
        throw_msg(env, m ? m : "ocbg: no entry point");
        free(m);
        dlclose(ad->dl);
        ad->dl = NULL;
    }
    return entry;
}

/* host_tsfn and done_tsfn. They exist before the plugin starts: its threads
 * may call the host at once. Unref'd: they never keep OpenCode alive.
 * 0, or -1. */
static int tsfns_create(napi_env env, adapter *ad)
{
    napi_value name = js_str(env, "ocbg");
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, ad, host_tsfn_call, &ad->host_tsfn) !=
            napi_ok ||
        napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, NULL, NULL, ad, done_tsfn_call, &ad->done_tsfn) !=
            napi_ok)
        return -1;
    napi_unref_threadsafe_function(env, ad->host_tsfn);
    napi_unref_threadsafe_function(env, ad->done_tsfn);
    return 0;
}

/* Starts the plugin with init()'s options, and copies what must outlive its
 * table: free and userdata (a worker that shutdown released frees its answer
 * after the table is gone). 0, or -1 with a JS exception thrown, the TSFNs
 * released and the plugin unloaded. */
static int plugin_start(napi_env env, adapter *ad, ocp_plugin_entry_fn entry, napi_value options)
{
    char *user_opts = NULL;
    if (options && (js_is(env, options, napi_object)))
        user_opts = js_stringify(env, options);
    char *opts = plugin_options(user_opts);
    free(user_opts);
    char err[512] = "";
    ad->plugin = entry(&ad->host, opts, err, sizeof err);
    free(opts);
    if (!ad->plugin) {
        char *m = xprintf("ocbg: the plugin refused to load: %s", err[0] ? err : "(no reason given)");
        release_tsfns(ad);
        dlclose(ad->dl);
        throw_msg(env, m ? m : "ocbg: the plugin refused to load");
        free(m);
        return -1;
    }
    ad->plugin_free = ad->plugin->free;
    ad->plugin_ud = ad->plugin->userdata;
    return 0;
}

/* hooks.tool: {name: {description, args, execute}} for each plugin tool. */
static napi_value tools_object(napi_env env, adapter *ad, napi_value z)
{
    napi_value tools;
    napi_create_object(env, &tools);
    for (size_t i = 0; i < ad->plugin->tool_count; i++) {
        const ocp_tool *t = &ad->plugin->tools[i];
        tool_ref *tr = calloc(1, sizeof *tr + strlen(t->name) + 1);
        if (!tr)
            continue;
        tr->ad = ad;
        strcpy(tr->name, t->name);
        napi_value def;
        napi_create_object(env, &def);
        napi_set_named_property(env, def, "description", js_str(env, t->description));
        napi_set_named_property(env, def, "args", tool_args(env, z, t->parameters_json));
        napi_value fn = add_fn(env, def, "execute", tool_execute, tr);
        napi_add_finalizer(env, fn, tr, finalize_free, NULL, NULL);
        napi_set_named_property(env, tools, t->name, def);
    }
    return tools;
}

/* Copies the plugin's commands: hooks read them after shutdown (dlclose). */
static void commands_copy(adapter *ad)
{
    ad->ncmd = ad->plugin->command_count;
    ad->cmd_name = calloc(ad->ncmd + 1, sizeof *ad->cmd_name);
    ad->cmd_desc = calloc(ad->ncmd + 1, sizeof *ad->cmd_desc);
    if (!ad->cmd_name || !ad->cmd_desc)
        ad->ncmd = 0;
    for (size_t i = 0; i < ad->ncmd; i++) {
        ad->cmd_name[i] = xstrdup(ad->plugin->commands[i].name);
        ad->cmd_desc[i] = xstrdup(ad->plugin->commands[i].description ? ad->plugin->commands[i].description : "");
    }
}

/* Fault injection for make e2e: OCBG_TEST_DROP_EVENTS="a,b" names event
 * types never handed to the plugin, as if the host had lost them. Unset in
 * use. */
static bool dropped_for_tests(const char *type)
{
    const char *p = getenv("OCBG_TEST_DROP_EVENTS");
    size_t n = strlen(type);
    while (p && *p) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, type, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Copies what an ABI 1.3 plugin says a host may skip: its event types (read
 * on every event, also after the table is gone; less any dropped for tests)
 * and wants_messages. */
static void skips_copy(adapter *ad)
{
    const ocp_plugin *p = ad->plugin;
    if (!OCP_HAS_FIELD(ocp_plugin, p, wants_messages))
        return;
    ad->wants_messages = p->wants_messages;
    if (!p->event_types || p->event_type_count == 0)
        return;
    char **types = calloc(p->event_type_count, sizeof *types);
    if (!types)
        return;
    size_t kept = 0;
    for (size_t i = 0; i < p->event_type_count; i++)
        if (!dropped_for_tests(p->event_types[i]))
            types[kept++] = xstrdup(p->event_types[i]);
    ad->event_types = types;
    ad->nevent_types = kept;
}

/* The hooks object init() returns; only the hooks the plugin can serve. */
static napi_value hooks_object(napi_env env, adapter *ad, napi_value z)
{
    napi_value hooks;
    napi_create_object(env, &hooks);
    napi_set_named_property(env, hooks, "tool", tools_object(env, ad, z));
    add_fn(env, hooks, "event", hook_event, ad);
    if (ad->plugin->transform_messages)
        add_fn(env, hooks, "experimental.chat.messages.transform", hook_transform, ad);
    commands_copy(ad);
    skips_copy(ad);
    if (ad->ncmd > 0) {
        add_fn(env, hooks, "config", hook_config, ad);
        add_fn(env, hooks, "command.execute.before", hook_command, ad);
    }
    if (OCP_HAS_FIELD(ocp_plugin, ad->plugin, tool_before) && ad->plugin->tool_before) {
        add_fn(env, hooks, "tool.execute.before", hook_tool_before, ad);
        add_fn(env, hooks, "tool.execute.after", hook_tool_after, ad);
    }
    add_fn(env, hooks, "dispose", hook_dispose, ad);
    return hooks;
}

/* Whether dir is the folder of a task (no ocbg is started there): one an
 * adapter of this process watched, or one inside the project's data
 * directory, where ocbg makes its worktrees (this holds after a restart,
 * when an instance there may start before the one that made it). */
static int is_task_folder(const char *dir, const char *data_dir)
{
    size_t n = data_dir ? strlen(data_dir) : 0;
    return dir && (dirs_is_task_folder(dir) || (n > 0 && strncmp(dir, data_dir, n) == 0 && dir[n] == '/'));
}

/* project_data_dir of the input's project id. */
static char *input_data_dir(napi_env env, napi_value input, char **why)
{
    char *project_id = js_string(env, js_get(env, js_get(env, input, "project"), "id"));
    char *dir = project_data_dir(project_id, why);
    free(project_id);
    return dir;
}

/* The owner of task folder dir when it can take calls (not closing), or
 * NULL. On the JS thread: dispose, which begins the owner's closing, runs
 * here too, so an owner found open keeps its plugin table while the hooks
 * are built. */
static adapter *open_owner(const char *dir)
{
    adapter *owner = dirs_owner_of(dir);
    if (!owner)
        return NULL;
    pthread_mutex_lock(&owner->mu);
    int closing = owner->closing;
    pthread_mutex_unlock(&owner->mu);
    return closing ? NULL : owner;
}

/* The hooks of a copy loaded for a task's folder (a directory a copy in
 * this process watches or made a session in, ABI 1.5): no plugin started
 * here. A second ocbg there would count depth, caps and budgets from zero
 * and register in the same store (the project is the same). So the tools
 * and the edit hooks are those of the copy that owns the folder: every call
 * of a session there (the task's, and the tasks it launches) is carried out
 * by the owner's plugin, with this instance's ToolContext (its folder, its
 * ask()). No event hook: the owner follows the folder's events already. No
 * owner in this process (after a restart, an instance made there before the
 * owner's): none at all. Takes dir. */
static napi_value task_folder_copy(napi_env env, char *dir, napi_value z)
{
    adapter *owner = open_owner(dir);
    char *line = xprintf("ocbg: %s is the folder of a task of the ocbg instance that made it: %s", dir,
                         owner ? "this copy passes its tool calls to that instance"
                               : "this copy stays idle (that instance is not loaded)");
    stderr_log(OCP_LOG_INFO, line ? line : "ocbg: a task's folder");
    free(line);
    free(dir);
    napi_value hooks;
    napi_create_object(env, &hooks);
    if (!owner)
        return hooks;
    napi_set_named_property(env, hooks, "tool", tools_object(env, owner, z));
    if (OCP_HAS_FIELD(ocp_plugin, owner->plugin, tool_before) && owner->plugin->tool_before) {
        add_fn(env, hooks, "tool.execute.before", hook_tool_before, owner);
        add_fn(env, hooks, "tool.execute.after", hook_tool_after, owner);
    }
    return hooks;
}

/* init(input, options, z, watcher): z is zod (ocbg.js finds it) or
 * undefined; watcher is ocbg.js's {watch(opts)} (directory_watch), or
 * undefined (then directory_watch fails). */
static napi_value addon_init(napi_env env, napi_callback_info info)
{
    size_t argc = 4;
    napi_value argv[4] = {NULL, NULL, NULL, NULL};
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    napi_value input = argc >= 1 ? argv[0] : NULL;
    napi_value options = argc >= 2 ? argv[1] : NULL;
    napi_value z = argc >= 3 && js_is(env, argv[2], napi_object) ? argv[2] : NULL;
    napi_value client = js_get(env, input, "client");
    if (!client)
        return throw_msg(env, "ocbg: the plugin input has no SDK client");
    char *why = NULL, *data_dir = input_data_dir(env, input, &why);
    char *dir = js_string(env, js_get(env, input, "directory"));
    if (is_task_folder(dir, data_dir)) { /* the copy that watches it gets its events */
        free(data_dir);
        free(why);
        return task_folder_copy(env, dir, z);
    }
    free(dir);

    adapter *ad = adapter_new(env);
    ocp_plugin_entry_fn entry = ad ? plugin_open(env, ad) : NULL;
    if (!entry) {
        free(ad);
        free(data_dir);
        free(why);
        return ad ? NULL : throw_msg(env, "ocbg: out of memory");
    }
    host_table_init(ad);
    ad->data_dir = data_dir;
    ad->host.data_dir = ad->data_dir; /* NULL: ocbg keeps its tasks in memory (it logs so) */
    if (tsfns_create(env, ad) != 0) {
        dlclose(ad->dl);
        free(ad->data_dir);
        free(why);
        free(ad);
        return throw_msg(env, "ocbg: napi_create_threadsafe_function failed");
    }
    napi_create_reference(env, client, 1, &ad->client_ref);
    if (argc >= 4 && js_is(env, argv[3], napi_object))
        napi_create_reference(env, argv[3], 1, &ad->watcher_ref);
    ad->directory = js_string(env, js_get(env, input, "directory"));
    if (z)
        napi_create_reference(env, z, 1, &ad->zod_ref);
    if (plugin_start(env, ad, entry, options) != 0) {
        free(why);
        return NULL; /* ad leaks on purpose: queued tsfn finalisation may read it */
    }
    napi_value hooks = hooks_object(env, ad, z);
    if (why) {
        char *line = xprintf("ocbg: no directory for the task store (%s): tasks live in memory only", why);
        h_log(ad, OCP_LOG_WARN, line ? line : "ocbg: no directory for the task store");
        free(line);
        free(why);
    }
    if (!z)
        h_log(ad, OCP_LOG_WARN,
              "ocbg: no zod (neither node_modules/zod beside ocbg.js nor @opencode-ai/plugin): "
              "every tool argument is required");
    return hooks;
}

static napi_value module_init(napi_env env, napi_value exports)
{
    napi_value fn;
    napi_create_function(env, "init", NAPI_AUTO_LENGTH, addon_init, NULL, &fn);
    napi_set_named_property(env, exports, "init", fn);
    return exports;
}

/* What NAPI_MODULE() expands to, with prototypes (-Wmissing-prototypes). */
NAPI_MODULE_EXPORT int32_t node_api_module_get_api_version_v1(void);
NAPI_MODULE_EXPORT napi_value napi_register_module_v1(napi_env env, napi_value exports);

NAPI_MODULE_EXPORT int32_t node_api_module_get_api_version_v1(void)
{
    return NAPI_VERSION;
}

NAPI_MODULE_EXPORT napi_value napi_register_module_v1(napi_env env, napi_value exports)
{
    return module_init(env, exports);
}

/* The ocp ABI as a host meets it: loading refusals with readable reasons, an
 * older (smaller) host table, the plugin table's contents, exactly one
 * exported symbol, and load → shutdown → dlclose many times. */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static char so_path[4096];

static void *open_plugin(ocp_plugin_entry_fn *entry)
{
    void *dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        bail_out("dlopen %s: %s", so_path, dlerror());
    *entry = (ocp_plugin_entry_fn)dlsym(dl, OCP_ENTRY_SYMBOL);
    if (!*entry)
        bail_out("no %s in %s", OCP_ENTRY_SYMBOL, so_path);
    return dl;
}

static void refusals(sim_host *h)
{
    ocp_plugin_entry_fn entry;
    void *dl = open_plugin(&entry);
    char err[256];
    ocp_host host = *sim_table(h);

    host.abi_major = OCP_ABI_MAJOR + 1;
    host.abi_minor = 0;
    err[0] = '\0';
    ok(entry(&host, NULL, err, sizeof err) == NULL, "a host of another ABI major is refused");
    like(err, "the host speaks ocp ABI 2.0; this plugin needs ABI 1.x", "the reason names both versions");

    host = *sim_table(h);
    host.struct_size = OCP_HOST_MIN_SIZE - 8;
    ok(entry(&host, NULL, err, sizeof err) == NULL, "a host table smaller than 1.0's is refused");
    like(err, "the host table is too small", "the reason says the table is too small");

    host = *sim_table(h);
    host.session_status = NULL;
    ok(entry(&host, NULL, err, sizeof err) == NULL, "a host without session_status is refused");
    like(err, "the host table has no session_status function", "the reason names the function");

    host = *sim_table(h);
    ok(entry(&host, J("{'poll_interval_ms':'fast'}"), err, sizeof err) == NULL, "bad options are refused");
    like(err, "ocbg: invalid options: option 'poll_interval_ms' must be a whole number from 50 to 600000",
         "the reason names the option and its range");
    /* An unknown key (a config written for a newer ocbg) is a warning
     * (test_toast), not a refusal that would take every tool away. */
    const ocp_plugin *p = entry(&host, J("{'pol_interval_ms':100}"), err, sizeof err);
    ok(p != NULL, "an unknown option does not refuse the load");
    if (p) {
        /* ABI 1.3: what a host may skip. */
        ok(OCP_HAS_FIELD(ocp_plugin, p, wants_messages), "the plugin table has the 1.3 fields");
        int idle = 0, text_delta = 0;
        for (size_t i = 0; i < p->event_type_count; i++) {
            idle |= strcmp(p->event_types[i], "session.idle") == 0;
            text_delta |= strcmp(p->event_types[i], "message.part.delta") == 0;
        }
        ok(p->event_type_count == 8 && idle && !text_delta, "event_types: the 8 types on_event reads");
        is_int(p->wants_messages(p->userdata, "ses_not_a_task"), 0,
               "wants_messages: not for a session it did not fork");
        p->shutdown(p->userdata);
    }
    ok(entry(&host, "[]", err, sizeof err) == NULL, "options that are not an object are refused");
    ok(entry(NULL, NULL, err, sizeof err) == NULL, "no host table is refused");
    ok(entry(&host, "[]", NULL, 0) == NULL, "a refusal with no error buffer is still a refusal");
    dlclose(dl);
}

static void older_host_table(sim_host *h)
{
    ocp_plugin_entry_fn entry;
    void *dl = open_plugin(&entry);
    ocp_host host = *sim_table(h);
    /* A 1.0 host compiled before now_ms existed: the table ends before it. */
    host.struct_size = OCP_HOST_MIN_SIZE;
    host.now_ms = (int64_t(*)(void *))(uintptr_t)0xdead; /* beyond the table: must not be read */
    char err[256] = "";
    const ocp_plugin *p = entry(&host, NULL, err, sizeof err);
    ok(p != NULL, "a table ending at OCP_HOST_MIN_SIZE loads: %s", err);
    if (p) {
        char *session = sim_session_new(h, NULL, "main");
        ocp_call_ctx ctx = {.struct_size = sizeof ctx, .session_id = session};
        char *out = NULL;
        int rc = p->tool_call(p->userdata, "background_list", "{}", &ctx, &out);
        is_int(rc, 0, "a tool call works without the host clock");
        is_str(out, "No background tasks found", "and answers");
        p->free(p->userdata, out);
        p->shutdown(p->userdata);
        free(session);
    }
    dlclose(dl);
}

static void plugin_table(sim_host *h)
{
    is_int(sim_plugin_count(h), 1, "the host loaded one plugin from the plugin directory");
    const ocp_plugin *p = sim_plugin(h, 0);
    is_str(p->name, "ocbg", "plugin name");
    ok(p->version && *p->version, "plugin version %s", p->version);
    is_int(p->abi_major, OCP_ABI_MAJOR, "plugin ABI major");
    ok(p->struct_size >= sizeof(ocp_plugin), "plugin table size");
    static const char *const names[] = {"background_task",
                                        "background_output",
                                        "background_cancel",
                                        "background_list",
                                        "background_clear",
                                        "background_resume",
                                        "background_block",
                                        "background_send",
                                        "background_monitor",
                                        "Task",
                                        "Bash",
                                        "TaskOutput",
                                        "TaskStop",
                                        "Monitor"};
    is_int(p->tool_count, 14, "nine tools of the OpenCode face, five of the Claude face");
    for (size_t i = 0; i < 14 && i < p->tool_count; i++) {
        is_str(p->tools[i].name, names[i], "tool %zu name", i);
        ok(p->tools[i].description && strlen(p->tools[i].description) > 20, "%s has a description", names[i]);
        cJSON *s = cJSON_Parse(p->tools[i].parameters_json);
        ok(cJSON_IsObject(s) && cJSON_IsObject(cJSON_GetObjectItem(s, "properties")),
           "%s schema is a JSON Schema object", names[i]);
        cJSON_Delete(s);
    }
    cJSON *s = cJSON_Parse(p->tools[1].parameters_json);
    char *req = cJSON_PrintUnformatted(cJSON_GetObjectItem(s, "required"));
    is_str(req, J("['task_id']"), "background_output: only task_id is required");
    cJSON *block = cJSON_GetObjectItem(cJSON_GetObjectItem(s, "properties"), "block");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(block, "type")), "boolean", "block is a boolean");
    free(req);
    cJSON_Delete(s);
    s = cJSON_Parse(p->tools[0].parameters_json);
    req = cJSON_PrintUnformatted(cJSON_GetObjectItem(s, "required"));
    /* description and agent are required only in launch mode: the handler checks them. */
    is_str(req, J("['prompt']"), "background_task: only prompt is required by the schema");
    free(req);
    cJSON_Delete(s);
}

/* Each face can be turned off; BashOutput and KillBash never exist. */
static void faces(sim_host *h)
{
    ocp_plugin_entry_fn entry;
    void *dl = open_plugin(&entry);
    char err[256];
    const ocp_plugin *p = entry(sim_table(h), J("{'face_claude':false}"), err, sizeof err);
    ok(p != NULL, "face_claude false loads");
    if (p) {
        is_int(p->tool_count, 9, "only the OpenCode face's nine tools");
        is_str(p->tools[p->tool_count - 1].name, "background_monitor", "ending with background_monitor");
        p->shutdown(p->userdata);
    }
    p = entry(sim_table(h), J("{'face_opencode':false}"), err, sizeof err);
    ok(p != NULL, "face_opencode false loads");
    if (p) {
        is_int(p->tool_count, 5, "only the Claude face's five tools");
        is_str(p->tools[0].name, "Task", "starting with Task");
        p->shutdown(p->userdata);
    }
    ok(entry(sim_table(h), J("{'face_opencode':false,'face_claude':false}"), err, sizeof err) == NULL,
       "both faces off is refused");
    like(err, "no tool would be left", "saying why");
    p = sim_plugin(h, 0);
    int bash_output = 0;
    for (size_t i = 0; i < p->tool_count; i++)
        bash_output |= strcmp(p->tools[i].name, "BashOutput") == 0 || strcmp(p->tools[i].name, "KillBash") == 0;
    ok(!bash_output, "BashOutput and KillBash are never registered");
    is_int(p->command_count, 2, "two commands");
    is_str(p->commands[0].name, "tasks", "/tasks");
    is_str(p->commands[1].name, "bashes", "/bashes (deprecated)");
    dlclose(dl);
}

static void one_exported_symbol(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' | awk '{print $3}'", so_path);
    FILE *f = popen(cmd, "r");
    if (!f) {
        skip(1, "nm not available");
        return;
    }
    char buf[4096] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    pclose(f);
    is_str(buf, "ocp_plugin_entry\n", "ocbg.so exports exactly ocp_plugin_entry");
}

static void load_unload_many(void)
{
    int rounds = 100, good = 0;
    for (int i = 0; i < rounds; i++) {
        sim_host *h = sim_create();
        if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), NULL) == 1) {
            char *session = sim_session_new(h, NULL, "main");
            char *out = NULL;
            if (sim_tool(h, session, "background_list", "{}", &out) == 0)
                good++;
            free(out);
            free(session);
        }
        sim_destroy(h); /* shutdown, then dlclose */
    }
    is_int(good, rounds, "load → call → shutdown → dlclose %d times", rounds);
}

int main(void)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir)
        bail_out("OCBG_PLUGIN_DIR is not set");
    snprintf(so_path, sizeof so_path, "%s/ocbg.so", dir);
    sim_host *h = t_host(NULL);
    refusals(h);
    older_host_table(h);
    plugin_table(h);
    faces(h);
    sim_destroy(h);
    one_exported_symbol();
    load_unload_many();
    return done_testing();
}

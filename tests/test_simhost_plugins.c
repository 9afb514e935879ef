/* test_simhost_plugins.c — the simulated host's side of the plugin ABI:
 * tool calls and their context, blocking calls and cancellation, commands,
 * sim_wait, the model-input transform, many sessions at once, loading
 * (refusals, several plugins) and unloading with plugin threads busy, seen
 * through the recorder test plugin (simtest.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simtest.h"

/* Wait until n block calls wait inside plugin 0. */
static int pred_waiting(sim_host *h, void *arg)
{
    char *out = NULL;
    sim_tool(h, "x", "waiting", "{}", &out);
    int n = out ? atoi(out) : -1;
    free(out);
    return n >= *(int *)arg;
}

static void test_tool_calls(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *out = NULL;
    is_int(sim_tool(h, "ses_abc", "ctx", "{}", &out), 0, "ctx tool");
    cJSON *c = cJSON_Parse(out);
    free(out);
    is_str(jstr(c, "session_id"), "ses_abc", "ctx session");
    is_str(jstr(c, "agent"), "build", "ctx agent");
    like(jstr(c, "message_id"), "msg_", "ctx message id");
    like(jstr(c, "call_id"), "call_", "ctx call id");
    char *cwd = getcwd(NULL, 0);
    is_str(jstr(c, "directory"), cwd, "ctx directory = cwd");
    free(cwd);
    is_int(jnum(c, "struct_size", 0), sizeof(ocp_call_ctx), "ctx struct_size");
    cJSON_Delete(c);

    out = NULL;
    is_int(sim_tool(h, "ses_abc", "nope", "{}", &out), -ENOENT, "unknown tool: the plugin's rc");
    is_str(out, "unknown tool", "and its text");
    free(out);
    out = NULL;
    is_int(sim_command(h, "ses_abc", "rec", "a b", &out), 0, "command call");
    is_str(out, "rec:a b", "command output");
    free(out);

    sim_call *call = sim_tool_start(h, "ses_abc", "block", "{}");
    ok(call != NULL, "blocking call started");
    int rc = 0, one = 1, four = 4;
    out = NULL;
    is_int(sim_wait(h, pred_waiting, &one, tap_timeout_ms(5000)), 0, "it waits in the plugin");
    is_int(sim_tool_wait(call, 30, &rc, &out), -ETIMEDOUT, "it blocks");
    ok(!sim_tool_done(call), "not done");
    sim_tool_cancel(call);
    is_int(sim_tool_wait(call, tap_timeout_ms(5000), &rc, &out), 0, "cancel ends the wait");
    is_int(rc, -ECANCELED, "-ECANCELED");
    is_str(out, "cancelled", "cancel text");
    ok(sim_tool_done(call), "done");
    free(out);
    sim_tool_free(call);

    /* Cancelling at once (maybe before the plugin started waiting). */
    call = sim_tool_start(h, "ses_abc", "block", "{}");
    sim_tool_cancel(call);
    out = NULL;
    is_int(sim_tool_wait(call, tap_timeout_ms(5000), &rc, &out), 0, "early cancel still ends the call");
    is_int(rc, -ECANCELED, "early cancel: -ECANCELED");
    free(out);
    sim_tool_free(call);

    call = sim_tool_start(h, "ses_abc", "block", J("{'ms':20}"));
    out = NULL;
    is_int(sim_tool_wait(call, tap_timeout_ms(5000), &rc, &out), 0, "a timed block returns");
    is_int(rc, 0, "timed block rc 0");
    is_str(out, "timeout", "timed block text");
    free(out);
    sim_tool_free(call);

    /* Several calls at once, released by unloading (plugin shutdown). */
    sim_call *calls[4];
    for (int i = 0; i < 4; i++)
        calls[i] = sim_tool_start(h, "ses_abc", "block", "{}");
    is_int(sim_wait(h, pred_waiting, &four, tap_timeout_ms(5000)), 0, "four calls blocked");
    sim_unload_plugins(h);
    int released = 0;
    for (int i = 0; i < 4; i++) {
        out = NULL;
        if (sim_tool_wait(calls[i], tap_timeout_ms(5000), &rc, &out) == 0 && rc == -ECANCELED)
            released++;
        free(out);
        sim_tool_free(calls[i]);
    }
    is_int(released, 4, "unloading releases every blocked call with -ECANCELED");
    is_int(sim_plugin_count(h), 0, "no plugins after unload");
    out = NULL;
    is_int(sim_tool(h, "s", "ctx", "{}", &out), -ENOENT, "tool call with no plugin: -ENOENT");
    free(out);
    t_close(&f);
}

static int pred_never(sim_host *h, void *arg)
{
    (void)h;
    (void)arg;
    return 0;
}

static int pred_counter(sim_host *h, void *arg)
{
    (void)h;
    return ++*(int *)arg >= 3;
}

static void test_wait_transform_scale(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    int64_t t0 = sim_now_ms(h);
    is_int(sim_wait(h, pred_never, NULL, 60), -ETIMEDOUT, "sim_wait times out");
    int64_t el = sim_now_ms(h) - t0;
    ok(el >= 55 && el < tap_timeout_ms(2000), "after about the timeout (%lld ms)", (long long)el);
    int n = 0;
    is_int(sim_wait(h, pred_counter, &n, tap_timeout_ms(5000)), 0, "re-checks without state changes (every 20 ms)");
    is_int(sim_wait_calls(h, "session_get", NULL, 1, 30), -ETIMEDOUT, "wait_calls times out");

    sim_tool(h, "x", "transform", J("{'marker':'INJECTED'}"), NULL);
    const char *s = t_session(&f, "tr");
    ok(sim_session_model_input(h, s) == NULL, "no model input before a turn");
    prompt_via_plugin(h, s, "look", 0);
    sim_wait_messages(h, s, 2, tap_timeout_ms(5000));
    char *mi = sim_session_model_input(h, s);
    like(mi, "INJECTED", "the model saw the plugin's transform");
    like(mi, "look", "and the prompt");
    free(mi);
    char *msgs = sim_session_messages_json(h, s);
    unlike(msgs, "INJECTED", "the stored history is unchanged");
    free(msgs);

    /* Many sessions at once on one scheduler thread. */
    int many = getenv("OCBG_UNDER_VALGRIND") ? 200 : 2000;
    sim_script(h, "bulk", J("{'steps':[{'tool':'read','ms':30},{'reply':'bulk done'}]}"), 0);
    sim_tool(h, "x", "transform", J("{'marker':''}"), NULL);
    char **ids = malloc(sizeof *ids * (size_t)many);
    for (int i = 0; i < many; i++)
        ids[i] = sim_session_new(h, NULL, "bulk");
    for (int i = 0; i < many; i++)
        prompt_via_plugin(h, ids[i], "bulk", 0);
    int all = 1;
    for (int i = 0; i < many; i++)
        all &= sim_wait_messages(h, ids[i], 2, tap_timeout_ms(20000)) == 0;
    ok(all, "%d concurrent sessions all finished", many);
    int idle = 1;
    for (int i = 0; i < many; i++)
        idle &= !sim_session_busy(h, ids[i]);
    ok(idle, "and are idle");
    sim_events_flush(h, tap_timeout_ms(20000));
    is_int(sim_events_delivered(h, "session.idle"), many + 1, "one session.idle per turn");
    for (int i = 0; i < many; i++)
        free(ids[i]);
    free(ids);
    t_close(&f);
}

struct min_calls {
    size_t n;
};

static int pred_status_calls(sim_host *h, void *arg)
{
    return sim_calls(h, "session_status", NULL) >= ((struct min_calls *)arg)->n;
}

static void test_loading_and_shutdown(void)
{
    sim_host *h = sim_create();
    is_int(sim_load_plugins(h, "/nonexistent/dir", NULL), -ENOENT, "missing dir: -ENOENT");
    is_str(sim_load_error(h), "", "no refusal yet");
    is_int(sim_load_plugins(h, rec_dir(), J("{'refuse':'no thanks'}")), 0, "refusing plugin not loaded");
    is_str(sim_load_error(h), "no thanks", "its reason kept");
    is_int(sim_load_plugins(h, rec_dir(), J("{'bogus':1}")), 0, "unknown option refused");
    like(sim_load_error(h), "unknown option: bogus", "reason names the option");
    is_int(sim_load_plugins(h, rec_dir(), J("{'abi_major':2}")), 0, "plugin of another ABI major refused");
    like(sim_load_error(h), "ABI major 2", "reason names the major");
    is_int(sim_plugin_count(h), 0, "nothing loaded");
    sim_destroy(h);

    /* Two instances (copies of the file) both get every event. */
    char dir[] = "/tmp/ocbg-simhost-XXXXXX";
    if (!mkdtemp(dir))
        bail_out("mkdtemp failed");
    const char *names[] = {"b.so", "a.so"};
    for (int i = 0; i < 2; i++) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/%s'", rec_so(), dir, names[i]);
        if (system(cmd) != 0)
            bail_out("copy failed");
    }
    char junk[4200];
    snprintf(junk, sizeof junk, "%s/readme.txt", dir);
    FILE *f = fopen(junk, "w");
    if (f)
        fclose(f);
    h = sim_create();
    is_int(sim_load_plugins(h, dir, NULL), 2, "two copies load as two plugins");
    is_int(sim_plugin_count(h), 2, "plugin count 2");
    sim_emit(h, J("{'type':'test.both','properties':{}}"));
    sim_events_flush(h, tap_timeout_ms(5000));
    int seen = 0;
    for (size_t i = 0; i < 2; i++) {
        const ocp_plugin *p = sim_plugin(h, i);
        ocp_call_ctx ctx = {.struct_size = sizeof ctx, .session_id = "s"};
        char *out = NULL;
        p->tool_call(p->userdata, "events", J("{'type':'test.both'}"), &ctx, &out);
        cJSON *a = cJSON_Parse(out);
        seen += cJSON_GetArraySize(a) == 1;
        cJSON_Delete(a);
        p->free(p->userdata, out);
    }
    is_int(seen, 2, "each plugin received the event once");

    /* Unload while plugin threads are inside (slow) host calls and a tool
     * call is blocked: host calls keep working until shutdown returns. */
    sim_slow(h, "session_status", 15);
    char *out = NULL;
    is_int(sim_tool(h, "s", "hammer", J("{'threads':4,'fn':'session_status'}"), &out), 0, "hammer started");
    free(out);
    struct min_calls mc = {8};
    is_int(sim_wait(h, pred_status_calls, &mc, tap_timeout_ms(5000)), 0, "plugin threads are calling the host");
    sim_call *blocked = sim_tool_start(h, "s", "block", "{}");
    int rc = 0, one = 1;
    is_int(sim_wait(h, pred_waiting, &one, tap_timeout_ms(5000)), 0, "a call is blocked");
    sim_unload_plugins(h);
    ok(1, "unload with plugin threads mid host-call returned");
    out = NULL;
    is_int(sim_tool_wait(blocked, tap_timeout_ms(5000), &rc, &out), 0, "blocked call ended by the unload");
    is_int(rc, -ECANCELED, "with -ECANCELED");
    free(out);
    sim_tool_free(blocked);
    sim_destroy(h);

    /* And sim_destroy itself, with plugin threads creating sessions. */
    h = sim_create();
    is_int(sim_load_plugins(h, dir, NULL), 2, "reloaded");
    sim_slow(h, "session_create", 5);
    out = NULL;
    sim_tool(h, "s", "hammer", J("{'threads':3,'fn':'session_create'}"), &out);
    free(out);
    is_int(sim_wait_calls(h, "session_create", NULL, 6, tap_timeout_ms(5000)), 0, "plugin threads creating sessions");
    sim_destroy(h);
    ok(1, "destroy with plugin threads mid host-call returned");
    for (int i = 0; i < 2; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    unlink(junk);
    rmdir(dir);
}

int main(void)
{
    test_tool_calls();
    test_wait_transform_scale();
    test_loading_and_shutdown();
    return done_testing();
}

/*
 * hooks.c — OpenCode's hooks other than tools [js]: event -> on_event,
 * messages.transform -> transform_messages (both called under ad->mu, so
 * that none runs concurrently with shutdown), config (the plugin's slash
 * commands), command.execute.before (a command call on a worker), and
 * tool.execute.before/after (tool_before: an edit that collides).
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Whether the plugin reads events of ev's type (its ABI 1.3 event_types,
 * copied at init): the type is read into a stack buffer, and an event of
 * any other type is dropped before it is serialized. A request of the TUI
 * panel is taken here (ui.c), never passed on. */
static int reads_event(napi_env env, adapter *ad, napi_value ev)
{
    napi_value type;
    char buf[64];
    size_t len = 0;
    if (napi_get_named_property(env, ev, "type", &type) != napi_ok ||
        napi_get_value_string_utf8(env, type, buf, sizeof buf, &len) != napi_ok || len >= sizeof buf - 1)
        return !ad->event_types; /* no string type, or longer than any the plugin reads */
    char *request = ui_request_of(env, ev, buf);
    if (request) { /* the panel's thread runs it (a bounded queue) */
        ui_take(env, ad, request);
        return 0;
    }
    if (!ad->event_types)
        return 1;
    for (size_t i = 0; i < ad->nevent_types; i++)
        if (strcmp(ad->event_types[i], buf) == 0)
            return 1;
    return 0;
}

/* event({event}) — on_event on the JS thread; never blocks. */
napi_value hook_event(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value arg = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &arg, NULL, &data);
    adapter *ad = data;
    napi_value ev = argc >= 1 ? js_get(env, arg, "event") : NULL;
    char *json = ev && reads_event(env, ad, ev) ? js_stringify(env, ev) : NULL;
    if (json) {
        pthread_mutex_lock(&ad->mu);
        if (!ad->closing)
            ad->plugin->on_event(ad->plugin->userdata, json);
        pthread_mutex_unlock(&ad->mu);
        free(json);
    }
    return resolved(env);
}

/* experimental.chat.messages.transform(input, output{messages}).
 * OpenCode 1.18.33 passes input = {} and keeps using its own array, so the
 * session id comes from the messages and the array is replaced in place. */
napi_value hook_transform(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    napi_value input = argc >= 1 ? argv[0] : NULL, output = argc >= 2 ? argv[1] : NULL;
    napi_value msgs = js_get(env, output, "messages");
    bool is_arr = false;
    if (!msgs || napi_is_array(env, msgs, &is_arr) != napi_ok || !is_arr)
        return resolved(env);
    char *sid = js_string(env, js_get(env, input, "sessionID"));
    uint32_t n = 0;
    napi_get_array_length(env, msgs, &n);
    if (!sid && n > 0) {
        napi_value last, inf;
        napi_get_element(env, msgs, n - 1, &last);
        inf = js_get(env, last, "info");
        sid = js_string(env, js_get(env, inf, "sessionID"));
    }
    /* ABI 1.3: a history the plugin would not change is not serialized
     * (every model call of every other session: the cost must not grow with
     * the conversation). */
    int wants = 1;
    pthread_mutex_lock(&ad->mu);
    if (!ad->closing && ad->wants_messages)
        wants = ad->wants_messages(ad->plugin->userdata, sid);
    else if (ad->closing)
        wants = 0;
    pthread_mutex_unlock(&ad->mu);
    char *json = wants ? js_stringify(env, msgs) : NULL;
    char *out = NULL;
    int rc = -1;
    if (json) {
        /* under mu: shutdown cannot begin until the plugin's string is freed */
        pthread_mutex_lock(&ad->mu);
        if (!ad->closing) {
            rc = ad->plugin->transform_messages(ad->plugin->userdata, sid, json, &out);
            if (rc == 0 && out) {
                napi_value repl = js_parse(env, out);
                if (!repl || js_array_replace(env, msgs, repl) != 0)
                    stderr_log(OCP_LOG_WARN, "transform_messages returned something that is not a message array");
            }
            if (out)
                ad->plugin_free(ad->plugin_ud, out);
        }
        pthread_mutex_unlock(&ad->mu);
    }
    free(json);
    free(sid);
    return resolved(env);
}

/* config(cfg): adds the plugin's slash commands (cfg.command[name]) so that
 * OpenCode lists them; command.execute.before then runs them. */
napi_value hook_config(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value cfg = NULL;
    void *data;
    napi_get_cb_info(env, info, &argc, &cfg, NULL, &data);
    adapter *ad = data;
    if (argc < 1 || !js_is(env, cfg, napi_object))
        return resolved(env);
    napi_value cmds = js_get(env, cfg, "command");
    if (!cmds) {
        napi_create_object(env, &cmds);
        napi_set_named_property(env, cfg, "command", cmds);
    }
    for (size_t i = 0; i < ad->ncmd; i++) {
        if (js_get(env, cmds, ad->cmd_name[i]))
            continue; /* the user's own definition wins */
        napi_value def;
        napi_create_object(env, &def);
        char *tmpl = xprintf("/%s $ARGUMENTS (handled by the ocbg plugin)", ad->cmd_name[i]);
        napi_set_named_property(env, def, "template", js_str(env, tmpl));
        free(tmpl);
        napi_set_named_property(env, def, "description", js_str(env, ad->cmd_desc[i]));
        napi_set_named_property(env, cmds, ad->cmd_name[i], def);
    }
    return resolved(env);
}

/* command.execute.before({command, sessionID, arguments}, output{parts}) */
napi_value hook_command(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    char *name = argc >= 1 ? js_string(env, js_get(env, argv[0], "command")) : NULL;
    int ours = 0;
    for (size_t i = 0; name && i < ad->ncmd; i++)
        if (!strcmp(ad->cmd_name[i], name))
            ours = 1;
    napi_value parts = argc >= 2 ? js_get(env, argv[1], "parts") : NULL;
    if (!ours || !parts) {
        free(name);
        return resolved(env);
    }
    call *c = call_new(ad, CALL_COMMAND);
    if (!c) {
        free(name);
        return rejected(env, "ocbg: out of memory");
    }
    c->name = name;
    c->args = js_string(env, js_get(env, argv[0], "arguments"));
    c->s_session = js_string(env, js_get(env, argv[0], "sessionID"));
    call_set_ctx(c);
    napi_create_reference(env, parts, 1, &c->parts_ref);
    napi_value promise;
    napi_create_promise(env, &c->deferred, &promise);
    if (start_worker(env, ad, c) != 0) {
        napi_resolve_deferred(env, c->deferred, js_undefined(env));
        call_free(env, c);
    }
    return promise;
}

/* ------------------------------------------------------------------------ */
/* edits: tool.execute.before / after -> tool_before (ABI 1.5)               */
/* ------------------------------------------------------------------------ */

/* A warning waiting for its call's tool.execute.after. OpenCode runs no
 * after hook for a call that failed, so the list is capped. */
#define TOOL_NOTES_MAX 64
struct tool_note {
    struct tool_note *next;
    char *call_id, *text;
};

/* OpenCode 1.18.33's tools that edit files: the only calls tool_before is
 * asked about (ocp.h), so no other call's arguments are serialized. */
static int edits_files(const char *tool)
{
    return !strcmp(tool, "edit") || !strcmp(tool, "write") || !strcmp(tool, "apply_patch");
}

/* Keep text (owned from now) for call_id (copied); the oldest goes past the cap. */
static void note_keep(adapter *ad, const char *call_id, char *text)
{
    struct tool_note *n = calloc(1, sizeof *n);
    if (!n || !(n->call_id = xstrdup(call_id))) {
        free(n);
        free(text);
        return;
    }
    n->text = text;
    n->next = ad->notes;
    ad->notes = n;
    if (++ad->nnotes <= TOOL_NOTES_MAX)
        return;
    struct tool_note **pn = &ad->notes;
    while ((*pn)->next)
        pn = &(*pn)->next;
    free((*pn)->call_id);
    free((*pn)->text);
    free(*pn);
    *pn = NULL;
    ad->nnotes--;
}

/* The text kept for call_id (the caller's), or NULL. */
static char *note_take(adapter *ad, const char *call_id)
{
    for (struct tool_note **pn = &ad->notes; call_id && *pn; pn = &(*pn)->next) {
        struct tool_note *n = *pn;
        if (strcmp(n->call_id, call_id) != 0)
            continue;
        char *text = n->text;
        *pn = n->next;
        free(n->call_id);
        free(n);
        ad->nnotes--;
        return text;
    }
    return NULL;
}

napi_value hook_tool_before(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    char tool[32];
    size_t len = 0;
    napi_value tv = argc >= 2 ? js_get(env, argv[0], "tool") : NULL;
    if (!tv || napi_get_value_string_utf8(env, tv, tool, sizeof tool, &len) != napi_ok || !edits_files(tool))
        return resolved(env);
    char *sid = js_string(env, js_get(env, argv[0], "sessionID"));
    char *args = js_stringify(env, js_get(env, argv[1], "args"));
    char *out = NULL, *text = NULL;
    int rc = 0;
    pthread_mutex_lock(&ad->mu); /* no shutdown meanwhile: the table stays valid */
    if (!ad->closing && sid) {
        rc = ad->plugin->tool_before(ad->plugin->userdata, sid, tool, args ? args : "{}", &out);
        text = xstrdup(out);
        if (out)
            ad->plugin_free(ad->plugin_ud, out);
    }
    pthread_mutex_unlock(&ad->mu);
    free(sid);
    free(args);
    if (rc == -EACCES) { /* OpenCode fails the call with the thrown error's text */
        throw_msg(env, text ? text : "ocbg refused this edit");
        free(text);
        return NULL;
    }
    char *cid = text ? js_string(env, js_get(env, argv[0], "callID")) : NULL;
    if (text && cid)
        note_keep(ad, cid, text);
    else
        free(text);
    free(cid);
    return resolved(env);
}

napi_value hook_tool_after(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2] = {NULL, NULL};
    void *data;
    napi_get_cb_info(env, info, &argc, argv, NULL, &data);
    adapter *ad = data;
    if (!ad->notes || argc < 2 || !js_is(env, argv[1], napi_object))
        return resolved(env); /* nearly every call: nothing kept */
    char *cid = js_string(env, js_get(env, argv[0], "callID"));
    char *text = note_take(ad, cid);
    free(cid);
    if (!text)
        return resolved(env);
    char *prev = js_string(env, js_get(env, argv[1], "output"));
    char *joined = xprintf("%s%s%s", prev ? prev : "", prev && *prev ? "\n\n" : "", text);
    if (joined)
        napi_set_named_property(env, argv[1], "output", js_str(env, joined));
    free(joined);
    free(prev);
    free(text);
    return resolved(env);
}

/* test_simhost.c — the simulated host behaves like OpenCode: event order,
 * errors, aborts, queues, noReply, status map, fork, delete cascade, faults,
 * the call record, tool calls and cancellation, loading and unloading. It
 * drives the host through the recorder test plugin (tests/plugins/recorder.c),
 * so every host call here is a real plugin call through the ocp table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "simhost.h"
#include "tap.h"

static char recorder_dir[4096];
static char recorder_so[4200];

static int T(int ms)
{
    return tap_timeout_ms(ms);
}

static sim_host *host_with_recorder(void)
{
    sim_host *h = sim_create();
    if (!h)
        bail_out("sim_create failed");
    int n = sim_load_plugins(h, recorder_dir, NULL);
    if (n != 1)
        bail_out("recorder did not load from %s: %d %s", recorder_dir, n, sim_load_error(h));
    return h;
}

/* Call a host function through the recorder; returns {"rc":…,"out":…}. */
static cJSON *hostcall(sim_host *h, const char *args_json)
{
    char *out = NULL;
    int rc = sim_tool(h, "ses_caller", "host", args_json, &out);
    cJSON *j = rc == 0 && out ? cJSON_Parse(out) : NULL;
    if (!j)
        diag("host tool failed: rc %d out %s", rc, out ? out : "(null)");
    free(out);
    return j;
}

static int rc_of(const cJSON *r)
{
    return r ? (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "rc")) : -9999;
}

static const cJSON *out_of(const cJSON *r)
{
    return cJSON_GetObjectItemCaseSensitive(r, "out");
}

/* Prompt a session through the plugin with a text part. Returns the host rc. */
static int prompt(sim_host *h, const char *sid, const char *text, int no_reply)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "fn", "session_prompt");
    cJSON_AddStringToObject(a, "sessionID", sid);
    cJSON *body = cJSON_AddObjectToObject(a, "body");
    cJSON *part = cJSON_CreateObject();
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", text);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(body, "parts"), part);
    if (no_reply)
        cJSON_AddTrueToObject(body, "noReply");
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    cJSON *r = hostcall(h, s);
    free(s);
    int rc = rc_of(r);
    cJSON_Delete(r);
    return rc;
}

static int simple_call(sim_host *h, const char *fn, const char *sid, char **out_text)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "fn", fn);
    if (sid)
        cJSON_AddStringToObject(a, "sessionID", sid);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    cJSON *r = hostcall(h, s);
    free(s);
    int rc = rc_of(r);
    if (out_text) {
        const cJSON *o = out_of(r);
        *out_text = cJSON_IsString(o) ? strdup(o->valuestring) : cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(r);
    return rc;
}

/* The events the recorder saw about `sid`, as a compact trace:
 * "user,busy,tool:pending,…". */
static char *trace(sim_host *h, const char *sid)
{
    if (sim_events_flush(h, T(5000)) != 0)
        diag("event flush timed out");
    char *out = NULL;
    sim_tool(h, "ses_caller", "events", "{}", &out);
    cJSON *a = cJSON_Parse(out ? out : "[]");
    free(out);
    char buf[4096] = "";
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "properties");
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "sessionID"));
        if (!type || !s || strcmp(s, sid) != 0)
            continue;
        char item[128];
        if (strcmp(type, "session.status") == 0) {
            snprintf(item, sizeof item, "%s",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(p, "status"), "type")));
        } else if (strcmp(type, "message.part.updated") == 0) {
            const cJSON *part = cJSON_GetObjectItemCaseSensitive(p, "part");
            const cJSON *time = cJSON_GetObjectItemCaseSensitive(part, "time");
            if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "type")), "text") == 0)
                snprintf(item, sizeof item, "text:%s", cJSON_GetObjectItemCaseSensitive(time, "end") ? "end" : "start");
            else
                snprintf(item, sizeof item, "tool:%s",
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
                             cJSON_GetObjectItemCaseSensitive(part, "state"), "status")));
        } else if (strcmp(type, "message.updated") == 0) {
            const cJSON *info = cJSON_GetObjectItemCaseSensitive(p, "info");
            const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role"));
            snprintf(item, sizeof item, "%s", role && strcmp(role, "user") == 0 ? "user" : "assistant");
        } else if (strcmp(type, "session.idle") == 0) {
            snprintf(item, sizeof item, "idle!");
        } else if (strcmp(type, "session.error") == 0) {
            snprintf(item, sizeof item, "error");
        } else {
            snprintf(item, sizeof item, "%s", type);
        }
        if (buf[0])
            strncat(buf, ",", sizeof buf - strlen(buf) - 1);
        strncat(buf, item, sizeof buf - strlen(buf) - 1);
    }
    cJSON_Delete(a);
    return strdup(buf);
}

static char *new_session_via_plugin(sim_host *h, const char *parent, const char *title)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "fn", "session_create");
    if (parent)
        cJSON_AddStringToObject(a, "parentID", parent);
    if (title)
        cJSON_AddStringToObject(a, "title", title);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    cJSON *r = hostcall(h, s);
    free(s);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out_of(r), "id"));
    char *res = id ? strdup(id) : NULL;
    cJSON_Delete(r);
    return res;
}

/* ---- the tests --------------------------------------------------------- */

static void test_sessions(void)
{
    sim_host *h = host_with_recorder();
    is_int(sim_plugin_count(h), 1, "one plugin loaded");
    is_str(sim_plugin(h, 0)->name, "recorder", "it is the recorder");
    ok(sim_plugin(h, 1) == NULL, "sim_plugin out of range is NULL");

    char *user = sim_session_new(h, NULL, "by the user");
    ok(user && strncmp(user, "ses_", 4) == 0, "user session id starts with ses_");
    is_int(sim_calls(h, NULL, NULL), 0, "the user's session is not a plugin call");

    cJSON *r = hostcall(h, "{\"fn\":\"session_create\",\"title\":\"mine\"}");
    is_int(rc_of(r), 0, "session_create succeeds");
    const cJSON *s = out_of(r);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));
    ok(id && strncmp(id, "ses_", 4) == 0, "created session has an id");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "title")), "mine", "title kept");
    ok(!cJSON_HasObjectItem(s, "parentID"), "top-level session has no parentID");
    ok(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
           cJSON_GetObjectItemCaseSensitive(s, "time"), "created")),
       "session has time.created");
    ok(id && strcmp(id, user) > 0, "ids sort by creation");
    ok(id && sim_session_exists(h, id), "sim_session_exists sees it");
    is_int(sim_calls(h, "session_create", NULL), 1, "one session_create recorded");
    char *body = sim_call_body(h, "session_create", NULL, 0);
    like(body, "\"title\":\"mine\"", "session_create body holds the title");
    free(body);

    char *child = new_session_via_plugin(h, id, "kid");
    char *got = NULL;
    is_int(simple_call(h, "session_get", child, &got), 0, "session_get of the child");
    cJSON *cj = cJSON_Parse(got);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cj, "parentID")), id,
           "child has parentID");
    cJSON_Delete(cj);
    free(got);
    is_int(sim_calls(h, "session_create", id), 1, "a child's create is recorded against its parent");

    cJSON *bad = hostcall(h, "{\"fn\":\"session_create\",\"parentID\":\"ses_nope\"}");
    is_int(rc_of(bad), -ENOENT, "create under an unknown parent: -ENOENT");
    cJSON_Delete(bad);
    is_int(sim_session_count(h), 3, "nothing created by the failed create");

    got = NULL;
    is_int(simple_call(h, "session_get", "ses_nope", &got), -ENOENT, "get of unknown session: -ENOENT");
    like(got, "Session not found: ses_nope", "with a message");
    free(got);
    got = NULL;
    is_int(simple_call(h, "session_messages", "ses_nope", &got), -ENOENT, "messages of unknown: -ENOENT");
    free(got);
    is_int(simple_call(h, "session_abort", "ses_nope", NULL), -ENOENT, "abort of unknown: -ENOENT");
    is_int(prompt(h, "ses_nope", "hi", 0), -ENOENT, "prompt to unknown: -ENOENT");
    is_int(simple_call(h, "session_abort", id, NULL), 0, "abort of an idle session succeeds");

    cJSON_Delete(r);
    free(child);
    free(user);
    sim_destroy(h);
}

static void test_prompt_order(void)
{
    sim_host *h = host_with_recorder();
    is_int(sim_script(h, "hello",
                      "{\"steps\":[{\"tool\":\"read\",\"input\":{\"path\":\"a.c\"},\"output\":\"int x;\",\"ms\":10},"
                      "{\"wait_ms\":5},{\"reply\":\"done reading\"}]}",
                      0),
           0, "script added");
    is_int(sim_script(h, NULL, "{\"steps\":", 0), -EINVAL, "malformed script refused");
    is_int(sim_script(h, NULL, "{\"nosteps\":1}", 0), -EINVAL, "script without steps refused");

    char *sid = sim_session_new(h, NULL, "t");
    is_int(prompt(h, sid, "hello there", 0), 0, "prompt accepted");
    is_int(sim_wait_messages(h, sid, 2, T(5000)), 0, "assistant message arrives");
    is_int(sim_wait_idle(h, sid, T(5000)), 0, "session goes idle");
    char *tr = trace(h, sid);
    is_str(tr, "session.created,user,busy,tool:pending,tool:running,tool:completed,text:start,text:end,assistant,idle,idle!",
           "event order for one prompt (a text part: its start, then its end)");
    free(tr);

    char *last = sim_session_message_text(h, sid, -1);
    is_str(last, "done reading", "reply text is the last message");
    free(last);
    char *first = sim_session_message_text(h, sid, 0);
    is_str(first, "hello there", "prompt text is the first message");
    free(first);
    ok(sim_session_message_text(h, sid, 2) == NULL, "out of range message text is NULL");

    char *msgs = sim_session_messages_json(h, sid);
    cJSON *m = cJSON_Parse(msgs);
    free(msgs);
    const cJSON *a = cJSON_GetArrayItem(m, 1);
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(a, "info");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role")), "assistant", "assistant role");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "finish")), "stop", "finish stop");
    ok(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info, "time"),
                                                       "completed")),
       "assistant has time.completed");
    const cJSON *tp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "parts"), 0);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tp, "type")), "tool", "first part is the tool");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(tp, "state");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "status")), "completed", "tool completed");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "output")), "int x;", "tool output stored");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(st, "input"), "path")),
           "a.c", "tool input stored");
    ok(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(tp, "callID")), "tool part has a callID");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tp, "messageID")),
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id")), "part belongs to the message");
    cJSON_Delete(m);

    /* The event part carries sessionID in both places. */
    char *out = NULL;
    sim_tool(h, "x", "events", "{\"type\":\"message.part.updated\"}", &out);
    cJSON *ev = cJSON_Parse(out);
    free(out);
    const cJSON *p0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ev, 0), "properties");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(p0, "part"), "sessionID")),
           sid, "part.sessionID in the event");
    cJSON_Delete(ev);

    /* limit returns the newest messages. */
    cJSON *r = hostcall(h, "{\"fn\":\"session_messages\",\"sessionID\":\"x\"}");
    cJSON_Delete(r);
    char args[256];
    snprintf(args, sizeof args, "{\"fn\":\"session_messages\",\"sessionID\":\"%s\",\"limit\":1}", sid);
    r = hostcall(h, args);
    is_int(cJSON_GetArraySize(out_of(r)), 1, "limit 1 gives one message");
    const cJSON *only = cJSON_GetArrayItem(out_of(r), 0);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(only, "info"), "role")),
           "assistant", "the newest one");
    cJSON_Delete(r);

    /* No matching rule: "ok" at once. */
    char *s2 = sim_session_new(h, NULL, "t2");
    prompt(h, s2, "anything", 0);
    is_int(sim_wait_messages(h, s2, 2, T(5000)), 0, "default reply arrives");
    char *txt = sim_session_message_text(h, s2, -1);
    is_str(txt, "ok", "default reply is ok");
    free(txt);

    free(s2);
    free(sid);
    sim_destroy(h);
}

struct min_events {
    const char *type;
    size_t n;
};

static int pred_events(sim_host *h, void *arg)
{
    struct min_events *m = arg;
    return sim_events_delivered(h, m->type) >= m->n;
}

static void test_error_abort_queue(void)
{
    sim_host *h = host_with_recorder();
    sim_script(h, "fail", "{\"steps\":[{\"error\":\"model overloaded\"}]}", 1);
    sim_script(h, "stuck", "{\"steps\":[{\"tool\":\"bash\",\"input\":{},\"ms\":600000},{\"hang\":true}]}", 0);
    sim_script(h, "slow", "{\"steps\":[{\"wait_ms\":60},{\"reply\":\"one\"}]}", 0);
    sim_script(h, "second", "{\"steps\":[{\"reply\":\"two\"}]}", 0);

    char *a = sim_session_new(h, NULL, "err");
    prompt(h, a, "please fail", 0);
    is_int(sim_wait_messages(h, a, 2, T(5000)), 0, "error turn stores a message");
    sim_wait_idle(h, a, T(5000));
    char *tr = trace(h, a);
    is_str(tr, "session.created,user,busy,assistant,error,idle,idle!,idle!",
           "error: session.error before idle, session.idle twice");
    free(tr);
    char *msgs = sim_session_messages_json(h, a);
    like(msgs, "\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"model overloaded\"}}",
         "assistant message holds the APIError");
    free(msgs);
    /* once=1: the rule is gone. */
    prompt(h, a, "please fail", 0);
    sim_wait_messages(h, a, 4, T(5000));
    char *t = sim_session_message_text(h, a, -1);
    is_str(t, "ok", "a once rule is used only once");
    free(t);

    char *b = sim_session_new(h, NULL, "hang");
    is_int(sim_events_flush(h, T(5000)), 0, "the earlier sessions' events delivered");
    size_t parts_before = sim_events_delivered(h, "message.part.updated");
    prompt(h, b, "stuck", 0);
    ok(sim_session_busy(h, b), "hanging session is busy");
    struct min_events me = {"message.part.updated", parts_before + 2};
    is_int(sim_wait(h, pred_events, &me, T(5000)), 0, "its tool is running");
    char *status = NULL;
    is_int(simple_call(h, "session_status", NULL, &status), 0, "status map");
    cJSON *sm = cJSON_Parse(status);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
               cJSON_GetObjectItemCaseSensitive(sm, b), "type")),
           "busy", "busy session in the status map");
    ok(!cJSON_HasObjectItem(sm, a), "idle session not in the status map");
    cJSON_Delete(sm);
    free(status);
    prompt(h, b, "queued behind", 0);
    is_int(sim_session_message_count(h, b), 1, "queued prompt not stored yet");
    is_int(simple_call(h, "session_abort", b, NULL), 0, "abort succeeds");
    ok(!sim_session_busy(h, b), "aborted session is idle at once");
    is_int(sim_session_message_count(h, b), 2, "queued prompt dropped: user + aborted assistant");
    tr = trace(h, b);
    is_str(tr, "session.created,user,busy,tool:pending,tool:running,tool:error,assistant,idle,idle!,idle!",
           "abort: running tool errors, idle, session.idle twice");
    free(tr);
    msgs = sim_session_messages_json(h, b);
    like(msgs, "{\"name\":\"MessageAbortedError\",\"data\":{\"message\":\"Aborted\"}}",
         "assistant message holds MessageAbortedError");
    free(msgs);
    status = NULL;
    simple_call(h, "session_status", NULL, &status);
    is_str(status, "{}", "status map empty when all idle");
    free(status);

    char *c = sim_session_new(h, NULL, "queue");
    prompt(h, c, "slow first", 0);
    prompt(h, c, "second", 0);
    is_int(sim_wait_messages(h, c, 4, T(5000)), 0, "queued prompt runs after the first turn");
    sim_wait_idle(h, c, T(5000));
    char *t0 = sim_session_message_text(h, c, 0), *t1 = sim_session_message_text(h, c, 1);
    char *t2 = sim_session_message_text(h, c, 2), *t3 = sim_session_message_text(h, c, 3);
    is_str(t0, "slow first", "order: first prompt");
    is_str(t1, "one", "order: first reply");
    is_str(t2, "second", "order: queued prompt");
    is_str(t3, "two", "order: its reply");
    free(t0), free(t1), free(t2), free(t3);
    tr = trace(h, c);
    is_str(tr,
           "session.created,user,busy,text:start,text:end,assistant,idle,idle!,user,busy,text:start,text:end,assistant,"
           "idle,idle!",
           "two turns back to back");
    free(tr);

    free(a), free(b), free(c);
    sim_destroy(h);
}

static void test_noreply_and_bad_body(void)
{
    sim_host *h = host_with_recorder();
    char *s = sim_session_new(h, NULL, "quiet");
    sim_events_flush(h, T(5000));
    size_t before = sim_events_delivered(h, NULL);
    is_int(prompt(h, s, "just so you know", 1), 0, "noReply prompt accepted");
    is_int(sim_session_message_count(h, s), 1, "noReply message stored at once");
    sim_events_flush(h, T(5000));
    is_int(sim_events_delivered(h, NULL) - before, 0, "noReply emits no events");
    ok(!sim_session_busy(h, s), "noReply runs no turn");
    char *t = sim_session_message_text(h, s, 0);
    is_str(t, "just so you know", "noReply text stored");
    free(t);

    char args[512];
    snprintf(args, sizeof args,
             "{\"fn\":\"session_prompt\",\"sessionID\":\"%s\",\"body\":\"{not json\"}", s);
    cJSON *r = hostcall(h, args);
    is_int(rc_of(r), -EINVAL, "malformed body: -EINVAL");
    cJSON_Delete(r);
    snprintf(args, sizeof args,
             "{\"fn\":\"session_prompt\",\"sessionID\":\"%s\",\"body\":{\"text\":\"no parts\"}}", s);
    r = hostcall(h, args);
    is_int(rc_of(r), -EINVAL, "body without parts: -EINVAL");
    cJSON_Delete(r);
    is_int(sim_session_message_count(h, s), 1, "nothing stored by bad bodies");
    is_int(sim_calls(h, "session_prompt", s), 3, "failed prompts are recorded too");

    snprintf(args, sizeof args,
             "{\"fn\":\"session_prompt\",\"sessionID\":\"%s\",\"body\":{\"parts\":[{\"type\":\"text\","
             "\"text\":\"go\"}],\"agent\":\"explore\",\"tools\":{\"background_task\":false}}}",
             s);
    r = hostcall(h, args);
    is_int(rc_of(r), 0, "prompt with agent and tools");
    cJSON_Delete(r);
    sim_wait_messages(h, s, 3, T(5000));
    is_int(sim_session_tool_denied(h, s, "background_task"), 1, "tools:false denies the tool");
    is_int(sim_session_tool_denied(h, s, "read"), 0, "other tools allowed");
    char *msgs = sim_session_messages_json(h, s);
    like(msgs, "\"agent\":\"explore\"", "agent recorded on the message");
    free(msgs);
    char *b = sim_call_body(h, "session_prompt", s, -1);
    like(b, "\"agent\":\"explore\"", "newest prompt body recorded verbatim");
    free(b);
    b = sim_call_body(h, "session_prompt", s, 0);
    like(b, "just so you know", "oldest prompt body");
    free(b);
    ok(sim_call_body(h, "session_prompt", s, 10) == NULL, "no 11th prompt body");

    /* The user's own prompt and Esc: same behaviour, not plugin calls. */
    size_t calls = sim_calls(h, NULL, NULL);
    is_int(sim_session_prompt(h, s, "{\"parts\":[{\"type\":\"text\",\"text\":\"by hand\"}]}"), 0,
           "user prompt accepted");
    is_int(sim_wait_messages(h, s, 5, T(5000)), 0, "user prompt gets a reply");
    is_int(sim_session_prompt(h, s, "[1,2]"), -EINVAL, "user prompt with a bad body: -EINVAL");
    is_int(sim_session_prompt(h, "ses_nope", "{\"parts\":[]}"), -ENOENT, "user prompt to unknown: -ENOENT");
    sim_script(h, "wait here", "{\"steps\":[{\"hang\":true}]}", 1);
    sim_session_prompt(h, s, "{\"parts\":[{\"type\":\"text\",\"text\":\"wait here\"}]}");
    ok(sim_session_busy(h, s), "user prompt made the session busy");
    is_int(sim_session_abort(h, s), 0, "user abort");
    ok(!sim_session_busy(h, s), "user abort ends the turn");
    is_int(sim_session_abort(h, "ses_nope"), -ENOENT, "user abort of unknown: -ENOENT");
    is_int(sim_calls(h, NULL, NULL), calls, "the user's prompts and aborts are not plugin calls");
    free(s);
    sim_destroy(h);
}

/* ---- the "usage" step ---------------------------------------------------- */

/* The infos of the assistant messages' message.updated events the recorder
 * saw about sid, oldest first (a JSON array, owned). */
static cJSON *assistant_updates(sim_host *h, const char *sid)
{
    if (sim_events_flush(h, T(5000)) != 0)
        diag("event flush timed out");
    char *out = NULL;
    sim_tool(h, "ses_caller", "events", "{\"type\":\"message.updated\"}", &out);
    cJSON *all = cJSON_Parse(out ? out : "[]");
    free(out);
    cJSON *infos = cJSON_CreateArray();
    const cJSON *e;
    cJSON_ArrayForEach(e, all)
    {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "properties");
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(p, "info");
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "sessionID"));
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role"));
        if (s && strcmp(s, sid) == 0 && role && strcmp(role, "assistant") == 0)
            cJSON_AddItemToArray(infos, cJSON_Duplicate(info, 1));
    }
    cJSON_Delete(all);
    return infos;
}

/* An info's tokens as compact JSON (malloc'd; "null" when it has none). */
static char *tokens_of(const cJSON *info)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(info, "tokens");
    return t ? cJSON_PrintUnformatted(t) : strdup("null");
}

static double cost_of(const cJSON *info)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(info, "cost"));
}

static const char *str_of(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

/* The session's messages as session_messages gives them to a plugin. */
static cJSON *messages_via_plugin(sim_host *h, const char *sid)
{
    char args[256];
    snprintf(args, sizeof args, "{\"fn\":\"session_messages\",\"sessionID\":\"%s\"}", sid);
    cJSON *r = hostcall(h, args);
    cJSON *m = cJSON_DetachItemFromObjectCaseSensitive(r, "out");
    cJSON_Delete(r);
    return m ? m : cJSON_CreateArray();
}

#define TOKENS(in, out, reasoning, read, write)                                                             \
    "{\"input\":" #in ",\"output\":" #out ",\"reasoning\":" #reasoning ",\"cache\":{\"read\":" #read         \
    ",\"write\":" #write "}}"

/* Each update's tokens and cost, checked in turn against the expected ones. */
static void check_usage(const cJSON *info, const char *tokens, double cost, const char *what)
{
    char *got = tokens_of(info);
    is_str(got, tokens, "%s: tokens", what);
    free(got);
    ok(cost_of(info) == cost, "%s: cost %g (got %g)", what, cost, cost_of(info));
}

static void usage_events_and_info(sim_host *h)
{
    sim_script(h, "spend",
               "{\"steps\":[{\"usage\":{\"input\":100,\"output\":20,\"reasoning\":5,\"cache_read\":1000,"
               "\"cache_write\":50,\"cost\":0.25}},{\"usage\":{\"input\":30,\"cost\":0.5}},{\"usage\":{}},"
               "{\"reply\":\"spent\"}]}",
               1);
    char *sid = sim_session_new(h, NULL, "spender");
    is_int(prompt(h, sid, "spend some", 0), 0, "a prompt whose script reports usage");
    is_int(sim_wait_messages(h, sid, 2, T(5000)), 0, "the answer is stored");
    is_int(sim_wait_idle(h, sid, T(5000)), 0, "the session goes idle");
    char *tr = trace(h, sid);
    is_str(tr, "session.created,user,busy,assistant,assistant,assistant,text:start,text:end,assistant,idle,idle!",
           "a message.updated per usage step, then the stored answer's");
    free(tr);

    cJSON *ups = assistant_updates(h, sid);
    cJSON *msgs = messages_via_plugin(h, sid);
    const cJSON *stored = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 1), "info");
    is_int(cJSON_GetArraySize(ups), 4, "four updates of the assistant message");
    const cJSON *first = cJSON_GetArrayItem(ups, 0);
    is_str(str_of(first, "id"), str_of(stored, "id"), "the update is of the turn's assistant message");
    is_str(str_of(first, "sessionID"), sid, "info.sessionID");
    is_str(str_of(first, "role"), "assistant", "info.role");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(first, "time");
    ok(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(tm, "created")), "info.time.created");
    ok(!cJSON_HasObjectItem(tm, "completed"), "no time.completed: the message is in progress");
    ok(!cJSON_HasObjectItem(first, "finish") && !cJSON_HasObjectItem(first, "error"), "no finish yet");
    check_usage(first, TOKENS(100, 20, 5, 1000, 50), 0.25, "the first step's totals");
    check_usage(cJSON_GetArrayItem(ups, 1), TOKENS(130, 20, 5, 1000, 50), 0.75, "the second adds to them");
    check_usage(cJSON_GetArrayItem(ups, 2), TOKENS(130, 20, 5, 1000, 50), 0.75, "an empty usage adds nothing");
    const cJSON *last = cJSON_GetArrayItem(ups, 3);
    is_str(str_of(last, "finish"), "stop", "the last update is the finished message");
    check_usage(last, TOKENS(130, 20, 5, 1000, 50), 0.75, "the finished message's update");
    check_usage(stored, TOKENS(130, 20, 5, 1000, 50), 0.75, "session_messages: the stored info");
    cJSON_Delete(msgs);
    cJSON_Delete(ups);
    free(sid);
}

static void usage_defaults_and_odd_amounts(sim_host *h)
{
    char *sid = sim_session_new(h, NULL, "thrifty");
    prompt(h, sid, "nothing scripted", 0);
    is_int(sim_wait_idle(h, sid, T(5000)), 0, "a turn without usage steps ends");
    cJSON *msgs = messages_via_plugin(h, sid);
    check_usage(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 1), "info"), TOKENS(0, 0, 0, 0, 0), 0,
                "no usage step: zero tokens and cost, as OpenCode's fresh message");
    cJSON_Delete(msgs);

    sim_script(h, "odd",
               "{\"steps\":[{\"usage\":{\"input\":-5,\"output\":\"7\",\"reasoning\":2.9,\"cache_read\":1e300,"
               "\"cost\":-1}}]}",
               1);
    char *odd = sim_session_new(h, NULL, "odd");
    prompt(h, odd, "odd amounts", 0);
    is_int(sim_wait_idle(h, odd, T(5000)), 0, "a turn with odd amounts ends");
    cJSON *ups = assistant_updates(h, odd);
    check_usage(cJSON_GetArrayItem(ups, 0), TOKENS(0, 0, 2, 0, 0), 0,
                "negative, huge and non-numbers count 0; tokens are whole");
    cJSON_Delete(ups);
    free(odd);
    free(sid);
}

static void usage_across_compaction(sim_host *h)
{
    sim_script(h, "squeeze",
               "{\"steps\":[{\"usage\":{\"input\":10,\"cost\":0.1}},{\"reply\":\"A\"},{\"compact\":true},"
               "{\"usage\":{\"input\":3}},{\"reply\":\"B\"}]}",
               1);
    char *sid = sim_session_new(h, NULL, "compacting");
    prompt(h, sid, "squeeze it", 0);
    is_int(sim_wait_messages(h, sid, 6, T(5000)), 0, "answer, compaction, summary, continue, answer");
    is_int(sim_wait_idle(h, sid, T(5000)), 0, "then idle");
    cJSON *msgs = messages_via_plugin(h, sid);
    check_usage(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 1), "info"), TOKENS(10, 0, 0, 0, 0), 0.1,
                "the answer before the compaction");
    check_usage(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 3), "info"), TOKENS(0, 0, 0, 0, 0), 0,
                "the summary");
    check_usage(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, 5), "info"), TOKENS(3, 0, 0, 0, 0), 0,
                "the continue turn's message starts from 0");
    cJSON_Delete(msgs);
    free(sid);
}

static void test_usage_step(void)
{
    sim_host *h = host_with_recorder();
    usage_events_and_info(h);
    usage_defaults_and_odd_amounts(h);
    usage_across_compaction(h);
    sim_destroy(h);
}

static void test_fork_and_delete(void)
{
    sim_host *h = host_with_recorder();
    char *s = sim_session_new(h, NULL, "Original");
    prompt(h, s, "q1", 0);
    sim_wait_messages(h, s, 2, T(5000));
    prompt(h, s, "q2", 0);
    sim_wait_messages(h, s, 4, T(5000));
    char *msgs = sim_session_messages_json(h, s);
    cJSON *m = cJSON_Parse(msgs);
    free(msgs);
    const char *third = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m, 2), "info"), "id"));
    char args[512];
    snprintf(args, sizeof args, "{\"fn\":\"session_fork\",\"sessionID\":\"%s\",\"messageID\":\"%s\"}", s, third);
    cJSON *r = hostcall(h, args);
    cJSON_Delete(m);
    is_int(rc_of(r), 0, "fork succeeds");
    const char *fid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out_of(r), "id"));
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out_of(r), "title")),
           "Original (fork #1)", "fork title");
    ok(!cJSON_HasObjectItem(out_of(r), "parentID"), "fork has no parentID");
    is_int(sim_session_message_count(h, fid), 2, "fork holds the messages before messageID");
    char *ft = sim_session_message_text(h, fid, 1);
    is_str(ft, "ok", "fork's copy of the reply");
    free(ft);
    char *fmsgs = sim_session_messages_json(h, fid);
    ok(fmsgs && strstr(fmsgs, s) == NULL, "copied messages belong to the fork");
    free(fmsgs);

    snprintf(args, sizeof args, "{\"fn\":\"session_fork\",\"sessionID\":\"%s\"}", fid);
    cJSON *r2 = hostcall(h, args);
    const char *f2 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out_of(r2), "id"));
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out_of(r2), "title")),
           "Original (fork #2)", "forking a fork counts up");
    is_int(sim_session_message_count(h, f2), 2, "fork without messageID copies all");
    cJSON_Delete(r2);
    cJSON_Delete(r);
    is_int(simple_call(h, "session_fork", "ses_nope", NULL), -ENOENT, "fork of unknown: -ENOENT");

    /* Delete cascade: P → C1 → G, P → C2. */
    char *p = sim_session_new(h, NULL, "P");
    char *c1 = sim_session_new(h, p, "C1");
    char *g = sim_session_new(h, c1, "G");
    char *c2 = sim_session_new(h, p, "C2");
    sim_script(h, "forever", "{\"steps\":[{\"hang\":true}]}", 0);
    prompt(h, g, "forever", 0);
    ok(sim_session_busy(h, g), "grandchild busy before delete");
    sim_events_flush(h, T(5000));
    sim_tool(h, "x", "clear", "{}", NULL);
    is_int(sim_session_delete(h, p), 0, "delete parent");
    is_int(sim_session_delete(h, p), -ENOENT, "second delete: -ENOENT");
    sim_events_flush(h, T(5000));
    char *out = NULL;
    sim_tool(h, "x", "events", "{\"type\":\"session.deleted\"}", &out);
    cJSON *ev = cJSON_Parse(out);
    free(out);
    char order[256] = "";
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "properties"), "info");
        if (order[0])
            strcat(order, ",");
        strcat(order, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "title")));
    }
    is_str(order, "G,C1,C2,P", "children deleted first, each with session.deleted");
    const cJSON *ginfo = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ev, 0), "properties"), "info");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ginfo, "parentID")), c1,
           "session.deleted info has parentID");
    cJSON_Delete(ev);
    ok(!sim_session_exists(h, c1) && !sim_session_exists(h, g) && !sim_session_exists(h, c2),
       "descendants gone");
    is_int(simple_call(h, "session_get", g, NULL), -ENOENT, "get after delete: -ENOENT");
    is_int(prompt(h, c2, "hi", 0), -ENOENT, "prompt after delete: -ENOENT");
    /* As OpenCode: the deletion did not stop the busy turn; an abort does. */
    char *st = NULL;
    simple_call(h, "session_status", NULL, &st);
    like(st, "\"type\":\"busy\"", "a session deleted while busy is still busy (OpenCode does not stop it)");
    free(st);
    is_int(simple_call(h, "session_abort", g, NULL), 0, "an abort of the deleted session still works");
    is_int(sim_wait_idle(h, g, T(5000)), 0, "and ends its turn");
    simple_call(h, "session_status", NULL, &st);
    is_str(st, "{}", "then it leaves the status map");
    free(st);
    free(p), free(c1), free(g), free(c2), free(s);
    sim_destroy(h);
}

static void test_call_faults(void)
{
    sim_host *h = host_with_recorder();
    char *s = sim_session_new(h, NULL, "f");
    sim_fail(h, "session_get", 2, 2, -EIO);
    char *msg = NULL;
    is_int(simple_call(h, "session_get", s, NULL), 0, "call 1 succeeds");
    is_int(simple_call(h, "session_get", s, &msg), -EIO, "call 2 fails");
    is_str(msg, "simulated failure of session_get", "failure message");
    free(msg);
    is_int(simple_call(h, "session_get", s, NULL), -EIO, "call 3 fails");
    is_int(simple_call(h, "session_get", s, NULL), 0, "call 4 succeeds");
    is_int(simple_call(h, "session_status", NULL, NULL), 0, "other functions unaffected");

    sim_fail(h, "session_prompt", 1, -1, -EIO);
    is_int(prompt(h, s, "a", 0), -EIO, "every prompt fails (1)");
    is_int(prompt(h, s, "b", 0), -EIO, "every prompt fails (2)");
    is_int(sim_session_message_count(h, s), 0, "a failed prompt stores nothing");
    sim_fail(h, NULL, 0, 0, 0);
    is_int(prompt(h, s, "c", 0), 0, "faults cleared");

    sim_fail(h, "session_create", 1, 1, -ENOMEM);
    size_t n = sim_session_count(h);
    cJSON *r = hostcall(h, "{\"fn\":\"session_create\"}");
    is_int(rc_of(r), -ENOMEM, "create fails with the given errno");
    cJSON_Delete(r);
    is_int(sim_session_count(h), n, "a failed create creates nothing");

    is_int(sim_calls(h, "session_get", s), 4, "failed calls are counted");
    char *all = sim_calls_json(h);
    cJSON *a = cJSON_Parse(all);
    free(all);
    ok(cJSON_IsArray(a) && cJSON_GetArraySize(a) == (int)sim_calls(h, NULL, NULL), "calls_json lists every call");
    const cJSON *c1 = cJSON_GetArrayItem(a, 1);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c1, "fn")), "session_get", "record fn");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c1, "session")), s, "record session");
    is_int(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c1, "rc")), -EIO, "record rc");
    ok(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c1, "t_ms")) > 1.6e12, "record t_ms is wall clock");
    cJSON_Delete(a);

    /* The clock. */
    int64_t t0 = sim_now_ms(h);
    sim_advance_ms(h, 3600000);
    cJSON *now = hostcall(h, "{\"fn\":\"now_ms\"}");
    double tn = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(now, "now"));
    ok(tn >= (double)t0 + 3600000 && tn < (double)t0 + 3600000 + 60000, "now_ms includes the advance");
    cJSON_Delete(now);

    /* sim_slow delays the call. */
    sim_slow(h, "session_status", 50);
    int64_t before = sim_now_ms(h);
    simple_call(h, "session_status", NULL, NULL);
    ok(sim_now_ms(h) - before >= 50, "slow call takes at least 50 ms");
    sim_slow(h, "session_status", 0);

    cJSON *lg = hostcall(h, "{\"fn\":\"log\",\"message\":\"hello log\"}");
    cJSON_Delete(lg);
    char *lb = sim_call_body(h, "log", NULL, -1);
    like(lb, "hello log", "log calls are recorded");
    free(lb);
    free(s);
    sim_destroy(h);
}

static int count_type(sim_host *h, const char *type)
{
    char args[128];
    snprintf(args, sizeof args, "{\"type\":\"%s\"}", type);
    char *out = NULL;
    sim_tool(h, "x", "events", args, &out);
    cJSON *a = cJSON_Parse(out);
    free(out);
    int n = cJSON_GetArraySize(a);
    cJSON_Delete(a);
    return n;
}

static size_t run_drop(uint32_t seed, int n)
{
    sim_host *h = host_with_recorder();
    sim_event_faults(h, seed, 0.5, 0.0, 0, "test.ping");
    for (int i = 0; i < n; i++)
        sim_emit(h, "{\"type\":\"test.ping\",\"properties\":{}}");
    sim_events_flush(h, T(5000));
    size_t got = sim_events_delivered(h, "test.ping");
    is_int(count_type(h, "test.ping"), (long long)got, "plugin saw exactly the delivered events");
    sim_destroy(h);
    return got;
}

static void test_event_faults(void)
{
    sim_host *h = host_with_recorder();
    char *s = sim_session_new(h, NULL, "ev");
    sim_event_faults(h, 7, 1.0, 0.0, 0, "session.idle");
    prompt(h, s, "x", 0);
    sim_wait_messages(h, s, 2, T(5000));
    sim_events_flush(h, T(5000));
    is_int(sim_events_delivered(h, "session.idle"), 0, "drop=1 on session.idle drops it");
    is_int(sim_events_delivered(h, "session.status"), 2, "other types unaffected by only_type");
    sim_event_faults(h, 7, 0.0, 1.0, 0, "session.idle");
    prompt(h, s, "y", 0);
    sim_wait_messages(h, s, 4, T(5000));
    sim_events_flush(h, T(5000));
    is_int(sim_events_delivered(h, "session.idle"), 2, "dup=1 delivers session.idle twice");
    is_int(count_type(h, "session.idle"), 2, "the plugin got both copies");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    prompt(h, s, "z", 0);
    sim_wait_messages(h, s, 6, T(5000));
    sim_events_flush(h, T(5000));
    is_int(sim_events_delivered(h, "session.idle"), 3, "faults off again");

    /* Delay reorders but loses nothing. */
    sim_tool(h, "x", "clear", "{}", NULL);
    sim_event_faults(h, 42, 0, 0, 40, "test.seq");
    for (int i = 0; i < 40; i++) {
        char ev[128];
        snprintf(ev, sizeof ev, "{\"type\":\"test.seq\",\"properties\":{\"n\":%d}}", i);
        sim_emit(h, ev);
    }
    is_int(sim_events_flush(h, T(5000)), 0, "flush waits out the delays");
    char *out = NULL;
    sim_tool(h, "x", "events", "{\"type\":\"test.seq\"}", &out);
    cJSON *a = cJSON_Parse(out);
    free(out);
    is_int(cJSON_GetArraySize(a), 40, "every delayed event delivered");
    int inversions = 0, prev = -1;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        int n = (int)cJSON_GetNumberValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "properties"), "n"));
        inversions += n < prev;
        prev = n;
    }
    ok(inversions > 0, "random delays reorder events (%d inversions)", inversions);
    cJSON_Delete(a);
    sim_emit(h, "not json at all");
    sim_events_flush(h, T(5000));
    is_int(sim_events_delivered(h, ""), 1, "malformed emitted event still delivered");
    free(s);
    sim_destroy(h);

    size_t d1 = run_drop(1234, 200), d2 = run_drop(1234, 200);
    is_int(d1, d2, "same seed, same drops (%zu)", d1);
    ok(d1 > 50 && d1 < 150, "drop 0.5 drops about half (%zu of 200)", d1);
}

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
    sim_host *h = host_with_recorder();
    char *out = NULL;
    is_int(sim_tool(h, "ses_abc", "ctx", "{}", &out), 0, "ctx tool");
    cJSON *c = cJSON_Parse(out);
    free(out);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "session_id")), "ses_abc", "ctx session");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "agent")), "build", "ctx agent");
    like(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "message_id")), "msg_", "ctx message id");
    like(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "call_id")), "call_", "ctx call id");
    char *cwd = getcwd(NULL, 0);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "directory")), cwd, "ctx directory = cwd");
    free(cwd);
    is_int(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "struct_size")), sizeof(ocp_call_ctx),
           "ctx struct_size");
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
    is_int(sim_wait(h, pred_waiting, &one, T(5000)), 0, "it waits in the plugin");
    is_int(sim_tool_wait(call, 30, &rc, &out), -ETIMEDOUT, "it blocks");
    ok(!sim_tool_done(call), "not done");
    sim_tool_cancel(call);
    is_int(sim_tool_wait(call, T(5000), &rc, &out), 0, "cancel ends the wait");
    is_int(rc, -ECANCELED, "-ECANCELED");
    is_str(out, "cancelled", "cancel text");
    ok(sim_tool_done(call), "done");
    free(out);
    sim_tool_free(call);

    /* Cancelling at once (maybe before the plugin started waiting). */
    call = sim_tool_start(h, "ses_abc", "block", "{}");
    sim_tool_cancel(call);
    out = NULL;
    is_int(sim_tool_wait(call, T(5000), &rc, &out), 0, "early cancel still ends the call");
    is_int(rc, -ECANCELED, "early cancel: -ECANCELED");
    free(out);
    sim_tool_free(call);

    call = sim_tool_start(h, "ses_abc", "block", "{\"ms\":20}");
    out = NULL;
    is_int(sim_tool_wait(call, T(5000), &rc, &out), 0, "a timed block returns");
    is_int(rc, 0, "timed block rc 0");
    is_str(out, "timeout", "timed block text");
    free(out);
    sim_tool_free(call);

    /* Several calls at once, released by unloading (plugin shutdown). */
    sim_call *calls[4];
    for (int i = 0; i < 4; i++)
        calls[i] = sim_tool_start(h, "ses_abc", "block", "{}");
    is_int(sim_wait(h, pred_waiting, &four, T(5000)), 0, "four calls blocked");
    sim_unload_plugins(h);
    int released = 0;
    for (int i = 0; i < 4; i++) {
        out = NULL;
        if (sim_tool_wait(calls[i], T(5000), &rc, &out) == 0 && rc == -ECANCELED)
            released++;
        free(out);
        sim_tool_free(calls[i]);
    }
    is_int(released, 4, "unloading releases every blocked call with -ECANCELED");
    is_int(sim_plugin_count(h), 0, "no plugins after unload");
    out = NULL;
    is_int(sim_tool(h, "s", "ctx", "{}", &out), -ENOENT, "tool call with no plugin: -ENOENT");
    free(out);
    sim_destroy(h);
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
    sim_host *h = host_with_recorder();
    int64_t t0 = sim_now_ms(h);
    is_int(sim_wait(h, pred_never, NULL, 60), -ETIMEDOUT, "sim_wait times out");
    int64_t el = sim_now_ms(h) - t0;
    ok(el >= 55 && el < T(2000), "after about the timeout (%lld ms)", (long long)el);
    int n = 0;
    is_int(sim_wait(h, pred_counter, &n, T(5000)), 0, "re-checks without state changes (every 20 ms)");
    is_int(sim_wait_calls(h, "session_get", NULL, 1, 30), -ETIMEDOUT, "wait_calls times out");

    sim_tool(h, "x", "transform", "{\"marker\":\"INJECTED\"}", NULL);
    char *s = sim_session_new(h, NULL, "tr");
    ok(sim_session_model_input(h, s) == NULL, "no model input before a turn");
    prompt(h, s, "look", 0);
    sim_wait_messages(h, s, 2, T(5000));
    char *mi = sim_session_model_input(h, s);
    like(mi, "INJECTED", "the model saw the plugin's transform");
    like(mi, "look", "and the prompt");
    free(mi);
    char *msgs = sim_session_messages_json(h, s);
    unlike(msgs, "INJECTED", "the stored history is unchanged");
    free(msgs);
    free(s);

    /* Many sessions at once on one scheduler thread. */
    int many = getenv("OCBG_UNDER_VALGRIND") ? 200 : 2000;
    sim_script(h, "bulk", "{\"steps\":[{\"tool\":\"read\",\"ms\":30},{\"reply\":\"bulk done\"}]}", 0);
    sim_tool(h, "x", "transform", "{\"marker\":\"\"}", NULL);
    char **ids = malloc(sizeof *ids * (size_t)many);
    for (int i = 0; i < many; i++)
        ids[i] = sim_session_new(h, NULL, "bulk");
    for (int i = 0; i < many; i++)
        prompt(h, ids[i], "bulk", 0);
    int all = 1;
    for (int i = 0; i < many; i++)
        all &= sim_wait_messages(h, ids[i], 2, T(20000)) == 0;
    ok(all, "%d concurrent sessions all finished", many);
    int idle = 1;
    for (int i = 0; i < many; i++)
        idle &= !sim_session_busy(h, ids[i]);
    ok(idle, "and are idle");
    sim_events_flush(h, T(20000));
    is_int(sim_events_delivered(h, "session.idle"), many + 1, "one session.idle per turn");
    for (int i = 0; i < many; i++)
        free(ids[i]);
    free(ids);
    sim_destroy(h);
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
    is_int(sim_load_plugins(h, recorder_dir, "{\"refuse\":\"no thanks\"}"), 0, "refusing plugin not loaded");
    is_str(sim_load_error(h), "no thanks", "its reason kept");
    is_int(sim_load_plugins(h, recorder_dir, "{\"bogus\":1}"), 0, "unknown option refused");
    like(sim_load_error(h), "unknown option: bogus", "reason names the option");
    is_int(sim_load_plugins(h, recorder_dir, "{\"abi_major\":2}"), 0, "plugin of another ABI major refused");
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
        snprintf(cmd, sizeof cmd, "cp '%s' '%s/%s'", recorder_so, dir, names[i]);
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
    sim_emit(h, "{\"type\":\"test.both\",\"properties\":{}}");
    sim_events_flush(h, T(5000));
    int seen = 0;
    for (size_t i = 0; i < 2; i++) {
        const ocp_plugin *p = sim_plugin(h, i);
        ocp_call_ctx ctx = {.struct_size = sizeof ctx, .session_id = "s"};
        char *out = NULL;
        p->tool_call(p->userdata, "events", "{\"type\":\"test.both\"}", &ctx, &out);
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
    is_int(sim_tool(h, "s", "hammer", "{\"threads\":4,\"fn\":\"session_status\"}", &out), 0, "hammer started");
    free(out);
    struct min_calls mc = {8};
    is_int(sim_wait(h, pred_status_calls, &mc, T(5000)), 0, "plugin threads are calling the host");
    sim_call *blocked = sim_tool_start(h, "s", "block", "{}");
    int rc = 0, one = 1;
    is_int(sim_wait(h, pred_waiting, &one, T(5000)), 0, "a call is blocked");
    sim_unload_plugins(h);
    ok(1, "unload with plugin threads mid host-call returned");
    out = NULL;
    is_int(sim_tool_wait(blocked, T(5000), &rc, &out), 0, "blocked call ended by the unload");
    is_int(rc, -ECANCELED, "with -ECANCELED");
    free(out);
    sim_tool_free(blocked);
    sim_destroy(h);

    /* And sim_destroy itself, with plugin threads creating sessions. */
    h = sim_create();
    is_int(sim_load_plugins(h, dir, NULL), 2, "reloaded");
    sim_slow(h, "session_create", 5);
    out = NULL;
    sim_tool(h, "s", "hammer", "{\"threads\":3,\"fn\":\"session_create\"}", &out);
    free(out);
    is_int(sim_wait_calls(h, "session_create", NULL, 6, T(5000)), 0, "plugin threads creating sessions");
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
    const char *b = getenv("OCBG_BUILD");
    if (!b)
        bail_out("OCBG_BUILD is not set");
    snprintf(recorder_dir, sizeof recorder_dir, "%s/test-plugins/recorder", b);
    snprintf(recorder_so, sizeof recorder_so, "%s/recorder.so", recorder_dir);
    struct stat st;
    if (stat(recorder_so, &st) != 0)
        bail_out("no %s (build the test plugins)", recorder_so);

    test_sessions();
    test_prompt_order();
    test_error_abort_queue();
    test_noreply_and_bad_body();
    test_usage_step();
    test_fork_and_delete();
    test_call_faults();
    test_event_faults();
    test_tool_calls();
    test_wait_transform_scale();
    test_loading_and_shutdown();
    return done_testing();
}

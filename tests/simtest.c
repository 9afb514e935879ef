/* simtest.c — see simtest.h. */
#include "simtest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char recorder_dir[4096];
static char recorder_so[4200];

/* Fills both paths once (the tests are single-threaded when they ask). */
static void rec_paths(void)
{
    if (recorder_dir[0])
        return;
    const char *b = getenv("OCBG_BUILD");
    if (!b)
        bail_out("OCBG_BUILD is not set");
    snprintf(recorder_dir, sizeof recorder_dir, "%s/test-plugins/recorder", b);
    snprintf(recorder_so, sizeof recorder_so, "%s/recorder.so", recorder_dir);
    struct stat st;
    if (stat(recorder_so, &st) != 0)
        bail_out("no %s (build the test plugins)", recorder_so);
}

const char *rec_dir(void)
{
    rec_paths();
    return recorder_dir;
}

const char *rec_so(void)
{
    rec_paths();
    return recorder_so;
}

void rec_open(t_fixture *f)
{
    t_open_dir(f, rec_dir(), NULL);
}

cJSON *hostcall(sim_host *h, const char *args_json)
{
    char *out = NULL;
    int rc = sim_tool(h, "ses_caller", "host", args_json, &out);
    cJSON *j = rc == 0 && out ? cJSON_Parse(out) : NULL;
    if (!j)
        diag("host tool failed: rc %d out %s", rc, out ? out : "(null)");
    free(out);
    return j;
}

int rc_of(const cJSON *r)
{
    return r ? (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "rc")) : -9999;
}

const cJSON *out_of(const cJSON *r)
{
    return cJSON_GetObjectItemCaseSensitive(r, "out");
}

int prompt_via_plugin(sim_host *h, const char *sid, const char *text, int no_reply)
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

int simple_call(sim_host *h, const char *fn, const char *sid, char **out_text)
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

char *trace(sim_host *h, const char *sid)
{
    if (sim_events_flush(h, tap_timeout_ms(5000)) != 0)
        diag("event flush timed out");
    char *out = NULL;
    sim_tool(h, "ses_caller", "events", "{}", &out);
    cJSON *a = cJSON_Parse(out ? out : "[]");
    free(out);
    char buf[4096] = "";
    const cJSON *e;
    cJSON_ArrayForEach (e, a) {
        const char *type = jstr(e, "type");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(e, "properties");
        const char *s = jstr(p, "sessionID");
        if (!type || !s || strcmp(s, sid) != 0)
            continue;
        char item[128];
        if (strcmp(type, "session.status") == 0) {
            snprintf(item, sizeof item, "%s", jstr(cJSON_GetObjectItemCaseSensitive(p, "status"), "type"));
        } else if (strcmp(type, "message.part.updated") == 0) {
            const cJSON *part = cJSON_GetObjectItemCaseSensitive(p, "part");
            const cJSON *time = cJSON_GetObjectItemCaseSensitive(part, "time");
            if (strcmp(jstr(part, "type"), "text") == 0)
                snprintf(item, sizeof item, "text:%s", cJSON_GetObjectItemCaseSensitive(time, "end") ? "end" : "start");
            else
                snprintf(item, sizeof item, "tool:%s", jstr(cJSON_GetObjectItemCaseSensitive(part, "state"), "status"));
        } else if (strcmp(type, "message.updated") == 0) {
            const cJSON *info = cJSON_GetObjectItemCaseSensitive(p, "info");
            const char *role = jstr(info, "role");
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

char *new_session_via_plugin(sim_host *h, const char *parent, const char *title)
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
    const char *id = jstr(out_of(r), "id");
    char *res = id ? strdup(id) : NULL;
    cJSON_Delete(r);
    return res;
}

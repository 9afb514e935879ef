/* fuzz_common.c — see fuzz_common.h. */
#include "fuzz_common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sanitizer/lsan_interface.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fz_world world;

static char *find_id(const char *text, const char *prefix)
{
    const char *p = text ? strstr(text, prefix) : NULL;
    if (!p)
        return NULL;
    size_t n = strlen(prefix);
    while ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f'))
        n++;
    return strndup(p, n);
}

static char *call(fz_world *w, const char *tool, const char *args, int cancelled, int *rc)
{
    ocp_call_ctx ctx = {sizeof ctx, w->parent, "msg_fuzz", "build", "call_fuzz", "/", cancelled};
    char *out = NULL;
    int r = w->p->tool_call(w->p->userdata, tool, args, &ctx, &out);
    if (rc)
        *rc = r;
    char *copy = strdup(out ? out : "");
    w->p->free(w->p->userdata, out);
    return copy;
}

int fz_tool(fz_world *w, const char *tool, const char *args, int cancelled)
{
    int rc;
    free(call(w, tool, args, cancelled, &rc));
    return rc;
}

static int completed(sim_host *h, void *arg)
{
    (void)h;
    fz_world *w = arg;
    char args[96];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", w->done_id);
    char *out = call(w, "background_output", args, 0, NULL);
    int done = strstr(out, ": completed\n") != NULL;
    free(out);
    return done;
}

void fz_refresh(fz_world *w)
{
    free(w->run_id);
    free(w->run_session);
    char *out = call(w, "background_task",
                     "{\"description\":\"Running\",\"prompt\":\"fz-hang# forever\",\"agent\":\"general\"}", 0, NULL);
    w->run_id = find_id(out, "bg_");
    free(out);
    /* The running task's session: the one of the newest session_prompt. */
    char *json = sim_calls_json(w->h);
    cJSON *calls = cJSON_Parse(json);
    free(json);
    w->run_session = NULL;
    const cJSON *c;
    cJSON_ArrayForEach (c, calls) {
        const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(c, "fn"));
        const char *ses = cJSON_GetStringValue(cJSON_GetObjectItem(c, "session"));
        if (fn && ses && strcmp(fn, "session_prompt") == 0) {
            free(w->run_session);
            w->run_session = strdup(ses);
        }
    }
    cJSON_Delete(calls);
}

fz_world *fz_world_get(void)
{
    fz_world *w = &world;
    if (w->p)
        return w;
    w->h = sim_create();
    char err[512] = "";
    w->p = ocp_plugin_entry(sim_table(w->h), "{\"poll_interval_ms\":50}", err, sizeof err);
    if (!w->p) {
        fprintf(stderr, "fuzz: ocp_plugin_entry refused: %s\n", err);
        abort();
    }
    w->parent = sim_session_new(w->h, NULL, "fuzz");
    sim_script(w->h, "fz-hang#", "{\"steps\":[{\"hang\":true}]}", 0);
    sim_script(w->h, "fz-done#", "{\"steps\":[{\"tool\":\"read\"},{\"reply\":\"done\"}]}", 0);
    fz_reset(w);
    return w;
}

void fz_require(bool ok, const char *what, const char *text)
{
    if (!ok) {
        fprintf(stderr, "fuzz: %s: %s\n", what, text ? text : "(none)");
        abort();
    }
}

bool fz_is_status(const char *s)
{
    const char *const names[] = {"pending", "running", "resumed", "completed", "error", "cancelled"};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0)
            return true;
    return false;
}

bool fz_is_string(const cJSON *o, const char *name)
{
    return cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* A view as ocp.h publish_view and docs/panel.md say. */
static void check_view(const char *text)
{
    cJSON *v = cJSON_Parse(text);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(v, "tasks"), *t;
    fz_require(cJSON_IsObject(v) && cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "v")) == 1 &&
                   fz_is_string(v, "session") && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(v, "seq")) &&
                   cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(v, "now")) && cJSON_IsArray(tasks) &&
                   cJSON_GetArraySize(tasks) <= 50,
               "a view not of the documented shape", text);
    cJSON_ArrayForEach (t, tasks) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "kind"));
        fz_require(fz_is_string(t, "id") && kind && (strcmp(kind, "agent") == 0 || strcmp(kind, "shell") == 0) &&
                       fz_is_status(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "status"))) &&
                       fz_is_string(t, "description"),
                   "a view's task not of the documented shape", text);
    }
    cJSON_Delete(v);
}

/* Every view the plugin published over the world's life. */
static void check_views(fz_world *w)
{
    size_t n = sim_views(w->h, NULL);
    for (size_t i = 0; i < n; i++) {
        char *view = sim_view(w->h, NULL, (int)i);
        check_view(view);
        free(view);
    }
}

void fz_leak_check(void)
{
    if (__lsan_do_recoverable_leak_check() != 0) {
        fprintf(stderr, "fuzz: memory leaked since the last check (the inputs of that span; see above)\n");
        abort();
    }
}

/* Check the views, shut the plugin down and free the host with all it
 * recorded; then nothing the world made may be left. */
static void fz_teardown(fz_world *w)
{
    check_views(w);
    w->p->shutdown(w->p->userdata);
    sim_destroy(w->h);
    free(w->parent);
    free(w->done_id);
    free(w->run_id);
    free(w->run_session);
    free(w->batch_id);
    memset(w, 0, sizeof *w);
    fz_leak_check();
}

void fz_reset(fz_world *w)
{
    /* The host records every call and keeps every session: now and then a
     * new world, or a long run slows down and grows without end. */
    static unsigned resets;
    if (w->p && ++resets % 8 == 0) {
        fz_teardown(w);
        fz_world_get();
        return;
    }
    free(call(w, "background_clear", "{}", 1, NULL));
    free(w->done_id);
    free(w->batch_id);
    char *out =
        call(w, "background_task", "{\"description\":\"Done\",\"prompt\":\"fz-done#\",\"agent\":\"explore\"}", 0, NULL);
    w->done_id = find_id(out, "bg_");
    w->batch_id = find_id(out, "batch_");
    free(out);
    /* This instance is not loaded into the host, so no event reaches it:
     * the fallback poll completes the task. */
    if (!w->done_id || sim_wait(w->h, completed, w, 10000) != 0) {
        fprintf(stderr, "fuzz: the setup task did not complete\n");
        abort();
    }
    fz_refresh(w);
}

char *fz_text(fz_world *w, const uint8_t *data, size_t size)
{
    struct {
        const char *token, *value;
    } subs[] = {{"$RUNSES", w->run_session},
                {"$RUN", w->run_id},
                {"$DONE", w->done_id},
                {"$PARENT", w->parent},
                {"$BATCH", w->batch_id}};
    size_t cap = size * 4 + 64, len = 0;
    char *out = malloc(cap);
    for (size_t i = 0; i < size;) {
        int matched = 0;
        for (size_t k = 0; k < sizeof subs / sizeof subs[0] && !matched; k++) {
            size_t tl = strlen(subs[k].token);
            if (subs[k].value && i + tl <= size && memcmp(data + i, subs[k].token, tl) == 0) {
                size_t vl = strlen(subs[k].value);
                if (len + vl + 1 > cap) {
                    cap = (len + vl + 1) * 2;
                    out = realloc(out, cap);
                }
                memcpy(out + len, subs[k].value, vl);
                len += vl;
                i += tl;
                matched = 1;
            }
        }
        if (!matched) {
            if (len + 2 > cap) {
                cap *= 2;
                out = realloc(out, cap);
            }
            out[len++] = (char)data[i++];
        }
    }
    out[len] = '\0';
    return out;
}

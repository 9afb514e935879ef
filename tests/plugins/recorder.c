/*
 * recorder.c — a tiny ocp plugin for testing hosts (the simulated one first).
 *
 * It records every event it receives and exposes tools that exercise the host:
 *   events {type?}        → JSON array of the events received (optionally one type)
 *   clear                 → forget the recorded events
 *   host {fn, ...}        → call a host function, answer {"rc":…,"out":…}
 *                           fn: session_create {parentID?, title?}, session_get
 *                           {sessionID}, session_messages {sessionID, limit?},
 *                           session_prompt {sessionID, body (object or text)},
 *                           session_abort {sessionID}, session_status,
 *                           session_fork {sessionID, messageID?},
 *                           session_create_in {parentID?, title?, directory},
 *                           directory_watch {directory, watch},
 *                           log {level?, message}, now_ms
 *   block {ms?}           → wait until cancelled (-ECANCELED "cancelled"), shutdown
 *                           (-ECANCELED "shutting down") or ms elapsed (0 "timeout")
 *   waiting               → how many block calls are waiting now (a number)
 *   hammer {threads, fn}  → start threads calling host fn (session_status or
 *                           session_create) in a loop until shutdown
 *   ctx                   → the call context as JSON
 *   transform {marker}    → from now on transform_messages appends a synthetic
 *                           user message whose text is marker ("" turns it off)
 * and one command, "rec", answering "rec:<arguments>".
 *
 * Options: {"refuse":"reason"} refuses to load with that reason;
 * {"abi_major":N} returns a table claiming ABI major N; other keys are refused.
 * Each instance has its own state, so copies of the file load independently.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ocp.h"

typedef struct rec {
    ocp_plugin table;
    const ocp_host *host;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC; signalled on cancel and shutdown */
    char **events;
    size_t nevents, cap;
    int shutting;
    int calls;   /* tool/command calls inside the plugin */
    int waiting; /* block calls waiting now */
    pthread_t *workers;
    size_t nworkers;
    char *marker; /* transform marker, NULL: off */
} rec;

typedef struct worker_arg {
    rec *r;
    int create; /* 1: session_create, else session_status */
} worker_arg;

static const ocp_tool rec_tools[] = {
    {"events", "recorded events", "{\"type\":\"object\",\"properties\":{}}"},
    {"clear", "forget events", "{\"type\":\"object\",\"properties\":{}}"},
    {"host", "call a host function", "{\"type\":\"object\",\"properties\":{}}"},
    {"block", "wait until cancelled", "{\"type\":\"object\",\"properties\":{}}"},
    {"hammer", "call the host from threads", "{\"type\":\"object\",\"properties\":{}}"},
    {"waiting", "how many block calls wait", "{\"type\":\"object\",\"properties\":{}}"},
    {"ctx", "the call context", "{\"type\":\"object\",\"properties\":{}}"},
    {"transform", "set the transform marker", "{\"type\":\"object\",\"properties\":{}}"},
};

static const ocp_command rec_commands[] = {{"rec", "echo the arguments"}};

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void rec_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

static void rec_on_event(void *ud, const char *event_json)
{
    rec *r = ud;
    char *copy = dupstr(event_json);
    if (!copy)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->nevents == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        char **e = realloc(r->events, cap * sizeof *e);
        if (!e) {
            pthread_mutex_unlock(&r->mu);
            free(copy);
            return;
        }
        r->events = e;
        r->cap = cap;
    }
    r->events[r->nevents++] = copy;
    pthread_mutex_unlock(&r->mu);
}

/* Call one host function named in args; returns {"rc":…,"out":…} text. */
static char *call_host(rec *r, const cJSON *args)
{
    const ocp_host *h = r->host;
    void *u = h->userdata;
    const char *fn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "fn"));
    const char *sid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "sessionID"));
    const char *parent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "parentID"));
    const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "title"));
    const char *mid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "messageID"));
    const cJSON *limit = cJSON_GetObjectItemCaseSensitive(args, "limit");
    char *out = NULL;
    int rc = -ENOSYS;
    cJSON *res = cJSON_CreateObject();
    if (!fn) {
        rc = -EINVAL;
    } else if (strcmp(fn, "session_create") == 0) {
        rc = h->session_create(u, parent, title, &out);
    } else if (strcmp(fn, "session_get") == 0) {
        rc = h->session_get(u, sid, &out);
    } else if (strcmp(fn, "session_messages") == 0) {
        rc = h->session_messages(u, sid, limit ? (int)cJSON_GetNumberValue(limit) : 0, &out);
    } else if (strcmp(fn, "session_prompt") == 0) {
        const cJSON *body = cJSON_GetObjectItemCaseSensitive(args, "body");
        char *text = cJSON_IsString(body) ? dupstr(body->valuestring) : body ? cJSON_PrintUnformatted(body) : NULL;
        rc = h->session_prompt(u, sid, text, &out);
        free(text);
    } else if (strcmp(fn, "session_abort") == 0) {
        rc = h->session_abort(u, sid, &out);
    } else if (strcmp(fn, "session_status") == 0) {
        rc = h->session_status(u, &out);
    } else if (strcmp(fn, "session_fork") == 0) {
        rc = h->session_fork ? h->session_fork(u, sid, mid, &out) : -ENOSYS;
    } else if (strcmp(fn, "session_create_in") == 0) {
        const char *dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "directory"));
        rc = OCP_HAS_FIELD(ocp_host, h, session_create_in) && h->session_create_in
                 ? h->session_create_in(u, parent, title, dir, &out)
                 : -ENOSYS;
    } else if (strcmp(fn, "directory_watch") == 0) {
        const char *dir = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "directory"));
        int watch = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(args, "watch"));
        rc = OCP_HAS_FIELD(ocp_host, h, directory_watch) && h->directory_watch ? h->directory_watch(u, dir, watch)
                                                                               : -ENOSYS;
    } else if (strcmp(fn, "log") == 0) {
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "message"));
        const cJSON *lv = cJSON_GetObjectItemCaseSensitive(args, "level");
        h->log(u, lv ? (enum ocp_log_level)(int)cJSON_GetNumberValue(lv) : OCP_LOG_INFO, msg ? msg : "");
        rc = 0;
    } else if (strcmp(fn, "now_ms") == 0) {
        rc = 0;
        if (OCP_HAS_FIELD(ocp_host, h, now_ms) && h->now_ms)
            cJSON_AddNumberToObject(res, "now", (double)h->now_ms(u));
    }
    cJSON_AddNumberToObject(res, "rc", rc);
    if (out) {
        /* JSON results stay JSON; messages stay text. */
        cJSON *j = cJSON_Parse(out);
        cJSON_AddItemToObject(res, "out", j ? j : cJSON_CreateString(out));
        h->free(u, out);
    } else {
        cJSON_AddNullToObject(res, "out");
    }
    char *s = cJSON_PrintUnformatted(res);
    cJSON_Delete(res);
    return s;
}

static char *list_events(rec *r, const cJSON *args)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "type"));
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nevents; i++) {
        cJSON *e = cJSON_Parse(r->events[i]);
        if (!e)
            e = cJSON_CreateString(r->events[i]);
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "type"));
        if (type && (!t || strcmp(t, type) != 0)) {
            cJSON_Delete(e);
            continue;
        }
        cJSON_AddItemToArray(a, e);
    }
    pthread_mutex_unlock(&r->mu);
    char *s = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return s;
}

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    rec *r = w->r;
    for (;;) {
        pthread_mutex_lock(&r->mu);
        int stop = r->shutting;
        pthread_mutex_unlock(&r->mu);
        if (stop)
            break;
        char *out = NULL;
        /* No plugin lock held across the host call (the ABI rule). */
        if (w->create)
            r->host->session_create(r->host->userdata, NULL, "hammer", &out);
        else
            r->host->session_status(r->host->userdata, &out);
        r->host->free(r->host->userdata, out);
    }
    free(w);
    return NULL;
}

static int start_workers(rec *r, const cJSON *args, char **out)
{
    int n = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(args, "threads"));
    const char *fn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "fn"));
    if (n < 1 || n > 64) {
        *out = dupstr("threads must be 1..64");
        return -EINVAL;
    }
    pthread_mutex_lock(&r->mu);
    pthread_t *ws = realloc(r->workers, (r->nworkers + (size_t)n) * sizeof *ws);
    if (!ws) {
        pthread_mutex_unlock(&r->mu);
        return -ENOMEM;
    }
    r->workers = ws;
    for (int i = 0; i < n; i++) {
        worker_arg *w = malloc(sizeof *w);
        if (!w)
            break;
        w->r = r;
        w->create = fn && strcmp(fn, "session_create") == 0;
        if (pthread_create(&r->workers[r->nworkers], NULL, worker_main, w) != 0) {
            free(w);
            break;
        }
        r->nworkers++;
    }
    pthread_mutex_unlock(&r->mu);
    *out = dupstr("started");
    return 0;
}

static int block(rec *r, const cJSON *args, ocp_call_ctx *ctx, char **out)
{
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(args, "ms");
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (ms) {
        long long t = (long long)cJSON_GetNumberValue(ms);
        dl.tv_sec += (time_t)(t / 1000);
        dl.tv_nsec += (long)(t % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    int rc = 0;
    pthread_mutex_lock(&r->mu);
    r->waiting++;
    for (;;) {
        if (__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST)) {
            rc = -ECANCELED;
            *out = dupstr("cancelled");
            break;
        }
        if (r->shutting) {
            rc = -ECANCELED;
            *out = dupstr("shutting down");
            break;
        }
        if (ms) {
            if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT &&
                !__atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST) && !r->shutting) {
                *out = dupstr("timeout");
                break;
            }
        } else {
            pthread_cond_wait(&r->cv, &r->mu);
        }
    }
    r->waiting--;
    pthread_mutex_unlock(&r->mu);
    return rc;
}

static char *ctx_json(const ocp_call_ctx *ctx)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "struct_size", ctx->struct_size);
    cJSON_AddStringToObject(o, "session_id", ctx->session_id ? ctx->session_id : "");
    cJSON_AddStringToObject(o, "message_id", ctx->message_id ? ctx->message_id : "");
    cJSON_AddStringToObject(o, "agent", ctx->agent ? ctx->agent : "");
    cJSON_AddStringToObject(o, "call_id", ctx->call_id ? ctx->call_id : "");
    cJSON_AddStringToObject(o, "directory", ctx->directory ? ctx->directory : "");
    cJSON_AddNumberToObject(o, "cancelled", __atomic_load_n(&ctx->cancelled, __ATOMIC_SEQ_CST));
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int enter(rec *r)
{
    pthread_mutex_lock(&r->mu);
    int ok = !r->shutting;
    if (ok)
        r->calls++;
    pthread_mutex_unlock(&r->mu);
    return ok;
}

static void leave(rec *r)
{
    pthread_mutex_lock(&r->mu);
    r->calls--;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int rec_tool_call(void *ud, const char *tool, const char *args_json, ocp_call_ctx *ctx, char **out)
{
    rec *r = ud;
    *out = NULL;
    if (!enter(r)) {
        *out = dupstr("shutting down");
        return -ECANCELED;
    }
    cJSON *args = cJSON_Parse(args_json ? args_json : "{}");
    int rc = 0;
    if (!cJSON_IsObject(args)) {
        rc = -EINVAL;
        *out = dupstr("arguments must be a JSON object");
    } else if (strcmp(tool, "events") == 0) {
        *out = list_events(r, args);
    } else if (strcmp(tool, "clear") == 0) {
        pthread_mutex_lock(&r->mu);
        for (size_t i = 0; i < r->nevents; i++)
            free(r->events[i]);
        r->nevents = 0;
        pthread_mutex_unlock(&r->mu);
        *out = dupstr("cleared");
    } else if (strcmp(tool, "host") == 0) {
        *out = call_host(r, args);
    } else if (strcmp(tool, "block") == 0) {
        rc = block(r, args, ctx, out);
    } else if (strcmp(tool, "hammer") == 0) {
        rc = start_workers(r, args, out);
    } else if (strcmp(tool, "waiting") == 0) {
        char buf[32];
        pthread_mutex_lock(&r->mu);
        snprintf(buf, sizeof buf, "%d", r->waiting);
        pthread_mutex_unlock(&r->mu);
        *out = dupstr(buf);
    } else if (strcmp(tool, "ctx") == 0) {
        *out = ctx_json(ctx);
    } else if (strcmp(tool, "transform") == 0) {
        const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, "marker"));
        pthread_mutex_lock(&r->mu);
        free(r->marker);
        r->marker = m && *m ? dupstr(m) : NULL;
        pthread_mutex_unlock(&r->mu);
        *out = dupstr("ok");
    } else {
        rc = -ENOENT;
        *out = dupstr("unknown tool");
    }
    cJSON_Delete(args);
    leave(r);
    return rc;
}

static void rec_tool_cancel(void *ud, ocp_call_ctx *ctx)
{
    rec *r = ud;
    (void)ctx; /* the flag is already set; wake every waiter to re-check its own */
    pthread_mutex_lock(&r->mu);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static int rec_command_call(void *ud, const char *command, const char *arguments, ocp_call_ctx *ctx, char **out)
{
    rec *r = ud;
    (void)ctx;
    *out = NULL;
    if (strcmp(command, "rec") != 0) {
        *out = dupstr("unknown command");
        return -ENOENT;
    }
    (void)r;
    size_t n = strlen(arguments ? arguments : "") + 8;
    *out = malloc(n);
    if (!*out)
        return -ENOMEM;
    snprintf(*out, n, "rec:%s", arguments ? arguments : "");
    return 0;
}

static int rec_transform(void *ud, const char *session_id, const char *messages_json, char **out)
{
    rec *r = ud;
    *out = NULL;
    pthread_mutex_lock(&r->mu);
    char *marker = r->marker ? dupstr(r->marker) : NULL;
    pthread_mutex_unlock(&r->mu);
    if (!marker)
        return 0;
    cJSON *a = cJSON_Parse(messages_json);
    if (!cJSON_IsArray(a)) {
        cJSON_Delete(a);
        free(marker);
        return -EINVAL;
    }
    cJSON *m = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(m, "info");
    cJSON_AddStringToObject(info, "id", "msg_marker");
    cJSON_AddStringToObject(info, "sessionID", session_id);
    cJSON_AddStringToObject(info, "role", "user");
    cJSON *part = cJSON_CreateObject();
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", marker);
    cJSON_AddTrueToObject(part, "synthetic");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "parts"), part);
    cJSON_AddItemToArray(a, m);
    *out = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    free(marker);
    return 0;
}

static void rec_shutdown(void *ud)
{
    rec *r = ud;
    pthread_mutex_lock(&r->mu);
    r->shutting = 1;
    pthread_cond_broadcast(&r->cv);
    while (r->calls > 0)
        pthread_cond_wait(&r->cv, &r->mu);
    size_t n = r->nworkers;
    pthread_mutex_unlock(&r->mu);
    /* Workers may be inside host calls: join them without holding mu. */
    for (size_t i = 0; i < n; i++)
        pthread_join(r->workers[i], NULL);
    for (size_t i = 0; i < r->nevents; i++)
        free(r->events[i]);
    free(r->events);
    free(r->workers);
    free(r->marker);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static ocp_plugin wrong_abi_table;

static void set_err(char *err, size_t err_size, const char *a, const char *b)
{
    if (err && err_size)
        snprintf(err, err_size, "%s%s", a, b ? b : "");
}

__attribute__((visibility("default"))) const ocp_plugin *
ocp_plugin_entry(const ocp_host *host, const char *options_json, char *err, size_t err_size)
{
    if (!host || host->abi_major != OCP_ABI_MAJOR) {
        set_err(err, err_size, "recorder: host ABI major differs", NULL);
        return NULL;
    }
    if (host->struct_size < OCP_HOST_MIN_SIZE) {
        set_err(err, err_size, "recorder: host table too small", NULL);
        return NULL;
    }
    int wrong_abi = -1;
    if (options_json) {
        cJSON *o = cJSON_Parse(options_json);
        if (!cJSON_IsObject(o)) {
            cJSON_Delete(o);
            set_err(err, err_size, "recorder: options must be a JSON object", NULL);
            return NULL;
        }
        const cJSON *it;
        cJSON_ArrayForEach (it, o) {
            if (strcmp(it->string, "refuse") == 0 && cJSON_IsString(it)) {
                set_err(err, err_size, it->valuestring, NULL);
                cJSON_Delete(o);
                return NULL;
            } else if (strcmp(it->string, "abi_major") == 0 && cJSON_IsNumber(it)) {
                wrong_abi = it->valueint;
            } else {
                set_err(err, err_size, "recorder: unknown option: ", it->string);
                cJSON_Delete(o);
                return NULL;
            }
        }
        cJSON_Delete(o);
    }
    if (wrong_abi >= 0) {
        /* Nothing started, nothing allocated: the host cannot shut it down. */
        wrong_abi_table.struct_size = sizeof wrong_abi_table;
        wrong_abi_table.abi_major = (uint16_t)wrong_abi;
        return &wrong_abi_table;
    }
    rec *r = calloc(1, sizeof *r);
    if (!r) {
        set_err(err, err_size, "recorder: out of memory", NULL);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &a);
    pthread_condattr_destroy(&a);
    r->host = host;
    ocp_plugin *t = &r->table;
    t->struct_size = sizeof *t;
    t->abi_major = OCP_ABI_MAJOR;
    t->abi_minor = OCP_ABI_MINOR;
    t->userdata = r;
    t->name = "recorder";
    t->version = "1";
    t->tool_count = sizeof rec_tools / sizeof rec_tools[0];
    t->tools = rec_tools;
    t->command_count = 1;
    t->commands = rec_commands;
    t->tool_call = rec_tool_call;
    t->tool_cancel = rec_tool_cancel;
    t->command_call = rec_command_call;
    t->on_event = rec_on_event;
    t->transform_messages = rec_transform;
    t->shutdown = rec_shutdown;
    t->free = rec_free;
    return t;
}

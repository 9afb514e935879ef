/* bare_host.c — a minimal ocp host written against include/ocp.h alone (libc,
 * POSIX threads, dlopen: no cJSON, no SQLite, no simulated host), to prove a
 * build of ocbg.so loads and works on a bare machine: tests/bare/bare.mk runs
 * it inside Debian 11 roots that have neither library.
 *
 * Usage: bare_host PATH/ocbg.so. It loads the plugin, runs a background
 * command (Bash) and a background sub-agent (background_task) whose child
 * session it answers with a scripted reply, waits for each one's notification
 * in the parent session (deadline BARE_TIMEOUT_MS, default 60000), shuts the
 * plugin down, unloads it and prints TAP. Exit status 0 when every check
 * passed, 1 otherwise, 2 on bad usage.
 *
 * Threads: main makes the tool calls (a [worker] thread in ocp.h's terms);
 * one event thread runs the sessions' turns and delivers their events; the
 * plugin's own threads call the host functions, which take h->mu only. */
#define _XOPEN_SOURCE 700
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bare_json.h"
#include "ocp.h"

#define SHELL_COMMAND "echo bare-host-$((40 + 2))"
#define SHELL_LINE "bare-host-42" /* what it prints: not the command's own text */
#define CHILD_PROMPT "Say hello from the bare machine."
#define CHILD_REPLY "Hello from the scripted sub-agent on the bare machine."
#define PLAN 15

/* ---- the host's state --------------------------------------------------- */

#define MAX_SESSIONS 16

typedef struct session {
    char id[32];
    char parent[32]; /* "" for a top-level session */
    char *title;
    int64_t created;
    int busy;      /* a turn queued or running */
    list messages; /* each {info, parts} as JSON text, oldest first */
    list prompts;  /* each prompt's text as the plugin sent it */
} session;

typedef struct turn {
    struct turn *next;
    char session[32];
} turn;

typedef struct bare_host {
    pthread_mutex_t mu;
    pthread_cond_t changed; /* CLOCK_MONOTONIC; a prompt, an answer, a turn queued, stopping */
    session sessions[MAX_SESSIONS];
    size_t nsessions;
    unsigned next_id;
    turn *turns, *turns_tail;
    int stopping;
    list asks;    /* "permission patterns_json", each ask_permission call */
    list logs;    /* "level: message" */
    list notices; /* "title: message" */
    const ocp_plugin *plugin;
    char dir[256]; /* the temp folder: data_dir and the commands' folder */
} bare_host;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static session *find_session_locked(bare_host *h, const char *id)
{
    for (size_t i = 0; id && i < h->nsessions; i++)
        if (strcmp(h->sessions[i].id, id) == 0)
            return &h->sessions[i];
    return NULL;
}

static char *session_json_locked(const bare_host *h, const session *s)
{
    strbuf b = {0};
    sb_puts(&b, "{\"id\":");
    json_str(&b, s->id);
    if (s->parent[0]) {
        sb_puts(&b, ",\"parentID\":");
        json_str(&b, s->parent);
    }
    sb_puts(&b, ",\"title\":");
    json_str(&b, s->title);
    sb_puts(&b, ",\"directory\":");
    json_str(&b, h->dir);
    sb_printf(&b, ",\"time\":{\"created\":%lld,\"updated\":%lld}}", (long long)s->created, (long long)s->created);
    return sb_take(&b);
}

/* A message in OpenCode's shape with one text part; an assistant's is a
 * finished answer (completed, finish "stop", usage). */
static char *message_json_locked(bare_host *h, const session *s, const char *role, const char *agent, const char *text)
{
    unsigned n = ++h->next_id;
    int64_t now = wall_ms();
    strbuf b = {0};
    sb_printf(&b, "{\"info\":{\"id\":\"msg_bare%06u\",\"sessionID\":", n);
    json_str(&b, s->id);
    sb_printf(&b, ",\"role\":\"%s\",\"agent\":", role);
    json_str(&b, agent);
    sb_printf(&b, ",\"time\":{\"created\":%lld", (long long)now);
    if (strcmp(role, "assistant") == 0)
        sb_printf(&b,
                  ",\"completed\":%lld},\"finish\":\"stop\",\"modelID\":\"scripted\",\"providerID\":\"bare\","
                  "\"tokens\":{\"input\":12,\"output\":8,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}},"
                  "\"cost\":0",
                  (long long)now);
    else
        sb_puts(&b, "}");
    sb_printf(&b, "},\"parts\":[{\"id\":\"prt_bare%06u\",\"sessionID\":", n);
    json_str(&b, s->id);
    sb_printf(&b, ",\"messageID\":\"msg_bare%06u\",\"type\":\"text\",\"text\":", n);
    json_str(&b, text);
    sb_puts(&b, "}]}");
    return sb_take(&b);
}

/* ---- the host table's functions ----------------------------------------- */

static int not_found(const char *id, char **out)
{
    strbuf b = {0};
    sb_printf(&b, "no such session: %s", id ? id : "(null)");
    *out = sb_take(&b);
    return -ENOENT;
}

static int h_session_create(void *ud, const char *parent_id, const char *title, char **out)
{
    bare_host *h = ud;
    pthread_mutex_lock(&h->mu);
    if (h->nsessions == MAX_SESSIONS || (parent_id && !find_session_locked(h, parent_id))) {
        pthread_mutex_unlock(&h->mu);
        *out = xstrdup(parent_id ? "no such parent session, or too many sessions" : "too many sessions");
        return parent_id ? -ENOENT : -EIO;
    }
    session *s = &h->sessions[h->nsessions++];
    *s = (session){.created = wall_ms()};
    snprintf(s->id, sizeof s->id, "ses_bare%04u", ++h->next_id);
    snprintf(s->parent, sizeof s->parent, "%s", parent_id ? parent_id : "");
    s->title = xstrdup(title ? title : "New session");
    *out = session_json_locked(h, s);
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static int h_session_get(void *ud, const char *session_id, char **out)
{
    bare_host *h = ud;
    pthread_mutex_lock(&h->mu);
    session *s = find_session_locked(h, session_id);
    *out = s ? session_json_locked(h, s) : NULL;
    pthread_mutex_unlock(&h->mu);
    return s ? 0 : not_found(session_id, out);
}

static int h_session_messages(void *ud, const char *session_id, int limit, char **out)
{
    bare_host *h = ud;
    pthread_mutex_lock(&h->mu);
    session *s = find_session_locked(h, session_id);
    if (!s) {
        pthread_mutex_unlock(&h->mu);
        return not_found(session_id, out);
    }
    size_t from = limit > 0 && (size_t)limit < s->messages.n ? s->messages.n - (size_t)limit : 0;
    strbuf b = {0};
    sb_puts(&b, "[");
    for (size_t i = from; i < s->messages.n; i++) {
        if (i > from)
            sb_puts(&b, ",");
        sb_puts(&b, s->messages.v[i]);
    }
    sb_puts(&b, "]");
    pthread_mutex_unlock(&h->mu);
    *out = sb_take(&b);
    return 0;
}

/* Stores the prompt as a user message; unless noReply, queues a turn that the
 * event thread runs (the answer, then idle), as OpenCode's prompt_async. */
static int h_session_prompt(void *ud, const char *session_id, const char *body_json, char **out)
{
    bare_host *h = ud;
    prompt_seen seen = {0};
    if (prompt_scan(body_json, &seen) != 0) {
        free(seen.text.s);
        *out = xstrdup("the prompt body is not JSON");
        return -EINVAL;
    }
    char *text = sb_take(&seen.text);
    pthread_mutex_lock(&h->mu);
    session *s = find_session_locked(h, session_id);
    if (!s) {
        pthread_mutex_unlock(&h->mu);
        free(text);
        return not_found(session_id, out);
    }
    list_push(&s->messages, message_json_locked(h, s, "user", s->parent[0] ? "general" : "build", text));
    list_push(&s->prompts, text);
    if (!seen.no_reply) {
        turn *t = xrealloc(NULL, sizeof *t);
        *t = (turn){0};
        snprintf(t->session, sizeof t->session, "%s", s->id);
        *(h->turns ? &h->turns_tail->next : &h->turns) = t;
        h->turns_tail = t;
        s->busy = 1;
    }
    pthread_cond_broadcast(&h->changed);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static int h_session_abort(void *ud, const char *session_id, char **out)
{
    bare_host *h = ud;
    pthread_mutex_lock(&h->mu);
    session *s = find_session_locked(h, session_id);
    pthread_mutex_unlock(&h->mu);
    return s ? 0 : not_found(session_id, out);
}

static int h_session_status(void *ud, char **out)
{
    bare_host *h = ud;
    strbuf b = {0};
    sb_puts(&b, "{");
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0, n = 0; i < h->nsessions; i++) {
        if (h->sessions[i].busy)
            sb_printf(&b, "%s\"%s\":{\"type\":\"busy\"}", n++ ? "," : "", h->sessions[i].id);
    }
    pthread_mutex_unlock(&h->mu);
    sb_puts(&b, "}");
    *out = sb_take(&b);
    return 0;
}

static void h_log(void *ud, enum ocp_log_level level, const char *message)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    bare_host *h = ud;
    strbuf b = {0};
    sb_printf(&b, "%s: %s", (unsigned)level < 4 ? names[level] : "?", message ? message : "");
    pthread_mutex_lock(&h->mu);
    list_push(&h->logs, sb_take(&b));
    pthread_mutex_unlock(&h->mu);
}

static void h_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

/* Every question is allowed, and recorded: what the host was asked. */
static int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    (void)ctx;
    (void)out;
    bare_host *h = ud;
    strbuf b = {0};
    sb_printf(&b, "%s %s", req->permission ? req->permission : "(null)", req->patterns_json ? req->patterns_json : "");
    pthread_mutex_lock(&h->mu);
    list_push(&h->asks, sb_take(&b));
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static int h_notify_user(void *ud, enum ocp_notice_level level, const char *title, const char *message)
{
    (void)level;
    bare_host *h = ud;
    strbuf b = {0};
    sb_printf(&b, "%s: %s", title ? title : "", message ? message : "");
    pthread_mutex_lock(&h->mu);
    list_push(&h->notices, sb_take(&b));
    pthread_mutex_unlock(&h->mu);
    return 0;
}

/* ---- the event thread: turns and their events ---------------------------- */

static void deliver(bare_host *h, const char *type, const char *session_id, const char *status)
{
    char ev[256];
    if (status)
        snprintf(ev, sizeof ev, "{\"type\":\"%s\",\"properties\":{\"sessionID\":\"%s\",\"status\":{\"type\":\"%s\"}}}",
                 type, session_id, status);
    else
        snprintf(ev, sizeof ev, "{\"type\":\"%s\",\"properties\":{\"sessionID\":\"%s\"}}", type, session_id);
    h->plugin->on_event(h->plugin->userdata, ev);
}

/* A turn: busy, the scripted answer stored, then idle (the answer is visible
 * before the idle, as docs/abi.md asks of a host). A child session (the
 * sub-agent) answers CHILD_REPLY; the parent acknowledges a notification. */
static void run_turn(bare_host *h, const char *session_id)
{
    deliver(h, "session.status", session_id, "busy");
    pthread_mutex_lock(&h->mu);
    session *s = find_session_locked(h, session_id);
    if (s) {
        const char *reply = s->parent[0] ? CHILD_REPLY : "Noted.";
        list_push(&s->messages, message_json_locked(h, s, "assistant", s->parent[0] ? "general" : "build", reply));
        s->busy = 0;
        pthread_cond_broadcast(&h->changed);
    }
    pthread_mutex_unlock(&h->mu);
    deliver(h, "session.status", session_id, "idle");
    deliver(h, "session.idle", session_id, NULL);
}

static void *event_thread(void *arg)
{
    bare_host *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->turns && !h->stopping)
            pthread_cond_wait(&h->changed, &h->mu);
        if (h->stopping)
            break;
        turn *t = h->turns;
        h->turns = t->next;
        if (!h->turns)
            h->turns_tail = NULL;
        pthread_mutex_unlock(&h->mu);
        run_turn(h, t->session);
        free(t);
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- set-up and tear-down ------------------------------------------------ */

static bare_host *host_new(void)
{
    bare_host *h = xrealloc(NULL, sizeof *h);
    *h = (bare_host){0};
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->changed, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&h->mu, NULL);
    const char *tmp = getenv("TMPDIR");
    snprintf(h->dir, sizeof h->dir, "%s/bare_host.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(h->dir)) {
        fprintf(stderr, "bare_host: mkdtemp %s: %s\n", h->dir, strerror(errno));
        exit(1);
    }
    return h;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void host_free(bare_host *h)
{
    nftw(h->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (size_t i = 0; i < h->nsessions; i++) {
        free(h->sessions[i].title);
        list_free(&h->sessions[i].messages);
        list_free(&h->sessions[i].prompts);
    }
    while (h->turns) {
        turn *t = h->turns;
        h->turns = t->next;
        free(t);
    }
    list_free(&h->asks);
    list_free(&h->logs);
    list_free(&h->notices);
    pthread_cond_destroy(&h->changed);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

static ocp_host host_table(bare_host *h)
{
    return (ocp_host){
        .struct_size = sizeof(ocp_host),
        .abi_major = OCP_ABI_MAJOR,
        .abi_minor = OCP_ABI_MINOR,
        .userdata = h,
        .host_name = "bare_host",
        .host_version = "1",
        .session_create = h_session_create,
        .session_get = h_session_get,
        .session_messages = h_session_messages,
        .session_prompt = h_session_prompt,
        .session_abort = h_session_abort,
        .session_status = h_session_status,
        .log = h_log,
        .free = h_free,
        .ask_permission = h_ask_permission,
        .data_dir = h->dir,
        .notify_user = h_notify_user,
    };
}

/* ---- TAP ----------------------------------------------------------------- */

static int tests_run, tests_failed;

/* Each line of text as a TAP comment after "#   label: ". */
static void diag(const char *label, const char *text)
{
    const char *line = text ? text : "(nothing)";
    printf("#   %s: ", label);
    for (;;) {
        const char *nl = strchr(line, '\n');
        printf("%.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
        if (!nl || !nl[1])
            break;
        line = nl + 1;
        printf("#     ");
    }
}

/* One test line; a failure says what was expected and all that was seen, a
 * pass the first line of what was seen. */
static int check(int pass, const char *what, const char *expected, const char *seen)
{
    printf("%s %d - %s\n", pass ? "ok" : "not ok", ++tests_run, what);
    if (!pass) {
        tests_failed++;
        diag("expected", expected);
        diag("seen", seen);
    } else {
        const char *s = seen ? seen : "";
        printf("#   seen: %.*s%s\n", (int)strcspn(s, "\n"), s, strchr(s, '\n') ? " (...)" : "");
    }
    fflush(stdout);
    return pass;
}

/* ---- waiting: on h->changed, up to a deadline ---------------------------- */

static int timeout_ms(void)
{
    const char *s = getenv("BARE_TIMEOUT_MS");
    int ms = s ? atoi(s) : 0;
    return ms > 0 ? ms : 60000;
}

/* A copy of the newest prompt of `session_id` that holds `needle`, or NULL. */
static char *prompt_with_locked(bare_host *h, const char *session_id, const char *needle)
{
    session *s = find_session_locked(h, session_id);
    for (size_t i = s ? s->prompts.n : 0; i-- > 0;)
        if (strstr(s->prompts.v[i], needle))
            return xstrdup(s->prompts.v[i]);
    return NULL;
}

/* Waits until session_id has a prompt holding needle; a copy of it, or NULL
 * when the deadline passed first. */
static char *wait_prompt(bare_host *h, const char *session_id, const char *needle)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int ms = timeout_ms();
    until.tv_sec += ms / 1000 + (until.tv_nsec + (long)(ms % 1000) * 1000000) / 1000000000;
    until.tv_nsec = (until.tv_nsec + (long)(ms % 1000) * 1000000) % 1000000000;
    pthread_mutex_lock(&h->mu);
    char *got = prompt_with_locked(h, session_id, needle);
    int rc = 0;
    while (!got && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&h->changed, &h->mu, &until);
        got = prompt_with_locked(h, session_id, needle);
    }
    pthread_mutex_unlock(&h->mu);
    return got;
}

/* Checks that session_id got a prompt holding needle (a launched task's
 * notification); a copy of it, or NULL. A failure shows the prompts it got. */
static char *check_notified(bare_host *h, const char *what, const char *session_id, const char *needle, int launched)
{
    char *note = launched ? wait_prompt(h, session_id, needle) : NULL;
    strbuf seen = {0};
    if (!launched) {
        sb_puts(&seen, "no task was launched");
    } else if (!note) {
        sb_printf(&seen, "no such prompt within %d ms; the prompts it got:", timeout_ms());
        pthread_mutex_lock(&h->mu);
        session *s = find_session_locked(h, session_id);
        for (size_t i = 0; s && i < s->prompts.n; i++)
            sb_printf(&seen, "\n%s", s->prompts.v[i]);
        pthread_mutex_unlock(&h->mu);
    }
    check(note != NULL, what, needle, note ? note : seen.s);
    free(seen.s);
    return note;
}

/* Checks that one ask_permission call was exactly `want` ("permission
 * patterns_json"); a failure shows every question asked. */
static void check_asked(bare_host *h, const char *what, const char *want)
{
    strbuf all = {0};
    int hit = 0;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->asks.n; i++) {
        sb_printf(&all, "%s%s", i ? "\n" : "", h->asks.v[i]);
        hit |= strcmp(h->asks.v[i], want) == 0;
    }
    pthread_mutex_unlock(&h->mu);
    check(hit, what, want, hit ? want : all.s);
    free(all.s);
}

/* ---- the scenario -------------------------------------------------------- */

typedef struct run {
    bare_host *h;
    ocp_host table; /* valid until shutdown returns */
    void *dl;
    pthread_t events;
    const ocp_plugin *plugin;
    void (*pfree)(void *, char *); /* copies taken at load: see ocp.h, shutdown */
    void *pud;
    char parent[32];
} run;

/* A tool call in the parent session; its answer copied (the plugin's freed). */
static char *call_tool(run *r, const char *tool, const char *args, int *rc)
{
    ocp_call_ctx ctx = {.struct_size = sizeof ctx,
                        .session_id = r->parent,
                        .message_id = "msg_bare_caller",
                        .agent = "build",
                        .call_id = "call_bare",
                        .directory = r->h->dir};
    char *out = NULL;
    *rc = r->plugin->tool_call(r->pud, tool, args, &ctx, &out);
    char *copy = xstrdup(out ? out : "");
    r->pfree(r->pud, out);
    return copy;
}

/* The id after `label` in a tool's answer (up to the line's end), or NULL. */
static char *id_after(const char *text, const char *label)
{
    const char *at = strstr(text, label);
    if (!at)
        return NULL;
    at += strlen(label);
    size_t n = strcspn(at, "\n \"");
    char *id = xrealloc(NULL, n + 1);
    memcpy(id, at, n);
    id[n] = 0;
    return id;
}

/* (a) A background command: Bash with run_in_background, then its
 * notification in the parent with the command's output. */
static void shell_task(run *r)
{
    int rc;
    char *out = call_tool(r, "Bash",
                          "{\"command\":\"" SHELL_COMMAND "\",\"description\":\"print a known line\","
                          "\"run_in_background\":true}",
                          &rc);
    char *id = rc == 0 ? id_after(out, "task_id: ") : NULL;
    check(id != NULL, "Bash run_in_background launches a shell task", "rc 0 and \"task_id: <id>\"", out);
    check_asked(r->h, "the host was asked for bash, with the command", "bash [\"" SHELL_COMMAND "\"]");
    strbuf needle = {0};
    sb_printf(&needle, "[ocbg] Background command completed: %s", id ? id : "(no task)");
    char *note = check_notified(r->h, "the parent session is notified that the command completed", r->parent, needle.s,
                                id != NULL);
    const char *line = note ? strstr(note, "\n" SHELL_LINE "\n") : NULL;
    check(line != NULL, "the notification carries the command's output", "a line \"" SHELL_LINE "\"",
          line ? line + 1 : note);
    free(needle.s);
    free(note);
    free(id);
    free(out);
}

/* The first prompt of the parent's child session, or NULL. */
static char *child_prompt(run *r)
{
    char *text = NULL;
    pthread_mutex_lock(&r->h->mu);
    for (size_t i = 0; !text && i < r->h->nsessions; i++) {
        const session *s = &r->h->sessions[i];
        if (strcmp(s->parent, r->parent) == 0 && s->prompts.n > 0)
            text = xstrdup(s->prompts.v[0]);
    }
    pthread_mutex_unlock(&r->h->mu);
    return text;
}

/* (b) A background sub-agent: background_task; the host answers its child
 * session with CHILD_REPLY, and the parent is notified with it. */
static void agent_task(run *r)
{
    int rc;
    char *out =
        call_tool(r, "background_task",
                  "{\"prompt\":\"" CHILD_PROMPT "\",\"description\":\"bare child\",\"agent\":\"general\"}", &rc);
    char *id = rc == 0 ? id_after(out, "Task ID: ") : NULL;
    check(id != NULL, "background_task launches a sub-agent task", "rc 0 and \"Task ID: <id>\"", out);
    check_asked(r->h, "the host was asked for task, with the agent", "task [\"general\"]");
    char *prompt = child_prompt(r);
    check(prompt && strstr(prompt, CHILD_PROMPT), "a child session of the parent is sent the prompt", CHILD_PROMPT,
          prompt);
    free(prompt);
    strbuf needle = {0};
    sb_printf(&needle, "[ocbg] Background task completed: %s", id ? id : "(no task)");
    char *note = check_notified(r->h, "the parent session is notified that the sub-agent completed", r->parent,
                                needle.s, id != NULL);
    const char *result = note ? strstr(note, "Result:\n" CHILD_REPLY) : NULL;
    check(result != NULL, "the notification carries the sub-agent's reply", "\"Result:\" and the scripted reply",
          result ? result + strlen("Result:\n") : note);
    free(needle.s);
    free(note);
    free(id);
    free(out);
}

/* The store (SQLite, compiled into the plugin) keeps its file in data_dir. */
static void store_file(run *r)
{
    strbuf path = {0};
    sb_printf(&path, "%s/ocbg.db", r->h->dir);
    struct stat st;
    int ok = stat(path.s, &st) == 0 && st.st_size > 0;
    strbuf seen = {0};
    sb_printf(&seen, "%s: %s", path.s, ok ? "present" : "absent or empty");
    check(ok, "the task store is a file in the host's data_dir", "ocbg.db, not empty", seen.s);
    free(seen.s);
    free(path.s);
}

static const char *tool_names(const ocp_plugin *p, strbuf *b)
{
    for (size_t i = 0; i < p->tool_count; i++)
        sb_printf(b, "%s%s", i ? " " : "", p->tools[i].name);
    return b->s ? b->s : "";
}

static int has_tool(const ocp_plugin *p, const char *name)
{
    for (size_t i = 0; i < p->tool_count; i++)
        if (strcmp(p->tools[i].name, name) == 0)
            return 1;
    return 0;
}

/* The entry point, the plugin table, the tools, the event thread. 1 when
 * the plugin runs. */
static int load(run *r)
{
    void *sym = dlsym(r->dl, OCP_ENTRY_SYMBOL);
    if (!check(sym != NULL, "the plugin exports " OCP_ENTRY_SYMBOL, "a symbol", sym ? "found" : dlerror()))
        return 0;
    ocp_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    r->table = host_table(r->h);
    char err[512] = "";
    r->plugin =
        entry(&r->table, "{\"face_claude\":true,\"face_opencode\":true,\"poll_interval_ms\":200}", err, sizeof err);
    strbuf seen = {0};
    if (r->plugin)
        sb_printf(&seen, "%s %s, ABI %u.%u", r->plugin->name, r->plugin->version, (unsigned)r->plugin->abi_major,
                  (unsigned)r->plugin->abi_minor);
    int ok =
        check(r->plugin != NULL, "the entry point accepts the host table", "a plugin table", r->plugin ? seen.s : err);
    free(seen.s);
    if (!ok)
        return 0;
    r->pfree = r->plugin->free;
    r->pud = r->plugin->userdata;
    strbuf names = {0};
    check(has_tool(r->plugin, "Bash") && has_tool(r->plugin, "background_task"), "it offers Bash and background_task",
          "both among the tools", tool_names(r->plugin, &names));
    free(names.s);
    r->h->plugin = r->plugin;
    if (pthread_create(&r->events, NULL, event_thread, r->h) != 0) {
        fputs("bare_host: cannot start the event thread\n", stderr);
        exit(1);
    }
    return 1;
}

/* Stop delivering events, shut the plugin down, unload it. */
static void unload(run *r)
{
    pthread_mutex_lock(&r->h->mu);
    r->h->stopping = 1;
    pthread_cond_broadcast(&r->h->changed);
    pthread_mutex_unlock(&r->h->mu);
    pthread_join(r->events, NULL);
    r->plugin->shutdown(r->pud);
    r->plugin = NULL;
    int rc = dlclose(r->dl);
    check(rc == 0, "shutdown returns and dlclose succeeds", "dlclose 0", rc == 0 ? "0" : dlerror());
}

/* Warnings and errors the plugin logged, and its notices, as comments. */
static void print_log(bare_host *h)
{
    for (size_t i = 0; i < h->logs.n; i++)
        if (strncmp(h->logs.v[i], "warn", 4) == 0 || strncmp(h->logs.v[i], "error", 5) == 0)
            printf("# log %s\n", h->logs.v[i]);
    for (size_t i = 0; i < h->notices.n; i++)
        printf("# notice %s\n", h->notices.v[i]);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: bare_host PATH/ocbg.so\n", stderr);
        return 2;
    }
    printf("1..%d\n", PLAN);
    run r = {.dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)};
    const char *dlerr = r.dl ? NULL : dlerror();
    if (!check(r.dl != NULL, "dlopen loads the plugin and every library it needs", "a handle from dlopen(RTLD_NOW)",
               r.dl ? argv[1] : dlerr)) {
        printf("Bail out! %s does not load on this machine: %s\n", argv[1], dlerr ? dlerr : "");
        return 1;
    }
    r.h = host_new();
    if (load(&r)) {
        char *parent = NULL;
        if (h_session_create(r.h, NULL, "bare host", &parent) == 0) {
            char *id = id_after(parent, "{\"id\":\"");
            snprintf(r.parent, sizeof r.parent, "%s", id ? id : "");
            free(id);
            shell_task(&r);
            agent_task(&r);
            store_file(&r);
        }
        free(parent);
        unload(&r);
    } else {
        dlclose(r.dl);
    }
    print_log(r.h);
    host_free(r.h);
    if (tests_run != PLAN)
        printf("Bail out! %d of %d checks ran\n", tests_run, PLAN);
    return tests_failed == 0 && tests_run == PLAN ? 0 : 1;
}

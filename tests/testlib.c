/* testlib.c — see testlib.h. */
#include "testlib.h"

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

int t_rc;

sim_host *t_host(const char *options_json)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir)
        bail_out("OCBG_PLUGIN_DIR is not set (run the tests with make check)");
    sim_host *h = sim_create();
    if (!h)
        bail_out("sim_create failed");
    int n = sim_load_plugins(h, dir, options_json);
    if (n != 1)
        bail_out("loading ocbg from %s: %d plugins loaded (%s)", dir, n, sim_load_error(h));
    return h;
}

char *t_tool(sim_host *h, const char *session, const char *tool, const char *args_json)
{
    char *out = NULL;
    t_rc = sim_tool(h, session, tool, args_json, &out);
    return out ? out : calloc(1, 1);
}

char *t_find_id(const char *text, const char *prefix)
{
    const char *p = text ? strstr(text, prefix) : NULL;
    if (!p)
        return NULL;
    size_t n = strlen(prefix);
    while ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f'))
        n++;
    return strndup(p, n);
}

char *t_launch(sim_host *h, const char *session, const char *description, const char *prompt, const char *agent)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "description", description);
    cJSON_AddStringToObject(a, "prompt", prompt);
    cJSON_AddStringToObject(a, "agent", agent);
    char *json = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    char *out = t_tool(h, session, "background_task", json);
    free(json);
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("launch failed (rc %d): %s", t_rc, out);
    free(out);
    return id;
}

typedef struct status_arg {
    const char *session, *task_id;
    char want[128];
} status_arg;

static int has_status(sim_host *h, void *arg)
{
    status_arg *a = arg;
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", a->task_id);
    char *out = NULL;
    sim_tool(h, a->session, "background_output", args, &out);
    /* The first line is "Task <id>[ (markers)]: <status>". */
    char *nl = out ? strchr(out, '\n') : NULL;
    if (nl)
        *nl = '\0';
    size_t lw = strlen(a->want), lo = out ? strlen(out) : 0;
    int found = lo >= lw && strcmp(out + lo - lw, a->want) == 0;
    free(out);
    return found;
}

int t_wait_status(sim_host *h, const char *session, const char *task_id, const char *status, int timeout_ms)
{
    status_arg a = {session, task_id, {0}};
    snprintf(a.want, sizeof a.want, ": %s", status);
    return sim_wait(h, has_status, &a, tap_timeout_ms(timeout_ms));
}

int t_count_messages_with(sim_host *h, const char *session, const char *needle)
{
    int n = sim_session_message_count(h, session), count = 0;
    for (int i = 0; i < n; i++) {
        char *text = sim_session_message_text(h, session, i);
        if (text && strstr(text, needle))
            count++;
        free(text);
    }
    return count;
}

typedef struct msg_arg {
    const char *session, *needle;
    int n;
} msg_arg;

static int has_messages(sim_host *h, void *arg)
{
    msg_arg *a = arg;
    return t_count_messages_with(h, a->session, a->needle) >= a->n;
}

int t_wait_messages_with(sim_host *h, const char *session, const char *needle, int n, int timeout_ms)
{
    msg_arg a = {session, needle, n};
    return sim_wait(h, has_messages, &a, tap_timeout_ms(timeout_ms));
}

char *t_launch_script(sim_host *h, const char *session, const char *description, const char *script_json)
{
    static int seq;
    char prompt[64];
    snprintf(prompt, sizeof prompt, "scripted task #%d#", __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST));
    if (sim_script(h, prompt, script_json, 1) != 0)
        bail_out("bad script: %s", script_json);
    return t_launch(h, session, description, prompt, "explore");
}

char *t_task_session(sim_host *h, int n)
{
    return t_prompted_session(h, "\"tools\"", n);
}

char *t_prompted_session(sim_host *h, const char *needle, int n)
{
    char *json = sim_calls_json(h);
    cJSON *calls = cJSON_Parse(json);
    free(json);
    char *out = NULL;
    int seen = 0;
    const cJSON *c;
    cJSON_ArrayForEach (c, calls) {
        const char *fn = cJSON_GetStringValue(cJSON_GetObjectItem(c, "fn"));
        const char *body = cJSON_GetStringValue(cJSON_GetObjectItem(c, "body"));
        const char *ses = cJSON_GetStringValue(cJSON_GetObjectItem(c, "session"));
        if (!fn || strcmp(fn, "session_prompt") != 0 || !body || !ses || !strstr(body, needle))
            continue;
        if (seen++ == n) {
            out = strdup(ses);
            break;
        }
    }
    cJSON_Delete(calls);
    return out;
}

char *t_output(sim_host *h, const char *session, const char *task_id)
{
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", task_id);
    return t_tool(h, session, "background_output", args);
}

typedef struct output_arg {
    const char *session, *task_id, *needle;
} output_arg;

static int output_has(sim_host *h, void *arg)
{
    output_arg *a = arg;
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", a->task_id);
    char *out = NULL;
    sim_tool(h, a->session, "background_output", args, &out);
    int found = out && strstr(out, a->needle) != NULL;
    free(out);
    return found;
}

int t_wait_output_with(sim_host *h, const char *session, const char *task_id, const char *needle, int timeout_ms)
{
    output_arg a = {session, task_id, needle};
    return sim_wait(h, output_has, &a, tap_timeout_ms(timeout_ms));
}

int t_sync_notifications(sim_host *h, const char *session)
{
    char *id = t_launch_script(h, session, "sync point", "{\"steps\":[{\"reply\":\"sync point reached\"}]}");
    char needle[64];
    snprintf(needle, sizeof needle, "Background task completed: %s", id);
    free(id);
    return t_wait_messages_with(h, session, needle, 1, 5000);
}

char *t_message_with(sim_host *h, const char *session, const char *needle)
{
    for (int i = sim_session_message_count(h, session) - 1; i >= 0; i--) {
        char *text = sim_session_message_text(h, session, i);
        if (text && strstr(text, needle))
            return text;
        free(text);
    }
    return NULL;
}

int t_question_open(sim_host *h, void *session)
{
    char *id = sim_permission_open(h, session);
    free(id);
    return id != NULL;
}

int t_task_stored(const char *db, const char *id)
{
    return t_sql_int(db, "SELECT count(*) FROM task WHERE id = ?1", id);
}

int t_sql_int(const char *db, const char *sql, const char *arg)
{
    const char *build = getenv("OCBG_BUILD");
    char tool[4096];
    snprintf(tool, sizeof tool, "%s/test-tools/sql_int", build ? build : "build");
    char *argv[] = {tool, (char *)db, (char *)sql, (char *)arg, NULL};
    int fd[2], n = -1, status = 0;
    if (pipe(fd) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    pid_t pid;
    int e = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    char out[32] = "";
    FILE *f = e == 0 ? fdopen(fd[0], "r") : NULL;
    if (f && fgets(out, sizeof out, f))
        n = atoi(out);
    f ? fclose(f) : close(fd[0]);
    if (e == 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    return e == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? n : -1;
}

int t_calls_started(sim_host *h, void *arg)
{
    const t_started *a = arg;
    return sim_calls_started(h, a->fn) >= a->n;
}

/* ---- gated sub-agents -------------------------------------------------- */

sim_host *t_gated_host(const char *options)
{
    sim_host *h = t_host(options);
    sim_permission_rules(h, "{\"bash\":\"ask\"}");
    sim_permission_auto(h, NULL, NULL);
    return h;
}

char *t_launch_gated(sim_host *h, const char *parent, const char *name, const char *agent)
{
    char prompt[64], script[256], args[256];
    snprintf(prompt, sizeof prompt, "gated %s", name);
    snprintf(script, sizeof script,
             "{\"steps\":[{\"ask\":{\"permission\":\"bash\",\"patterns\":[\"gate %s\"]}},{\"reply\":\"done %s\"}]}",
             name, name);
    sim_script(h, prompt, script, 1);
    snprintf(args, sizeof args, "{\"description\":\"%s\",\"prompt\":\"%s\",\"agent\":\"%s\"}", name, prompt, agent);
    return t_tool(h, parent, "background_task", args);
}

char *t_gated_id(sim_host *h, const char *parent, const char *name, const char *agent)
{
    char *out = t_launch_gated(h, parent, name, agent);
    char *id = t_find_id(out, "bg_");
    if (!id)
        bail_out("launch %s: %s", name, out);
    free(out);
    return id;
}

typedef struct gate_arg {
    const char *name;
} gate_arg;

/* sim_wait predicate: task <name>'s question is open. */
static int gate_open(sim_host *h, void *arg)
{
    char needle[64];
    snprintf(needle, sizeof needle, "gated %s", ((gate_arg *)arg)->name);
    char *s = t_prompted_session(h, needle, 0);
    char *q = s ? sim_permission_open(h, s) : NULL;
    free(s);
    free(q);
    return q != NULL;
}

int t_wait_gate_open(sim_host *h, const char *name, int timeout_ms)
{
    gate_arg a = {name};
    return sim_wait(h, gate_open, &a, tap_timeout_ms(timeout_ms));
}

void t_release_gated(sim_host *h, const char *name)
{
    if (t_wait_gate_open(h, name, 5000) != 0)
        bail_out("task %s never asked its question", name);
    char needle[64];
    snprintf(needle, sizeof needle, "gated %s", name);
    char *s = t_prompted_session(h, needle, 0);
    char *q = sim_permission_open(h, s);
    sim_permission_reply(h, q, "once", NULL);
    free(q);
    free(s);
}

int t_gated_started(sim_host *h, const char *name)
{
    char needle[64];
    snprintf(needle, sizeof needle, "gated %s", name);
    char *s = t_prompted_session(h, needle, 0);
    free(s);
    return s != NULL;
}

char *t_gated_session(sim_host *h, const char *name)
{
    char *s = t_prompted_session(h, J("gated %s", name), 0);
    if (!s)
        bail_out("task %s has no session", name);
    return s;
}

int t_count_notifications(sim_host *h, const char *session, const char *prefix, const char *id)
{
    char *needle = xasprintf("%s%s", prefix, id);
    int n = t_count_messages_with(h, session, needle);
    free(needle);
    return n;
}

char *t_launch_isolated(sim_host *h, const char *parent, const char *description, const char *script_json,
                        const char *how)
{
    char *prompt = xasprintf("isolated %s", description);
    if (sim_script(h, prompt, script_json, 1) != 0)
        bail_out("bad script %s", script_json);
    char *args = xasprintf("{\"description\":\"%s\",\"prompt\":\"%s\",\"agent\":\"general\",\"isolation\":\"%s\"}",
                           description, prompt, how);
    char *out = t_tool(h, parent, "background_task", args);
    free(args);
    free(prompt);
    return out;
}

sim_host *t_host_checking_after(void)
{
    sim_host *h = t_host(NULL);
    sim_event_faults(h, 1, 1.0, 0, 0, "message.part.updated");
    return h;
}

char *t_repeat(const char *unit, size_t times)
{
    strbuf sb = {0};
    for (size_t i = 0; i < times; i++)
        sb_puts(&sb, unit);
    if (!sb.buf)
        sb_puts(&sb, "");
    return sb_take(&sb);
}

/* The shell line fmt formatted, run in dir: "cd '<dir>' && (<line>)". */
static char *sh_line(const char *dir, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    if (vasprintf(&cmd, fmt, ap) < 0)
        bail_out("out of memory");
    char *full = xasprintf("cd '%s' && (%s)", dir, cmd);
    free(cmd);
    return full;
}

int t_sh(const char *dir, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = sh_line(dir, fmt, ap);
    va_end(ap);
    char *full = xasprintf("%s >/dev/null 2>&1", line);
    int rc = system(full);
    free(full);
    free(line);
    return rc;
}

void t_git_project_make(const char *name, char *top, char *repo, char *data)
{
    snprintf(top, T_PROJECT_TOP, "/tmp/ocbg-%s-XXXXXX", name);
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    snprintf(repo, T_PROJECT_PATH, "%s/repo", top);
    snprintf(data, T_PROJECT_PATH, "%s/data", top);
    mkdir(data, 0777);
    mkdir(repo, 0777);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    if (t_sh(repo, "git init -q -b main && echo base > shared.txt && git add . && git -c user.name=t -c "
                   "user.email=t@example.com commit -qm init") != 0 ||
        chdir(repo) != 0)
        bail_out("cannot make the repository in %s", repo);
}

void t_git_project_remove(const char *top)
{
    if (chdir("/") == 0)
        t_sh("/", "rm -rf '%s'", top);
}

char *t_sh_line(const char *dir, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = sh_line(dir, fmt, ap);
    va_end(ap);
    char *full = xasprintf("%s 2>/dev/null", line);
    FILE *p = popen(full, "r");
    free(full);
    free(line);
    strbuf sb = {0};
    char buf[4096];
    size_t n;
    while (p && (n = fread(buf, 1, sizeof buf, p)) > 0)
        sb_putn(&sb, buf, n);
    if (p)
        pclose(p);
    char *text = sb.buf ? sb_take(&sb) : xstrdup("");
    text[strcspn(text, "\n")] = '\0';
    return text;
}

int t_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *t_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        sb_putn(&sb, buf, n);
    fclose(f);
    if (!sb.buf)
        sb_puts(&sb, "");
    return sb_take(&sb);
}

/* ---- small calls -------------------------------------------------------- */

char *t_cancel(sim_host *h, const char *session, const char *id)
{
    char args[256];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
    return t_tool(h, session, "background_cancel", args);
}

char *t_send(sim_host *h, const char *session, const char *id, const char *message)
{
    char args[512];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"message\":\"%s\"}", id, message);
    return t_tool(h, session, "background_send", args);
}

void t_output_like(sim_host *h, const char *session, const char *id, const char *needle, const char *label)
{
    char *out = t_output(h, session, id);
    like(out, needle, "%s", label);
    free(out);
}

void t_waits(sim_call *c, int ms, const char *label)
{
    int rc = 0;
    char *out = NULL;
    is_int(sim_tool_wait(c, ms, &rc, &out), -ETIMEDOUT, "%s", label);
    free(out);
}

void t_remove_dir(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
}

char *t_esc(sim_call *c, int ms, const char *ended)
{
    sim_tool_cancel(c);
    int rc = 0;
    char *out = NULL;
    is_int(sim_tool_wait(c, tap_timeout_ms(ms), &rc, &out), 0, "%s", ended);
    sim_tool_free(c);
    t_rc = rc;
    return out ? out : calloc(1, 1);
}

void t_list_marks(sim_host *h, const char *session, const char *id, const char *mark, const char *label)
{
    char *out = t_tool(h, session, "background_list", "{}");
    char want[128];
    snprintf(want, sizeof want, "%s (%s)", id, mark);
    like(out, want, "%s", label);
    free(out);
}

void t_list_like(sim_host *h, const char *session, const char *needle, const char *label)
{
    char *out = t_tool(h, session, "background_list", "{}");
    like(out, needle, "%s", label);
    free(out);
}

void t_list_empty(sim_host *h, const char *session, const char *label)
{
    char *out = t_tool(h, session, "background_list", "{}");
    is_str(out, "No background tasks found", "%s", label);
    free(out);
}

void t_reload(sim_host *h, const char *options_json)
{
    sim_unload_plugins(h);
    int n = sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), options_json);
    if (n != 1)
        bail_out("reloading ocbg: %d (%s)", n, sim_load_error(h));
}

int t_is_strf(const char *got, const char *label, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *want = NULL;
    if (vasprintf(&want, fmt, ap) < 0)
        bail_out("vasprintf");
    va_end(ap);
    int r = is_str(got, want, "%s", label);
    free(want);
    return r;
}

int t_ends_with(const char *s, const char *tail)
{
    size_t n = s ? strlen(s) : 0, k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* ---- JSON literals and lookups ------------------------------------------ */

/* Every J text, kept reachable so that leak checkers see no leak; freed at
 * exit. */
static pthread_mutex_t j_lock = PTHREAD_MUTEX_INITIALIZER;
static char **j_texts;
static size_t j_count, j_cap;

static void j_free_all(void)
{
    for (size_t i = 0; i < j_count; i++)
        free(j_texts[i]);
    free(j_texts);
    j_texts = NULL;
    j_count = j_cap = 0;
}

const char *J(const char *fmt, ...)
{
    char *dq = strdup(fmt);
    if (!dq)
        bail_out("J: out of memory");
    for (char *p = dq; *p; p++)
        if (*p == '\'')
            *p = '"';
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    int n = vasprintf(&text, dq, ap);
#pragma GCC diagnostic pop
    va_end(ap);
    free(dq);
    if (n < 0)
        bail_out("J: out of memory");
    pthread_mutex_lock(&j_lock);
    if (j_count == j_cap) {
        if (!j_texts)
            atexit(j_free_all);
        j_cap = j_cap ? 2 * j_cap : 64;
        char **grown = realloc(j_texts, j_cap * sizeof *grown);
        if (!grown)
            bail_out("J: out of memory");
        j_texts = grown;
    }
    j_texts[j_count++] = text;
    pthread_mutex_unlock(&j_lock);
    return text;
}

const cJSON *jget(const cJSON *obj, const char *path)
{
    const char *p = path;
    while (obj && *p) {
        size_t n = strcspn(p, ".");
        char key[128];
        if (n >= sizeof key)
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        char *end;
        long i = strtol(key, &end, 10);
        if (cJSON_IsArray(obj) && n > 0 && *end == '\0')
            obj = cJSON_GetArrayItem(obj, (int)i);
        else
            obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        p += n;
        if (*p == '.')
            p++;
    }
    return obj;
}

const char *jstr(const cJSON *obj, const char *path)
{
    return cJSON_GetStringValue(jget(obj, path));
}

const cJSON *t_view_line(const cJSON *view, const char *id)
{
    const cJSON *t;
    cJSON_ArrayForEach (t, jget(view, "tasks"))
        if (jstr(t, "id") && strcmp(jstr(t, "id"), id) == 0)
            return t;
    return NULL;
}

double jnum(const cJSON *obj, const char *path, double def)
{
    const cJSON *v = jget(obj, path);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

cJSON *t_parse(char *text)
{
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* ---- the fixture -------------------------------------------------------- */

void t_open_dir(t_fixture *f, const char *plugin_dir, const char *options_json)
{
    sim_host *h = sim_create();
    if (!h)
        bail_out("sim_create failed");
    int n = sim_load_plugins(h, plugin_dir, options_json);
    if (n != 1)
        bail_out("loading the plugin from %s: %d plugins loaded (%s)", plugin_dir, n, sim_load_error(h));
    t_open_with(f, h);
}

sim_host *t_open(t_fixture *f, const char *options_json)
{
    return t_open_with(f, t_host(options_json));
}

sim_host *t_open_with(t_fixture *f, sim_host *h)
{
    memset(f, 0, sizeof *f);
    f->h = h;
    f->parent = sim_session_new(h, NULL, "main");
    return h;
}

char *t_keep(t_fixture *f, char *s)
{
    if (!s)
        return NULL;
    if (f->nkept == T_FIXTURE_KEEP)
        bail_out("the fixture keeps %d strings at most", T_FIXTURE_KEEP);
    return f->kept[f->nkept++] = s;
}

const char *t_session(t_fixture *f, const char *title)
{
    return t_keep(f, sim_session_new(f->h, NULL, title));
}

const char *t_id(t_fixture *f, const char *text, const char *prefix, const char *what)
{
    char *id = t_find_id(text, prefix);
    if (!id)
        bail_out("%s: no %s id in: %s", what, prefix, text ? text : "(null)");
    return t_keep(f, id);
}

const char *t_task(t_fixture *f, const char *description, const char *script_json)
{
    return t_keep(f, t_launch_script(f->h, f->parent, description, script_json));
}

void t_close(t_fixture *f)
{
    if (f->h)
        sim_destroy(f->h);
    free(f->parent);
    for (int i = 0; i < f->nkept; i++)
        free(f->kept[i]);
    memset(f, 0, sizeof *f);
}

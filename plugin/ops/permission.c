/* permission.c — see permission.h. */
#include "ops/permission.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hostapi/hostcalls.h"

/* How much of a command line or a host's reason an answer echoes. */
#define PERMISSION_ECHO_CHARS 200

/* ---- splitting a command line ------------------------------------------- */

static void add_unique(cJSON *arr, const char *s)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (strcmp(it->valuestring, s) == 0)
            return;
    }
    cJSON_AddItemToArray(arr, cJSON_CreateString(s));
}

/* Programs whose second word (and for some a third) names what they do, so
 * that "always" approves "git status *", not "git *". The same idea, and a
 * subset of the programs, of OpenCode's own bash tool (its arity table). */
static const struct arity {
    const char *prefix;
    int words;
} arities[] = {
    {"bun run", 3},    {"bun x", 3},        {"cargo", 2},       {"deno task", 3},  {"docker compose", 3},
    {"docker", 2},     {"git config", 3},   {"git remote", 3},  {"git stash", 3},  {"git", 2},
    {"go", 2},         {"kubectl", 2},      {"make", 2},        {"npm exec", 3},   {"npm run", 3},
    {"npm", 2},        {"npx", 2},          {"pip", 2},         {"pnpm run", 3},   {"pnpm", 2},
    {"poetry", 2},      {"systemctl", 2},  {"uv run", 3},
    {"uv", 2},         {"yarn run", 3},     {"yarn", 2},
};

/* Does the word list w[0..n) start with the words of `prefix`? */
static bool starts_with_words(char **w, int n, const char *prefix)
{
    int i = 0;
    for (const char *p = prefix; *p; i++) {
        size_t len = strcspn(p, " ");
        if (i >= n || strlen(w[i]) != len || strncmp(w[i], p, len) != 0)
            return false;
        p += len;
        p += *p == ' ';
    }
    return true;
}

/* Can this word be a subcommand ("status", "run", "build:prod"), rather
 * than an option, a redirection or an argument ("-C", "2>&1", "./x")? */
static bool subcommand_word(const char *w)
{
    if (!isalnum((unsigned char)*w))
        return false;
    for (; *w; w++)
        if (!isalnum((unsigned char)*w) && !strchr("._:-", *w))
            return false;
    return true;
}

/* "git status *" for "git status --short"; "ls *" for "ls -la". */
static char *always_pattern(const char *cmd)
{
    char *copy = xstrdup(cmd), *save = NULL, *w[4];
    int n = 0;
    for (char *tok = strtok_r(copy, " \t", &save); tok && n < 4; tok = strtok_r(NULL, " \t", &save))
        w[n++] = tok;
    int words = 1;
    for (size_t i = 0; i < sizeof arities / sizeof arities[0]; i++)
        if (starts_with_words(w, n, arities[i].prefix)) {
            words = arities[i].words;
            break;
        }
    /* Options are not subcommands: "git -C dir" keeps just "git". */
    for (int i = 1; i < words; i++)
        if (i >= n || !subcommand_word(w[i])) {
            words = i;
            break;
        }
    strbuf sb = {0};
    for (int i = 0; i < words && i < n; i++)
        sb_printf(&sb, "%s%s", i ? " " : "", w[i]);
    sb_puts(&sb, " *");
    free(copy);
    return sb_take(&sb);
}

/* Commands that only change directory ask nothing of "bash" (as OpenCode):
 * their paths are checked as external directories instead. */
static const char *const dir_changers[] = {"cd", "chdir", "pushd", "popd", NULL};
/* Commands whose path arguments OpenCode checks against the project. */
static const char *const path_takers[] = {"cd",    "chdir", "pushd", "popd",  "rm",  "cp",  "mv",
                                          "mkdir", "touch", "chmod", "chown", "cat", NULL};

static bool first_word_in(const char *cmd, const char *const *list)
{
    size_t n = strcspn(cmd, " \t");
    for (; *list; list++)
        if (strlen(*list) == n && strncmp(cmd, *list, n) == 0)
            return true;
    return false;
}

static void add_command(const char *s, size_t n, cJSON *cmds)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || *s == '>')
        return; /* nothing, or the redirection after a subshell */
    char *cmd = xstrndup(s, n);
    add_unique(cmds, cmd);
    free(cmd);
}

/* The end of the quoted or nested text that starts at s[i] (a quote, "$(",
 * "(" or a backtick), or len when it is not closed. */
static size_t skip_group(const char *s, size_t i, size_t len)
{
    char open = s[i];
    if (open == '\'') {
        const char *q = memchr(s + i + 1, '\'', len - i - 1);
        return q ? (size_t)(q - s) + 1 : len;
    }
    char close = open == '"' ? '"' : open == '`' ? '`' : ')';
    int depth = 1;
    for (size_t j = i + 1 + (open == '$'); j < len; j++) {
        char c = s[j];
        if (c == '\\') {
            j++;
        } else if (c == close && (close != ')' || --depth == 0)) {
            return j + 1;
        } else if (close == ')' && c == '(') {
            depth++;
        } else if (c == '\'' && close != '"') {
            j = skip_group(s, j, len) - 1;
        } else if (c == '"' && close != '"') {
            j = skip_group(s, j, len) - 1;
        } else if (c == '`' && close != '`') {
            j = skip_group(s, j, len) - 1;
        }
    }
    return len;
}

static void split(const char *s, size_t len, cJSON *cmds, int depth);

static bool blank_prefix(const char *s, size_t n)
{
    while (n && isspace((unsigned char)*s))
        s++, n--;
    return n == 0;
}

/* Is s[i] (one of ; newline | &) a command separator, or part of a
 * redirection such as 2>&1, &>file or >|file? */
static bool separator_at(const char *s, size_t i, size_t len)
{
    char c = s[i];
    if (c == '&' && ((i > 0 && (s[i - 1] == '>' || s[i - 1] == '<')) || (i + 1 < len && s[i + 1] == '>')))
        return false;
    if (c == '|' && i > 0 && s[i - 1] == '>')
        return false;
    return c == ';' || c == '\n' || c == '|' || c == '&';
}

/* The commands nested in s[i..end) — inside $(…), (…), `…` or "…$(…)…". */
static void split_nested(const char *s, size_t i, size_t end, cJSON *cmds, int depth)
{
    if (depth > 8 || end <= i)
        return;
    char open = s[i];
    if (open == '\'')
        return; /* nothing runs inside single quotes */
    if (open == '"') {
        for (size_t j = i + 1; j + 1 < end; j++) {
            if (s[j] == '\\') {
                j++;
            } else if ((s[j] == '$' && s[j + 1] == '(') || s[j] == '`') {
                size_t e = skip_group(s, j, end);
                split_nested(s, j, e, cmds, depth + 1);
                j = e - 1;
            }
        }
        return;
    }
    size_t from = i + 1 + (open == '$');
    size_t to = end > from && s[end - 1] == (open == '`' ? '`' : ')') ? end - 1 : end;
    split(s + from, to - from, cmds, depth + 1);
}

static void split(const char *s, size_t len, cJSON *cmds, int depth)
{
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        char c = s[i];
        if (c == '\\') {
            i += 2;
        } else if (c == '\'' || c == '"' || c == '`' || (c == '$' && i + 1 < len && s[i + 1] == '(')) {
            size_t e = skip_group(s, i, len);
            split_nested(s, i, e, cmds, depth);
            i = e;
        } else if (c == '(' && blank_prefix(s + start, i - start)) {
            /* a subshell: its commands, not itself */
            size_t e = skip_group(s, i, len);
            split_nested(s, i, e, cmds, depth);
            i = start = e;
        } else if (separator_at(s, i, len)) {
            add_command(s + start, i - start, cmds);
            i += (i + 1 < len && (s[i + 1] == c || (c == '|' && s[i + 1] == '&')));
            start = ++i;
        } else {
            i++;
        }
    }
    if (start < len)
        add_command(s + start, len - start, cmds);
}

/* Every simple command of a command line, in order, without duplicates. */
static cJSON *simple_commands(const char *command)
{
    cJSON *cmds = cJSON_CreateArray();
    split(command ? command : "", command ? strlen(command) : 0, cmds, 0);
    return cmds;
}

static void patterns_of(const cJSON *cmds, cJSON *patterns, cJSON *always)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cmds)
    {
        if (first_word_in(c->valuestring, dir_changers))
            continue;
        add_unique(patterns, c->valuestring);
        char *a = always_pattern(c->valuestring);
        add_unique(always, a);
        free(a);
    }
}

void bash_patterns(const char *command, cJSON *patterns, cJSON *always)
{
    cJSON *cmds = simple_commands(command);
    patterns_of(cmds, patterns, always);
    cJSON_Delete(cmds);
}

/* The pattern "<dir>/ *" (no space) for a path argument outside `project`, into dirs. */
static void add_outside(const char *arg, const char *project, cJSON *dirs)
{
    char *path = arg[0] == '/' ? xstrdup(arg) : xasprintf("%s/%s", project, arg);
    path[strcspn(path, "?*[")] = '\0'; /* a glob: its fixed head */
    char *real = realpath(path, NULL);
    char *dir = NULL;
    if (real) {
        struct stat st;
        dir = stat(real, &st) == 0 && S_ISDIR(st.st_mode) ? xstrdup(real) : xstrdup(dirname(real));
    } else {
        /* not there yet (mkdir, touch): its parent, as written */
        char *copy = xstrdup(path);
        dir = xstrdup(dirname(copy));
        free(copy);
    }
    size_t plen = strlen(project);
    bool inside = strncmp(dir, project, plen) == 0 && (dir[plen] == '\0' || dir[plen] == '/');
    if (!inside) {
        char *pat = xasprintf("%s/*", strcmp(dir, "/") == 0 ? "" : dir);
        add_unique(dirs, pat);
        free(pat);
    }
    free(dir);
    free(real);
    free(path);
}

/* The directories outside the project that a command line's cd/rm/cp/…
 * arguments name, as OpenCode's bash tool finds them (arguments with $ or `
 * are not resolved). */
static void outside_dirs(const cJSON *cmds, const char *project, cJSON *dirs)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cmds)
    {
        if (!first_word_in(c->valuestring, path_takers))
            continue;
        char *words = xstrdup(c->valuestring), *ws = NULL;
        strtok_r(words, " \t", &ws);
        for (char *w = strtok_r(NULL, " \t", &ws); w; w = strtok_r(NULL, " \t", &ws)) {
            size_t n = strlen(w);
            if (n >= 2 && (w[0] == '\'' || w[0] == '"') && w[n - 1] == w[0]) {
                w[n - 1] = '\0';
                w++;
            }
            if (*w && *w != '-' && !strpbrk(w, "$`'\"<>()") && *w != '~')
                add_outside(w, project, dirs);
        }
        free(words);
    }
}

/* ---- asking -------------------------------------------------------------- */

/* s cut to PERMISSION_ECHO_CHARS characters (at a UTF-8 boundary), with "…" when cut. */
static char *echo(const char *s)
{
    size_t len = strlen(s), keep = utf8_offset(s, len, PERMISSION_ECHO_CHARS);
    return keep < len ? xasprintf("%.*s…", (int)keep, s) : xstrdup(s);
}

/* One question to the host (patterns, always and metadata are consumed).
 * what: the action as the answer names it ("running `ls`"); nothing_done:
 * what the answer says was not done. */
static int ask(ocbg *o, const ocp_call_ctx *ctx, const char *permission, cJSON *patterns, cJSON *always,
               cJSON *metadata, const char *what, const char *nothing_done, strbuf *out)
{
    int rc = 0;
    char *reason = NULL;
    if (o->api.host.ask_permission) {
        char *p = cJSON_PrintUnformatted(patterns), *a = cJSON_PrintUnformatted(always);
        char *m = cJSON_PrintUnformatted(metadata);
        ocp_permission_request req = {sizeof req, permission, p, a, m};
        char *host_out = NULL;
        rc = o->api.host.ask_permission(o->api.host.userdata, ctx, &req, &host_out);
        reason = host_out && *host_out ? echo(host_out) : NULL;
        hc_free(&o->api, host_out);
        free(p);
        free(a);
        free(m);
    }
    if (rc == -EACCES) {
        sb_printf(out, "Permission denied: %s (permission \"%s\")%s%s. %s", what, permission,
                  reason ? ": " : " by the user's permission rules or the user", reason ? reason : "",
                  nothing_done);
    } else if (rc == -ECANCELED) {
        sb_printf(out, "Cancelled while asking for permission: %s. %s", what, nothing_done);
    } else if (rc != 0) {
        sb_printf(out, "Could not ask for permission (%s): %s. %s", reason ? reason : strerror(-rc), what,
                  nothing_done);
        hc_log(&o->api, OCP_LOG_WARN, "ocbg: ask_permission(%s) failed: %s", permission,
               reason ? reason : strerror(-rc));
        rc = rc < 0 ? rc : -EIO;
    }
    free(reason);
    cJSON_Delete(patterns);
    cJSON_Delete(always);
    cJSON_Delete(metadata);
    return rc;
}

int permission_bash(ocbg *o, const ocp_call_ctx *ctx, const char *command, const char *description,
                    strbuf *out)
{
    if (!o->api.host.ask_permission)
        return 0;
    char *shown = echo(command);
    char *what = xasprintf("running `%s`", shown);
    free(shown);
    cJSON *cmds = simple_commands(command);
    int rc = 0;
    /* Paths outside the project first, as OpenCode's own bash tool asks. */
    cJSON *dirs = cJSON_CreateArray();
    if (ctx->directory && ctx->directory[0] == '/')
        outside_dirs(cmds, ctx->directory, dirs);
    if (cJSON_GetArraySize(dirs) > 0) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "command", command);
        cJSON_AddItemToObject(m, "patterns", cJSON_Duplicate(dirs, 1));
        rc = ask(o, ctx, "external_directory", dirs, cJSON_Duplicate(dirs, 1), m, what, "The command was not run.",
                 out);
    } else {
        cJSON_Delete(dirs);
    }
    cJSON *patterns = cJSON_CreateArray(), *always = cJSON_CreateArray();
    patterns_of(cmds, patterns, always);
    cJSON_Delete(cmds);
    /* Nothing but directory changes: nothing for "bash" to decide. */
    if (rc == 0 && cJSON_GetArraySize(patterns) > 0) {
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "command", command);
        if (description && !blank(description))
            cJSON_AddStringToObject(meta, "description", description);
        rc = ask(o, ctx, "bash", patterns, always, meta, what, "The command was not run.", out);
    } else {
        cJSON_Delete(patterns);
        cJSON_Delete(always);
    }
    free(what);
    return rc;
}

int permission_task(ocbg *o, const ocp_call_ctx *ctx, const char *agent, const char *description,
                    strbuf *out)
{
    if (!o->api.host.ask_permission)
        return 0;
    cJSON *patterns = cJSON_CreateArray(), *always = cJSON_CreateArray(), *meta = cJSON_CreateObject();
    cJSON_AddItemToArray(patterns, cJSON_CreateString(agent));
    cJSON_AddItemToArray(always, cJSON_CreateString("*"));
    cJSON_AddStringToObject(meta, "subagent_type", agent);
    if (description && !blank(description))
        cJSON_AddStringToObject(meta, "description", description);
    char *shown = echo(agent);
    char *what = xasprintf("starting a sub-agent of type \"%s\"", shown);
    free(shown);
    int rc = ask(o, ctx, "task", patterns, always, meta, what, "No task was started.", out);
    free(what);
    return rc;
}

int permission_send(ocbg *o, const ocp_call_ctx *ctx, const char *agent, const char *description, strbuf *out)
{
    if (!o->api.host.ask_permission)
        return 0;
    cJSON *patterns = cJSON_CreateArray(), *always = cJSON_CreateArray(), *meta = cJSON_CreateObject();
    cJSON_AddItemToArray(patterns, cJSON_CreateString(agent));
    cJSON_AddItemToArray(always, cJSON_CreateString("*"));
    cJSON_AddStringToObject(meta, "subagent_type", agent);
    if (description && !blank(description))
        cJSON_AddStringToObject(meta, "description", description);
    char *shown = echo(agent);
    char *what = xasprintf("sending a message to a running sub-agent of type \"%s\"", shown);
    free(shown);
    int rc = ask(o, ctx, "task", patterns, always, meta, what, "Nothing was sent.", out);
    free(what);
    return rc;
}

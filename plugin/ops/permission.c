/* permission.c — see permission.h. */
#include "ops/permission.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostapi/hostapi.h"
#include "ops/bash_asks.h"

/* How much of a command line or a host's reason an answer echoes. */
#define PERMISSION_ECHO_CHARS 200

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
static int ask(engine *eng, const ocp_call_ctx *ctx, const char *permission, cJSON *patterns, cJSON *always,
               cJSON *metadata, const char *what, const char *nothing_done, strbuf *out)
{
    int rc = 0;
    char *reason = NULL;
    if (hostapi_has_permissions(&eng->api)) {
        char *p = cJSON_PrintUnformatted(patterns), *a = cJSON_PrintUnformatted(always);
        char *m = cJSON_PrintUnformatted(metadata);
        ocp_permission_request req = {sizeof req, permission, p, a, m};
        char *host_out = NULL;
        rc = hostapi_ask_permission(&eng->api, ctx, &req, &host_out);
        reason = host_out && *host_out ? echo(host_out) : NULL;
        hostapi_free(&eng->api, host_out);
        free(p);
        free(a);
        free(m);
    }
    if (rc == -EACCES) {
        sb_printf(out, "Permission denied: %s (permission \"%s\")%s%s. %s", what, permission,
                  reason ? ": " : " by the user's permission rules or the user", reason ? reason : "", nothing_done);
    } else if (rc == -ECANCELED) {
        sb_printf(out, "Cancelled while asking for permission: %s. %s", what, nothing_done);
    } else if (rc != 0) {
        sb_printf(out, "Could not ask for permission (%s): %s. %s", reason ? reason : strerror(-rc), what,
                  nothing_done);
        hostapi_log(&eng->api, OCP_LOG_WARN, "ocbg: ask_permission(%s) failed: %s", permission,
                    reason ? reason : strerror(-rc));
        rc = rc < 0 ? rc : -EIO;
    }
    free(reason);
    cJSON_Delete(patterns);
    cJSON_Delete(always);
    cJSON_Delete(metadata);
    return rc;
}

/* The answer when bash_asks_of refused or failed (rc): nothing was asked,
 * nothing runs. */
static void unread(int rc, const char *command, const char *what, strbuf *out)
{
    if (rc == -E2BIG) {
        sb_printf(out,
                  "The command line is too long to check its permissions (%zu bytes; at most %d): %s. The command was "
                  "not run. Put long text in a file and run a shorter command.",
                  strlen(command), BASH_ASKS_MAX_BYTES, what);
    } else if (rc == -EOVERFLOW || rc == -ETIME) {
        char *why = rc == -ETIME ? xasprintf("parsing it took more than %d ms", BASH_ASKS_PARSE_CPU_MS)
                                 : xasprintf("its commands' texts come to more than %d bytes, a nested command "
                                             "counted again in each command around it",
                                             BASH_ASKS_MAX_TEXT);
        sb_printf(out,
                  "The command line is too complex to check its permissions (%s): %s. The command was not run. Split "
                  "it into simpler commands.",
                  why, what);
        free(why);
    } else {
        sb_printf(out, "Could not read the command line (%s): %s. The command was not run.", strerror(-rc), what);
    }
}

int permission_bash(engine *eng, const ocp_call_ctx *ctx, const char *command, const char *description, strbuf *out)
{
    if (!hostapi_has_permissions(&eng->api))
        return 0;
    char *shown = echo(command);
    char *what = xasprintf("running `%s`", shown);
    free(shown);
    bash_asks asks;
    int rc = bash_asks_of(command, ctx->directory, &asks);
    if (rc != 0) {
        unread(rc, command, what, out);
        bash_asks_free(&asks);
        free(what);
        return rc;
    }
    /* Paths outside the project first, as OpenCode's own bash tool asks. */
    if (cJSON_GetArraySize(asks.dirs) > 0) {
        cJSON *pats = bash_dir_patterns(asks.dirs), *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "command", command);
        cJSON_AddItemToObject(m, "directories", asks.dirs);
        cJSON_AddItemToObject(m, "patterns", cJSON_Duplicate(pats, 1));
        asks.dirs = NULL;
        rc = ask(eng, ctx, "external_directory", pats, cJSON_Duplicate(pats, 1), m, what, "The command was not run.",
                 out);
    }
    /* Nothing but directory changes: nothing for "bash" to decide. */
    if (rc == 0 && cJSON_GetArraySize(asks.patterns) > 0) {
        cJSON *meta = cJSON_CreateObject();
        cJSON_AddStringToObject(meta, "command", command);
        if (description && !blank(description))
            cJSON_AddStringToObject(meta, "description", description);
        rc = ask(eng, ctx, "bash", asks.patterns, asks.always, meta, what, "The command was not run.", out);
        asks.patterns = asks.always = NULL;
    }
    bash_asks_free(&asks);
    free(what);
    return rc;
}

int permission_task(engine *eng, const ocp_call_ctx *ctx, const char *agent, const char *description, strbuf *out)
{
    if (!hostapi_has_permissions(&eng->api))
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
    int rc = ask(eng, ctx, "task", patterns, always, meta, what, "No task was started.", out);
    free(what);
    return rc;
}

int permission_send(engine *eng, const ocp_call_ctx *ctx, const char *agent, const char *description, strbuf *out)
{
    if (!hostapi_has_permissions(&eng->api))
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
    int rc = ask(eng, ctx, "task", patterns, always, meta, what, "Nothing was sent.", out);
    free(what);
    return rc;
}

int permission_folder(engine *eng, const ocp_call_ctx *ctx, const char *folder, const char *root, strbuf *out)
{
    if (!hostapi_has_permissions(&eng->api))
        return 0;
    cJSON *patterns = cJSON_CreateArray(), *always = cJSON_CreateArray(), *meta = cJSON_CreateObject();
    char *pattern = xasprintf("%s/*", folder), *all = xasprintf("%s/*", root);
    cJSON_AddItemToArray(patterns, cJSON_CreateString(pattern));
    cJSON_AddItemToArray(always, cJSON_CreateString(all));
    cJSON_AddStringToObject(meta, "filepath", folder);
    cJSON_AddStringToObject(meta, "parentDir", folder);
    char *what = xasprintf("making the task's git worktree in %s, outside the project", folder);
    int rc = ask(eng, ctx, "external_directory", patterns, always, meta, what, "No task was started.", out);
    free(what);
    free(pattern);
    free(all);
    return rc;
}

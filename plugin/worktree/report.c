/* report.c — see worktree.h: what a task did in its worktree, and removing
 * the worktree without losing it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "worktree/git.h"
#include "worktree/worktree.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define REPORT_STAT_LINES 12 /* per-file stat lines shown; the rest are counted */
#define REPORT_UNTRACKED 5   /* untracked names shown */

/* git's message cut to its first line (the rest is advice for a person at
 * a terminal). */
static char *first_line(char *text)
{
    if (text)
        text[strcspn(text, "\n")] = '\0';
    return text;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* `git diff --shortstat` says nothing when nothing changed. */
static const char *or_none(const char *shortstat)
{
    while (shortstat && *shortstat == ' ')
        shortstat++;
    return shortstat && *shortstat ? shortstat : "no file changed";
}

/* Up to `max` lines of text, then "(N more)". */
static void put_lines(strbuf *sb, const char *text, unsigned max, const char *prefix)
{
    unsigned n = 0, more = 0;
    for (const char *s = text; s && *s;) {
        size_t len = strcspn(s, "\n");
        if (n < max) {
            sb_printf(sb, "%s%.*s\n", prefix, (int)len, s);
            n++;
        } else {
            more++;
        }
        s = s[len] ? s + len + 1 : NULL;
    }
    if (more)
        sb_printf(sb, "%s(%u more)\n", prefix, more);
}

int worktree_report(const char *path, const char *branch, const char *base, char **report, char **err)
{
    *report = NULL;
    if (!exists(path)) {
        *err = xasprintf("its worktree %s is gone", path);
        return -ENOENT;
    }
    char *range = xasprintf("%s..HEAD", base);
    char *commits = git_line(path, ARGS("rev-list", "--count", range));
    free(range);
    char *committed = NULL, *uncommitted = NULL, *untracked = NULL, *stat = NULL;
    int rc = commits ? 0 : -EIO;
    if (rc == 0)
        rc = git_run(path, ARGS("diff", "--shortstat", base, "HEAD"), &committed) |
             git_run(path, ARGS("diff", "--shortstat", "HEAD"), &uncommitted) |
             git_run(path, ARGS("ls-files", "--others", "--exclude-standard"), &untracked) |
             git_run(path, ARGS("diff", "--stat=100", base), &stat);
    if (rc != 0) {
        *err = xasprintf("git could not read the worktree %s", path);
        free(commits), free(committed), free(uncommitted), free(untracked), free(stat);
        return -EIO;
    }
    strbuf sb = {0};
    sb_printf(&sb, "Branch: %s (from %.8s), %s commit%s: %s\n", branch, base, commits,
              strcmp(commits, "1") == 0 ? "" : "s",
              strcmp(commits, "0") == 0 ? "nothing committed" : or_none(committed));
    unsigned nu = 0;
    for (const char *s = untracked; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
        nu++;
    sb_printf(&sb, "Uncommitted in %s: %s; %u untracked file%s\n", path, or_none(uncommitted), nu, nu == 1 ? "" : "s");
    if (stat && *stat) {
        sb_printf(&sb, "Changed since %.8s (tracked files, committed or not):\n", base);
        put_lines(&sb, stat, REPORT_STAT_LINES, "  ");
    }
    if (nu) {
        sb_puts(&sb, "Untracked:\n");
        put_lines(&sb, untracked, REPORT_UNTRACKED, "  ");
    }
    *report = sb_take(&sb);
    free(commits), free(committed), free(uncommitted), free(untracked), free(stat);
    return 0;
}

/* Commit everything uncommitted in path onto its branch. 0 (nothing to
 * commit, *committed false), or a negative errno with *err. */
static int commit_all(const char *path, const char *task_id, bool *committed, char **err)
{
    char *status = NULL;
    if (git_run(path, ARGS("status", "--porcelain"), &status) != 0) {
        *err = xasprintf("git status failed there: %s", first_line(status));
        free(status);
        return -EIO;
    }
    bool dirty = status[0] != '\0';
    free(status);
    if (!dirty)
        return 0;
    char *out = NULL, *msg = xasprintf("ocbg: uncommitted work of background task %s", task_id);
    /* A machine without a git identity still gets the commit. */
    char *email = git_line(path, ARGS("config", "user.email"));
    int rc = git_run(path, ARGS("add", "-A"), &out);
    if (rc == 0) {
        free(out);
        rc = email ? git_run(path, ARGS("commit", "-q", "--no-verify", "-m", msg), &out)
                   : git_run(path,
                             ARGS("-c", "user.name=ocbg", "-c", "user.email=ocbg@localhost", "commit", "-q",
                                  "--no-verify", "-m", msg),
                             &out);
    }
    free(email);
    free(msg);
    if (rc != 0)
        *err = xasprintf("committing its uncommitted work failed: %s", first_line(out));
    free(out);
    *committed = rc == 0;
    return rc == 0 ? 0 : -EIO;
}

int worktree_remove(const char *checkout, const char *path, const char *task_id, bool *committed, char **err)
{
    *committed = false;
    *err = NULL;
    if (!exists(path)) {
        git_run(checkout, ARGS("worktree", "prune"), NULL);
        return 0;
    }
    int rc = commit_all(path, task_id, committed, err);
    if (rc != 0)
        return rc;
    char *out = NULL;
    if (git_run(checkout, ARGS("worktree", "remove", path), &out) != 0) {
        *err = xasprintf("git worktree remove failed: %s", first_line(out));
        free(out);
        return -EIO;
    }
    free(out);
    return 0;
}

/* report.c — see worktree.h: what a task did in its worktree, read with
 * git bound to it, and put in words. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "worktree/bind.h"
#include "worktree/git.h"
#include "worktree/worktree.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define REPORT_STAT_LINES 12 /* per-file stat lines shown; the rest are counted */
#define REPORT_UNTRACKED 5   /* untracked names shown */

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

static unsigned count_lines(const char *s)
{
    unsigned n = 0;
    for (; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
        n++;
    return n;
}

char *worktree_report_compose(const report_parts *p)
{
    strbuf sb = {0};
    const char *commits = p->commits && p->commits[0] ? p->commits : "0";
    sb_printf(&sb, "Branch: %s (from %.8s), %s commit%s: %s\n", p->branch, p->base, commits,
              strcmp(commits, "1") == 0 ? "" : "s",
              strcmp(commits, "0") == 0 ? "nothing committed" : or_none(p->committed));
    unsigned nu = count_lines(p->untracked);
    sb_printf(&sb, "Uncommitted in %s: %s; %u untracked file%s\n", p->path, or_none(p->uncommitted), nu,
              nu == 1 ? "" : "s");
    if (p->stat && *p->stat) {
        sb_printf(&sb, "Changed since %.8s (tracked files, committed or not):\n", p->base);
        put_lines(&sb, p->stat, REPORT_STAT_LINES, "  ");
    }
    if (nu) {
        sb_puts(&sb, "Untracked:\n");
        put_lines(&sb, p->untracked, REPORT_UNTRACKED, "  ");
    }
    return sb_take(&sb);
}

int worktree_report(const char *checkout_top, const char *path, const char *branch, const char *base, char **report,
                    char **err)
{
    *report = NULL;
    bound_worktree w;
    int rc = worktree_bind(checkout_top, path, &w, err);
    if (rc != 0) {
        bound_worktree_free(&w);
        return rc;
    }
    git_bind b = worktree_git(&w);
    char *range = xasprintf("%s..HEAD", base);
    char *commits = git_line(&b, ARGS("rev-list", "--count", range), &rc);
    free(range);
    char *committed = NULL, *uncommitted = NULL, *untracked = NULL, *stat = NULL;
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", base, "HEAD"), &committed);
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", "HEAD"), &uncommitted);
    if (rc == 0)
        rc = git_run(&b, ARGS("ls-files", "--others", "--exclude-standard"), &untracked);
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--no-relative", "--stat=100", base), &stat);
    if (rc == 0) {
        report_parts p = {branch, base, path, commits, committed, uncommitted, untracked, stat};
        *report = worktree_report_compose(&p);
    } else {
        *err = xasprintf("git could not read the worktree %s%s", path,
                         rc == -ETIMEDOUT ? " in time"
                         : rc == -ENOENT  ? " (git cannot run)"
                                          : "");
    }
    free(commits), free(committed), free(uncommitted), free(untracked), free(stat);
    bound_worktree_free(&w);
    return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
}

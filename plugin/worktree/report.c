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

/* The report's git commands, in the order a failure is told. */
enum {
    R_COUNTS,
    R_COMMITTED,
    R_UNCOMMITTED,
    R_UNTRACKED,
    R_STAT,
    R_N
};

/* rev-list --left-right --count base...HEAD printed "<behind>\t<ahead>":
 * *ahead (in text) the commits of base..HEAD, as `rev-list --count` prints
 * them; *at_base: HEAD is base (nothing either side). false: not that. */
static bool read_counts(char *text, const char **ahead, bool *at_base)
{
    char *tab = strchr(text, '\t');
    if (!tab || tab == text || !tab[1] || strspn(text, "0123456789\t") != strlen(text))
        return false;
    *tab = '\0';
    *ahead = tab + 1;
    *at_base = strcmp(text, "0") == 0 && strcmp(*ahead, "0") == 0;
    return true;
}

/* The last line of a --stat: its total, which is what --shortstat prints
 * for the same diff ("" for no change, as --shortstat); NULL when it is not
 * one (an output cut at git.c's limit). */
static const char *stat_total(const char *stat)
{
    const char *nl = strrchr(stat, '\n');
    const char *last = nl ? nl + 1 : stat;
    size_t digits = last[0] == ' ' ? strspn(last + 1, "0123456789") : 0;
    if (!stat[0] || (digits && (strncmp(last + 1 + digits, " file changed", 13) == 0 ||
                                strncmp(last + 1 + digits, " files changed", 14) == 0)))
        return last;
    return NULL;
}

/* Run the commands (git_run_many) and put the report in words: 0, or the
 * first failure's result (in R_ order). `at_base`: HEAD is thought to be
 * base (worktree_head_commit), so the two diffs from HEAD are left out:
 * when HEAD is base, the stat from base is the diff from HEAD too. */
static int run_report(const git_bind *b, const char *const *const args[R_N], bool at_base, report_parts *p,
                      char **report)
{
    git_cmd c[R_N] = {{.args = args[R_COUNTS]},
                      {.args = at_base ? NULL : args[R_COMMITTED]},
                      {.args = at_base ? NULL : args[R_UNCOMMITTED]},
                      {.args = args[R_UNTRACKED]},
                      {.args = args[R_STAT]}};
    git_run_many(b, c, R_N);
    bool is_base = false;
    if (c[R_COUNTS].rc == 0 && !read_counts(c[R_COUNTS].out, &p->commits, &is_base))
        c[R_COUNTS].rc = -EIO;
    /* The guess was wrong (HEAD moved), or the stat has no total to read. */
    if (c[R_COUNTS].rc == 0 && at_base && (!is_base || (c[R_STAT].rc == 0 && !stat_total(c[R_STAT].out)))) {
        c[R_COMMITTED].args = strcmp(p->commits, "0") != 0 ? args[R_COMMITTED] : NULL;
        c[R_UNCOMMITTED].args = args[R_UNCOMMITTED];
        git_run_many(b, c + R_COMMITTED, 2);
    }
    int rc = 0;
    for (int i = 0; i < R_N && rc == 0; i++)
        rc = c[i].rc;
    if (rc == 0) {
        p->committed = c[R_COMMITTED].out;
        p->uncommitted = c[R_UNCOMMITTED].args ? c[R_UNCOMMITTED].out : stat_total(c[R_STAT].out);
        p->untracked = c[R_UNTRACKED].out;
        p->stat = c[R_STAT].out;
        *report = worktree_report_compose(p);
    }
    for (int i = 0; i < R_N; i++)
        free(c[i].out);
    return rc;
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
    char *head = worktree_head_commit(&w);
    bool at_base = head && strcmp(head, base) == 0;
    char *range = xasprintf("%s...HEAD", base);
    const char *const *const args[R_N] = {
        [R_COUNTS] = ARGS("rev-list", "--left-right", "--count", range),
        [R_COMMITTED] = ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", base, "HEAD"),
        [R_UNCOMMITTED] = ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", "HEAD"),
        [R_UNTRACKED] = ARGS("ls-files", "--others", "--exclude-standard"),
        [R_STAT] = ARGS("diff", "--no-ext-diff", "--no-textconv", "--no-relative", "--stat=100", base),
    };
    report_parts p = {.branch = branch, .base = base, .path = path};
    rc = run_report(&b, args, at_base, &p, report);
    if (rc != 0)
        *err = xasprintf("git could not read the worktree %s%s", path,
                         rc == -ETIMEDOUT ? " in time"
                         : rc == -ENOENT  ? " (git cannot run)"
                                          : "");
    free(head), free(range);
    bound_worktree_free(&w);
    return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
}

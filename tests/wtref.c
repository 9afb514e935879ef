/* wtref.c — see wtref.h. */
#include "wtref.h"

#include <stdlib.h>

#include "base/util.h"
#include "tap.h"
#include "worktree/bind.h"
#include "worktree/git.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

char *wtref_report_sequential(const worktree_made *m)
{
    bound_worktree w;
    char *err = NULL;
    if (worktree_bind(m->checkout, m->path, &w, &err) != 0)
        bail_out("bind: %s", err);
    git_bind b = worktree_git(&w);
    char *range = xasprintf("%s..HEAD", m->base);
    int rc = 0;
    char *commits = git_line(&b, ARGS("rev-list", "--count", range), &rc);
    char *committed = NULL, *uncommitted = NULL, *untracked = NULL, *stat = NULL;
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", m->base, "HEAD"), &committed);
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--shortstat", "HEAD"), &uncommitted);
    if (rc == 0)
        rc = git_run(&b, ARGS("ls-files", "--others", "--exclude-standard"), &untracked);
    if (rc == 0)
        rc = git_run(&b, ARGS("diff", "--no-ext-diff", "--no-textconv", "--no-relative", "--stat=100", m->base), &stat);
    if (rc != 0)
        bail_out("the reference report failed: %d", rc);
    report_parts p = {m->branch, m->base, m->path, commits, committed, uncommitted, untracked, stat};
    char *report = worktree_report_compose(&p);
    free(range), free(commits), free(committed), free(uncommitted), free(untracked), free(stat);
    bound_worktree_free(&w);
    return report;
}

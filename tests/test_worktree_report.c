/* The report of a task's worktree (plugin/worktree/report.c) against real
 * git: word for word what the five git commands it used to run one after
 * another gave (kept here as the reference), for every shape of work a task
 * leaves (nothing, edits, deletions, a mode change, a binary file, a rename,
 * a conflict, odd file names, more files than the report lists, commits,
 * commits and edits, a HEAD moved back, a packed branch, a detached HEAD),
 * and how many git commands it now runs for them (a `git` first on PATH
 * that logs each call); one of them hanging stops them at the deadline. A
 * new worktree's index is settled, and a same-size edit made at once seen. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"
#include "worktree/git.h"
#include "worktree/worktree.h"
#include "wtref.h"

static char top[256], repo[300], root[300];
static char *base_path; /* PATH without the logging git */

#define GIT_ID "git -c user.name=t -c user.email=t@example.com"

/* The git commands worktree_report runs, counted by the logging git. */
static char *report_now(const worktree_made *m, int *commands)
{
    char *path = xasprintf("%s/bin:%s", top, base_path);
    setenv("PATH", path, 1);
    t_sh(top, "rm -f git.log && touch git.log");
    char *report = NULL, *err = NULL;
    int rc = worktree_report(m->checkout, m->path, m->branch, m->base, &report, &err);
    setenv("PATH", base_path, 1);
    char *n = t_sh_line(top, "wc -l < git.log");
    *commands = n ? atoi(n) : -1;
    if (rc != 0)
        diag("worktree_report: %d %s", rc, err);
    free(n), free(err), free(path);
    return report;
}

/* Task `id`'s worktree, then `work` run in it (sh), then the two reports. */
static void check(const char *id, const char *work, int commands, const char *what)
{
    worktree_made m;
    char *err = NULL;
    if (worktree_make(repo, root, id, ISOLATION_WORKTREE, &m, &err) != 0)
        bail_out("worktree_make %s: %s", id, err);
    if (work[0] && t_sh(m.path, "%s", work) != 0)
        bail_out("the task's work failed: %s", work);
    int ran = 0;
    char *now = report_now(&m, &ran);
    char *before = wtref_report_sequential(&m);
    is_str(now, before, "%s: the report, word for word", what);
    is_int(ran, commands, "%s: %d git commands, run at once", what, commands);
    free(now), free(before);
    worktree_made_free(&m);
}

/* A new worktree's index is settled (no file is racily clean to git: each
 * is older than the index), so a command reads only their stat; and a
 * change that keeps a file's size, made at once, is still seen. */
static void settled_yet_sees_every_change(void)
{
    worktree_made m;
    char *err = NULL, *report = NULL;
    if (worktree_make(repo, root, "bg_000000b2", ISOLATION_WORKTREE, &m, &err) != 0)
        bail_out("worktree_make: %s", err);
    char *racy =
        t_sh_line(m.path, "i=$(stat -c %%Y \"$(git rev-parse --git-path index)\") && git ls-files -z | xargs -0 stat "
                          "-c %%Y | awk -v i=$i '$1 >= i' | wc -l");
    is_str(racy, "0", "a new worktree: every file older than its index");
    t_sh(m.path, "printf 'xyz\\n' > a.txt"); /* "two\n" before: the same size */
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), 0, "reported at once");
    like(report, ": 1 file changed, 1 insertion(+), 1 deletion(-); 0 untracked files", "the same-size edit is seen");
    free(racy), free(report), free(err);
    worktree_made_free(&m);
}

/* One of the commands run at once hangs (and leaves a child behind): at the
 * deadline it is killed with its child, the others are answered, and the
 * report says git could not read the worktree in time. */
static void hanging_command_stopped(void)
{
    char *real = t_sh_line(top, "command -v git");
    t_sh(top,
         "mkdir -p slowbin && printf '#!/bin/sh\\ncase \"$*\" in *ls-files*) sleep 300 & echo $! > %s/child.pid; exec "
         "sleep 300;; esac\\nexec \"%s\" \"$@\"\\n' > slowbin/git && chmod +x slowbin/git",
         top, real);
    worktree_made m;
    char *err = NULL, *report = NULL;
    if (worktree_make(repo, root, "bg_000000b1", ISOLATION_WORKTREE, &m, &err) != 0)
        bail_out("worktree_make: %s", err);
    char *slow = xasprintf("%s/slowbin:%s", top, base_path);
    setenv("PATH", slow, 1);
    git_set_deadline_ms(tap_timeout_ms(1500));
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), -ETIMEDOUT,
           "a command that hangs: no report");
    char *want = xasprintf("git could not read the worktree %s in time", m.path);
    is_str(err, want, "said so");
    free(want);
    ok(!report, "and no half report");
    git_set_deadline_ms(0);
    setenv("PATH", base_path, 1);
    char *pid = t_sh_line(top, "cat child.pid");
    int gone = 0;
    for (int64_t until = mono_ms() + tap_timeout_ms(5000); !gone && mono_ms() < until;)
        gone = t_sh(top, "s=$(cut -d' ' -f3 /proc/%s/stat 2>/dev/null); test -z \"$s\" || test \"$s\" = Z", pid) == 0;
    ok(gone, "the child it left behind was killed with it");
    free(real), free(slow), free(err), free(pid);
    worktree_made_free(&m);
}

static void make_repo(void)
{
    snprintf(repo, sizeof repo, "%s/repo", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    if (t_sh(top, "git init -q -b main repo && cd repo && printf 'one\\n' > a.txt && seq 1 40 > b.txt && "
                  "printf 'x\\n' > c.sh && printf 'ignored.log\\nbuild/\\n' > .gitignore && mkdir -p src/deep && "
                  "for i in $(seq 1 14); do echo $i > src/f$i.txt; done && echo deep > src/deep/d.txt && "
                  "printf '\\000\\001\\002' > bin.dat && git add . && " GIT_ID " commit -q -m first && "
                  "git branch other && echo two > a.txt && " GIT_ID " commit -q -am second && "
                  "git checkout -q other && echo theirs > a.txt && " GIT_ID " commit -q -am theirs && "
                  "git checkout -q main") != 0)
        bail_out("cannot make the test repository");
    char *git = t_sh_line(top, "command -v git");
    if (!git || t_sh(top,
                     "mkdir bin && printf '#!/bin/sh\\necho \"$*\" >> %s/git.log\\nexec %s \"$@\"\\n' > bin/git && "
                     "chmod +x bin/git",
                     top, git) != 0)
        bail_out("cannot make the logging git");
    free(git);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/ocbg-wtreport-XXXXXX");
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    setenv("HOME", top, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    base_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    make_repo();

    check("bg_00000001", "", 3, "nothing done");
    check("bg_00000002",
          "echo more >> a.txt && sed -i 3d b.txt && rm src/f1.txt && chmod +x c.sh && printf '\\003' >> bin.dat && "
          "echo new > 'new file.txt' && echo n > \"$(printf 'caf\\303\\251.txt')\" && echo q > 'quo\"te' && "
          "touch \"$(printf 'new\\nline')\" && mkdir -p made/sub && echo s > made/sub/s.txt && echo i > ignored.log && "
          "mkdir build && echo o > build/o && git init -q nested && echo n > nested/n.txt",
          3, "edits, a deletion, a mode change, a binary file, odd untracked names, a repository, ignored files");
    check("bg_00000003", "for i in $(seq 2 14); do echo changed >> src/f$i.txt; done && echo x >> src/deep/d.txt", 3,
          "more changed files than the report lists");
    check("bg_00000004", "git mv b.txt moved.txt && echo staged > staged.txt && git add staged.txt", 3,
          "a rename and a new file, staged");
    check("bg_00000005", "git cherry-pick -n other >/dev/null 2>&1; test -n \"$(git ls-files -u)\"", 3,
          "a conflict left in the index");
    check("bg_00000006",
          "echo c >> a.txt && " GIT_ID " commit -q -am c1 && echo d >> b.txt && " GIT_ID " commit -q -am c2", 5,
          "two commits, nothing uncommitted");
    check("bg_00000007", "echo c >> a.txt && " GIT_ID " commit -q -am c1 && echo e >> b.txt && echo u > u.txt", 5,
          "a commit and uncommitted edits");
    check("bg_00000008", "git reset -q --hard HEAD~1 && echo e >> b.txt", 5, "HEAD moved back before the base");
    check("bg_00000009", "git pack-refs --all --prune && echo e >> b.txt", 5,
          "the branch packed: HEAD not read from the files");
    check("bg_0000000a", "git checkout -q --detach && echo e >> b.txt", 3, "a detached HEAD at the base");

    settled_yet_sees_every_change();
    hanging_command_stopped();

    t_sh(top, "rm -rf '%s'", top);
    free(base_path);
    return done_testing();
}

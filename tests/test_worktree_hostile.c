/* A task's worktree against a hostile sub-agent and an unlucky user, with
 * real git (plugin/worktree/): what a sub-agent writes in its folder (a
 * `.git` that points elsewhere, a config that runs commands, hooks) runs
 * nothing and commits nothing outside its branch; the user's own hooks never
 * run; GIT_* in the environment is ignored; files git ignores are kept and
 * named, never deleted; the user's other worktrees survive; a slow git is
 * killed with its children and what it half made is undone; a missing git
 * or a failed stash is said as it is; the worktrees' folder is private; the
 * repository's own filters still run when a worktree is made.
 * Evidence of a command that ran is a file it touches in <top>/evidence. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"
#include "worktree/git.h"
#include "worktree/worktree.h"

static char top[256], evidence[300];

#define GIT_ID "git -c user.name=t -c user.email=t@example.com"

static void make_repo(const char *name)
{
    if (t_sh(top,
             "git init -q -b main %s && cd %s && echo one > a.txt && printf 'secret.env\\nbuild/\\n' > "
             ".gitignore && git add . && " GIT_ID " commit -q -m first",
             name, name) != 0)
        bail_out("cannot make the test repository %s", name);
}

/* The names of the evidence files, space-separated ("" when none). */
static char *ran(void)
{
    return t_sh_line(evidence, "ls | tr '\\n' ' '");
}

static void make_in(const char *repo, const char *id, worktree_made *m)
{
    char dir[400], root[400];
    snprintf(dir, sizeof dir, "%s/%s", top, repo);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    char *err = NULL;
    if (worktree_make(dir, root, id, ISOLATION_WORKTREE, m, &err) != 0)
        bail_out("worktree_make %s: %s", id, err);
}

/* The sub-agent points .git at a repository of its own whose config runs
 * commands (fsmonitor) and hooks; it can do this with a file tool only. */
static void redirected_to_own_repository(void)
{
    make_repo("r1");
    worktree_made m;
    make_in("r1", "bg_000000a1", &m);
    t_sh(m.path,
         "mkdir -p .g/refs/heads .g/objects/info .g/hooks && printf 'gitdir: .g\\n' > .git && echo 'ref: "
         "refs/heads/x' > .g/HEAD && git -C '%s/r1' rev-parse HEAD > .g/refs/heads/x && echo '%s/r1/.git/objects' > "
         ".g/objects/info/alternates && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch "
         "%s/fsmonitor; false\"\\n\\thooksPath = %s/.g/hooks\\n' > .g/config && printf '#!/bin/sh\\ntouch "
         "%s/hook\\n' > .g/hooks/post-commit && chmod +x .g/hooks/post-commit && echo work > made.txt",
         top, top, evidence, m.path, evidence);
    char *report = NULL, *err = NULL;
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), 0, "redirected .git: a report");
    like(report, "; 6 untracked files", "of the worktree ocbg made (the task's files are there): %s", report);
    char *r = ran();
    is_str(r, "", "the report ran none of the task's commands");
    free(r);
    worktree_removal rm;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a1", &rm, &err), 0, "and it was removed");
    r = ran();
    is_str(r, "", "the clean-up ran none of them either (no fsmonitor, no hook)");
    free(r);
    char *made = t_sh_line(top, "cd r1 && git show ocbg/bg_000000a1:made.txt");
    is_str(made, "work", "the task's file was committed on its branch");
    free(made), free(report), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

/* The sub-agent points .git at the main checkout's repository: the
 * clean-up's commit must still land on the task's branch only. */
static void redirected_to_main_checkout(void)
{
    make_repo("r2");
    char *head_before = t_sh_line(top, "cd r2 && git rev-parse HEAD");
    worktree_made m;
    make_in("r2", "bg_000000a2", &m);
    t_sh(m.path, "printf 'gitdir: %s/r2/.git\\n' > .git && echo sneaky > sneaky.txt && rm a.txt", top);
    char *err = NULL;
    worktree_removal rm;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a2", &rm, &err), 0,
           ".git at the main checkout: "
           "removed");
    ok(rm.committed, "its work committed");
    char *head_after = t_sh_line(top, "cd r2 && git rev-parse HEAD");
    is_str(head_after, head_before, "the user's branch did not move");
    char *status = t_sh_line(top, "cd r2 && git status --porcelain | tr '\\n' ' '");
    is_str(status, "", "the main index and files are untouched");
    char *a = t_sh_line(top, "cd r2 && cat a.txt");
    is_str(a, "one", "the user's a.txt is there");
    char *sneaky = t_sh_line(top, "cd r2 && git show ocbg/bg_000000a2:sneaky.txt && git show ocbg/bg_000000a2:a.txt");
    is_str(sneaky, "sneaky", "the task's work is on its branch (a.txt deleted there only)");
    free(head_before), free(head_after), free(status), free(a), free(sneaky), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

/* The user's own hooks: ocbg's commits and checkouts are bookkeeping, none
 * runs (git's --no-verify alone skips only two of them). */
static void users_hooks_never_run(void)
{
    make_repo("r3");
    const char *hooks[] = {"post-checkout", "reference-transaction", "prepare-commit-msg", "pre-commit",
                           "commit-msg",    "post-commit",           "post-index-change",  NULL};
    for (const char **h = hooks; *h; h++)
        t_sh(top, "printf '#!/bin/sh\\ntouch %s/%s\\n' > r3/.git/hooks/%s && chmod +x r3/.git/hooks/%s", evidence, *h,
             *h, *h);
    worktree_made m;
    make_in("r3", "bg_000000a3", &m);
    t_sh(m.path, "echo more >> a.txt");
    char *report = NULL, *err = NULL;
    worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err);
    worktree_removal rm;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a3", &rm, &err), 0, "made, reported, removed");
    ok(rm.committed, "with a commit");
    char *r = ran();
    is_str(r, "", "and none of the user's hooks ran");
    free(r), free(report), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
    t_sh(top, "rm -f r3/.git/hooks/*");
}

/* GIT_DIR (and friends) in the host's environment do not redirect git. */
static void environment_ignored(void)
{
    make_repo("r4");
    make_repo("other");
    t_sh(top, "cd other && echo two > a.txt && " GIT_ID " commit -q -am second");
    char *other_git = xasprintf("%s/other/.git", top);
    setenv("GIT_DIR", other_git, 1);
    setenv("GIT_WORK_TREE", top, 1);
    worktree_made m;
    make_in("r4", "bg_000000a4", &m);
    unsetenv("GIT_DIR");
    unsetenv("GIT_WORK_TREE");
    char *want_base = t_sh_line(top, "cd r4 && git rev-parse HEAD");
    is_str(m.base, want_base, "GIT_DIR set: the worktree is made from the session's repository all the same");
    char *branch = t_sh_line(top, "cd r4 && git rev-parse --verify -q ocbg/bg_000000a4 >/dev/null && echo yes");
    is_str(branch, "yes", "its branch is there");
    char *stray = t_sh_line(top, "cd other && git branch --list 'ocbg/*' | wc -l");
    is_str(stray, "0", "and none in the other repository");
    free(other_git), free(want_base), free(branch), free(stray);
    worktree_made_free(&m);
}

/* Files git ignores would be deleted by `git worktree remove`: they are
 * moved aside and named. */
static void ignored_files_kept(void)
{
    make_repo("r5");
    worktree_made m;
    make_in("r5", "bg_000000a5", &m);
    t_sh(m.path, "echo TOKEN=1 > secret.env && mkdir -p build && head -c 3000 /dev/zero > build/out.bin");
    char *err = NULL;
    worktree_removal rm;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a5", &rm, &err), 0, "removed");
    char *kept = xasprintf("%s.ignored", m.path);
    is_str(rm.kept_dir, kept, "its ignored files were moved to <worktree>.ignored");
    is_int(rm.kept_files, 2, "two files");
    is_int(rm.kept_bytes, 3000 + 8, "their size");
    is_str(rm.kept_names, "build/, secret.env", "named");
    char *secret = t_sh_line(kept, "cat secret.env && test -s build/out.bin && echo there");
    is_str(secret, "TOKEN=1", "secret.env is there, whole");
    ok(!t_exists(m.path), "and the worktree is gone");
    free(kept), free(secret), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

/* A user's own worktree whose folder is missing (an unmounted drive)
 * keeps git's record (its index with a staged file): ocbg removes only its
 * own, by name, never `git worktree prune`. */
static void users_missing_worktree_survives(void)
{
    make_repo("r6");
    t_sh(top, "cd r6 && git worktree add -q ../mine -b mine && cd ../mine && echo staged > s.txt && git add s.txt && "
              "cd .. && mv mine mine.away");
    worktree_made m;
    make_in("r6", "bg_000000a6", &m);
    char *err = NULL;
    worktree_removal rm;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a6", &rm, &err), 0, "ocbg's worktree removed");
    worktree_removal_free(&rm);
    worktree_made_free(&m);
    make_in("r6", "bg_000000a7", &m);
    t_sh(top, "rm -rf '%s'", m.path); /* ocbg's own folder gone: its record goes, by name */
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_000000a7", &rm, &err), 0, "a vanished one forgotten");
    is_int(worktree_discard(m.checkout, m.path, m.branch, NULL), 0, "and discarded");
    char *mine = t_sh_line(top, "ls r6/.git/worktrees | tr '\\n' ' '");
    is_str(mine, "mine ", "the user's record is the only one left");
    t_sh(top, "mv mine.away mine");
    char *staged = t_sh_line(top, "cd mine && git diff --cached --name-only");
    is_str(staged, "s.txt", "and its staged file is still staged");
    free(mine), free(staged), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

/* A git that hangs (here: `worktree add` does its work, leaves a child
 * behind, then blocks) is killed at the deadline with that child, what it
 * made is undone and the answer says so. */
static void slow_git_killed_and_undone(void)
{
    make_repo("r7");
    char *real = t_sh_line(top, "command -v git");
    t_sh(top,
         "mkdir -p slowbin && printf '#!/bin/sh\\ncase \"$*\" in *\"worktree add\"*) \"%s\" \"$@\"; sleep 300 & echo "
         "$! > %s/child.pid; exec sleep 300;; esac\\nexec \"%s\" \"$@\"\\n' > slowbin/git && chmod +x slowbin/git",
         real, top, real);
    char *path = xstrdup(getenv("PATH")), *slow = xasprintf("%s/slowbin:%s", top, path);
    setenv("PATH", slow, 1);
    git_set_deadline_ms(tap_timeout_ms(1500));
    char dir[400], root[400], *err = NULL;
    snprintf(dir, sizeof dir, "%s/r7", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    worktree_made m;
    is_int(worktree_make(dir, root, "bg_000000a8", ISOLATION_WORKTREE, &m, &err), -ETIMEDOUT, "a hanging git: refused");
    like(err, "git took longer than", "told why: %s", err);
    unlike(err, "undoing it failed", "and what it made was undone");
    git_set_deadline_ms(0);
    setenv("PATH", path, 1);
    char *left = t_sh_line(top, "cd r7 && git branch --list 'ocbg/*' | wc -l; ls .git/worktrees 2>/dev/null");
    is_str(left, "0", "no branch left");
    ok(!t_exists(root) || !t_sh(root, "test ! -e bg_000000a8"), "no folder left");
    char *pid = t_sh_line(top, "cat child.pid");
    int gone = 0;
    for (int64_t until = mono_ms() + tap_timeout_ms(5000); !gone && mono_ms() < until;)
        gone = t_sh(top, "s=$(cut -d' ' -f3 /proc/%s/stat 2>/dev/null); test -z \"$s\" || test \"$s\" = Z", pid) == 0;
    ok(gone, "the child it left behind was killed with it");
    free(real), free(path), free(slow), free(err), free(left), free(pid);
}

/* git missing, and a stash that cannot be made: said as they are. */
static void failures_said(void)
{
    make_repo("r8");
    char dir[400], root[400], *err = NULL;
    snprintf(dir, sizeof dir, "%s/r8", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    char *path = xstrdup(getenv("PATH"));
    setenv("PATH", "/nonexistent", 1);
    worktree_made m;
    is_int(worktree_make(dir, root, "bg_000000a9", ISOLATION_WORKTREE, &m, &err), -ENOENT, "no git: refused");
    like(err, "cannot run git (is it installed and on PATH?)", "as such, not as a folder outside git: %s", err);
    setenv("PATH", path, 1);
    free(err);
    /* A merge stopped on a conflict: git stash create fails. */
    t_sh(dir,
         "git checkout -q -b side && echo side > a.txt && " GIT_ID " commit -q -am side && git checkout -q main && "
         "echo main > a.txt && " GIT_ID " commit -q -am main && " GIT_ID " merge side >/dev/null 2>&1; true");
    is_int(worktree_make(dir, root, "bg_000000aa", ISOLATION_WITH_CHANGES, &m, &err), -EIO,
           "mid-merge, with changes: "
           "refused");
    like(err, "reading the checkout's uncommitted changes failed (git stash create:", "told what failed: %s", err);
    char *left = t_sh_line(dir, "git branch --list 'ocbg/*' | wc -l");
    is_str(left, "0", "and nothing was left behind");
    free(left), free(err), free(path);
}

/* What the user's git setup does for a checkout, a worktree gets: a filter
 * the repository's config defines (as Git LFS's smudge) runs at creation. */
static void users_filters_run(void)
{
    make_repo("rb");
    t_sh(top, "cd rb && git config filter.up.smudge 'tr a-z A-Z' && git config filter.up.clean cat && echo '*.up "
              "filter=up' > .gitattributes && echo shout > x.up && git add . && " GIT_ID " commit -q -m up");
    worktree_made m;
    make_in("rb", "bg_000000b4", &m);
    char *x = t_sh_line(m.path, "cat x.up");
    is_str(x, "SHOUT", "the repository's smudge filter ran when the worktree was made");
    free(x);
    worktree_made_free(&m);
}

/* The worktrees' folder: made private; a link or another user's refused. */
static void private_root(void)
{
    make_repo("r9");
    char dir[400], root[400], *err = NULL;
    snprintf(dir, sizeof dir, "%s/r9", top);
    snprintf(root, sizeof root, "%s/fresh/worktrees", top);
    worktree_made m;
    is_int(worktree_make(dir, root, "bg_000000b1", ISOLATION_WORKTREE, &m, &err), 0, "a new worktrees' folder");
    struct stat st;
    is_int(stat(root, &st) == 0 ? (int)(st.st_mode & 0777) : -1, 0700, "is made 0700");
    worktree_made_free(&m);
    t_sh(top, "mkdir -p elsewhere && ln -s elsewhere linked");
    snprintf(root, sizeof root, "%s/linked", top);
    is_int(worktree_make(dir, root, "bg_000000b2", ISOLATION_WORKTREE, &m, &err), -EINVAL, "a link: refused");
    like(err, "is not a folder of this user's", "told why: %s", err);
    free(err);
    char *inside = t_sh_line(top, "ls elsewhere | wc -l");
    is_str(inside, "0", "nothing was made through it");
    free(inside);
    if (geteuid() == 0) {
        t_sh(top, "mkdir -p theirs && chown 65534 theirs");
        snprintf(root, sizeof root, "%s/theirs", top);
        is_int(worktree_make(dir, root, "bg_000000b3", ISOLATION_WORKTREE, &m, &err), -EINVAL,
               "another user's folder: refused");
        free(err);
    } else {
        skip(1, "chown needs root");
    }
}

/* What the task did to its own folder that would misplace its work: kept,
 * and told why. */
static void tampered_worktrees_kept(void)
{
    make_repo("ra");
    worktree_made m;
    make_in("ra", "bg_000000d1", &m);
    t_sh(m.path, "git checkout -q -b elsewhere && echo w > w.txt");
    char *err = NULL;
    worktree_removal rm;
    ok(worktree_remove(m.checkout, m.path, m.branch, "bg_000000d1", &rm, &err) < 0, "HEAD moved off its branch: kept");
    like(err, "its HEAD is no longer on branch ocbg/bg_000000d1", "told why: %s", err);
    ok(t_exists(m.path), "the folder is there");
    free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);

    make_in("ra", "bg_000000c2", &m);
    t_sh(m.path, "rm .git && mkdir .git && echo w > w.txt");
    char *report = NULL;
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), 0, ".git made a folder: reported");
    like(report, "1 untracked file", "from git's own record: %s", report);
    ok(worktree_remove(m.checkout, m.path, m.branch, "bg_000000c2", &rm, &err) < 0, "but kept");
    like(err, "the task made it a folder", "told why: %s", err);
    char *w = t_sh_line(top, "cd ra && git show ocbg/bg_000000c2:w.txt");
    is_str(w, "w", "its work committed on its branch first");
    free(report), free(err), free(w);
    worktree_removal_free(&rm);

    t_sh(top, "mv '%s' '%s.real' && mkdir -p decoy && ln -s '%s/decoy' '%s'", m.path, m.path, top, m.path);
    ok(worktree_remove(m.checkout, m.path, m.branch, "bg_000000c2", &rm, &err) < 0, "the folder swapped for a link: "
                                                                                    "kept");
    like(err, "was replaced (by a symbolic link)", "told why: %s", err);
    char *decoy = t_sh_line(top, "ls -A decoy | wc -l");
    is_str(decoy, "0", "nothing was written through the link");
    free(err), free(decoy);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

/* A submodule the sub-agent fills with a repository of its own: its config
 * defines a clean filter and its attributes apply it to a file that looks
 * changed. git would run that filter while it checks whether the submodule
 * is dirty (a `git status` inside it); ocbg's git never looks inside. */
static void submodule_config_never_read(void)
{
    make_repo("rc");
    t_sh(top, "cd rc && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub && " GIT_ID
              " commit -q -m 'a submodule'");
    worktree_made m;
    make_in("rc", "bg_000000e1", &m);
    /* (the filter is set after the commit: the setup's own git must not run it) */
    t_sh(m.path,
         "rm -rf sub && git init -q sub && cd sub && echo one > f && git add . && " GIT_ID " commit -q -m own && "
         "git config filter.x.clean 'touch %s/submodule-filter; cat' && echo '* filter=x' > .gitattributes && "
         "echo two > f",
         evidence);
    char *before = ran();
    is_str(before, "", "(the setup ran no filter)");
    free(before);
    char *report = NULL, *err = NULL;
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), 0, "the report is made");
    worktree_removal rm;
    int removed = worktree_remove(m.checkout, m.path, m.branch, "bg_000000e1", &rm, &err);
    /* git itself refuses to remove a worktree with a submodule filled in: kept, and said */
    like(removed < 0 && err ? err : "", "working trees containing submodules cannot be moved or removed",
         "the worktree is kept, and git's reason said");
    char *r = ran();
    is_str(r, "", "the filter the submodule's own config defines never ran");
    free(r), free(report), free(err);
    worktree_removal_free(&rm);
    worktree_made_free(&m);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/ocbg-wthostile-XXXXXX");
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    snprintf(evidence, sizeof evidence, "%s/evidence", top);
    mkdir(evidence, 0700);
    setenv("HOME", top, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    t_sh(top, GIT_ID " config --global user.name t && git config --global user.email t@example.com");
    redirected_to_own_repository();
    redirected_to_main_checkout();
    users_hooks_never_run();
    environment_ignored();
    ignored_files_kept();
    users_missing_worktree_survives();
    slow_git_killed_and_undone();
    failures_said();
    users_filters_run();
    private_root();
    tampered_worktrees_kept();
    submodule_config_never_read();
    t_sh(top, "rm -rf '%s'", top);
    return done_testing();
}

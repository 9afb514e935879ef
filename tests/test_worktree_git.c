/* A task's git worktree (plugin/worktree/), against real git in a temporary
 * folder: what a launch refuses (and that it then made nothing), what it
 * makes, what the report tells the model, and that removing a worktree
 * loses nothing (uncommitted work lands on the branch; the branch stays).
 * No identity is configured (HOME is the temporary folder): ocbg's commit
 * must work on such a machine too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"
#include "worktree/git.h"
#include "worktree/worktree.h"

static char top[256];

static bool exists_in(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    bool yes = t_exists(path);
    free(path);
    return yes;
}

/* A file's whole text (malloc'd; NULL when it cannot be read). */
static char *read_in(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return NULL;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return xstrdup(buf);
}

#define GIT_ID "git -c user.name=t -c user.email=t@example.com"

static void make_repo(const char *name)
{
    if (t_sh(top,
             "git init -q -b main %s && cd %s && echo one > a.txt && echo keep > b.txt && git add . && " GIT_ID
             " commit -q -m first",
             name, name) != 0)
        bail_out("cannot make the test repository %s", name);
}

static void refusals(void)
{
    char dir[400], root[400];
    snprintf(root, sizeof root, "%s/wts", top);
    worktree_made m;
    char *err = NULL;

    t_sh(top, "mkdir plain");
    snprintf(dir, sizeof dir, "%s/plain", top);
    is_int(worktree_make(dir, root, "bg_00000001", ISOLATION_WORKTREE, &m, &err), -22, "a folder outside git: refused");
    like(err, "is not inside a git repository", "and told why: %s", err);
    free(err);
    ok(!t_exists(root), "nothing was made");

    t_sh(top, "git init -q --bare bare.git");
    snprintf(dir, sizeof dir, "%s/bare.git", top);
    is_int(worktree_make(dir, root, "bg_00000002", ISOLATION_WORKTREE, &m, &err), -22, "a bare repository: refused");
    like(err, "bare git repository", "and told why: %s", err);
    free(err);

    t_sh(top, "git init -q -b main empty");
    snprintf(dir, sizeof dir, "%s/empty", top);
    is_int(worktree_make(dir, root, "bg_00000003", ISOLATION_WORKTREE, &m, &err), -22, "no commit yet: refused");
    like(err, "has no commit yet", "and told why: %s", err);
    free(err);

    make_repo("detached");
    t_sh(top, "cd detached && git checkout -q --detach HEAD");
    snprintf(dir, sizeof dir, "%s/detached", top);
    is_int(worktree_make(dir, root, "bg_00000004", ISOLATION_WORKTREE, &m, &err), -22, "a detached HEAD: refused");
    like(err, "detached HEAD", "and told why: %s", err);
    free(err);
    char *branches = t_sh_line(top, "cd detached && git branch --list 'ocbg/*' | wc -l");
    is_str(branches, "0", "no branch was made by any refusal");
    free(branches);
    ok(!t_exists(root), "and no folder");
}

static void make_report_remove(void)
{
    char dir[400], root[400];
    snprintf(dir, sizeof dir, "%s/repo", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    make_repo("repo");
    t_sh(top, "cd repo && echo changed >> a.txt && echo new > untracked.txt");
    worktree_made m;
    char *err = NULL;
    is_int(worktree_make(dir, root, "bg_0000000a", ISOLATION_WORKTREE, &m, &err), 0, "made from a repository");
    char want[600];
    snprintf(want, sizeof want, "%s/bg_0000000a", root);
    is_str(m.path, want, "in <root>/<task id>, outside the checkout");
    is_str(m.branch, "ocbg/bg_0000000a", "on branch ocbg/<task id>");
    is_str(m.checkout, dir, "from the repository's top folder");
    is_int(m.changed, 1, "one tracked file had uncommitted changes");
    is_int(m.untracked, 1, "one untracked file");
    ok(!m.carried, "not copied in (isolation worktree)");
    char *a = read_in(m.path, "a.txt");
    is_str(a, "one\n", "the worktree has the last commit's a.txt");
    free(a);
    ok(!exists_in(m.path, "untracked.txt"), "and not the untracked file");
    is_int(worktree_make(dir, root, "bg_0000000a", ISOLATION_WORKTREE, &(worktree_made){0}, &err), -22,
           "the same task id again: refused");
    like(err, "already exists", "the branch or folder exists: %s", err);
    free(err);

    /* The task's work: one commit, one uncommitted edit, one new file. */
    t_sh(top,
         "cd '%s' && echo two >> b.txt && " GIT_ID " commit -q -am 'task edit' && echo three >> a.txt && "
         "echo fresh > made.txt",
         m.path);
    char *report = NULL;
    is_int(worktree_report(m.checkout, m.path, m.branch, m.base, &report, &err), 0, "a report");
    like(report, "Branch: ocbg/bg_0000000a (from ", "names the branch and its base");
    like(report, ", 1 commit: 1 file changed, 1 insertion(+)", "the committed work");
    snprintf(want, sizeof want, "Uncommitted in %s: 1 file changed, 1 insertion(+); 1 untracked file", m.path);
    like(report, want, "what is left uncommitted");
    like(report, "a.txt | 1 +", "a per-file stat");
    like(report, "Untracked:\n  made.txt", "the untracked file by name");
    free(report);

    worktree_removal r;
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_0000000a", &r, &err), 0, "removed");
    ok(r.committed, "after its uncommitted work was committed");
    ok(!r.kept_dir, "no file git ignores was there to keep");
    worktree_removal_free(&r);
    ok(!t_exists(m.path), "the folder is gone");
    char *log = t_sh_line(top, "cd repo && git log -1 --format=%%s ocbg/bg_0000000a");
    is_str(log, "ocbg: uncommitted work of background task bg_0000000a", "the branch holds that commit");
    free(log);
    char *files = t_sh_line(top, "cd repo && git show ocbg/bg_0000000a:made.txt");
    is_str(files, "fresh", "with the untracked file in it");
    free(files);
    char *main_a = t_sh_line(top, "cd repo && cat a.txt | tr '\\n' ' '");
    is_str(main_a, "one changed ", "the main checkout is untouched");
    free(main_a);
    is_int(worktree_remove(m.checkout, m.path, m.branch, "bg_0000000a", &r, &err), 0,
           "removing it again: nothing to do");
    worktree_removal_free(&r);
    worktree_made_free(&m);
}

static void with_changes_and_discard(void)
{
    char dir[400], root[400];
    snprintf(dir, sizeof dir, "%s/repo2", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    make_repo("repo2");
    t_sh(top, "cd repo2 && echo edited >> b.txt");
    worktree_made m;
    char *err = NULL;
    is_int(worktree_make(dir, root, "bg_0000000b", ISOLATION_WITH_CHANGES, &m, &err), 0, "made with the changes");
    ok(m.carried, "the tracked change was copied in");
    char *b = read_in(m.path, "b.txt");
    is_str(b, "keep\nedited\n", "the worktree's b.txt has the uncommitted edit");
    free(b);
    char *main_b = t_sh_line(top, "cd repo2 && git status --porcelain");
    is_str(main_b, " M b.txt", "and the checkout still has it, uncommitted");
    free(main_b);
    is_int(worktree_discard(m.checkout, m.path, m.branch, NULL), 0, "discarded, and nothing is left");
    ok(!t_exists(m.path), "discarded: the folder is gone");
    char *branch = t_sh_line(top, "cd repo2 && git branch --list 'ocbg/*' | wc -l");
    is_str(branch, "0", "and so is the branch (the task never ran)");
    free(branch);
    worktree_made_free(&m);
}

static void kept_when_it_cannot_commit(void)
{
    char dir[400], root[400];
    snprintf(dir, sizeof dir, "%s/repo3", top);
    snprintf(root, sizeof root, "%s/data/worktrees", top);
    make_repo("repo3");
    worktree_made m;
    char *err = NULL;
    is_int(worktree_make(dir, root, "bg_0000000c", ISOLATION_WORKTREE, &m, &err), 0, "made");
    /* A commit that cannot be made: the index is locked. */
    t_sh(top, "cd '%s' && echo work >> a.txt && touch \"$(git rev-parse --git-dir)/index.lock\"", m.path);
    worktree_removal r;
    ok(worktree_remove(m.checkout, m.path, m.branch, "bg_0000000c", &r, &err) < 0, "a failing git: not removed");
    ok(!r.committed, "nothing committed");
    worktree_removal_free(&r);
    like(err, "failed", "told why: %s", err);
    free(err);
    ok(t_exists(m.path), "the folder is kept, with its work");
    char *a = read_in(m.path, "a.txt");
    is_str(a, "one\nwork\n", "the uncommitted work is still there");
    free(a);
    worktree_made_free(&m);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/ocbg-wtgit-XXXXXX");
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    setenv("HOME", top, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    unsetenv("GIT_AUTHOR_NAME");
    unsetenv("GIT_AUTHOR_EMAIL");
    unsetenv("GIT_COMMITTER_NAME");
    unsetenv("GIT_COMMITTER_EMAIL");
    unsetenv("EMAIL");
    refusals();
    make_report_remove();
    with_changes_and_discard();
    kept_when_it_cannot_commit();
    t_sh(top, "rm -rf '%s'", top);
    return done_testing();
}

/* worktree.c — see worktree.h. */
#include "worktree/worktree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "worktree/git.h"

const char *const isolation_names[] = {"none", "worktree", "worktree_with_changes", NULL};

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

void worktree_made_free(worktree_made *m)
{
    free(m->path);
    free(m->branch);
    free(m->base);
    free(m->checkout);
    memset(m, 0, sizeof *m);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* `git status --porcelain` lines: tracked changes, and untracked ("??"). */
static void count_status(const char *s, unsigned *changed, unsigned *untracked)
{
    *changed = *untracked = 0;
    while (s && *s) {
        if (strncmp(s, "??", 2) == 0)
            ++*untracked;
        else
            ++*changed;
        const char *nl = strchr(s, '\n');
        s = nl ? nl + 1 : NULL;
    }
}

/* mkdir -p, for the worktrees' root. */
static int make_dirs(const char *path)
{
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0777);
            *s = '/';
        }
    int rc = mkdir(p, 0777) == 0 || errno == EEXIST ? 0 : -errno;
    free(p);
    return rc;
}

/* The repository holding dir, as worktree_make needs it: 0 with m->checkout
 * and m->base, or -EINVAL with the refusal. */
static int check_repository(const char *dir, worktree_made *m, char **err)
{
    char *bare = git_line(dir, ARGS("rev-parse", "--is-bare-repository"));
    bool is_bare = bare && strcmp(bare, "true") == 0;
    free(bare);
    if (is_bare) {
        *err = xasprintf("%s is a bare git repository: it has no checkout to branch a worktree from", dir);
        return -EINVAL;
    }
    m->checkout = git_line(dir, ARGS("rev-parse", "--show-toplevel"));
    if (!m->checkout) {
        *err = xasprintf("%s is not inside a git repository, so the task cannot get a worktree", dir);
        return -EINVAL;
    }
    char *head = git_line(m->checkout, ARGS("symbolic-ref", "-q", "HEAD"));
    free(head);
    if (!head) {
        *err = xasprintf("the checkout %s has a detached HEAD (no branch checked out): check out a branch first, or "
                         "launch without isolation",
                         m->checkout);
        return -EINVAL;
    }
    m->base = git_line(m->checkout, ARGS("rev-parse", "--verify", "-q", "HEAD^{commit}"));
    if (!m->base) {
        *err = xasprintf("the repository %s has no commit yet: a worktree starts from one", m->checkout);
        return -EINVAL;
    }
    return 0;
}

/* Copy the checkout's changes to tracked files into the new worktree:
 * `git stash create` makes a commit of them without touching the checkout. */
static int carry_changes(worktree_made *m, char **err)
{
    char *stash = git_line(m->checkout, ARGS("stash", "create"));
    if (!stash || !stash[0]) {
        free(stash);
        return 0; /* no tracked change */
    }
    char *out = NULL;
    int rc = git_run(m->path, ARGS("stash", "apply", "-q", stash), &out);
    free(stash);
    if (rc != 0) {
        out[strcspn(out, "\n")] = '\0';
        *err = xasprintf("copying the checkout's uncommitted changes into the worktree failed: %s", out);
        free(out);
        return -EIO;
    }
    free(out);
    m->carried = true;
    return 0;
}

int worktree_make(const char *dir, const char *root, const char *task_id, isolation how, worktree_made *m, char **err)
{
    memset(m, 0, sizeof *m);
    *err = NULL;
    int rc = check_repository(dir, m, err);
    if (rc == 0) {
        m->branch = xasprintf("ocbg/%s", task_id);
        m->path = xasprintf("%s/%s", root, task_id);
        char *ref = xasprintf("refs/heads/%s", m->branch);
        char *exists = git_line(m->checkout, ARGS("rev-parse", "--verify", "-q", ref));
        free(ref);
        if (exists || is_dir(m->path)) {
            *err = xasprintf(exists ? "the branch %s already exists" : "the folder %s already exists",
                             exists ? m->branch : m->path);
            rc = -EINVAL;
        }
        free(exists);
    }
    if (rc == 0 && make_dirs(root) != 0) {
        *err = xasprintf("cannot create the worktrees' folder %s: %s", root, strerror(errno));
        rc = -EIO;
    }
    if (rc == 0) {
        char *status = NULL;
        git_run(m->checkout, ARGS("status", "--porcelain"), &status);
        count_status(status, &m->changed, &m->untracked);
        free(status);
        char *out = NULL;
        if (git_run(m->checkout, ARGS("worktree", "add", "-q", "-b", m->branch, m->path, m->base), &out) != 0) {
            out[strcspn(out, "\n")] = '\0';
            *err = xasprintf("git worktree add failed: %s", out);
            rc = -EIO;
        }
        free(out);
        if (rc == 0 && how == ISOLATION_WITH_CHANGES && m->changed && (rc = carry_changes(m, err)) != 0)
            worktree_discard(m->checkout, m->path, m->branch);
    }
    if (rc != 0)
        worktree_made_free(m);
    return rc;
}

void worktree_discard(const char *checkout, const char *path, const char *branch)
{
    git_run(checkout, ARGS("worktree", "remove", "--force", path), NULL);
    git_run(checkout, ARGS("worktree", "prune"), NULL);
    git_run(checkout, ARGS("branch", "-q", "-D", branch), NULL);
}

void worktree_item_take(const task *t, worktree_item **list)
{
    if (!t->wt)
        return;
    worktree_item *it = xcalloc(1, sizeof *it);
    memcpy(it->id, t->id, TASK_ID_SIZE);
    it->path = xstrdup(t->wt->path);
    it->branch = xstrdup(t->wt->branch);
    it->checkout = xstrdup(t->wt->checkout);
    it->watched = t->wt->watched;
    it->next = *list;
    *list = it;
}

void worktree_items_free(worktree_item *list)
{
    while (list) {
        worktree_item *next = list->next;
        free(list->path);
        free(list->branch);
        free(list->checkout);
        free(list);
        list = next;
    }
}

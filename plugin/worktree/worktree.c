/* worktree.c — see worktree.h: making a task's worktree, and undoing it. */
#include "worktree/worktree.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "worktree/bind.h"
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

/* The worktrees' folder, made 0700 if missing (its parents too), and
 * refused when it is a link or not this user's: anyone who could write
 * there could swap a task's folder for a link to the user's files. */
static int root_ready(const char *root, char **err)
{
    char *p = xstrdup(root);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    free(p);
    if (mkdir(root, 0700) != 0 && errno != EEXIST) {
        *err = xasprintf("cannot create the worktrees' folder %s: %s", root, strerror(errno));
        return -EIO;
    }
    struct stat st;
    if (lstat(root, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        *err = xasprintf("the worktrees' folder %s is not a folder of this user's (a link, a file or another "
                         "owner's), so ocbg does not use it",
                         root);
        return -EINVAL;
    }
    if ((st.st_mode & 077) && chmod(root, 0700) != 0) { /* made by an older ocbg, 0755 */
        *err = xasprintf("cannot make the worktrees' folder %s private: %s", root, strerror(errno));
        return -EIO;
    }
    return 0;
}

/* m->base: the checkout's HEAD commit, on a branch. 0 or -EINVAL. */
static int check_head(const repo_checkout *c, worktree_made *m, char **err)
{
    git_bind b = checkout_git(c);
    char *head = git_line(&b, ARGS("symbolic-ref", "-q", "HEAD"), NULL);
    free(head);
    if (!head) {
        *err = xasprintf("the checkout %s has a detached HEAD (no branch checked out): check out a branch first, or "
                         "launch without isolation",
                         c->top);
        return -EINVAL;
    }
    m->base = git_line(&b, ARGS("rev-parse", "--verify", "-q", "HEAD^{commit}"), NULL);
    if (!m->base) {
        *err = xasprintf("the repository %s has no commit yet: a worktree starts from one", c->top);
        return -EINVAL;
    }
    return 0;
}

/* Copy the checkout's changes to tracked files into the new worktree:
 * `git stash create` makes a commit of them without touching the
 * checkout; applied with git bound to the new worktree. */
static int carry_changes(const repo_checkout *c, worktree_made *m, char **err)
{
    git_bind b = checkout_git(c);
    char *stash = NULL;
    int rc = git_run(&b, ARGS("stash", "create"), &stash);
    if (rc != 0) {
        stash[strcspn(stash, "\n")] = '\0';
        *err = xasprintf("reading the checkout's uncommitted changes failed (git stash create: %s)", stash);
        free(stash);
        return rc < 0 ? rc : -EIO;
    }
    if (!stash[0]) {
        free(stash);
        return 0; /* changed files without a change git would stash (mode only, say) */
    }
    bound_worktree w;
    char *out = NULL;
    rc = worktree_bind(c->top, m->path, &w, err);
    if (rc == 0) {
        git_bind wb = worktree_git(&w);
        rc = git_run(&wb, ARGS("stash", "apply", "-q", stash), &out);
        if (rc != 0) {
            out[strcspn(out, "\n")] = '\0';
            *err = xasprintf("copying the checkout's uncommitted changes into the worktree failed: %s", out);
            rc = rc < 0 ? rc : -EIO;
        }
    }
    bound_worktree_free(&w);
    free(out);
    free(stash);
    m->carried = rc == 0;
    return rc;
}

/* Refuse a branch or folder of the task's name (nothing made yet). */
static int check_free(const repo_checkout *c, worktree_made *m, char **err)
{
    git_bind b = checkout_git(c);
    char *ref = xasprintf("refs/heads/%s", m->branch);
    char *exists = git_line(&b, ARGS("rev-parse", "--verify", "-q", ref), NULL);
    free(ref);
    struct stat st;
    int rc = 0;
    if (exists || lstat(m->path, &st) == 0) {
        *err = xasprintf(exists ? "the branch %s already exists" : "the folder %s already exists",
                         exists ? m->branch : m->path);
        rc = -EINVAL;
    }
    free(exists);
    return rc;
}

/* git worktree add; on failure (a deadline too) undo what it made and
 * say so. */
static int add_worktree(const repo_checkout *c, worktree_made *m, char **err)
{
    git_bind b = checkout_git(c);
    char *out = NULL;
    int rc = git_run(&b, ARGS("worktree", "add", "-q", "-b", m->branch, m->path, m->base), &out);
    if (rc != 0) {
        out[strcspn(out, "\n")] = '\0';
        char *left = NULL;
        bool undone = worktree_discard(c->top, m->path, m->branch, &left) == 0;
        m->left = !undone;
        *err = xasprintf("git worktree add failed: %s%s%s", out,
                         undone ? "" : "; undoing it failed: ", undone ? "" : left);
        free(left);
        rc = rc < 0 ? rc : -EIO;
    }
    free(out);
    return rc;
}

/* The second of the index being settled (settle_index); nftw takes no
 * argument, and makes run on several threads at once. */
static _Thread_local time_t racy_from;

static int backdate(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (ftw->level == 1 && strcmp(path + ftw->base, ".git") == 0)
        return 0;
    if ((flag == FTW_F || flag == FTW_SL) && st->st_mtime >= racy_from) {
        struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = racy_from - 1}};
        utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW);
    }
    return 0;
}

/* git wrote the new worktree's files and then its index, mostly in the
 * same second: to git those files are "racily clean" (not older than the
 * index), so every command that compares the work tree (each report's
 * diff, the task's own git) reads and hashes them, and none of ocbg's may
 * write the index to settle them. Settled here, before the task starts:
 * those files' times set a second back (git's record of them then no
 * longer matches, so no change can hide behind it), and the index
 * refreshed from them (each hashed once). Best effort: a failure leaves
 * the index as git wrote it, which costs time, not truth. */
static void settle_index(const char *top, const char *path)
{
    bound_worktree w;
    char *err = NULL;
    struct stat st;
    if (worktree_bind(top, path, &w, &err) == 0) {
        char *index = xasprintf("%s/index", w.admin);
        if (stat(index, &st) == 0) {
            racy_from = st.st_mtime;
            nftw(path, backdate, 16, FTW_PHYS);
            git_bind b = worktree_git(&w);
            git_run(&b, ARGS("update-index", "-q", "--refresh"), NULL); /* 1: the carried changes */
        }
        free(index);
    }
    free(err);
    bound_worktree_free(&w);
}

int worktree_make(const char *dir, const char *root, const char *task_id, isolation how, worktree_made *m, char **err)
{
    memset(m, 0, sizeof *m);
    *err = NULL;
    repo_checkout c;
    int rc = checkout_find(dir, &c, err);
    if (rc != 0)
        return rc;
    m->checkout = xstrdup(c.top);
    m->branch = xasprintf("ocbg/%s", task_id);
    m->path = xasprintf("%s/%s", root, task_id);
    rc = check_head(&c, m, err);
    if (rc == 0)
        rc = check_free(&c, m, err);
    if (rc == 0)
        rc = root_ready(root, err);
    if (rc == 0) {
        git_bind b = checkout_git(&c);
        char *status = NULL;
        git_run(&b, ARGS("status", "--porcelain", "--untracked-files=normal"), &status);
        count_status(status, &m->changed, &m->untracked);
        free(status);
        rc = add_worktree(&c, m, err);
    }
    if (rc == 0 && how == ISOLATION_WITH_CHANGES && m->changed && (rc = carry_changes(&c, m, err)) != 0) {
        char *left = NULL;
        if (worktree_discard(c.top, m->path, m->branch, &left) != 0) {
            m->left = true;
            char *both = xasprintf("%s; undoing the worktree failed: %s", *err, left);
            free(*err);
            *err = both;
        }
        free(left);
    }
    if (rc == 0)
        settle_index(c.top, m->path);
    checkout_free(&c);
    if (rc != 0) {
        bool left = m->left;
        worktree_made_free(m);
        m->left = left;
    }
    return rc;
}

int worktree_discard(const char *top, const char *path, const char *branch, char **left)
{
    repo_checkout c;
    char *err = NULL;
    if (checkout_open(top, &c, &err) != 0) {
        if (left)
            *left = xasprintf("%s; the folder %s and the branch %s may remain", err, path, branch);
        free(err);
        return -EIO;
    }
    git_bind b = checkout_git(&c);
    git_run(&b, ARGS("worktree", "remove", "--force", path), NULL);
    worktree_forget_missing(c.common, path);
    git_run(&b, ARGS("branch", "-q", "-D", branch), NULL);
    /* What is still there, checked, not assumed. */
    struct stat st;
    char *ref = xasprintf("refs/heads/%s", branch);
    char *still = git_line(&b, ARGS("rev-parse", "--verify", "-q", ref), NULL);
    bool folder = lstat(path, &st) == 0;
    char *admin = worktree_admin_of(c.common, path);
    strbuf sb = {0};
    if (folder)
        sb_printf(&sb, "the folder %s", path);
    if (admin)
        sb_printf(&sb, "%sgit's record of it (%s)", sb.len ? ", " : "", admin);
    if (still)
        sb_printf(&sb, "%sthe branch %s", sb.len ? ", " : "", branch);
    if (sb.len)
        sb_puts(&sb, " remain");
    free(ref), free(still), free(admin);
    checkout_free(&c);
    int rc = sb.len ? -EIO : 0;
    if (left)
        *left = sb_take(&sb);
    else
        sb_free(&sb);
    return rc;
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

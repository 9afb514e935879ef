/* remove.c — see worktree.h: removing a task's worktree without losing
 * its work, with git bound to it (worktree/bind.h), and the files git
 * ignores moved out first rather than deleted. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "worktree/bind.h"
#include "worktree/git.h"
#include "worktree/worktree.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define KEPT_NAMES 5 /* ignored files named in the answer; the rest counted */

void worktree_removal_free(worktree_removal *r)
{
    free(r->kept_dir);
    free(r->kept_names);
    memset(r, 0, sizeof *r);
}

/* git's message cut to its first line (the rest is advice for a person at
 * a terminal). */
static char *first_line(char *text)
{
    if (text)
        text[strcspn(text, "\n")] = '\0';
    return text;
}

/* Commit everything uncommitted in the worktree onto its branch. 0
 * (nothing to commit: *committed false), or a negative errno with *err. */
static int commit_all(const bound_worktree *w, const char *task_id, bool *committed, char **err)
{
    git_bind b = worktree_git(w);
    char *status = NULL;
    int rc = git_run(&b, ARGS("status", "--porcelain", "--untracked-files=all"), &status);
    if (rc != 0) {
        *err = xasprintf("git status failed there: %s", first_line(status));
        free(status);
        return rc < 0 ? rc : -EIO;
    }
    bool dirty = status[0] != '\0';
    free(status);
    if (!dirty)
        return 0;
    char *out = NULL, *msg = xasprintf("ocbg: uncommitted work of background task %s", task_id);
    /* A machine without a git identity still gets the commit. */
    char *email = git_line(&b, ARGS("config", "user.email"), NULL);
    rc = git_run(&b, ARGS("add", "-A"), &out);
    if (rc == 0) {
        free(out);
        rc = email ? git_run(&b, ARGS("commit", "-q", "--no-verify", "--no-gpg-sign", "-m", msg), &out)
                   : git_run(&b,
                             ARGS("-c", "user.name=ocbg", "-c", "user.email=ocbg@localhost", "commit", "-q",
                                  "--no-verify", "--no-gpg-sign", "-m", msg),
                             &out);
    }
    free(email);
    free(msg);
    if (rc != 0)
        *err = xasprintf("committing its uncommitted work failed: %s", first_line(out));
    free(out);
    *committed = rc == 0;
    return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
}

/* ---- the files git ignores, moved aside ---------------------------------- */

static _Thread_local unsigned walk_files;
static _Thread_local unsigned long long walk_bytes;

static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (flag == FTW_F || flag == FTW_SL) {
        walk_files++;
        walk_bytes += (unsigned long long)st->st_size;
    }
    return 0;
}

/* The folder `rel` (a relative path, no "..") under the folder open at
 * dfd, each component opened without following a link; made (0700) when
 * `make`. An fd, or -1. */
static int open_under(int dfd, const char *rel, bool make)
{
    int fd = dup(dfd);
    char *copy = xstrdup(rel), *save = NULL;
    for (char *part = strtok_r(copy, "/", &save); part && fd >= 0; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0) {
            close(fd);
            fd = -1;
            break;
        }
        if (make)
            mkdirat(fd, part, 0700);
        int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
    }
    free(copy);
    return fd;
}

/* Move one ignored entry ("a/b/.env", or a folder "build/") from the
 * worktree (sfd) to the same place under the kept folder (kfd), never
 * replacing anything there. 0 or -errno. */
static int move_one(int sfd, int kfd, const char *kept_dir, char *entry, worktree_removal *r)
{
    size_t len = strlen(entry);
    while (len && entry[len - 1] == '/')
        entry[--len] = '\0';
    char *slash = strrchr(entry, '/');
    const char *leaf = slash ? slash + 1 : entry;
    if (slash)
        *slash = '\0';
    int from = slash ? open_under(sfd, entry, false) : dup(sfd);
    int to = slash ? open_under(kfd, entry, true) : dup(kfd);
    int rc = from < 0 || to < 0 || !leaf[0] || strcmp(leaf, "..") == 0 ? -EINVAL : 0;
    if (rc == 0 && renameat2(from, leaf, to, leaf, RENAME_NOREPLACE) != 0)
        rc = -errno;
    if (from >= 0)
        close(from);
    if (to >= 0)
        close(to);
    if (slash)
        *slash = '/';
    if (rc == 0) {
        char *moved = xasprintf("%s/%s", kept_dir, entry);
        walk_files = 0, walk_bytes = 0;
        nftw(moved, count_entry, 16, FTW_PHYS);
        free(moved);
        r->kept_files += walk_files;
        r->kept_bytes += walk_bytes;
    }
    return rc;
}

/* The kept folder <path>.ignored, made 0700 or reused when it is a folder
 * of ours; an fd, or -errno. */
static int open_kept(const char *kept_dir)
{
    if (mkdir(kept_dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    int fd = open(kept_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != geteuid())) {
        close(fd);
        return -EPERM;
    }
    return fd < 0 ? -errno : fd;
}

/* Move every file git ignores out of the worktree into <path>.ignored/:
 * git would not commit them and `git worktree remove` would delete them.
 * 0 (r says what moved), or a negative errno with *err. */
static int keep_ignored(const bound_worktree *w, worktree_removal *r, char **err)
{
    git_bind b = worktree_git(w);
    char *list = NULL;
    int rc = git_run(&b, ARGS("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"), &list);
    if (rc != 0 || !list[0]) {
        if (rc != 0)
            *err = xasprintf("git could not list the files it ignores there: %s", first_line(list));
        free(list);
        return rc == 0 ? 0 : rc < 0 ? rc : -EIO;
    }
    r->kept_dir = xasprintf("%s.ignored", w->path);
    int kfd = open_kept(r->kept_dir);
    int sfd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    rc = kfd < 0 ? kfd : sfd < 0 ? -errno : 0;
    strbuf names = {0};
    unsigned n = 0;
    /* git's output is NUL-separated; the runner cut trailing newlines only. */
    for (char *e = list; rc == 0 && *e; e += strlen(e) + 1, n++) {
        if (n < KEPT_NAMES)
            sb_printf(&names, "%s%s", n ? ", " : "", e);
        else if (n == KEPT_NAMES)
            sb_puts(&names, ", …");
        char *entry = xstrdup(e);
        if ((rc = move_one(sfd, kfd, r->kept_dir, entry, r)) != 0)
            *err =
                xasprintf("moving the ignored %s out of the worktree to %s failed: %s", e, r->kept_dir, strerror(-rc));
        free(entry);
    }
    if (kfd >= 0)
        close(kfd);
    else
        *err = xasprintf("cannot use %s for the files git ignores: %s", r->kept_dir, strerror(-kfd));
    if (sfd >= 0)
        close(sfd);
    r->kept_names = sb_take(&names);
    free(list);
    return rc;
}

/* ---- removal ------------------------------------------------------------- */

/* Commit, keep the ignored files, restore .git, remove: each step only
 * after the one before succeeded. */
static int remove_bound(const bound_worktree *w, const char *branch, const char *task_id, worktree_removal *r,
                        char **err)
{
    char *head = worktree_head_branch(w);
    bool on_branch = head && strcmp(head, branch) == 0;
    free(head);
    if (!on_branch) {
        *err = xasprintf("its HEAD is no longer on branch %s, so its work would not land there", branch);
        return -EINVAL;
    }
    int rc = commit_all(w, task_id, &r->committed, err);
    if (rc == 0)
        rc = keep_ignored(w, r, err);
    /* The one git command that reads the worktree's own .git file: it
     * must say what git wrote, not what the task wrote. */
    if (rc == 0)
        rc = worktree_restore_gitfile(w, err);
    if (rc == 0) {
        git_bind b = checkout_git(&w->co);
        char *out = NULL;
        rc = git_run(&b, ARGS("worktree", "remove", w->path), &out);
        if (rc != 0) {
            *err = xasprintf("git worktree remove failed: %s", first_line(out));
            rc = rc < 0 ? rc : -EIO;
        }
        free(out);
    }
    return rc;
}

int worktree_remove(const char *checkout, const char *path, const char *branch, const char *task_id,
                    worktree_removal *r, char **err)
{
    memset(r, 0, sizeof *r);
    *err = NULL;
    bound_worktree w;
    int rc = worktree_bind(checkout, path, &w, err);
    if (rc == -ENOENT) { /* the folder (or the whole checkout) is gone: nothing of the task's to keep */
        struct stat st;
        rc = lstat(path, &st) == 0 ? rc : 0;
        if (rc == 0) {
            free(*err);
            *err = NULL;
            if (w.co.common)
                worktree_forget_missing(w.co.common, path);
        }
    } else if (rc == 0) {
        rc = remove_bound(&w, branch, task_id, r, err);
    }
    bound_worktree_free(&w);
    return rc;
}

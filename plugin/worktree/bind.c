/* bind.c — see bind.h. */
#include "worktree/bind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

void checkout_free(repo_checkout *c)
{
    free(c->top);
    free(c->git_dir);
    free(c->common);
    memset(c, 0, sizeof *c);
}

void bound_worktree_free(bound_worktree *w)
{
    checkout_free(&w->co);
    free(w->path);
    free(w->admin);
    memset(w, 0, sizeof *w);
}

char *read_small_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 65536) {
        text = xmalloc((size_t)st.st_size + 1);
        ssize_t n = read(fd, text, (size_t)st.st_size);
        if (n < 0) {
            free(text);
            text = NULL;
        } else {
            while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
                n--;
            text[n] = '\0';
        }
    }
    close(fd);
    return text;
}

/* `rel` resolved against `base` when relative, then made canonical (the
 * folder must exist). malloc'd or NULL. */
static char *resolve(const char *base, const char *rel)
{
    char *joined = rel[0] == '/' ? xstrdup(rel) : xasprintf("%s/%s", base, rel);
    char *real = realpath(joined, NULL);
    free(joined);
    return real;
}

/* The first line of git's output, for an error. Takes text. */
static char *first_line(char *text)
{
    text[strcspn(text, "\n")] = '\0';
    return text;
}

int checkout_find(const char *dir, repo_checkout *c, char **err)
{
    memset(c, 0, sizeof *c);
    char *out = NULL;
    git_bind b = {.cwd = dir};
    int rc = git_run(&b, ARGS("rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir"), &out);
    if (rc != 0) {
        bool outside = rc > 0 && strstr(out, "not a git repository");
        if (outside)
            *err = xasprintf("%s is not inside a git repository, so the task cannot get a worktree", dir);
        else if (rc < 0)
            *err = xstrdup(out); /* git did not run: git_run says why */
        else
            *err = xasprintf("git could not read the repository at %s: %s", dir, first_line(out));
        free(out);
        return outside ? -EINVAL : rc < 0 ? rc : -EIO;
    }
    char *bare = out, *git_dir = strchr(bare, '\n'), *common = git_dir ? strchr(git_dir + 1, '\n') : NULL;
    if (!common) {
        *err = xasprintf("git could not read the repository at %s", dir);
        free(out);
        return -EIO;
    }
    *git_dir++ = '\0';
    *common++ = '\0';
    if (strcmp(bare, "true") == 0) {
        *err = xasprintf("%s is a bare git repository: it has no checkout to branch a worktree from", dir);
        free(out);
        return -EINVAL;
    }
    c->git_dir = realpath(git_dir, NULL);
    c->common = resolve(dir, common);
    free(out);
    c->top = c->git_dir ? git_line(&b, ARGS("rev-parse", "--show-toplevel"), &rc) : NULL;
    if (!c->git_dir || !c->common || !c->top) {
        *err = xasprintf("git could not name the repository and top folder of %s", dir);
        checkout_free(c);
        return rc < 0 ? rc : -EIO;
    }
    return 0;
}

int checkout_open(const char *top, repo_checkout *c, char **err)
{
    memset(c, 0, sizeof *c);
    char *dot_git = xasprintf("%s/.git", top);
    struct stat st;
    if (lstat(dot_git, &st) == 0 && S_ISDIR(st.st_mode)) {
        c->git_dir = realpath(dot_git, NULL);
    } else {
        char *link = read_small_file(dot_git); /* "gitdir: <path>": a linked or separated checkout */
        if (link && strncmp(link, "gitdir: ", 8) == 0)
            c->git_dir = resolve(top, link + 8);
        free(link);
    }
    free(dot_git);
    if (c->git_dir) {
        char *commondir = xasprintf("%s/commondir", c->git_dir);
        char *rel = read_small_file(commondir);
        c->common = rel ? resolve(c->git_dir, rel) : xstrdup(c->git_dir);
        free(rel);
        free(commondir);
    }
    if (!c->git_dir || !c->common) {
        *err = xasprintf("the checkout %s no longer has its git repository", top);
        checkout_free(c);
        return -ENOENT;
    }
    c->top = xstrdup(top);
    return 0;
}

git_bind checkout_git(const repo_checkout *c)
{
    return (git_bind){.git_dir = c->git_dir, .work_tree = c->top};
}

git_bind worktree_git(const bound_worktree *w)
{
    return (git_bind){.git_dir = w->admin, .work_tree = w->path};
}

/* Does admin (a folder in worktrees/) name path/.git in its gitdir file? */
static bool admin_names(const char *admin, const char *dot_git)
{
    char *file = xasprintf("%s/gitdir", admin);
    char *names = read_small_file(file);
    bool yes = names && strcmp(names, dot_git) == 0;
    free(names);
    free(file);
    return yes;
}

char *worktree_admin_of(const char *common, const char *path)
{
    char *dot_git = xasprintf("%s/.git", path);
    const char *slash = strrchr(path, '/');
    char *admin = xasprintf("%s/worktrees/%s", common, slash ? slash + 1 : path);
    if (!admin_names(admin, dot_git)) { /* git adds a number when the name was taken */
        free(admin);
        admin = NULL;
        char *dir = xasprintf("%s/worktrees", common);
        DIR *d = opendir(dir);
        for (struct dirent *e; d && !admin && (e = readdir(d));) {
            char *candidate = xasprintf("%s/%s", dir, e->d_name);
            if (e->d_name[0] != '.' && admin_names(candidate, dot_git))
                admin = candidate;
            else
                free(candidate);
        }
        if (d)
            closedir(d);
        free(dir);
    }
    free(dot_git);
    return admin;
}

int worktree_bind(const char *top, const char *path, bound_worktree *w, char **err)
{
    memset(w, 0, sizeof *w);
    int rc = checkout_open(top, &w->co, err);
    if (rc != 0)
        return rc;
    w->path = xstrdup(path);
    struct stat st;
    if (lstat(path, &st) != 0) {
        *err = xasprintf("its worktree %s is gone", path);
        return -ENOENT;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        *err = xasprintf("its worktree %s was replaced (%s), so ocbg does not touch it", path,
                         S_ISLNK(st.st_mode)    ? "by a symbolic link"
                         : !S_ISDIR(st.st_mode) ? "by a file"
                                                : "owner");
        return -EPERM;
    }
    w->admin = worktree_admin_of(w->co.common, path);
    if (!w->admin) {
        *err = xasprintf("git no longer knows %s as a worktree of %s", path, w->co.common);
        return -ESTALE;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

void worktree_forget_missing(const char *common, const char *path)
{
    struct stat st;
    char *admin = lstat(path, &st) != 0 ? worktree_admin_of(common, path) : NULL;
    if (admin)
        nftw(admin, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(admin);
}

char *worktree_head_branch(const bound_worktree *w)
{
    char *file = xasprintf("%s/HEAD", w->admin);
    char *head = read_small_file(file);
    free(file);
    char *branch = head && strncmp(head, "ref: refs/heads/", 16) == 0 ? xstrdup(head + 16) : NULL;
    free(head);
    return branch;
}

static bool is_object_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdef");
    return !s[n] && (n == 40 || n == 64);
}

char *worktree_head_commit(const bound_worktree *w)
{
    char *file = xasprintf("%s/HEAD", w->admin);
    char *head = read_small_file(file);
    free(file);
    if (head && strncmp(head, "ref: refs/heads/", 16) == 0 && !strstr(head, "..")) {
        file = xasprintf("%s/%s", w->co.common, head + 5); /* a loose ref; a packed one is not read */
        free(head);
        head = read_small_file(file);
        free(file);
    }
    if (head && is_object_id(head))
        return head;
    free(head);
    return NULL;
}

int worktree_restore_gitfile(const bound_worktree *w, char **err)
{
    int dfd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        *err = xasprintf("cannot open %s: %s", w->path, strerror(errno));
        return -errno;
    }
    char tmp[64];
    random_id(tmp, sizeof tmp, ".git.ocbg-");
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    char *text = xasprintf("gitdir: %s\n", w->admin);
    int rc = fd < 0 ? -errno : 0;
    if (rc == 0 && write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        rc = -EIO;
    if (fd >= 0)
        close(fd);
    if (rc == 0 && renameat(dfd, tmp, dfd, ".git") != 0)
        rc = -errno;
    if (rc != 0) {
        unlinkat(dfd, tmp, 0);
        *err = xasprintf("its .git could not be restored (%s)%s", strerror(-rc),
                         rc == -EISDIR || rc == -ENOTEMPTY ? ": the task made it a folder" : "");
    }
    free(text);
    close(dfd);
    return rc;
}

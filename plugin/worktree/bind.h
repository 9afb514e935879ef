/*
 * bind.h — which repository a worktree belongs to, found without asking
 * the worktree: the user's checkout, and a task's worktree bound to the
 * admin folder git keeps for it in that repository (<common>/worktrees/<name>).
 *
 * A task's folder is written by its sub-agent: its `.git` file may point
 * anywhere. So the binding reads the checkout's side (trusted: the user's
 * own repository) and checks the worktree against it: the folder is a real
 * directory of ours, git's admin folder for it names it back. Every git
 * command on the worktree then passes that admin folder as --git-dir.
 * [any thread] No locks. Strings are malloc'd and the caller's; on failure
 * *err (malloc'd) says why in a sentence.
 */
#ifndef OCBG_WORKTREE_BIND_H
#define OCBG_WORKTREE_BIND_H

#include <stdbool.h>

#include "worktree/git.h"

/* The user's checkout. */
typedef struct repo_checkout {
    char *top;     /* its work tree's top folder */
    char *git_dir; /* its git dir: <top>/.git, or the admin folder of a linked worktree */
    char *common;  /* the repository's common git dir (where worktrees/ and the branches are) */
} repo_checkout;

void checkout_free(repo_checkout *c);

/* The checkout the folder `dir` (the launching session's) is in, found by
 * git itself. 0; -EINVAL not in a repository / a bare one (*err says
 * which); -ENOENT git cannot run; -EIO git failed (*err: its words). */
int checkout_find(const char *dir, repo_checkout *c, char **err);

/* The checkout whose top folder is `top` (as checkout_find found it at
 * launch), read from its `.git` without running git. 0 or -ENOENT. */
int checkout_open(const char *top, repo_checkout *c, char **err);

/* git bound to the checkout's repository and work tree. */
git_bind checkout_git(const repo_checkout *c);

/* A task's worktree, bound. */
typedef struct bound_worktree {
    repo_checkout co;
    char *path;  /* the worktree's folder */
    char *admin; /* git's admin folder for it: the --git-dir of every command there */
} bound_worktree;

void bound_worktree_free(bound_worktree *w);

/* Bind the worktree at `path` made from the checkout at `top`: `path` is a
 * directory (not a link) owned by this user, and an admin folder in the
 * repository's worktrees/ names `path`/.git. 0; -ENOENT the folder is gone
 * (w->co still set, so its admin folder can be dropped); -EPERM it was
 * replaced (a link, another owner); -ESTALE git keeps no admin folder for
 * it. *err says which. */
int worktree_bind(const char *top, const char *path, bound_worktree *w, char **err);

/* git bound to the worktree: --git-dir its admin folder, --work-tree it. */
git_bind worktree_git(const bound_worktree *w);

/* The admin folder in common/worktrees whose gitdir file names path/.git,
 * or NULL. */
char *worktree_admin_of(const char *common, const char *path);

/* When the folder `path` is gone, remove git's record of it: the admin
 * folder that names it (worktree_admin_of), and nothing else. Never `git
 * worktree prune`, which drops the record of every worktree whose folder
 * is missing, the user's own included (an unmounted drive). */
void worktree_forget_missing(const char *common, const char *path);

/* The branch the worktree's HEAD is on ("ocbg/bg_…"), read from its admin
 * folder; NULL when detached or unreadable. */
char *worktree_head_branch(const bound_worktree *w);

/* The commit the worktree's HEAD is at, read from git's files without
 * running git: its admin folder's HEAD, and the branch's loose ref in the
 * repository. NULL for anything else (a packed ref, another ref store, a
 * file that is not an object id). A guess to plan git commands by, never a
 * fact: what git then prints is the truth (worktree_report). */
char *worktree_head_commit(const bound_worktree *w);

/* Rewrite path/.git to point at the admin folder (what `git worktree add`
 * wrote), for the one git command that reads it (`git worktree remove`).
 * 0, or a negative errno (*err: e.g. `.git` was made a folder). */
int worktree_restore_gitfile(const bound_worktree *w, char **err);

/* A small file's text, trailing newlines cut (NULL when unreadable or
 * over 64 KiB). Not following a final symbolic link. */
char *read_small_file(const char *path);

#endif

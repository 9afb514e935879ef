/*
 * worktree.h — a task's own git worktree: made from the caller's checkout
 * on a new branch named after the task, reported (what the task committed
 * and what it left uncommitted), and removed without losing work.
 *
 * It runs git (argv, no shell; GIT_TERMINAL_PROMPT=0, hooks skipped where
 * git allows) and nothing else: no locks, no tasks, no host calls. Git can
 * take seconds on a large repository, so callers run these on their own
 * thread with no lock held (a launch's tool call, the engine's worker).
 * Every function: [any thread]; strings it returns are malloc'd and the
 * caller's; on failure *err (malloc'd) says why, in a sentence a model can
 * act on.
 */
#ifndef OCBG_WORKTREE_H
#define OCBG_WORKTREE_H

#include <stdbool.h>

#include "model/task.h"

/* What a launch with isolation gets (the launch's `isolation` argument). */
typedef enum isolation {
    ISOLATION_NONE = 0,
    ISOLATION_WORKTREE,     /* from the checkout's HEAD: its uncommitted changes stay out */
    ISOLATION_WITH_CHANGES, /* HEAD plus the checkout's uncommitted changes to tracked files */
} isolation;

/* The argument's values, NULL-terminated, in enum order. */
extern const char *const isolation_names[];

/* A worktree made for a task. */
typedef struct worktree_made {
    char *path;         /* the worktree's folder: <root>/<task id> */
    char *branch;       /* "ocbg/<task id>" */
    char *base;         /* the commit it started from (full hash) */
    char *checkout;     /* the top folder of the repository it was made from */
    unsigned changed;   /* tracked files with uncommitted changes in the checkout at launch */
    unsigned untracked; /* untracked files there: never copied in */
    bool carried;       /* the `changed` ones were copied in (ISOLATION_WITH_CHANGES) */
} worktree_made;

void worktree_made_free(worktree_made *m);

/* Make <root>/<task_id> on new branch ocbg/<task_id> from the HEAD of the
 * repository holding `dir` (ISOLATION_WITH_CHANGES: and copy its tracked
 * changes in). Refuses, creating nothing: `dir` not in a git repository, a
 * bare repository, a detached HEAD, a repository without a commit, a branch
 * or folder of that name already there, git failing. root is created if
 * missing. 0, or a negative errno (-EINVAL refusals, -EIO git failed). */
int worktree_make(const char *dir, const char *root, const char *task_id, isolation how, worktree_made *m, char **err);

/* Undo worktree_make for a task that never ran: remove the folder and
 * delete the branch (nothing was done on it). Best effort. */
void worktree_discard(const char *checkout, const char *path, const char *branch);

/* What the task did in `path` since `base`, for the model: the branch, its
 * commits and diffstat, what is left uncommitted (changed and untracked
 * files), a few lines of per-file stat. 0 with *report, or a negative errno
 * (the folder is gone, git failed). */
int worktree_report(const char *path, const char *branch, const char *base, char **report, char **err);

/* Remove the worktree at `path` without losing anything: first commit what
 * is uncommitted there onto its branch (*committed says whether there was
 * any), then `git worktree remove` (never forced). The branch stays.
 * 0 removed (or already gone); a negative errno when it was kept, *err
 * saying why and that the folder is still there. */
int worktree_remove(const char *checkout, const char *path, const char *task_id, bool *committed, char **err);

/* A task's worktree to remove once the task is gone: a plain copy. */
typedef struct worktree_item {
    char id[TASK_ID_SIZE];
    char *path, *branch, *checkout;
    bool watched; /* the host still follows the folder: it must let go first */
    struct worktree_item *next;
} worktree_item;

/* Push a copy of t's worktree on *list; nothing for a task without one.
 * [the caller holds the lock that guards t] */
void worktree_item_take(const task *t, worktree_item **list);
void worktree_items_free(worktree_item *list);

#endif

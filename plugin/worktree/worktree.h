/*
 * worktree.h — a task's own git worktree: made from the caller's checkout
 * on a new branch named after the task, reported (what the task committed
 * and what it left uncommitted), and removed without losing work.
 *
 * It runs git (argv, no shell) bound to the repository and worktree it
 * made (worktree/git.h: explicit git dir and work tree, no hook, no
 * fsmonitor, no GIT_* from the environment, no terminal) and nothing else:
 * no locks, no tasks, no host calls. A task's folder is its sub-agent's and
 * every file in it is hostile: nothing here finds the repository from it
 * (worktree/bind.h). Git can take seconds on a large repository, so callers
 * run these on their own thread with no lock held (a launch's tool call,
 * the engine's git thread). Every function: [any thread]; strings it
 * returns are malloc'd and the caller's; on failure *err (malloc'd) says
 * why, in a sentence a model can act on.
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
    bool left;          /* after a failure: undoing what it made failed (*err says what is left) */
} worktree_made;

void worktree_made_free(worktree_made *m);

/* Make <root>/<task_id> on new branch ocbg/<task_id> from the HEAD of the
 * repository holding `dir` (ISOLATION_WITH_CHANGES: and copy its tracked
 * changes in). Refuses, creating nothing: `dir` not in a git repository, a
 * bare repository, a detached HEAD, a repository without a commit, a branch
 * or folder of that name already there, a worktrees folder that is a link
 * or another user's, git failing or missing. root is created (0700) if
 * missing. 0; -EINVAL a refusal; -ENOENT git cannot run; -EIO git failed;
 * -ETIMEDOUT git ran past its deadline. When undoing a half-made worktree
 * fails, *err says what is left. */
int worktree_make(const char *dir, const char *root, const char *task_id, isolation how, worktree_made *m, char **err);

/* Undo worktree_make for a task that never ran: remove the folder, git's
 * record of it (by name: no other worktree is touched) and the branch
 * (nothing was done on it). 0 when all three are gone; -EIO with *left
 * (malloc'd) naming what remains. left may be NULL. */
int worktree_discard(const char *checkout, const char *path, const char *branch, char **left);

/* What the task did in `path` since `base`, for the model: the branch, its
 * commits and diffstat, what is left uncommitted (changed and untracked
 * files), a few lines of per-file stat. Its git commands run at the same
 * time: three, five when HEAD moved from base. 0 with *report, or a
 * negative errno (the folder is gone or was replaced, git failed). */
int worktree_report(const char *checkout, const char *path, const char *branch, const char *base, char **report,
                    char **err);

/* What a report is made of: git's outputs, as it printed them (any may be
 * NULL). Pure data; the texts are the caller's. */
typedef struct report_parts {
    const char *branch, *base, *path;
    const char *commits;     /* rev-list --count base..HEAD */
    const char *committed;   /* diff --shortstat base HEAD */
    const char *uncommitted; /* diff --shortstat HEAD */
    const char *untracked;   /* ls-files --others --exclude-standard: a name a line */
    const char *stat;        /* diff --stat base: a line a file, then the total */
} report_parts;

/* The report's words from its parts (worktree_report's text). Pure: it
 * reads only p, whatever git printed. malloc'd. */
char *worktree_report_compose(const report_parts *p);

/* What worktree_remove did besides removing. */
typedef struct worktree_removal {
    bool committed;      /* uncommitted work was committed to the branch first */
    unsigned kept_files; /* files git ignores (.env, build outputs), moved out of the worktree... */
    unsigned long long kept_bytes;
    char *kept_dir;   /* ...to this folder (malloc'd; NULL when there were none) */
    char *kept_names; /* a few of them, ", "-separated, "…" when more (malloc'd) */
} worktree_removal;

void worktree_removal_free(worktree_removal *r);

/* Remove the worktree at `path` without losing anything: commit what is
 * uncommitted there onto its branch, move the files git ignores (which it
 * would not commit and `git worktree remove` deletes) to <path>.ignored/,
 * then `git worktree remove` (never forced); the branch stays. A worktree
 * whose folder is gone only loses git's record of it (by name: no other
 * worktree is touched). 0 removed (or already gone); a negative errno when
 * it was kept, *err saying why and that the folder is still there. *r says
 * what was committed and kept, in both cases. */
int worktree_remove(const char *checkout, const char *path, const char *branch, const char *task_id,
                    worktree_removal *r, char **err);

/* A task's worktree to remove once the task is gone: a plain copy. */
typedef struct worktree_item {
    char id[TASK_ID_SIZE];
    char *path, *branch, *checkout;
    bool watched; /* the host still follows the folder: it must let go first */
    struct worktree_item *next;
} worktree_item;

/* Push a copy of t's worktree on *list; nothing for a task without one.
 * [lock held] (not asserted: t does not know its lock) */
void worktree_item_take(const task *t, worktree_item **list);
void worktree_items_free(worktree_item *list);

#endif

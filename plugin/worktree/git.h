/*
 * git.h — run one git command, bound to a repository ocbg names, and take
 * its output. [any thread] No locks; blocks until git exits or the deadline
 * passes (then git's whole process group is killed).
 *
 * Files in a task's worktree are written by a sub-agent and are hostile: a
 * `.git` file there can point git at another repository whose config runs
 * commands (core.fsmonitor, hooks). So no command here finds its repository
 * from a folder: each names its git dir (and work tree) explicitly, and
 * every run
 *  - passes --no-pager and -c settings that switch off every hook
 *    (core.hooksPath=/dev/null), core.fsmonitor, colour, automatic gc and
 *    maintenance, commit signing and every transport (protocol.allow=never),
 *    and never looks inside a submodule (diff.ignoreSubmodules=all): a
 *    submodule the task filled in is a repository of its own, and git would
 *    run `git status` there, under that repository's config (its filters);
 *  - drops every GIT_* variable of the environment (GIT_DIR, GIT_CONFIG_*,
 *    GIT_INDEX_FILE... would redirect it), sets LC_ALL=C (output parsed in
 *    English), GIT_TERMINAL_PROMPT=0 and GIT_OPTIONAL_LOCKS=0;
 *  - runs in a new session (no controlling terminal: it can neither read
 *    nor draw on the person's terminal) with stdin /dev/null.
 * What git reads is then the repository's own config (and the user's
 * global and system config), never a file of the work tree but
 * .gitattributes/.gitignore, which select only drivers that config defines.
 */
#ifndef OCBG_GIT_H
#define OCBG_GIT_H

#include <stddef.h>

#define GIT_DEADLINE_MS 60000

/* Which repository a command works on. git_dir: absolute, the repository's
 * (or a linked worktree's admin) folder, passed as --git-dir. work_tree:
 * absolute or NULL (a command on the repository alone), passed as
 * --work-tree. cwd: where git runs (NULL: work_tree, else git_dir). With
 * git_dir NULL git finds the repository from cwd itself: only for the
 * folder the user's session works in (git_find_checkout), never for a
 * folder a sub-agent could write. */
typedef struct git_bind {
    const char *git_dir;
    const char *work_tree;
    const char *cwd;
} git_bind;

/* Run git args... (NULL-terminated; no shell) as bound by b. Returns git's
 * exit status (0 success), or a negative errno: -ENOENT git could not be
 * started (not installed, not on PATH), -ETIMEDOUT it ran past the deadline
 * and was killed with its process group, -EIO it died of a signal or a pipe
 * failed. *out (may be NULL: dropped) = stdout and stderr together,
 * trailing newlines cut, malloc'd, always set when out is given; on a
 * negative return it says what failed, in a sentence. */
int git_run(const git_bind *b, const char *const args[], char **out);

/* One command of git_run_many. args: NULL-terminated, as git_run's; NULL
 * skips the command (then rc 0 and out NULL). */
typedef struct git_cmd {
    const char *const *args;
    char *out; /* set by git_run_many: as git_run's *out (malloc'd, the caller's) */
    int rc;    /* set by git_run_many: as git_run's result */
} git_cmd;

#define GIT_RUN_MANY_MAX 8

/* Run cmds[0..n) (n <= GIT_RUN_MANY_MAX) at the same time, each as git_run
 * would, all bound by b, under one deadline: the wall time of the slowest
 * instead of the sum (independent, read-only commands). Sets each .out and
 * .rc. */
void git_run_many(const git_bind *b, git_cmd *cmds, size_t n);

/* git_run, and the first line of its output when it succeeded; NULL
 * otherwise (malloc'd). *rc (may be NULL) = git_run's result. */
char *git_line(const git_bind *b, const char *const args[], int *rc);

/* The deadline of every later run, in ms (tests shorten it); <= 0 restores
 * GIT_DEADLINE_MS. [any thread] */
void git_set_deadline_ms(int ms);

#endif

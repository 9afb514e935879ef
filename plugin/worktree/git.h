/*
 * git.h — run one git command and take its output. [any thread] No locks;
 * blocks until git exits (or GIT_DEADLINE_MS passes: then it is killed).
 */
#ifndef OCBG_GIT_H
#define OCBG_GIT_H

#define GIT_DEADLINE_MS 60000

/* Run `git -C dir args...` (args NULL-terminated; no shell) with stdin
 * /dev/null, LC_ALL=C (output parsed in English) and no prompts. Returns
 * git's exit status (0 success), or -1 when it could not run or was killed
 * at the deadline. *out (may be NULL: dropped) = stdout and stderr together,
 * trailing newlines cut, malloc'd, always set when out is given. */
int git_run(const char *dir, const char *const args[], char **out);

/* git_run, and the first line of its output when it succeeded; NULL
 * otherwise (malloc'd). */
char *git_line(const char *dir, const char *const args[]);

#endif

/*
 * shelltest.h — what the shell-task and Claude-face scenario tests share
 * (test_shell*.c, test_claude_face.c, test_tasks_command.c): tool arguments,
 * background commands, the processes they start (tracked and killed at the
 * end), a per-test temporary directory, and the "can the plugin run commands
 * here" probe. Built on testlib.h; linked into every test.
 */
#ifndef OCBG_SHELLTEST_H
#define OCBG_SHELLTEST_H

#include <sys/types.h>

#include "testlib.h"

/* Plugin options for shell tests: a 4096-byte output buffer, a 300 ms grace
 * between SIGTERM and SIGKILL. */
#define T_SHELL_SMALL "{\"shell_output_cap\":4096,\"shell_kill_grace_ms\":300}"

/* ---- tool arguments and calls ---- */

/* {"task_id":"<id>"} in one of 4 rotating static buffers (valid until the 4th
 * next call; not to be freed). Never fails. */
const char *t_id_args(const char *id);

/* TaskOutput on `id` with block true/false and, when timeout_ms != 0, that
 * timeout; returns the answer (malloc'd, never NULL) and sets t_rc. */
char *t_task_output(sim_host *h, const char *session, const char *id, int block, int timeout_ms);

/* Run slash command `name` (no arguments) in `session`; returns its output
 * (malloc'd, "" when it gave none) and sets t_rc to sim_command's result. */
char *t_command(sim_host *h, const char *session, const char *name);

/* How t_bash_bg checks the launch answer ("Command running in the
 * background.\ntask_id: <id>\nCommand: <command>\n\n..."). */
typedef enum {
    T_LAUNCH_UNCHECKED, /* not at all */
    T_LAUNCH_DIAG,      /* a diag line when it differs (no check counted) */
    T_LAUNCH_OK,        /* one ok() check */
} t_launch_check;

/* Bash with run_in_background (and `description` unless NULL); returns the
 * task id (malloc'd). Bails out if the launch fails or names no id. */
char *t_bash_bg(sim_host *h, const char *session, const char *command, const char *description, t_launch_check check);

/* Bash's arguments: command, description unless NULL, run_in_background
 * when background, timeout when timeout_ms != 0. JSON text, malloc'd. */
char *t_bash_args(const char *command, const char *description, int background, int timeout_ms);

/* Call Bash with those arguments; returns the answer (malloc'd, never NULL)
 * and sets t_rc. */
char *t_bash(sim_host *h, const char *session, const char *command, const char *description, int background,
             int timeout_ms);

/* The Task tool's arguments (subagent_type explore; run_in_background when
 * `background`): JSON text, malloc'd. */
char *t_task_args(const char *description, const char *prompt, int background);

/* Call Task with a sub-agent that runs the sim_script `script` (matched on a
 * fresh unique prompt "claude task #N#"); returns the answer (malloc'd, never
 * NULL) and sets t_rc. Bails out if the script is refused. */
char *t_claude_task(sim_host *h, const char *session, const char *description, const char *script, int background);

/* ---- processes ---- */

/* 1 if `pid` exists and is not a zombie (an orphan's zombie may wait for a
 * PID 1 that never reaps: dead all the same); 0 otherwise, also for pid <= 0. */
int t_proc_alive(pid_t pid);

/* sim_wait predicates: arg is a pid_t * (t_pid_gone) or a pid_t[2]
 * (t_pids_gone); 1 when that process (both processes) is gone, else 0. */
int t_pid_gone(sim_host *h, void *arg);
int t_pids_gone(sim_host *h, void *arg);

/* The first number in the file at `path`; 0 if unreadable or none. */
pid_t t_read_pid(const char *path);

/* sim_wait predicate: arg is a path (char *); 1 once it holds a pid > 0. */
int t_pid_file_ready(sim_host *h, void *arg);

/* Wait (5 s, scaled) for a command to write a pid into `path`; the pid is
 * remembered for t_kill_leftovers. Returns it, 0 on timeout. */
pid_t t_wait_pid_file(sim_host *h, const char *path);

/* A shell command that writes its child's pid to <tmpdir>/<tag>.c and its own
 * (the group leader's) to <tmpdir>/<tag>.l: `prefix`, "sleep 300 &", the two
 * echoes, then `rest`. Returns it malloc'd; bails out when out of memory. */
char *t_family_command(const char *tag, const char *prefix, const char *rest);

/* Wait (5 s, scaled) for both pids of `tag` into pids[0] (child) and pids[1]
 * (leader), both remembered for t_kill_leftovers. Returns 0, -ETIMEDOUT
 * (pids left 0), or -EINVAL if either pid could not be read. */
int t_wait_family(sim_host *h, const char *tag, pid_t pids[2]);

/* SIGKILL every remembered process still alive (with a diag line each) and
 * forget them all. Never fails. */
void t_kill_leftovers(void);

/* ---- the temporary directory ---- */

/* Create /tmp/ocbg-test-<name>-XXXXXX (a name of at most 30 characters) as
 * the tests' directory. Bails out if it cannot. */
void t_tmpdir_make(const char *name);

/* <tmpdir>/<name> in one of 4 rotating static buffers (valid until the 4th
 * next call; not to be freed). Never fails (cut at 127 characters). */
const char *t_tmp_path(const char *name);

/* Unlink each file of the NULL-terminated list `names` (may be NULL) in the
 * directory, then remove the directory. Errors are ignored. */
void t_tmpdir_remove(const char *const *names);

/* Wait (5 s, scaled) until a command opens the fifo <tmpdir>/<name> for
 * reading, then write "go\n" to it: one check for the wait, one more for the
 * write when the fifo could be opened. */
void t_release(sim_host *h, const char *name);

/* ---- can the plugin run commands here? ---- */

/* What t_shells_work does when the plugin refuses commands (no pidfd_open,
 * e.g. under valgrind 3.19). */
typedef enum {
    T_PROBE_CHECK_REFUSAL, /* diag, then 4 checks that the refusal is clean */
    T_PROBE_SKIP,          /* skip(1, ...) */
    T_PROBE_DIAG,          /* a diag line with the answer */
} t_probe;

/* Run `true` through Bash in a fresh host; returns 1 if it succeeded, else 0
 * (after doing what `on_refusal` says). */
int t_shells_work(t_probe on_refusal);

#endif

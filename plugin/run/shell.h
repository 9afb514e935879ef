/*
 * shell.h — shell tasks: a command run by /bin/sh in its own process group,
 * its output (stdout and stderr, interleaved as a terminal shows them) kept in
 * a bounded buffer, its exit noticed at once.
 *
 * One plugin thread (the shell thread) polls every running command's output
 * pipe and pidfd, plus an eventfd for new work. A command's process group
 * ends with it: when the shell exits, what it left running is killed. It sleeps with no timeout
 * when nothing runs: no wakeups. Stop sends SIGTERM to the whole process group
 * and SIGKILL after a grace period; shutdown kills and reaps every command, so
 * no child process outlives the plugin.
 *
 * Locking: a shell task's output and exit are written by the shell thread
 * under the engine lock (o->mu); readers hold the same lock.
 */
#ifndef OCBG_SHELL_H
#define OCBG_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ocbg ocbg;
typedef struct task task;

/* The output kept of one command: the first head_cap bytes and the last
 * tail_cap bytes; what falls between is counted, not kept. */
typedef struct shell_output {
    char *head;
    size_t head_len, head_cap;
    char *tail;             /* ring of tail_cap bytes */
    size_t tail_len, tail_pos, tail_cap;
    uint64_t total;         /* every byte the command wrote */
} shell_output;

/* What a shell task holds beyond the common task fields. */
typedef struct shell_state {
    char *command;
    char *directory;
    pid_t pid;              /* also the process group id */
    bool exited;
    int exit_code;          /* when it exited normally */
    int term_signal;        /* when a signal ended it (0: none) */
    bool stop_requested;    /* TaskStop: the ending is "stopped", not a failure */
    int64_t kill_at_mono;   /* when SIGKILL follows a SIGTERM (0: not scheduled) */
    shell_output out;
} shell_state;

/* Start / stop the shell thread. [engine_start / engine_stop] */
int shell_start(ocbg *o);
void shell_stop(ocbg *o);

/* Spawn t's command (t->shell filled in by the caller, t registered). Engine
 * lock NOT held. Returns 0, or a negative errno with *err (malloc'd); the task
 * is then left for the caller to end in error. */
int shell_spawn(ocbg *o, const char *task_id, char **err);

/* Ask a running command to stop: SIGTERM to its process group now, SIGKILL
 * after the grace period if it is still alive. Engine lock held. */
void shell_request_stop(ocbg *o, task *t);

/* SIGKILL its process group now (the task is being removed). Engine lock held. */
void shell_kill(task *t);

/* The output as text: all of it, or when more than max_chars characters (or
 * when the middle was dropped), the tail with a note of what was left out.
 * Engine lock held. malloc'd. */
char *shell_output_text(const shell_state *s, size_t max_chars);

/* "exit code 0", "killed by signal 15 (Terminated)", "running". */
void shell_describe_exit(const shell_state *s, char *buf, size_t size);

void shell_state_free(shell_state *s);

#endif

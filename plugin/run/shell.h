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

#include "model/shell_state.h"

typedef struct ocbg ocbg;
typedef struct task task;

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

#endif

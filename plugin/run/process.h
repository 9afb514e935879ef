/*
 * process.h — one command run by /bin/sh in a session of its own (so in its
 * own process group, and with no controlling terminal), stdin /dev/null, its
 * stdout and stderr on one pipe (interleaved as a terminal shows them), its
 * exit readable as a file descriptor: a pidfd, or where the kernel (or
 * valgrind) has no pidfd_open, an eventfd that a waiter thread writes after
 * reaping it. No locks, no tasks: the shell runner owns each process.
 */
#ifndef OCBG_PROCESS_H
#define OCBG_PROCESS_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

typedef struct process {
    pid_t pid;       /* also the process group and session id */
    int out_fd;      /* the output pipe, non-blocking; -1 once closed */
    int exit_fd;     /* readable once the command has exited */
    bool has_waiter; /* no pidfd: a waiter thread reaps it */
    pthread_t waiter;
    int status;   /* set by the waiter thread before it writes exit_fd */
    pid_t reaped; /* waitpid's result, from the waiter thread */
} process;

/* Start `command` in `dir` (NULL or "": the current one), stdin /dev/null,
 * in a new session: it has no controlling terminal (opening /dev/tty fails,
 * ENXIO), and kill(-pid, sig) signals every process of its group.
 * [any thread] Returns 0, or a negative errno with *err (malloc'd); on
 * failure nothing is left running and no descriptor is left open. */
int process_spawn(process *p, const char *command, const char *dir, char **err);

/* Reap an exited command (its exit_fd was readable, or it was killed):
 * the waitpid result (negative when someone else reaped it) and *status. */
pid_t process_reap(process *p, int *status);

/* Close what is left open (output pipe, exit descriptor). */
void process_close(process *p);

#endif

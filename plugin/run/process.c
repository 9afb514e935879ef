/* process.c — see process.h. Linux: posix_spawn (POSIX_SPAWN_SETSID: glibc
 * 2.26), pidfd_open (Linux 5.3) by its system call: glibc has a wrapper only
 * from 2.36, and ocbg.so runs on 2.31. */
#include "run/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same number on every architecture */
#endif

/* The fallback for systems without pidfds: block in waitpid, then say so. */
static void *waiter_main(void *arg)
{
    process *p = arg;
    pid_t r;
    do
        r = waitpid(p->pid, &p->status, 0);
    while (r < 0 && errno == EINTR);
    p->reaped = r;
    uint64_t one = 1;
    ssize_t n = write(p->exit_fd, &one, sizeof one);
    (void)n;
    return NULL;
}

/* A session of its own: no controlling terminal (a command must not write
 * over the person's screen or read what they type in the host's terminal:
 * /dev/tty fails with ENXIO, as for OpenCode's own bash, which Bun spawns
 * detached) and, as its leader, its own process group (pgid == pid: stop and
 * shutdown signal the whole group, kill(-pid)). setsid makes both, so
 * POSIX_SPAWN_SETPGROUP is not asked as well: setpgid on a session leader
 * fails (EPERM). Default signal handling whatever the host set (SIGPIPE for
 * `| head`). */
static void spawn_attributes(posix_spawnattr_t *attr)
{
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_init(attr);
    posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(attr, &none);
    posix_spawnattr_setsigdefault(attr, &defaults);
}

/* /bin/sh -c command, output to pipe_w; returns posix_spawn's result. */
static int spawn_shell(pid_t *pid, const char *command, const char *dir, int pipe_w)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipe_w, 1);
    posix_spawn_file_actions_adddup2(&fa, pipe_w, 2);
    if (dir && *dir)
        posix_spawn_file_actions_addchdir_np(&fa, dir);
    spawn_attributes(&attr);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)command, NULL};
    int rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    return rc;
}

/* A descriptor readable at the command's exit; 0 or an errno. */
static int watch_exit(process *p)
{
    /* Once the kernel (or valgrind) has said it has no pidfd_open, do not
     * ask again for every command. */
    static int no_pidfd;
    p->exit_fd = __atomic_load_n(&no_pidfd, __ATOMIC_RELAXED) ? -1 : (int)syscall(SYS_pidfd_open, p->pid, 0);
    if (p->exit_fd < 0 && errno == ENOSYS)
        __atomic_store_n(&no_pidfd, 1, __ATOMIC_RELAXED);
    if (p->exit_fd >= 0)
        return 0;
    p->exit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int e = p->exit_fd < 0 ? errno : pthread_create(&p->waiter, NULL, waiter_main, p);
    if (e != 0 && p->exit_fd >= 0)
        close(p->exit_fd);
    p->has_waiter = e == 0;
    return e;
}

int process_spawn(process *p, const char *command, const char *dir, char **err)
{
    memset(p, 0, sizeof *p);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        int e = errno;
        *err = xasprintf("cannot create a pipe: %s", strerror(e));
        return -e;
    }
    int rc = spawn_shell(&p->pid, command, dir, pipefd[1]);
    close(pipefd[1]);
    if (rc != 0) {
        *err = xasprintf("cannot start /bin/sh%s%s: %s", dir ? " in " : "", dir ? dir : "", strerror(rc));
        close(pipefd[0]);
        return -rc;
    }
    fcntl(pipefd[0], F_SETFL, fcntl(pipefd[0], F_GETFL) | O_NONBLOCK);
    p->out_fd = pipefd[0];
    int e = watch_exit(p);
    if (e != 0) {
        kill(-p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
        close(pipefd[0]);
        *err = xasprintf("cannot watch the command: %s", strerror(e));
        return -e;
    }
    return 0;
}

pid_t process_reap(process *p, int *status)
{
    *status = 0;
    if (p->has_waiter) {
        pthread_join(p->waiter, NULL);
        p->has_waiter = false;
        *status = p->status;
        return p->reaped;
    }
    pid_t r;
    do
        r = waitpid(p->pid, status, 0);
    while (r < 0 && errno == EINTR);
    return r;
}

void process_close(process *p)
{
    if (p->out_fd >= 0)
        close(p->out_fd);
    p->out_fd = -1;
    if (p->exit_fd >= 0)
        close(p->exit_fd);
    p->exit_fd = -1;
}

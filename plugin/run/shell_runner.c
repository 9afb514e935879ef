/* shell.c — see shell.h. The shell thread, spawning, stopping, the output
 * buffer. Linux: pidfds tell the thread at once when a command exits (a
 * waiter thread per command where pidfd_open is missing). */
#include "run/shell.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/engine.h"
#include "hostapi/hostcalls.h"
#include "base/util.h"

extern char **environ;

/* A running command as the shell thread tracks it. */
typedef struct proc {
    char task_id[TASK_ID_SIZE];
    pid_t pid;
    /* Readable when the command has exited: its pidfd, or where the kernel
     * (or valgrind) has no pidfd_open, an eventfd a waiter thread writes
     * after reaping it. */
    int exit_fd;
    bool has_waiter;
    pthread_t waiter;
    int status;         /* set by the waiter thread before it writes exit_fd */
    pid_t reaped;       /* waitpid's result, from the waiter thread */
    int out_fd;         /* -1 once closed */
    struct proc *next;
} proc;

/* The fallback for systems without pidfds: block in waitpid, then say so. */
static void *waiter_main(void *arg)
{
    proc *p = arg;
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

struct shell_runner {
    int wake_fd;        /* eventfd: new work, a stop, shutdown */
    pthread_t thread;
    proc *pending;      /* spawned, not yet taken by the thread (under o->mu) */
    proc *running;      /* the thread's own list */
};

static void wake(struct shell_runner *r)
{
    uint64_t one = 1;
    ssize_t n = write(r->wake_fd, &one, sizeof one);
    (void)n; /* a full counter already means "wake up" */
}

/* ---- spawning ---------------------------------------------------------- */

int shell_spawn(ocbg *o, const char *task_id, char **err)
{
    pthread_mutex_lock(&o->mu);
    task *t = registry_find(&o->reg, task_id);
    char *command = t && t->shell ? xstrdup(t->shell->command) : NULL;
    char *dir = t && t->shell ? xstrdup(t->shell->directory) : NULL;
    pthread_mutex_unlock(&o->mu);
    if (!command) {
        *err = xstrdup("the task is gone");
        return -ENOENT;
    }
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        *err = xasprintf("cannot create a pipe: %s", strerror(errno));
        free(command);
        free(dir);
        return -errno;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
    if (dir && *dir)
        posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawnattr_init(&attr);
    /* Its own process group (stop and shutdown signal the whole group), and
     * default signal handling whatever the host set (SIGPIPE for `| head`). */
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", command, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(pipefd[1]);
    free(command);
    if (rc != 0) {
        *err = xasprintf("cannot start /bin/sh%s%s: %s", dir ? " in " : "", dir ? dir : "", strerror(rc));
        close(pipefd[0]);
        free(dir);
        return -rc;
    }
    free(dir);
    fcntl(pipefd[0], F_SETFL, fcntl(pipefd[0], F_GETFL) | O_NONBLOCK);
    proc *p = xcalloc(1, sizeof *p);
    snprintf(p->task_id, sizeof p->task_id, "%s", task_id);
    p->pid = pid;
    p->out_fd = pipefd[0];
    /* Once the kernel (or valgrind) has said it has no pidfd_open, do not
     * ask again for every command. */
    static int no_pidfd;
    p->exit_fd = __atomic_load_n(&no_pidfd, __ATOMIC_RELAXED) ? -1 : pidfd_open(pid, 0);
    if (p->exit_fd < 0 && errno == ENOSYS)
        __atomic_store_n(&no_pidfd, 1, __ATOMIC_RELAXED);
    if (p->exit_fd < 0) {
        p->exit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        int e = p->exit_fd < 0 ? errno : pthread_create(&p->waiter, NULL, waiter_main, p);
        if (e != 0) {
            kill(-pid, SIGKILL);
            waitpid(pid, NULL, 0);
            close(pipefd[0]);
            if (p->exit_fd >= 0)
                close(p->exit_fd);
            free(p);
            *err = xasprintf("cannot watch the command: %s", strerror(e));
            return -e;
        }
        p->has_waiter = true;
    }
    pthread_mutex_lock(&o->mu);
    t = registry_find(&o->reg, task_id);
    if (t && t->shell)
        t->shell->pid = pid;
    p->next = o->shell->pending;
    o->shell->pending = p;
    pthread_mutex_unlock(&o->mu);
    wake(o->shell);
    return 0;
}

void shell_request_stop(ocbg *o, task *t)
{
    shell_state *s = t->shell;
    if (!s || s->exited || s->pid <= 0 || s->stop_requested)
        return; /* a second stop keeps the first one's SIGKILL deadline */
    s->stop_requested = true;
    kill(-s->pid, SIGTERM);
    s->kill_at_mono = mono_ms() + o->opt.shell_kill_grace_ms;
    wake(o->shell);
}

/* ---- the shell thread --------------------------------------------------- */

/* Read what the pipe has now; false at end of file. */
static bool drain(ocbg *o, proc *p)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(p->out_fd, buf, sizeof buf);
        if (n > 0) {
            pthread_mutex_lock(&o->mu);
            task *t = registry_find(&o->reg, p->task_id);
            if (t && t->shell) {
                shell_output_append(&t->shell->out, buf, (size_t)n);
                t->last_update_ms = ocbg_now(o);
            }
            pthread_mutex_unlock(&o->mu);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

static void close_output(proc *p)
{
    if (p->out_fd >= 0)
        close(p->out_fd);
    p->out_fd = -1;
}

/* The command exited: reap it, keep the rest of its output, end the task. */
static void finish_proc(ocbg *o, proc *p)
{
    pthread_mutex_lock(&o->mu);
    task *t = registry_find(&o->reg, p->task_id);
    if (t && t->shell)
        t->shell->exited = true;
    pthread_mutex_unlock(&o->mu);
    /* The group ends with its leader: what it left running (a member that
     * ignored SIGTERM, a `cmd &`) is killed. With a pidfd the leader is still
     * an unreaped zombie here, so its group id cannot have been reused. */
    kill(-p->pid, SIGKILL);
    int status = 0;
    pid_t r;
    if (p->has_waiter) {
        pthread_join(p->waiter, NULL);
        status = p->status;
        r = p->reaped;
    } else {
        do
            r = waitpid(p->pid, &status, 0);
        while (r < 0 && errno == EINTR);
    }
    if (p->out_fd >= 0)
        drain(o, p); /* what it wrote before exiting */
    close_output(p);
    close(p->exit_fd);

    pthread_mutex_lock(&o->mu);
    t = registry_find(&o->reg, p->task_id);
    if (t && t->shell) {
        shell_state *s = t->shell;
        if (r < 0) {
            s->exit_code = -1; /* the host reaped it first: the status is unknown */
        } else if (WIFSIGNALED(status)) {
            s->term_signal = WTERMSIG(status);
        } else {
            s->exit_code = WEXITSTATUS(status);
        }
        if (s->stop_requested) {
            engine_finish(o, t, TASK_CANCELLED, NULL, NULL);
        } else if (r >= 0 && !s->term_signal && s->exit_code == 0) {
            engine_finish(o, t, TASK_COMPLETED, NULL, NULL);
        } else {
            char *why = s->term_signal ? xasprintf("The command was killed by signal %d (%s).", s->term_signal,
                                                   strsignal(s->term_signal))
                        : r < 0        ? xstrdup("The command's exit status is unknown (the host reaped it).")
                                       : xasprintf("The command exited with code %d.", s->exit_code);
            engine_finish(o, t, TASK_ERROR, why, NULL);
            free(why);
        }
    }
    pthread_mutex_unlock(&o->mu);
}

/* Shutdown: kill every group, reap every leader. */
static void kill_all(proc *list)
{
    for (proc *p = list; p; p = p->next)
        kill(-p->pid, SIGKILL);
    for (proc *p = list; p; p = p->next) {
        if (p->has_waiter)
            pthread_join(p->waiter, NULL);
        else
            while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
                ;
        close_output(p);
        close(p->exit_fd);
    }
}

void shell_kill(task *t)
{
    if (t->shell && !t->shell->exited && t->shell->pid > 0)
        kill(-t->shell->pid, SIGKILL);
}

/* Move newly spawned commands onto the thread's own list. Lock held. */
static void take_pending(struct shell_runner *r)
{
    while (r->pending) {
        proc *p = r->pending;
        r->pending = p->next;
        p->next = r->running;
        r->running = p;
    }
}

static void *shell_main(void *arg)
{
    ocbg *o = arg;
    struct shell_runner *r = o->shell;
    struct pollfd *fds = NULL;
    proc **owners = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&o->mu);
        take_pending(r);
        bool stopping = o->stopping;
        int64_t next_kill = 0;
        for (proc *p = r->running; p; p = p->next) {
            task *t = registry_find(&o->reg, p->task_id);
            int64_t at = t && t->shell ? t->shell->kill_at_mono : 0;
            if (at && mono_ms() >= at) {
                kill(-p->pid, SIGKILL);
                t->shell->kill_at_mono = 0;
            } else if (at && (!next_kill || at < next_kill)) {
                next_kill = at;
            }
        }
        pthread_mutex_unlock(&o->mu);
        if (stopping)
            break;

        size_t n = 1;
        for (proc *p = r->running; p; p = p->next)
            n += 2;
        if (n > cap) {
            cap = n * 2;
            fds = xrealloc(fds, cap * sizeof *fds);
            owners = xrealloc(owners, cap * sizeof *owners);
        }
        fds[0] = (struct pollfd){.fd = r->wake_fd, .events = POLLIN};
        n = 1;
        for (proc *p = r->running; p; p = p->next) {
            fds[n] = (struct pollfd){.fd = p->out_fd, .events = POLLIN}; /* fd -1 is skipped */
            owners[n++] = p;
            fds[n] = (struct pollfd){.fd = p->exit_fd, .events = POLLIN};
            owners[n++] = p;
        }
        int timeout = next_kill ? (int)(next_kill - mono_ms() > 0 ? next_kill - mono_ms() : 0) : -1;
        if (poll(fds, n, timeout) < 0 && errno != EINTR)
            continue;
        if (fds[0].revents) {
            uint64_t v;
            ssize_t got = read(r->wake_fd, &v, sizeof v);
            (void)got;
        }
        for (size_t i = 1; i < n; i += 2) {
            proc *p = owners[i];
            if (p->out_fd >= 0 && fds[i].revents && !drain(o, p))
                close_output(p);
        }
        /* Exits last, after their output was read. */
        proc **link = &r->running;
        size_t i = 2;
        while (*link) {
            proc *p = *link;
            if (fds[i].revents) {
                finish_proc(o, p);
                *link = p->next;
                free(p);
            } else {
                link = &p->next;
            }
            i += 2;
        }
    }
    /* Shutdown: nothing outlives the plugin. */
    pthread_mutex_lock(&o->mu);
    take_pending(r);
    pthread_mutex_unlock(&o->mu);
    kill_all(r->running);
    while (r->running) {
        proc *p = r->running;
        r->running = p->next;
        free(p);
    }
    free(fds);
    free(owners);
    return NULL;
}

int shell_start(ocbg *o)
{
    struct shell_runner *r = xcalloc(1, sizeof *r);
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->wake_fd < 0) {
        int e = errno;
        free(r);
        return e;
    }
    o->shell = r;
    int rc = pthread_create(&r->thread, NULL, shell_main, o);
    if (rc != 0) {
        close(r->wake_fd);
        free(r);
        o->shell = NULL;
    }
    return rc;
}

void shell_stop(ocbg *o)
{
    struct shell_runner *r = o->shell;
    if (!r)
        return;
    wake(r); /* o->stopping is already set */
    pthread_join(r->thread, NULL);
    close(r->wake_fd);
    free(r);
    o->shell = NULL;
}

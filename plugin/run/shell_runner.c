/*
 * shell_runner.c — shell tasks: each command a process (run/process.h), its
 * output kept in the task's bounded buffer (model/shell_state.h), its exit
 * noticed at once.
 *
 * One thread (the shell thread) polls every running command's output pipe
 * and exit descriptor, plus an eventfd for new work. A command's process
 * group ends with it: when the shell exits, what it left running is killed.
 * It sleeps with no timeout when nothing runs: no wakeups. Stop sends SIGTERM
 * to the whole process group and SIGKILL after a grace period; close kills and
 * reaps every command, so no child process outlives the plugin.
 *
 * Locking: a shell task's output and exit are written by the shell thread
 * under the engine lock (env.mu); readers hold the same lock. A monitor's
 * lines are cut and matched against its model-written pattern by the shell
 * thread off the lock (model/line_filter.h): only the lines kept are fed to
 * the monitor under it, so a slow pattern never holds the engine.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc_id.h"
#include "base/lock.h"
#include "base/util.h"
#include "model/line_filter.h"
#include "model/monitor.h"
#include "run/process.h"
#include "run/runner.h"

/* A running command as the shell thread tracks it. */
typedef struct proc {
    char task_id[TASK_ID_SIZE];
    process p;
    line_filter lines;  /* the watching monitor's lines and pattern (the shell thread's own) */
    uint64_t lines_for; /* that monitor's serial (0: none watches) */
    struct proc *next;
} proc;

typedef struct shell_runner {
    runner base; /* first: the engine holds a runner * */
    runner_env env;
    int wake_fd; /* eventfd: new work, a stop, shutdown */
    pthread_t thread;
    bool closing;  /* under env.mu */
    proc *pending; /* spawned, not yet taken by the thread (under env.mu) */
    proc *running; /* the thread's own list */
} shell_runner;

static void wake(shell_runner *r)
{
    uint64_t one = 1;
    ssize_t n = write(r->wake_fd, &one, sizeof one);
    (void)n; /* a full counter already means "wake up" */
}

/* A shell task by id, or NULL. [lock held] */
static shell_state *find_shell(shell_runner *r, const char *task_id, task **tp)
{
    assert(lock_held(r->env.mu));
    task *t = registry_find(r->env.reg, task_id);
    if (tp)
        *tp = t;
    return t ? t->shell : NULL;
}

/* ---- the interface ------------------------------------------------------ */

static int shell_start(runner *base, const char *task_id, char **err)
{
    shell_runner *r = (shell_runner *)base;
    lock_acquire(r->env.mu);
    shell_state *s = find_shell(r, task_id, NULL);
    char *command = s ? xstrdup(s->command) : NULL, *dir = s ? xstrdup(s->directory) : NULL;
    lock_release(r->env.mu);
    if (!command) {
        *err = xstrdup("the task is gone");
        return -ENOENT;
    }
    proc *p = xcalloc(1, sizeof *p);
    snprintf(p->task_id, sizeof p->task_id, "%s", task_id);
    int rc = process_spawn(&p->p, command, dir, err);
    free(command);
    free(dir);
    if (rc != 0) {
        free(p); /* it printed nothing: it holds no output buffers (shell_state_new) */
        return rc;
    }
    lock_acquire(r->env.mu);
    task *t = NULL;
    s = find_shell(r, task_id, &t);
    if (s) {
        s->pid = p->p.pid;
        s->pid_start = proc_start_time(p->p.pid);
        registry_touch(r->env.reg, t); /* its process, should a restart find it alive */
    }
    /* Stopped, failed by a guard, or removed while it was being started:
     * the command must not run on unwatched. Killed at once; reaped (and a
     * stopped task ended, cancelled) by the shell thread as any other. */
    if (!s || !task_status_active(t->status) || s->stop_requested)
        kill(-p->p.pid, SIGKILL);
    p->next = r->pending;
    r->pending = p;
    lock_release(r->env.mu);
    wake(r);
    return 0;
}

static void shell_stop(runner *base, task *t)
{
    shell_runner *r = (shell_runner *)base;
    shell_state *s = t->shell;
    if (s && !s->exited && s->pid <= 0) {
        s->stop_requested = true; /* being started: shell_start kills it as soon as it exists */
        return;
    }
    if (!s || s->exited || s->stop_requested)
        return; /* a second stop keeps the first one's SIGKILL deadline */
    s->stop_requested = true;
    kill(-s->pid, SIGTERM);
    s->kill_at_mono = mono_ms() + r->env.opt->shell_kill_grace_ms;
    wake(r);
}

static void shell_kill(runner *base, task *t)
{
    (void)base;
    if (t->shell && !t->shell->exited && t->shell->pid > 0)
        kill(-t->shell->pid, SIGKILL);
}

/* ---- the shell thread --------------------------------------------------- */

/* Whether the monitor with a pattern watching s (a live one, or none) is
 * not the one p's lines serve; then *serial is its serial (0: none) and
 * *pattern a copy of its pattern (the caller frees). A monitor without a
 * pattern is fed the output as it comes, under the lock: cutting lines is
 * a memchr, and its watch does it. [lock held] */
static bool monitor_changed(shell_runner *r, const proc *p, const shell_state *s, char **pattern, size_t *max_bytes,
                            uint64_t *serial)
{
    assert(lock_held(r->env.mu));
    const shell_monitor *m = s ? s->monitor : NULL;
    *serial = m && m->end == MONITOR_LIVE && m->pattern ? m->serial : 0;
    if (*serial == p->lines_for)
        return false;
    *pattern = *serial ? xstrdup(m->pattern) : NULL;
    *max_bytes = *serial ? m->w.lim.max_bytes : 0;
    return true;
}

/* Set p's lines up for the monitor serial (0: none); takes pattern. */
static void serve_monitor(proc *p, char *pattern, size_t max_bytes, uint64_t serial)
{
    char err[256];
    line_filter_free(&p->lines);
    if (serial && line_filter_init(&p->lines, pattern, max_bytes, err, sizeof err) != 0)
        serial = 0; /* not reached: the monitor's pattern was checked when it was made */
    p->lines_for = serial;
    free(pattern);
}

/* The lines of n more bytes (end: of the stream's end) the pattern keeps,
 * fed to the monitor they were cut for, if it still watches. */
static void feed_monitor(shell_runner *r, proc *p, const char *buf, size_t n, bool end)
{
    strbuf kept = {0};
    if (end)
        line_filter_end(&p->lines, line_to_strbuf, &kept);
    else
        line_filter_feed(&p->lines, buf, n, line_to_strbuf, &kept);
    if (kept.len) {
        lock_acquire(r->env.mu);
        shell_state *s = find_shell(r, p->task_id, NULL);
        shell_monitor *m = s ? s->monitor : NULL;
        if (m && m->serial == p->lines_for && shell_monitor_feed(m, kept.buf, kept.len, mono_ms()))
            r->env.watch_due(r->env.engine);
        lock_release(r->env.mu);
    }
    sb_free(&kept);
}

/* Read what the pipe has now; false at end of file. */
static bool drain(shell_runner *r, proc *p)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(p->p.out_fd, buf, sizeof buf);
        if (n > 0) {
            char *pattern = NULL;
            size_t max_bytes = 0;
            uint64_t serial;
            lock_acquire(r->env.mu);
            task *t;
            shell_state *s = find_shell(r, p->task_id, &t);
            if (s) {
                shell_output_append(&s->out, buf, (size_t)n);
                t->last_update_ms = hostapi_now(r->env.api);
                shell_monitor *m = s->monitor;
                if (m && !m->pattern && shell_monitor_feed(m, buf, (size_t)n, mono_ms()))
                    r->env.watch_due(r->env.engine);
            }
            bool changed = monitor_changed(r, p, s, &pattern, &max_bytes, &serial);
            lock_release(r->env.mu);
            if (changed)
                serve_monitor(p, pattern, max_bytes, serial);
            if (p->lines_for)
                feed_monitor(r, p, buf, (size_t)n, false);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

static void proc_free(proc *p)
{
    line_filter_free(&p->lines);
    free(p);
}

static void close_output(proc *p)
{
    if (p->p.out_fd >= 0)
        close(p->p.out_fd);
    p->p.out_fd = -1;
}

/* How the command ended, recorded in s; the task's end. [lock held] */
static void end_task(shell_runner *r, task *t, pid_t reaped, int status)
{
    assert(lock_held(r->env.mu));
    shell_state *s = t->shell;
    /* All of its output is in: a finished command holds only that (not
     * the shell_output_cap bytes its run could have filled). */
    shell_output_shrink(&s->out);
    if (reaped < 0)
        s->exit_code = -1; /* the host reaped it first: the status is unknown */
    else if (WIFSIGNALED(status))
        s->term_signal = WTERMSIG(status);
    else
        s->exit_code = WEXITSTATUS(status);
    if (s->stop_requested) {
        r->env.finished(r->env.engine, t, TASK_CANCELLED, NULL, NULL);
    } else if (reaped >= 0 && !s->term_signal && s->exit_code == 0) {
        r->env.finished(r->env.engine, t, TASK_COMPLETED, NULL, NULL);
    } else {
        char *why = s->term_signal ? xasprintf("The command was killed by signal %d (%s).", s->term_signal,
                                               strsignal(s->term_signal))
                    : reaped < 0   ? xstrdup("The command's exit status is unknown (the host reaped it).")
                                   : xasprintf("The command exited with code %d.", s->exit_code);
        r->env.finished(r->env.engine, t, TASK_ERROR, why, NULL);
        free(why);
    }
}

/* The command exited: reap it, keep the rest of its output, end the task. */
static void finish_proc(shell_runner *r, proc *p)
{
    lock_acquire(r->env.mu);
    shell_state *s = find_shell(r, p->task_id, NULL);
    if (s)
        s->exited = true;
    lock_release(r->env.mu);
    /* The group ends with its leader: what it left running (a member that
     * ignored SIGTERM, a `cmd &`) is killed. With a pidfd the leader is still
     * an unreaped zombie here, so its group id cannot have been reused. */
    kill(-p->p.pid, SIGKILL);
    int status;
    pid_t reaped = process_reap(&p->p, &status);
    if (p->p.out_fd >= 0)
        drain(r, p); /* what it wrote before exiting */
    process_close(&p->p);
    if (p->lines_for)
        feed_monitor(r, p, NULL, 0, true); /* its unended last line */

    lock_acquire(r->env.mu);
    task *t;
    if (find_shell(r, p->task_id, &t))
        end_task(r, t, reaped, status);
    lock_release(r->env.mu);
}

/* Shutdown: kill every group, reap every leader. */
static void kill_all(proc *list)
{
    for (proc *p = list; p; p = p->next)
        kill(-p->p.pid, SIGKILL);
    for (proc *p = list; p; p = p->next) {
        int status;
        process_reap(&p->p, &status);
        process_close(&p->p);
    }
}

/* Move newly spawned commands onto the thread's own list. [lock held] */
static void take_pending(shell_runner *r)
{
    assert(lock_held(r->env.mu));
    while (r->pending) {
        proc *p = r->pending;
        r->pending = p->next;
        p->next = r->running;
        r->running = p;
    }
}

/* Take new commands, send the SIGKILLs that are due; the next one's time
 * (0: none). false when closing. */
static bool tend(shell_runner *r, int64_t *next_kill)
{
    lock_acquire(r->env.mu);
    take_pending(r);
    bool closing = r->closing;
    *next_kill = 0;
    for (proc *p = r->running; p; p = p->next) {
        shell_state *s = find_shell(r, p->task_id, NULL);
        int64_t at = s ? s->kill_at_mono : 0;
        if (at && mono_ms() >= at) {
            kill(-p->p.pid, SIGKILL);
            s->kill_at_mono = 0;
        } else if (at && (!*next_kill || at < *next_kill)) {
            *next_kill = at;
        }
    }
    lock_release(r->env.mu);
    return !closing;
}

typedef struct poll_set {
    struct pollfd *fds;
    proc **owners;
    size_t n, cap;
} poll_set;

/* The wake fd, then each command's output and exit descriptors. */
static void fill_poll_set(shell_runner *r, poll_set *ps)
{
    size_t need = 1;
    for (proc *p = r->running; p; p = p->next)
        need += 2;
    if (need > ps->cap) {
        ps->cap = need * 2;
        ps->fds = xrealloc(ps->fds, ps->cap * sizeof *ps->fds);
        ps->owners = xrealloc(ps->owners, ps->cap * sizeof *ps->owners);
    }
    ps->fds[0] = (struct pollfd){.fd = r->wake_fd, .events = POLLIN};
    ps->n = 1;
    for (proc *p = r->running; p; p = p->next) {
        ps->fds[ps->n] = (struct pollfd){.fd = p->p.out_fd, .events = POLLIN}; /* fd -1 is skipped */
        ps->owners[ps->n++] = p;
        ps->fds[ps->n] = (struct pollfd){.fd = p->p.exit_fd, .events = POLLIN};
        ps->owners[ps->n++] = p;
    }
}

/* After a poll: read output, then handle exits (after their output). */
static void handle_ready(shell_runner *r, poll_set *ps)
{
    if (ps->fds[0].revents) {
        uint64_t v;
        ssize_t got = read(r->wake_fd, &v, sizeof v);
        (void)got;
    }
    for (size_t i = 1; i < ps->n; i += 2) {
        proc *p = ps->owners[i];
        if (p->p.out_fd >= 0 && ps->fds[i].revents && !drain(r, p))
            close_output(p);
    }
    proc **link = &r->running;
    for (size_t i = 2; *link; i += 2) {
        proc *p = *link;
        if (ps->fds[i].revents) {
            finish_proc(r, p);
            *link = p->next;
            proc_free(p);
        } else {
            link = &p->next;
        }
    }
}

static void *shell_main(void *arg)
{
    shell_runner *r = arg;
    poll_set ps = {0};
    int64_t next_kill;
    while (tend(r, &next_kill)) {
        fill_poll_set(r, &ps);
        int64_t left = next_kill ? next_kill - mono_ms() : -1;
        int timeout = next_kill ? (int)(left > 0 ? left : 0) : -1;
        if (poll(ps.fds, ps.n, timeout) < 0 && errno != EINTR)
            continue;
        handle_ready(r, &ps);
    }
    /* Shutdown: nothing outlives the plugin. */
    lock_acquire(r->env.mu);
    take_pending(r);
    lock_release(r->env.mu);
    kill_all(r->running);
    while (r->running) {
        proc *p = r->running;
        r->running = p->next;
        proc_free(p);
    }
    free(ps.fds);
    free(ps.owners);
    return NULL;
}

static void shell_close(runner *base)
{
    shell_runner *r = (shell_runner *)base;
    lock_acquire(r->env.mu);
    r->closing = true;
    lock_release(r->env.mu);
    wake(r);
    pthread_join(r->thread, NULL);
    close(r->wake_fd);
    free(r);
}

runner *shell_runner_open(const runner_env *env, int *rc)
{
    shell_runner *r = xcalloc(1, sizeof *r);
    r->base = (runner){shell_start, shell_stop, shell_kill, shell_close};
    r->env = *env;
    r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->wake_fd < 0) {
        *rc = errno;
        free(r);
        return NULL;
    }
    *rc = pthread_create(&r->thread, NULL, shell_main, r);
    if (*rc != 0) {
        close(r->wake_fd);
        free(r);
        return NULL;
    }
    return &r->base;
}

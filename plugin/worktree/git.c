/* git.c — see git.h. posix_spawnp in a new session, one pipe for both
 * outputs of each command, one poll for all of them with a deadline, the
 * process groups still running killed past it. */
#include "worktree/git.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

/* More output than any report or status ocbg reads: the rest is drained,
 * not kept (a worktree with millions of files cannot take the host's
 * memory). */
#define GIT_OUTPUT_MAX (16u << 20)

static int deadline_ms = GIT_DEADLINE_MS;

void git_set_deadline_ms(int ms)
{
    __atomic_store_n(&deadline_ms, ms > 0 ? ms : GIT_DEADLINE_MS, __ATOMIC_RELAXED);
}

/* The settings every run gets (git.h says why). */
static const char *const safety_args[] = {
    "--no-pager",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "color.ui=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "diff.ignoreSubmodules=all",
};
#define N_SAFETY (sizeof safety_args / sizeof *safety_args)

/* environ without GIT_* and LC_ALL, plus ours. The array is malloc'd; its
 * strings are environ's or literals. */
static char **git_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 4, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "GIT_", 4) != 0 && strncmp(environ[i], "LC_ALL=", 7) != 0)
            env[k++] = environ[i];
    env[k++] = (char *)"LC_ALL=C";
    env[k++] = (char *)"GIT_TERMINAL_PROMPT=0";
    env[k++] = (char *)"GIT_OPTIONAL_LOCKS=0";
    return env;
}

/* git, the safety settings, the binding, then args. malloc'd array; the
 * strings it points to are the caller's, literals, or *owned (freed by
 * the caller). */
static const char **git_argv(const git_bind *b, const char *const args[], char *owned[2])
{
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = xcalloc(n + N_SAFETY + 4, sizeof *argv);
    size_t k = 0;
    argv[k++] = "git";
    for (size_t i = 0; i < N_SAFETY; i++)
        argv[k++] = safety_args[i];
    owned[0] = b->git_dir ? xasprintf("--git-dir=%s", b->git_dir) : NULL;
    owned[1] = b->work_tree ? xasprintf("--work-tree=%s", b->work_tree) : NULL;
    for (int i = 0; i < 2; i++)
        if (owned[i])
            argv[k++] = owned[i];
    memcpy(argv + k, args, n * sizeof *argv);
    return argv;
}

/* 0 with *pid, or the spawn's errno. */
static int spawn_git(const git_bind *b, const char *const args[], int out_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    const char *cwd = b->cwd ? b->cwd : b->work_tree ? b->work_tree : b->git_dir;
    if (cwd)
        posix_spawn_file_actions_addchdir_np(&fa, cwd);
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigfillset(&defaults);
    posix_spawnattr_init(&attr);
    /* A session of its own: no controlling terminal, and a process group
     * that the deadline kills whole (a filter's children too). */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    char *owned[2];
    const char **argv = git_argv(b, args, owned);
    char **env = git_env();
    int rc = posix_spawnp(pid, "git", &fa, &attr, (char *const *)argv, env);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(argv);
    free(owned[0]);
    free(owned[1]);
    return rc;
}

/* One command of git_run_many while it runs. */
typedef struct git_proc {
    int fd;        /* the read end of its output, -1 once read to its end */
    pid_t pid;     /* -1: not started */
    int start_err; /* why it did not start: posix_spawn's errno, or the pipe's negative errno */
    strbuf out;    /* at most GIT_OUTPUT_MAX bytes of it */
} git_proc;

static void start_git(const git_bind *b, const char *const args[], git_proc *p)
{
    *p = (git_proc){.fd = -1, .pid = -1};
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        p->start_err = -errno;
        return;
    }
    p->start_err = spawn_git(b, args, fds[1], &p->pid);
    close(fds[1]);
    if (p->start_err == 0) {
        p->fd = fds[0];
    } else {
        p->pid = -1;
        close(fds[0]);
    }
}

/* One read of p's output: at its end (or a failed read), its fd is closed. */
static void read_some(git_proc *p)
{
    char buf[8192];
    ssize_t got = read(p->fd, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        close(p->fd);
        p->fd = -1;
    } else if (p->out.len + (size_t)got <= GIT_OUTPUT_MAX) {
        sb_putn(&p->out, buf, (size_t)got);
    }
}

/* Read every output to its end, or until the deadline (the fds still open
 * then are those of the commands to stop). */
static void read_all(git_proc *procs, size_t n, int64_t deadline)
{
    struct pollfd fds[GIT_RUN_MANY_MAX];
    size_t of[GIT_RUN_MANY_MAX];
    for (;;) {
        nfds_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (procs[i].fd >= 0) {
                fds[k] = (struct pollfd){procs[i].fd, POLLIN, 0};
                of[k++] = i;
            }
        int64_t left = deadline - mono_ms();
        if (k == 0 || left <= 0)
            return;
        if (poll(fds, k, (int)(left > 1000 ? 1000 : left)) <= 0)
            continue; /* EINTR, or a second passed: check the deadline */
        for (nfds_t j = 0; j < k; j++)
            if (fds[j].revents)
                read_some(&procs[of[j]]);
    }
}

/* git's output, trailing newlines cut. Takes sb. */
static char *output_text(strbuf *sb)
{
    char *text = sb_take(sb);
    if (!text)
        return xstrdup("");
    size_t len = strlen(text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    return text;
}

/* A command that did not start: the sentence, and -EIO or -ENOENT. */
static int not_started(const git_bind *b, int start_err, char **text)
{
    const char *cwd = b->cwd ? b->cwd : b->work_tree ? b->work_tree : b->git_dir;
    free(*text);
    if (start_err < 0) {
        *text = xasprintf("cannot run git: %s", strerror(-start_err));
        return -EIO;
    }
    if (cwd && access(cwd, X_OK) != 0) { /* the folder to run in, not git, is missing */
        *text = xasprintf("cannot run git in %s: %s", cwd, strerror(errno));
        return -EIO;
    }
    *text = xasprintf("cannot run git (is it installed and on PATH?): %s", strerror(start_err));
    return -ENOENT;
}

/* p's end: its status waited for (its process group killed first when
 * `stopped`), its result and *text. */
static int finish_git(const git_bind *b, git_proc *p, bool stopped, int64_t limit, char **text)
{
    *text = output_text(&p->out);
    if (p->pid < 0)
        return not_started(b, p->start_err, text);
    if (stopped)
        kill(-p->pid, SIGKILL); /* its whole session's group: hooks', filters' children too */
    int status = 0;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (stopped) {
        free(*text);
        *text = xasprintf("git took longer than %lld ms and was stopped", (long long)limit);
        return -ETIMEDOUT;
    }
    if (!WIFEXITED(status)) {
        free(*text);
        *text = xasprintf("git was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        return -EIO;
    }
    if (WEXITSTATUS(status) == 127 && !(*text)[0]) {
        /* posix_spawn without the clone it needs (valgrind) reports a
         * failed exec as the child's exit 127: git never exits so. */
        free(*text);
        *text = xstrdup("cannot run git (is it installed and on PATH?)");
        return -ENOENT;
    }
    return WEXITSTATUS(status);
}

void git_run_many(const git_bind *b, git_cmd *cmds, size_t n)
{
    git_proc procs[GIT_RUN_MANY_MAX];
    if (n > GIT_RUN_MANY_MAX)
        abort(); /* a caller's bug: its commands are fixed */
    for (size_t i = 0; i < n; i++)
        if (cmds[i].args)
            start_git(b, cmds[i].args, &procs[i]);
        else
            procs[i] = (git_proc){.fd = -1, .pid = -1};
    int64_t limit = __atomic_load_n(&deadline_ms, __ATOMIC_RELAXED);
    read_all(procs, n, mono_ms() + limit);
    for (size_t i = 0; i < n; i++) {
        cmds[i].out = NULL;
        cmds[i].rc = 0;
        if (!cmds[i].args)
            continue;
        bool stopped = procs[i].fd >= 0;
        if (stopped)
            close(procs[i].fd);
        cmds[i].rc = finish_git(b, &procs[i], stopped, limit, &cmds[i].out);
    }
}

int git_run(const git_bind *b, const char *const args[], char **out)
{
    git_cmd c = {.args = args};
    git_run_many(b, &c, 1);
    if (out)
        *out = c.out;
    else
        free(c.out);
    return c.rc;
}

char *git_line(const git_bind *b, const char *const args[], int *rc)
{
    char *out = NULL;
    int r = git_run(b, args, &out);
    if (rc)
        *rc = r;
    if (r != 0) {
        free(out);
        return NULL;
    }
    out[strcspn(out, "\n")] = '\0';
    return out;
}

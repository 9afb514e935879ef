/* git.c — see git.h. posix_spawnp in a new session, one pipe for both
 * outputs, poll with a deadline, the process group killed past it. */
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
    "--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "color.ui=false",       "-c",
    "gc.auto=0",  "-c", "maintenance.auto=false",   "-c", "commit.gpgSign=false", "-c", "protocol.allow=never",
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

/* Read fd to its end, or until the deadline: false when it passed. Keeps
 * at most GIT_OUTPUT_MAX bytes. */
static bool read_all(int fd, strbuf *sb, int64_t deadline)
{
    char buf[8192];
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r <= 0)
            continue; /* EINTR, or a second passed: check the deadline */
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return true;
        if (sb->len + (size_t)got <= GIT_OUTPUT_MAX)
            sb_putn(sb, buf, (size_t)got);
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

int git_run(const git_bind *b, const char *const args[], char **out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        int e = errno;
        if (out)
            *out = xasprintf("cannot run git: %s", strerror(e));
        return -EIO;
    }
    pid_t pid = -1;
    int spawn_rc = spawn_git(b, args, fds[1], &pid);
    close(fds[1]);
    strbuf sb = {0};
    int64_t limit = __atomic_load_n(&deadline_ms, __ATOMIC_RELAXED);
    bool in_time = spawn_rc == 0 && read_all(fds[0], &sb, mono_ms() + limit);
    close(fds[0]);
    int status = 0;
    if (spawn_rc == 0) {
        if (!in_time)
            kill(-pid, SIGKILL); /* its whole session's group: hooks', filters' children too */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    char *text = output_text(&sb);
    int rc;
    const char *cwd = b->cwd ? b->cwd : b->work_tree ? b->work_tree : b->git_dir;
    if (spawn_rc != 0 && cwd && access(cwd, X_OK) != 0) { /* the folder to run in, not git, is missing */
        free(text);
        text = xasprintf("cannot run git in %s: %s", cwd, strerror(errno));
        rc = -EIO;
    } else if (spawn_rc != 0) {
        free(text);
        text = xasprintf("cannot run git (is it installed and on PATH?): %s", strerror(spawn_rc));
        rc = -ENOENT;
    } else if (!in_time) {
        free(text);
        text = xasprintf("git took longer than %lld ms and was stopped", (long long)limit);
        rc = -ETIMEDOUT;
    } else if (!WIFEXITED(status)) {
        free(text);
        text = xasprintf("git was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        rc = -EIO;
    } else if (WEXITSTATUS(status) == 127 && !text[0]) {
        /* posix_spawn without the clone it needs (valgrind) reports a
         * failed exec as the child's exit 127: git never exits so. */
        free(text);
        text = xstrdup("cannot run git (is it installed and on PATH?)");
        rc = -ENOENT;
    } else {
        rc = WEXITSTATUS(status);
    }
    if (out)
        *out = text;
    else
        free(text);
    return rc;
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

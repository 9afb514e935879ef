/* git.c — see git.h. posix_spawnp, one pipe for both outputs, poll with a
 * deadline. */
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

/* environ with LC_ALL=C and GIT_TERMINAL_PROMPT=0 (replacing any of them).
 * The array is malloc'd; its strings are environ's or literals. */
static char **git_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 3, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "LC_ALL=", 7) != 0 && strncmp(environ[i], "GIT_TERMINAL_PROMPT=", 20) != 0)
            env[k++] = environ[i];
    env[k++] = (char *)"LC_ALL=C";
    env[k++] = (char *)"GIT_TERMINAL_PROMPT=0";
    return env;
}

static pid_t spawn_git(const char *dir, const char *const args[], int out_fd)
{
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = xcalloc(n + 4, sizeof *argv);
    argv[0] = "git";
    argv[1] = "-C";
    argv[2] = dir;
    memcpy(argv + 3, args, n * sizeof *argv);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
    char **env = git_env();
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, NULL, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(argv);
    return rc == 0 ? pid : -1;
}

/* Read fd to its end, or until the deadline: false when it passed. */
static bool read_all(int fd, strbuf *sb, int64_t deadline)
{
    char buf[4096];
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t got = read(fd, buf, sizeof buf);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return true;
        sb_putn(sb, buf, (size_t)got);
    }
}

int git_run(const char *dir, const char *const args[], char **out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        if (out)
            *out = xasprintf("cannot run git: %s", strerror(errno));
        return -1;
    }
    pid_t pid = spawn_git(dir, args, fds[1]);
    close(fds[1]);
    strbuf sb = {0};
    bool in_time = pid > 0 && read_all(fds[0], &sb, mono_ms() + GIT_DEADLINE_MS);
    close(fds[0]);
    int status = -1;
    if (pid > 0) {
        if (!in_time)
            kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    char *text = sb_take(&sb);
    size_t len = text ? strlen(text) : 0;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    if (pid <= 0) {
        free(text);
        text = xstrdup("cannot run git (is it installed and on PATH?)");
    } else if (!in_time) {
        free(text);
        text = xasprintf("git took longer than %d s and was stopped", GIT_DEADLINE_MS / 1000);
    }
    if (out)
        *out = text ? text : xstrdup("");
    else
        free(text);
    if (pid <= 0 || !in_time || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

char *git_line(const char *dir, const char *const args[])
{
    char *out = NULL;
    if (git_run(dir, args, &out) != 0) {
        free(out);
        return NULL;
    }
    out[strcspn(out, "\n")] = '\0';
    return out;
}

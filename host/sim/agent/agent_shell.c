/* agent_shell.c — layer 2 (agents), its lowest file: running a "run" step's
 * shell command in a session's folder, as OpenCode's bash tool would, with
 * its output captured. Uses the core only. */
#include "sim_agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The child, between fork and exec: only async-signal-safe calls (the
 * parent has other threads, which may hold locks the child would inherit). */
static void child_exec(const char *dir, const char *cmd, int out_fd, int null_fd, int max_fd)
{
    if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
        _exit(127);
    /* No inherited descriptor (the plugin's pipes, databases): a pipe whose
     * writer lived on in this child would not see its end while it runs. */
    for (int fd = 3; fd < max_fd; fd++)
        close(fd);
    if (dir && chdir(dir) != 0) {
        static const char msg[] = "sh: cannot enter the session's directory\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        _exit(126);
    }
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
}

/* Read fd to its end, keeping the first max bytes (the rest is drained, so
 * the child never blocks on a full pipe). Returns the text, malloc'd. */
static char *read_all(int fd, size_t max)
{
    char *buf = sim_xmalloc(max + 1);
    size_t len = 0;
    char chunk[4096];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        size_t keep = (size_t)n < max - len ? (size_t)n : max - len;
        memcpy(buf + len, chunk, keep);
        len += keep;
    }
    buf[len] = 0;
    return buf;
}

int sim_agent_shell(const char *dir, const char *cmd, size_t max, char **output)
{
    *output = NULL;
    long open_max = sysconf(_SC_OPEN_MAX);
    int max_fd = open_max > 0 && open_max < 65536 ? (int)open_max : 65536;
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int p[2];
    if (null_fd < 0)
        return -errno;
    if (pipe2(p, O_CLOEXEC) != 0) {
        int e = errno;
        close(null_fd);
        return -e;
    }
    pid_t pid = fork();
    if (pid == 0)
        child_exec(dir, cmd, p[1], null_fd, max_fd);
    int e = errno;
    close(p[1]);
    close(null_fd);
    if (pid < 0) {
        close(p[0]);
        return -e;
    }
    *output = read_all(p[0], max);
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* A command ocbg runs has no controlling terminal, also when the host has
 * one (OpenCode's TUI owns the person's terminal): it cannot write over the
 * screen nor read what the person types. The test becomes the leader of a
 * session whose controlling terminal is a pseudo-terminal it holds the
 * master of (as a terminal emulator does), proves a command it starts itself
 * reaches that terminal, and then that Bash commands, foreground and
 * background, do not: /dev/tty cannot be opened (ENXIO), stdin is not a
 * terminal, the process's tty_nr is 0, and it leads a session and process
 * group of its own (what stop signals); nothing reaches the master, and what
 * was typed stays unread. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "shelltest.h"

/* What a command learns of its terminal: whether /dev/tty opens, whether
 * stdin is one, its tty_nr, and whether it leads its process group and
 * session (fields 5-7 of /proc/PID/stat, after the command name). */
#define PROBE                                                                                                          \
    "if (exec 3<>/dev/tty) 2>/dev/null; then echo tty:open; else echo tty:none; fi; "                                  \
    "if [ -t 0 ]; then echo stdin:tty; else echo stdin:not-a-tty; fi; "                                                \
    "read -r st < /proc/$$/stat; set -- ${st##*) }; "                                                                  \
    "[ \"$3\" = $$ ] && g=own || g=inherited; [ \"$4\" = $$ ] && s=own || s=inherited; "                               \
    "echo \"tty_nr:$5 group:$g session:$s\""

/* The person's side: a line written to the terminal, and one read from it. */
#define TTY_WRITE_READ "echo X-on-the-screen > /dev/tty; read x < /dev/tty; echo \"read:[$x]\""

static int master_fd = -1, slave_fd = -1;

/* Make a new pseudo-terminal this process's controlling terminal, in raw
 * mode (no echo: what is typed is not written back). 0, or -1 (errno). */
static int take_terminal(void)
{
    if (setsid() < 0)
        return -1;
    master_fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (master_fd < 0 || grantpt(master_fd) != 0 || unlockpt(master_fd) != 0)
        return -1;
    const char *name = ptsname(master_fd);
    slave_fd = name ? open(name, O_RDWR) : -1;
    if (slave_fd < 0 || ioctl(slave_fd, TIOCSCTTY, 0) != 0)
        return -1;
    struct termios t;
    if (tcgetattr(slave_fd, &t) != 0)
        return -1;
    cfmakeraw(&t);
    return tcsetattr(slave_fd, TCSANOW, &t);
}

/* What fd has to read now (malloc'd, "" when nothing). */
static char *pending_on(int fd)
{
    char buf[4096];
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (n < sizeof buf - 1 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    return strdup(buf);
}

/* A command run by the test itself (popen: /bin/sh in the test's session). */
static char *run_here(const char *command)
{
    FILE *f = popen(command, "r");
    if (!f)
        bail_out("popen: %s", strerror(errno));
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    pclose(f);
    return strdup(buf);
}

static char *bash_fg(sim_host *h, const char *session, const char *command)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "command", command);
    char *args = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    char *out = t_tool(h, session, "Bash", args);
    free(args);
    return out;
}

/* The probe's answer for a command with no terminal. */
static void no_terminal(const char *out, const char *how)
{
    like(out, "tty:none\n", "%s: /dev/tty cannot be opened", how);
    like(out, "stdin:not-a-tty\n", "%s: stdin is not a terminal", how);
    like(out, "tty_nr:0 ", "%s: no controlling terminal (tty_nr 0)", how);
    like(out, "group:own session:own\n", "%s: it leads a process group and session of its own", how);
}

static void commands_have_no_terminal(void)
{
    /* The person typed a line the command must not read. */
    if (write(master_fd, "typed\n", 6) != 6)
        bail_out("write to the terminal: %s", strerror(errno));

    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *out = bash_fg(h, f.parent, PROBE);
    no_terminal(out, "foreground Bash");
    free(out);
    out = bash_fg(h, f.parent, TTY_WRITE_READ);
    like(out, "/dev/tty: No such device or address", "foreground Bash: writing to /dev/tty fails (ENXIO)");
    like(out, "read:[]\n", "foreground Bash: its read from /dev/tty reads nothing");
    free(out);

    char *id = t_bash_bg(h, f.parent, PROBE, "tty probe", T_LAUNCH_OK);
    out = t_task_output(h, f.parent, id, 1, tap_timeout_ms(10000));
    no_terminal(out, "background Bash");
    free(out);
    free(id);
    id = t_bash_bg(h, f.parent, TTY_WRITE_READ, "tty write and read", T_LAUNCH_UNCHECKED);
    out = t_task_output(h, f.parent, id, 1, tap_timeout_ms(10000));
    like(out, "/dev/tty: No such device or address", "background Bash: writing to /dev/tty fails (ENXIO)");
    like(out, "read:[]\n", "background Bash: its read from /dev/tty reads nothing");
    free(out);
    free(id);

    char *screen = pending_on(master_fd);
    is_str(screen, "", "nothing reached the terminal's screen");
    free(screen);
    char *typed = pending_on(slave_fd);
    is_str(typed, "typed\n", "what the person typed is still there, unread");
    free(typed);

    t_close(&f);
}

/* The same probes run by the test itself see the terminal: the checks above
 * would fail for a command that had it. */
static void the_probe_sees_a_terminal(void)
{
    char *out = run_here(PROBE);
    like(out, "tty:open\n", "control: a command in the test's session opens /dev/tty");
    unlike(out, "tty_nr:0 ", "control: it has a controlling terminal");
    free(out);
    if (write(master_fd, "typed\n", 6) != 6)
        bail_out("write to the terminal: %s", strerror(errno));
    out = run_here(TTY_WRITE_READ);
    is_str(out, "read:[typed]\n", "control: it reads what was typed");
    free(out);
    char *screen = pending_on(master_fd);
    is_str(screen, "X-on-the-screen\n", "control: what it writes reaches the screen");
    free(screen);
}

/* The checks, in a child that leads a session of its own (setsid cannot make
 * a process group leader one, and the test's own terminal, if any, stays
 * untouched). */
static int run_in_own_session(void)
{
    if (take_terminal() != 0) {
        diag("no pseudo-terminal here: %s", strerror(errno));
        skip(1, "no pseudo-terminal to be the controlling terminal");
        return done_testing();
    }
    int tty = open("/dev/tty", O_RDWR);
    ok(tty >= 0, "the test has a controlling terminal (/dev/tty opens)");
    if (tty >= 0)
        close(tty);
    t_tmpdir_make("shell-tty");
    if (t_shells_work(T_PROBE_SKIP)) {
        commands_have_no_terminal();
        the_probe_sees_a_terminal();
    }
    t_kill_leftovers();
    t_tmpdir_remove(NULL);
    return done_testing();
}

int main(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        bail_out("fork: %s", strerror(errno));
    if (pid == 0)
        exit(run_in_own_session()); /* exit: its TAP lines are flushed */
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return 1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

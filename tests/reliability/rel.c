/* rel.c — see rel.h (everything but the scenario). */
#include "rel.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

static int failures;
static char context[256];
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;

int rel_check_at(const char *file, int line, int pass, const char *fmt, ...)
{
    if (pass)
        return 1;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&check_mu);
    failures++;
    fprintf(stderr, "# rel: %s:%d: %s%s%s\n", file, line, context, context[0] ? ": " : "", msg);
    fflush(stderr);
    pthread_mutex_unlock(&check_mu);
    return 0;
}

int rel_failures(void)
{
    pthread_mutex_lock(&check_mu);
    int n = failures;
    pthread_mutex_unlock(&check_mu);
    return n;
}

void rel_context(const char *fmt, ...)
{
    pthread_mutex_lock(&check_mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&check_mu);
}

sim_host *rel_host(const char *options_json)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    if (!dir) {
        fprintf(stderr, "# OCBG_PLUGIN_DIR is not set (run through make)\n");
        return NULL;
    }
    sim_host *h = sim_create();
    if (!h)
        return NULL;
    int n = sim_load_plugins(h, dir, options_json);
    if (n != 1) {
        fprintf(stderr, "# loading ocbg from %s: %d plugins (%s)\n", dir, n, sim_load_error(h));
        sim_destroy(h);
        return NULL;
    }
    return h;
}

char *rel_tool(sim_host *h, const char *session, const char *tool, const char *args_json, int *rc)
{
    char *out = NULL;
    int r = sim_tool(h, session, tool, args_json, &out);
    if (rc)
        *rc = r;
    return out ? out : calloc(1, 1);
}

const char *rel_status_of(const char *output)
{
    static __thread char buf[64];
    buf[0] = '\0';
    if (!output || strncmp(output, "Task ", 5) != 0)
        return buf;
    const char *nl = strchr(output, '\n');
    size_t len = nl ? (size_t)(nl - output) : strlen(output);
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (output[i] == ':')
            colon = output + i;
    if (!colon || colon[1] != ' ')
        return buf;
    size_t n = (size_t)(output + len - (colon + 2));
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, colon + 2, n);
    buf[n] = '\0';
    return buf;
}

static const char *const statuses[] = {"pending", "running", "completed", "error", "cancelled", "resumed", NULL};

int rel_status_valid(const char *s)
{
    for (const char *const *p = statuses; *p; p++)
        if (s && strcmp(s, *p) == 0)
            return 1;
    return 0;
}

int rel_status_terminal(const char *s)
{
    return s && (strcmp(s, "completed") == 0 || strcmp(s, "error") == 0 || strcmp(s, "cancelled") == 0);
}

typedef struct settle_arg {
    const char *session, *id;
    char *out;
} settle_arg;

static int settled(sim_host *h, void *arg)
{
    settle_arg *a = arg;
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", a->id);
    char *out = rel_tool(h, a->session, "background_output", args, NULL);
    const char *st = rel_status_of(out);
    if (rel_status_terminal(st) || strncmp(out, "Task not found", 14) == 0) {
        free(a->out);
        a->out = out;
        return 1;
    }
    free(out);
    return 0;
}

char *rel_wait_settled(sim_host *h, const char *session, const char *task_id, int timeout_ms)
{
    settle_arg a = {session, task_id, NULL};
    if (sim_wait(h, settled, &a, tap_timeout_ms(timeout_ms)) != 0) {
        free(a.out);
        return NULL;
    }
    return a.out;
}

int rel_count_messages_with(sim_host *h, const char *session, const char *needle)
{
    int n = sim_session_message_count(h, session), count = 0;
    for (int i = 0; i < n; i++) {
        char *text = sim_session_message_text(h, session, i);
        for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
            count++;
        free(text);
    }
    return count;
}

int64_t rel_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long rel_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    return *end ? def : n;
}

int rel_run_isolated(int (*fn)(void *arg), void *arg, int timeout_ms, int64_t *elapsed_ms)
{
    fflush(stdout);
    fflush(stderr);
    int64_t start = rel_now_ms();
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int rc = fn(arg);
        fflush(stdout);
        exit(rc > 255 ? 255 : rc < 0 ? 1 : rc);
    }
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int timed_out = 0;
    if (pfd >= 0) {
        struct pollfd p = {.fd = pfd, .events = POLLIN};
        int left = timeout_ms;
        for (;;) {
            int n = poll(&p, 1, left);
            if (n > 0)
                break;
            if (n < 0 && errno == EINTR) {
                left = timeout_ms - (int)(rel_now_ms() - start);
                if (left > 0)
                    continue;
            }
            timed_out = 1;
            break;
        }
        close(pfd);
    }
    if (timed_out) {
        fprintf(stderr, "# rel: child %d ran past its deadline of %d ms: killing it\n", (int)pid, timeout_ms);
        kill(pid, SIGABRT);
        struct timespec ts = {0, 500 * 1000000L};
        nanosleep(&ts, NULL); /* let it print a report; it is killed for sure next */
        kill(pid, SIGKILL);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (elapsed_ms)
        *elapsed_ms = rel_now_ms() - start;
    if (timed_out)
        return -ETIMEDOUT;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

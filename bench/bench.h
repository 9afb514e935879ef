/*
 * bench.h — what the benchmarks share (a header, not a bench: only
 * bench/NAME.c files are built into build/bench/NAME).
 *
 * Clocks, medians and percentiles, a tool call on the calling thread, the
 * plugin instantiated from libocbg-internal.a (ocp_plugin_entry linked
 * statically, so a bench can wrap host functions and read engine counters),
 * and an instant fake host (every call returns at once, keeps nothing) for
 * figures that must be the plugin's own cost only.
 *
 * Every function is static inline: each bench uses a subset.
 */
#ifndef OCBG_BENCH_H
#define OCBG_BENCH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocp.h"

/* Ids as long as OpenCode's own ("ses_"/"msg_" + 26 characters): a task
 * keeps several of them, so shorter ones would flatter the memory rows.
 * The fake host numbers its sessions from 1 (BENCH_SESSION_FMT, an
 * unsigned long); the parent sessions are BENCH_PARENT_FMT (an int). */
#define BENCH_SESSION_FMT "ses_fakechildsession%010lu"
#define BENCH_PARENT_FMT "ses_fakeparentsession%09d"
#define BENCH_LAUNCH_MESSAGE "msg_fakelaunchmessage000000001"

static inline int64_t bench_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void bench_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0..1, nearest rank) of v[0..n); sorts v. */
static inline double bench_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    size_t k = (size_t)(q * (double)n + 0.999999);
    k = k == 0 ? 0 : k - 1;
    return v[k < n ? k : n - 1];
}

static inline double bench_median(double *v, size_t n)
{
    return bench_quantile(v, n, 0.5);
}

/* One tool call on this thread, as a host worker makes it. Returns the
 * plugin's rc; *out (malloc'd copy, may be NULL when out is NULL). */
static inline int bench_tool(const ocp_plugin *p, const char *session, const char *tool, const char *args, char **out)
{
    ocp_call_ctx ctx = {.struct_size = sizeof ctx,
                        .session_id = session,
                        .message_id = BENCH_LAUNCH_MESSAGE,
                        .agent = "build",
                        .call_id = "call_bench"};
    char *res = NULL;
    int rc = p->tool_call(p->userdata, tool, args, &ctx, &res);
    if (out)
        *out = res ? strdup(res) : NULL;
    p->free(p->userdata, res);
    return rc;
}

/* The first "bg_xxxxxxxx" in a text, copied into id (size >= 16). */
static inline int bench_task_id(const char *text, char *id, size_t size)
{
    const char *s = text ? strstr(text, "bg_") : NULL;
    if (!s)
        return -1;
    size_t n = 3;
    while (n + 1 < size && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
        n++;
    memcpy(id, s, n);
    id[n] = '\0';
    return 0;
}

/* ---- the instant fake host ------------------------------------------- */

static unsigned long bench_fake_sessions;

static inline char *bench_fake_strdup(const char *s)
{
    return strdup(s);
}

static inline int bench_fake_create(void *ud, const char *parent_id, const char *title, char **out)
{
    (void)ud;
    (void)title;
    char buf[160];
    unsigned long n = __atomic_add_fetch(&bench_fake_sessions, 1, __ATOMIC_RELAXED);
    snprintf(buf, sizeof buf, "{\"id\":\"" BENCH_SESSION_FMT "\",\"parentID\":\"%.60s\"}", n,
             parent_id ? parent_id : "");
    *out = bench_fake_strdup(buf);
    return 0;
}

static inline int bench_fake_get(void *ud, const char *session_id, char **out)
{
    (void)ud;
    char buf[128];
    snprintf(buf, sizeof buf, "{\"id\":\"%.100s\"}", session_id);
    *out = bench_fake_strdup(buf);
    return 0;
}

static inline int bench_fake_messages(void *ud, const char *session_id, int limit, char **out)
{
    (void)ud;
    (void)session_id;
    (void)limit;
    *out = bench_fake_strdup("[]");
    return 0;
}

static inline int bench_fake_prompt(void *ud, const char *session_id, const char *body, char **out)
{
    (void)ud;
    (void)session_id;
    (void)body;
    *out = NULL;
    return 0;
}

static inline int bench_fake_abort(void *ud, const char *session_id, char **out)
{
    (void)ud;
    (void)session_id;
    *out = NULL;
    return 0;
}

static inline int bench_fake_status(void *ud, char **out)
{
    (void)ud;
    *out = bench_fake_strdup("{}");
    return 0;
}

static inline void bench_fake_log(void *ud, enum ocp_log_level level, const char *message)
{
    (void)ud;
    (void)level;
    (void)message;
}

static inline void bench_fake_free(void *ud, char *p)
{
    (void)ud;
    free(p);
}

static inline ocp_host bench_fake_host(void)
{
    ocp_host h = {
        .struct_size = sizeof(ocp_host),
        .abi_major = OCP_ABI_MAJOR,
        .abi_minor = OCP_ABI_MINOR,
        .host_name = "bench-fake",
        .session_create = bench_fake_create,
        .session_get = bench_fake_get,
        .session_messages = bench_fake_messages,
        .session_prompt = bench_fake_prompt,
        .session_abort = bench_fake_abort,
        .session_status = bench_fake_status,
        .log = bench_fake_log,
        .free = bench_fake_free,
    };
    return h;
}

/* The plugin from libocbg-internal.a on `host` (kept valid by the caller
 * until shutdown). Exits with a message when it refuses. */
static inline const ocp_plugin *bench_plugin(const ocp_host *host, const char *options)
{
    char err[512] = "";
    const ocp_plugin *p = ocp_plugin_entry(host, options, err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench: the plugin refused to load: %s\n", err);
        exit(1);
    }
    return p;
}

#endif

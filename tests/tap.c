/* tap.c — see tap.h. One lock serialises output so threads may check too. */
#include "tap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static int tap_count;
static int tap_failed;
static int tap_planned = -1;

void tap_plan(int n)
{
    pthread_mutex_lock(&tap_lock);
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
}

/* Prints a value on one diagnostic line of stderr, escaping newlines so TAP
 * stays valid. */
static void print_value(const char *label, const char *v)
{
    fprintf(stderr, "# %8s: ", label);
    if (!v) {
        fputs("(null)\n", stderr);
        return;
    }
    fputc('\'', stderr);
    for (const char *p = v; *p; p++) {
        if (*p == '\n')
            fputs("\\n", stderr);
        else
            fputc(*p, stderr);
    }
    fputs("'\n", stderr);
}

/* Reports one result; `got`/`want` lines come from the caller's printer. A
 * failure's diagnostics go to stderr (after the result, stdout flushed), as
 * Test::More's do, so prove shows them. Must hold tap_lock. */
static int report(const char *file, int line, int pass, const char *fmt, va_list ap)
{
    tap_count++;
    printf("%s %d - ", pass ? "ok" : "not ok", tap_count);
    vprintf(fmt, ap);
    putchar('\n');
    if (!pass) {
        tap_failed++;
        fflush(stdout);
        fprintf(stderr, "#   failed at %s:%d\n", file, line);
    }
    return pass;
}

int tap_ok_at(const char *file, int line, int pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&tap_lock);
    report(file, line, pass, fmt, ap);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    va_end(ap);
    return pass;
}

int tap_is_int_at(const char *file, int line, long long got, long long want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&tap_lock);
    int pass = report(file, line, got == want, fmt, ap);
    if (!pass)
        fprintf(stderr, "#      got: %lld\n#     want: %lld\n", got, want);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    va_end(ap);
    return pass;
}

int tap_is_str_at(const char *file, int line, const char *got, const char *want, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int same = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
    pthread_mutex_lock(&tap_lock);
    int pass = report(file, line, same, fmt, ap);
    if (!pass) {
        print_value("got", got);
        print_value("want", want);
    }
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    va_end(ap);
    return pass;
}

int tap_like_at(const char *file, int line, const char *got, const char *needle, int want_found, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int found = got && needle && strstr(got, needle) != NULL;
    pthread_mutex_lock(&tap_lock);
    int pass = report(file, line, found == want_found, fmt, ap);
    if (!pass) {
        print_value("got", got);
        print_value(want_found ? "contains" : "lacks", needle);
    }
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    va_end(ap);
    return pass;
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&tap_lock);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
    va_end(ap);
}

void tap_skip(int n, const char *reason)
{
    pthread_mutex_lock(&tap_lock);
    for (int i = 0; i < n; i++)
        printf("ok %d # skip %s\n", ++tap_count, reason);
    fflush(stdout);
    pthread_mutex_unlock(&tap_lock);
}

void tap_bail_out(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&tap_lock);
    fputs("Bail out! ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
    exit(255);
}

int tap_done_testing(void)
{
    pthread_mutex_lock(&tap_lock);
    if (tap_planned < 0)
        printf("1..%d\n", tap_count);
    else if (tap_planned != tap_count)
        printf("# planned %d tests but ran %d\n", tap_planned, tap_count);
    fflush(stdout);
    int rc = tap_failed ? 1 : (tap_planned >= 0 && tap_planned != tap_count) ? 1 : 0;
    pthread_mutex_unlock(&tap_lock);
    return rc;
}

int tap_failures(void)
{
    pthread_mutex_lock(&tap_lock);
    int n = tap_failed;
    pthread_mutex_unlock(&tap_lock);
    return n;
}

int tap_timeout_ms(int base_ms)
{
    const char *s = getenv("OCBG_TEST_TIMEOUT_SCALE");
    int scale = s ? atoi(s) : 1;
    if (scale < 1)
        scale = 1;
    return base_ms * scale;
}

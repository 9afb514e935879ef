/* util.c — see util.h. */
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static void out_of_memory(void)
{
    fputs("ocbg: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        out_of_memory();
    return p;
}

char *xstrdup(const char *s)
{
    return s ? xstrndup(s, strlen(s)) : NULL;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

static void sb_reserve(strbuf *sb, size_t extra)
{
    if (sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    sb->buf = xrealloc(sb->buf, cap);
    sb->cap = cap;
}

void sb_putn(strbuf *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    if (n) /* s may be NULL then */
        memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_puts(strbuf *sb, const char *s)
{
    sb_putn(sb, s, strlen(s));
}

void sb_put_owned(strbuf *sb, char *s)
{
    if (s && sb->len == 0) {
        size_t n = strlen(s);
        free(sb->buf);
        sb->buf = s;
        sb->len = n;
        sb->cap = n + 1;
        return;
    }
    if (s)
        sb_puts(sb, s);
    free(s);
}

void sb_printf(strbuf *sb, const char *fmt, ...)
{
    /* Format into the spare room first; only a text that did not fit is
     * formatted again, into a buffer grown to its size. */
    sb_reserve(sb, 64);
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = sb->cap - sb->len;
    int n = vsnprintf(sb->buf + sb->len, room, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n >= room) {
        sb_reserve(sb, (size_t)n);
        vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap2);
    }
    if (n > 0)
        sb->len += (size_t)n;
    else
        sb->buf[sb->len] = '\0';
    va_end(ap2);
}

char *sb_take(strbuf *sb)
{
    char *p = sb->buf ? sb->buf : xstrdup("");
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

void sb_free(strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void mono_deadline(struct timespec *ts, int64_t deadline_ms)
{
    ts->tv_sec = (time_t)(deadline_ms / 1000);
    ts->tv_nsec = (long)(deadline_ms % 1000) * 1000000L;
}

int cond_init_monotonic(void *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init((pthread_cond_t *)cond, &attr);
    pthread_condattr_destroy(&attr);
    return rc;
}

int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t fnv64(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

void random_id(char *out, size_t out_size, const char *prefix)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r) {
        /* No entropy source: mix the clock and a counter; uniqueness is
         * checked by the registry anyway. */
        static uint32_t counter;
        r = (uint32_t)mono_ms() * 2654435761u ^ __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    }
    snprintf(out, out_size, "%s%08x", prefix, r);
}

bool utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned cp;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

size_t utf8_floor(const char *str, size_t len, size_t max_bytes)
{
    const unsigned char *s = (const unsigned char *)str;
    if (max_bytes >= len)
        return len;
    size_t i = max_bytes;
    /* Step back over continuation bytes to the start of the cut sequence. */
    while (i > 0 && (s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

/* Bytes of the form 10xxxxxx in a word: bit 7 set and bit 6 clear. */
static inline unsigned continuation_bytes(uint64_t x)
{
    return (unsigned)__builtin_popcountll(x & ~(x << 1) & 0x8080808080808080ull);
}

size_t utf8_count(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t cont = 0, i = 0;
    /* Eight bytes at a time: characters = bytes - continuation bytes. */
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        cont += continuation_bytes(x);
    }
    for (; i < n; i++)
        cont += (s[i] & 0xC0) == 0x80;
    return n - cont;
}

size_t utf8_offset(const char *str, size_t n, size_t chars)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            if (seen == chars)
                return i;
            seen++;
        }
    }
    return n;
}

int echo_bytes(const char *s, size_t max_chars)
{
    /* Scan at most a few bytes past the cut: the argument may be megabytes. */
    size_t len = strnlen(s, max_chars * 4 + 1);
    return (int)utf8_offset(s, len, max_chars);
}

const char *echo_more(const char *s, size_t max_chars)
{
    return s[echo_bytes(s, max_chars)] ? "…" : "";
}

/* The length of the valid UTF-8 sequence at s[0..n), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return s[0] ? 1 : 0;
    size_t len = s[0] >= 0xC2 && s[0] <= 0xDF   ? 2
                 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
                 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                                : 0;
    if (len == 0 || len > n)
        return 0;
    return utf8_valid((const char *)s, len) ? len : 0;
}

char *utf8_sanitize(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    strbuf sb = {0};
    size_t i = 0, run = 0;
    while (i < n) {
        size_t k = utf8_seq(s + i, n - i);
        if (k) {
            i += k;
            run += k;
            continue;
        }
        sb_putn(&sb, str + i - run, run);
        sb_puts(&sb, "\xEF\xBF\xBD");
        run = 0;
        i++;
    }
    sb_putn(&sb, str + i - run, run);
    return sb_take(&sb);
}

bool blank(const char *s)
{
    if (!s)
        return true;
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
            return false;
    return true;
}

void format_duration(char *out, size_t out_size, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms < 60000)
        snprintf(out, out_size, "%lld.%llds", (long long)(ms / 1000), (long long)(ms % 1000 / 100));
    else if (ms < 3600000)
        snprintf(out, out_size, "%lldm %02llds", (long long)(ms / 60000), (long long)(ms % 60000 / 1000));
    else
        snprintf(out, out_size, "%lldh %02lldm", (long long)(ms / 3600000), (long long)(ms % 3600000 / 60000));
}

void format_bytes(char *out, size_t out_size, unsigned long long bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof *units)
        v /= 1024, u++;
    if (u == 0)
        snprintf(out, out_size, "%llu B", bytes);
    else
        snprintf(out, out_size, "%.1f %s", v, units[u]);
}

void format_time(char *out, size_t out_size, int64_t wall)
{
    time_t t = (time_t)(wall / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, out_size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

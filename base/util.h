/*
 * util.h — small helpers every plugin file uses: allocation, a growable
 * string, clocks, ids, UTF-8 checks.
 *
 * Allocation failure: x* functions abort the process with a message. The
 * plugin's allocations are small and bounded; threading ENOMEM through every
 * path would double the code for a condition the host cannot survive anyway.
 */
#ifndef OCBG_UTIL_H
#define OCBG_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s); /* NULL → NULL */
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable NUL-terminated string. Zero-initialise (strbuf sb = {0}). */
typedef struct strbuf {
    char *buf;
    size_t len;
    size_t cap;
} strbuf;
void sb_puts(strbuf *sb, const char *s);
void sb_putn(strbuf *sb, const char *s, size_t n);
void sb_printf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s (malloc'd or NULL), which this takes: an empty sb adopts it as
 * its buffer, with no copy; else it is copied and freed. */
void sb_put_owned(strbuf *sb, char *s);
/* The string (never NULL, "" when empty); the buffer is the caller's, sb is reset. */
char *sb_take(strbuf *sb);
void sb_free(strbuf *sb);

/* Monotonic milliseconds, for deadlines and intervals. */
int64_t mono_ms(void);
/* A CLOCK_MONOTONIC timespec `ms` milliseconds from now (for pthread_cond_timedwait
 * on condition variables created with cond_init_monotonic). */
void mono_deadline(struct timespec *ts, int64_t deadline_ms);
/* pthread_cond_init with CLOCK_MONOTONIC. Returns 0 or an errno. */
int cond_init_monotonic(void *cond);
/* Wall-clock milliseconds since the epoch. */
int64_t wall_ms(void);

/* FNV-1a over n bytes, continuing from h (start with FNV64_SEED). */
#define FNV64_SEED 14695981039346656037ull
uint64_t fnv64(uint64_t h, const void *p, size_t n);

/* `prefix` followed by 8 random lowercase hex digits, into out[out_size]. */
void random_id(char *out, size_t out_size, const char *prefix);

/* Is s[0..n) valid UTF-8 (no overlongs, no surrogates)? */
bool utf8_valid(const char *s, size_t n);
/* The largest length <= max_bytes that does not cut a UTF-8 sequence in s. */
size_t utf8_floor(const char *s, size_t len, size_t max_bytes);
/* Number of characters (code points) in s[0..n), s valid UTF-8. */
size_t utf8_count(const char *s, size_t n);
/* Byte offset of the `chars`-th character of s[0..n) (n when there are fewer). */
size_t utf8_offset(const char *s, size_t n, size_t chars);

/* What an answer echoes of an argument the model sent: a prefix cut at a
 * UTF-8 boundary, then "…". A 1 MB task id must not come back as a 1 MB error
 * (a quarter of a million tokens in the model's context). ECHO: ids, names
 * and filters (ECHO_MAX_CHARS); ECHO_TEXT: a command or a description echoed
 * in a launch answer (ECHO_TEXT_CHARS, longer than any ordinary one). Use as
 * printf("%.*s%s", ECHO(s)); s must not be NULL and need not be valid UTF-8
 * (strnlen bounds the scan either way). */
#define ECHO_MAX_CHARS 100
#define ECHO_TEXT_CHARS 2000
int echo_bytes(const char *s, size_t max_chars);        /* bytes of s to print */
const char *echo_more(const char *s, size_t max_chars); /* "…" when s was cut, else "" */
#define ECHO(s) echo_bytes((s), ECHO_MAX_CHARS), (s), echo_more((s), ECHO_MAX_CHARS)
#define ECHO_TEXT(s) echo_bytes((s), ECHO_TEXT_CHARS), (s), echo_more((s), ECHO_TEXT_CHARS)

/* A copy of s[0..n) with every invalid UTF-8 sequence (and NUL) replaced by
 * U+FFFD, so any bytes a command printed become valid text. malloc'd. */
char *utf8_sanitize(const char *s, size_t n);

/* Is the string NULL, empty or only white space? */
bool blank(const char *s);

/* "12.3s", "4m 05s", "2h 03m" */
void format_duration(char *out, size_t out_size, int64_t ms);
/* "512 B", "1.5 KiB", "3.2 MiB", "1.1 GiB" */
void format_bytes(char *out, size_t out_size, unsigned long long bytes);
/* "2026-11-21T10:00:00Z" from wall milliseconds */
void format_time(char *out, size_t out_size, int64_t wall);

#endif

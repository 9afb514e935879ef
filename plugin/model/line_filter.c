/* line_filter.c — see line_filter.h. */
#include "model/line_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE_OVER (LINE_PATTERN_MAX_SIZE + 1) /* sizes saturate here */

static size_t mul_sat(size_t a, size_t b)
{
    return a && b > SIZE_OVER / a ? SIZE_OVER : a * b;
}

static size_t add_sat(size_t a, size_t b)
{
    return a + b > SIZE_OVER ? SIZE_OVER : a + b;
}

/* The end of the bracket expression that opens at p[0] == '[' (one past its
 * ']'), or NULL when it does not close (regcomp then refuses the pattern). */
static const char *bracket_end(const char *p)
{
    p++;
    if (*p == '^')
        p++;
    if (*p == ']')
        p++; /* a ']' first is a member */
    for (; *p && *p != ']'; p++) {
        if (p[0] == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            const char *close = strchr(p + 2, p[1]);
            while (close && close[1] != ']')
                close = strchr(close + 1, p[1]);
            if (!close)
                return NULL;
            p = close + 1;
        }
    }
    return *p ? p + 1 : NULL;
}

/* `{m}`, `{m,}` or `{m,n}` at p: the copies it asks for (m, m + 1, n), and
 * *end past it; 0 when p holds no bound (glibc then reads '{' as itself). */
static size_t bound_copies(const char *p, const char **end)
{
    char *q;
    unsigned long m = strtoul(p + 1, &q, 10), n = m;
    if (q == p + 1)
        return 0;
    if (*q == ',') {
        const char *after = q + 1;
        n = *after == '}' ? m + 1 : strtoul(after, &q, 10);
        if (*after != '}' && q == after)
            return 0;
        if (*after == '}')
            q = (char *)after;
    }
    if (*q != '}')
        return 0;
    *end = q + 1;
    return n > m ? n : m > 0 ? m : 1;
}

/* The pattern's size with its repetitions expanded (saturated at SIZE_OVER),
 * or 0 when it has a back-reference. Groups nest at most as deep as the
 * pattern is long. */
static size_t expanded_size(const char *p)
{
    size_t sums[LINE_PATTERN_MAX_BYTES + 2] = {0}, depth = 0, last = 0;
    while (*p) {
        const char *next = p + 1;
        size_t atom = 1, copies = 0;
        switch (*p) {
        case '\\':
            if (p[1] >= '1' && p[1] <= '9')
                return 0;
            next = p[1] ? p + 2 : p + 1;
            break;
        case '[': {
            const char *end = bracket_end(p);
            next = end ? end : p + strlen(p);
            break;
        }
        case '(':
            if (depth + 1 < sizeof sums / sizeof *sums)
                sums[++depth] = 0;
            last = 0;
            p = next;
            continue;
        case ')':
            atom = depth ? (sums[depth] ? sums[depth] : 1) : 1;
            depth -= depth > 0;
            break;
        case '|':
            last = 0;
            p = next;
            continue;
        case '*':
        case '?':
            copies = 1;
            break;
        case '+':
            copies = 2;
            break;
        case '{':
            copies = bound_copies(p, &next);
            break;
        default:
            break;
        }
        if (copies && last) { /* the atom before is repeated: copies of it in all */
            sums[depth] = add_sat(sums[depth], mul_sat(last, copies - 1));
            last = mul_sat(last, copies);
        } else {
            sums[depth] = add_sat(sums[depth], atom);
            last = atom;
        }
        p = next;
    }
    while (depth > 0) /* an unclosed group: regcomp refuses it */
        sums[depth - 1] = add_sat(sums[depth - 1], sums[depth]), depth--;
    return sums[0] ? sums[0] : 1;
}

int line_filter_init(line_filter *f, const char *pattern, size_t max_bytes, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    f->max_bytes = max_bytes;
    if (!pattern || !pattern[0])
        return 0;
    if (strlen(pattern) > LINE_PATTERN_MAX_BYTES) {
        snprintf(err, errlen, "pattern is longer than %d bytes", LINE_PATTERN_MAX_BYTES);
        return -EINVAL;
    }
    size_t size = expanded_size(pattern);
    if (size == 0) {
        snprintf(err, errlen, "pattern has a back-reference (\\1 to \\9), which extended expressions do not have");
        return -EINVAL;
    }
    if (size > LINE_PATTERN_MAX_SIZE) {
        snprintf(err, errlen, "pattern repeats too much (over %d atoms once its repetitions are expanded)",
                 LINE_PATTERN_MAX_SIZE);
        return -EINVAL;
    }
    int rc = regcomp(&f->pattern, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[200];
        regerror(rc, &f->pattern, why, sizeof why);
        snprintf(err, errlen, "pattern is not a valid extended regular expression: %s", why);
        return -EINVAL;
    }
    f->has_pattern = true;
    return 0;
}

/* line: NUL-terminated at len when there is a pattern; no '\r' at its end. */
static void keep_line(line_filter *f, const char *line, size_t len, line_fn *emit, void *arg)
{
    if (f->has_pattern && regexec(&f->pattern, line, 0, NULL, 0) != 0)
        return;
    emit(arg, line, len);
}

/* Keep n more bytes of the unended line, up to max_bytes (cut at a character). */
static void keep_partial(line_filter *f, const char *s, size_t n)
{
    if (f->partial_cut)
        return;
    size_t room = f->max_bytes > f->partial.len ? f->max_bytes - f->partial.len : 0;
    if (n > room) {
        n = utf8_floor(s, n, room);
        f->partial_cut = true;
    }
    sb_putn(&f->partial, s, n);
}

static void end_partial(line_filter *f, line_fn *emit, void *arg)
{
    if (f->partial.len && f->partial.buf[f->partial.len - 1] == '\r')
        f->partial.buf[--f->partial.len] = '\0'; /* CRLF output: `$` still ends the line */
    keep_line(f, f->partial.buf ? f->partial.buf : "", f->partial.len, emit, arg);
    f->partial.len = 0;
    if (f->partial.buf)
        f->partial.buf[0] = '\0';
    f->partial_cut = false;
}

void line_filter_feed(line_filter *f, const char *data, size_t n, line_fn *emit, void *arg)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t part = nl ? (size_t)(nl - data) : n;
        if (nl && !f->has_pattern && !f->partial.len && !f->partial_cut && part <= f->max_bytes) {
            /* a whole line in data, nothing to match: given in place, uncopied */
            emit(arg, data, part && data[part - 1] == '\r' ? part - 1 : part);
        } else {
            keep_partial(f, data, part);
            if (!nl)
                return;
            end_partial(f, emit, arg);
        }
        data += part + 1;
        n -= part + 1;
    }
}

void line_filter_end(line_filter *f, line_fn *emit, void *arg)
{
    if (f->partial.len || f->partial_cut)
        end_partial(f, emit, arg);
}

void line_to_strbuf(void *arg, const char *line, size_t len)
{
    sb_putn(arg, line, len);
    sb_putn(arg, "\n", 1);
}

void line_filter_free(line_filter *f)
{
    if (f->has_pattern)
        regfree(&f->pattern);
    sb_free(&f->partial);
    memset(f, 0, sizeof *f);
}

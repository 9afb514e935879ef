/* bare_json.c — the strings and the little JSON bare_host needs, by hand:
 * the host proves the plugin needs no JSON library, so it uses none either.
 * See bare_json.h. */
#define _XOPEN_SOURCE 700
#include "bare_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q) {
        fputs("bare_host: out of memory\n", stderr);
        abort();
    }
    return q;
}

void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sb_puts(strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

void sb_printf(strbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sb_add(b, small, (size_t)n);
        return;
    }
    char *big = xrealloc(NULL, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_add(b, big, (size_t)n);
    free(big);
}

char *sb_take(strbuf *b)
{
    char *s = b->s ? b->s : strdup("");
    *b = (strbuf){0};
    if (!s)
        abort();
    return s;
}

void list_push(list *l, char *s)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = s;
}

void list_free(list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (list){0};
}

char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

void json_str(strbuf *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            sb_add(b, esc, 2);
        } else if (*p < 0x20) {
            sb_printf(b, "\\u%04x", *p);
        } else {
            sb_add(b, (const char *)p, 1);
        }
    }
    sb_add(b, "\"", 1);
}

static void put_utf8(strbuf *b, unsigned cp)
{
    char u[4];
    if (cp < 0x80) {
        u[0] = (char)cp;
        sb_add(b, u, 1);
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f));
        sb_add(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f)), u[2] = (char)(0x80 | (cp & 0x3f));
        sb_add(b, u, 3);
    } else {
        u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f));
        sb_add(b, u, 4);
    }
}

static int hex4(const char *s, unsigned *cp)
{
    *cp = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        *cp = *cp * 16 + (unsigned)d;
    }
    return 0;
}

/* One escape after the backslash at *s (moved past it) into out (may be NULL). */
static int scan_escape(const char **s, strbuf *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at = **s ? strchr(from, **s) : NULL;
    if (at) {
        if (out)
            sb_add(out, &to[at - from], 1);
        (*s)++;
        return 0;
    }
    unsigned cp, lo;
    if (**s != 'u' || hex4(*s + 1, &cp) != 0)
        return -1;
    *s += 5;
    if (cp >= 0xd800 && cp < 0xdc00 && (*s)[0] == '\\' && (*s)[1] == 'u' && hex4(*s + 2, &lo) == 0 && lo >= 0xdc00 &&
        lo < 0xe000) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        *s += 6;
    }
    if (out)
        put_utf8(out, cp);
    return 0;
}

/* The JSON string at *p (its opening quote), decoded into out (NULL: only
 * skipped); *p moves past it. 0, or -1 when it is malformed. */
static int scan_string(const char **p, strbuf *out)
{
    const char *s = *p;
    if (*s++ != '"')
        return -1;
    while (*s != '"') {
        if ((unsigned char)*s < 0x20)
            return -1;
        if (*s == '\\') {
            s++;
            if (scan_escape(&s, out) != 0)
                return -1;
            continue;
        }
        const char *run = s;
        while (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
            s++;
        if (out)
            sb_add(out, run, (size_t)(s - run));
    }
    *p = s + 1;
    return 0;
}

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static int scan_value(const char **p, prompt_seen *seen, int depth, const char *key);

/* An object or array at *p; a member's key is read only in an object. */
static int scan_container(const char **p, prompt_seen *seen, int depth, char close)
{
    (*p)++;
    skip_ws(p);
    if (**p == close) {
        (*p)++;
        return 0;
    }
    for (;;) {
        strbuf key = {0};
        skip_ws(p);
        if (close == '}' && (scan_string(p, &key) != 0 || (skip_ws(p), *(*p)++ != ':'))) {
            free(key.s);
            return -1;
        }
        int rc = scan_value(p, seen, depth, key.s);
        free(key.s);
        skip_ws(p);
        if (rc != 0 || (**p != ',' && **p != close))
            return -1;
        if (*(*p)++ == close)
            return 0;
    }
}

/* Any JSON value at *p; `key` names it when it is an object's member, depth
 * is that object's (the body itself: 1). */
static int scan_value(const char **p, prompt_seen *seen, int depth, const char *key)
{
    skip_ws(p);
    if (depth > 64)
        return -1;
    if (**p == '{' || **p == '[')
        return scan_container(p, seen, depth + 1, **p == '{' ? '}' : ']');
    if (**p == '"') {
        int text = key && strcmp(key, "text") == 0;
        if (text && seen->text.len)
            sb_add(&seen->text, "\n", 1);
        return scan_string(p, text ? &seen->text : NULL);
    }
    if (key && depth == 1 && strcmp(key, "noReply") == 0 && strncmp(*p, "true", 4) == 0)
        seen->no_reply = 1;
    const char *start = *p;
    while (**p && strchr("-+.eE0123456789truefalsn", **p))
        (*p)++;
    return *p > start ? 0 : -1;
}

int prompt_scan(const char *body_json, prompt_seen *seen)
{
    const char *p = body_json ? body_json : "";
    if (scan_value(&p, seen, 0, NULL) != 0)
        return -1;
    skip_ws(&p);
    return *p ? -1 : 0;
}

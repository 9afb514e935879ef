/* bare_json.h — strings and JSON for bare_host.c, with libc alone. Every
 * function may be called from any thread on data that thread owns; they
 * never fail softly: out of memory aborts the test program. */
#ifndef BARE_JSON_H
#define BARE_JSON_H

#include <stddef.h>

/* A growable string; {0} is empty. s is NUL-terminated once non-NULL. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

/* realloc, or abort on out of memory. */
void *xrealloc(void *p, size_t n);
/* strdup, or abort on out of memory: the copy is the caller's. */
char *xstrdup(const char *s);

/* Append n bytes of s, a string, a formatted string to b. */
void sb_add(strbuf *b, const char *s, size_t n);
void sb_puts(strbuf *b, const char *s);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text built so far, owned by the caller (never NULL); b is emptied. */
char *sb_take(strbuf *b);

/* A growable list of owned strings. */
typedef struct list {
    char **v;
    size_t n;
} list;
/* Append s, which the list then owns; free every item and the list. */
void list_push(list *l, char *s);
void list_free(list *l);

/* Append s as a JSON string literal (quoted, escaped) to b. */
void json_str(strbuf *b, const char *s);

/* What a prompt body says: its text parts joined by newlines, and noReply. */
typedef struct prompt_seen {
    strbuf text;
    int no_reply;
} prompt_seen;
/* Read a prompt body (OpenCode's {"parts":[{"type":"text","text":…}],
 * "noReply"?:…}, any JSON accepted) into seen, whose text the caller frees.
 * 0, or -1 when body_json is not one JSON value (seen may hold a part). */
int prompt_scan(const char *body_json, prompt_seen *seen);

#endif

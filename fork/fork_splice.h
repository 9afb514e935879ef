/*
 * fork_splice.h — a message's text with its cut tool results put in, the
 * rest copied byte for byte (internal to fork/). Pure; any thread.
 */
#ifndef OCBG_FORK_SPLICE_H
#define OCBG_FORK_SPLICE_H

#include <stddef.h>

#include "base/util.h"

/* One cut of a message: which result (its rank among the tool-result slots
 * fork visits, in order: per part of "parts", a tool part's state.output and
 * state.error, a tool-result part's output, content and text) and the text
 * it becomes (owned by whoever made the list). */
typedef struct fork_cut {
    size_t slot;
    char *text;
} fork_cut;

/* Appends json[0..len), one message as cJSON parsed it (so valid JSON), to
 * sb with the results cuts[0..n) name (ranks ascending) replaced by their
 * texts as JSON strings. Members are found as cJSON finds them (the first of
 * a name, escapes in keys read), the texts escaped as cJSON prints them. */
void fork_splice(strbuf *sb, const char *json, size_t len, const fork_cut *cuts, size_t n);

#endif

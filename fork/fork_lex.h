/*
 * fork_lex.h — a message's long tool results read from its text, not by
 * cJSON (internal to fork/). cJSON decodes every string byte by byte into a
 * copy: for the results, most of a history, fork needs only their counts and
 * the first max_tool_chars characters. So a message is handed to cJSON with
 * each long result literal replaced by "" (a valid literal for a valid one:
 * cJSON accepts and rejects the same texts, builds the same tree but for
 * those strings), and fork reads those literals itself. Pure; any thread.
 */
#ifndef OCBG_FORK_LEX_H
#define OCBG_FORK_LEX_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* One literal read here: a string value of a member named output, error,
 * content or text, at least FORK_LEX_LONG bytes, whose escapes are all of one
 * character (\" \\ \/ \b \f \n \r \t: no \u, so its text is its bytes but
 * for them). */
typedef struct fork_raw {
    const char *raw; /* its bytes in the input, quotes excluded */
    size_t raw_len;
    size_t value_rank; /* its rank among the message's string values, in order */
    size_t chars;      /* characters of the decoded text */
    size_t tokens;     /* its estimate (fork.h) */
    cJSON *node;       /* the "" standing for it in the parsed message */
    bool cut;          /* cut: its estimate is its cut's */
} fork_raw;

#define FORK_LEX_LONG 64

/* A message as fork_lex_parse read it; zero-initialise, reuse across
 * messages, fork_lex_free at the end. */
typedef struct fork_lexed {
    strbuf text; /* the message with the literals replaced */
    fork_raw *raw;
    size_t n, cap;
} fork_lexed;

/* Parses the message at p (the input ends at end) as
 * cJSON_ParseWithLengthOpts(p, end - p, value_end, false) does, and with the
 * same result but for lx->raw's strings (each "", lx->raw[i].node). Returns
 * the tree (the caller deletes it) or NULL. lx->n is 0 when nothing was
 * replaced. */
cJSON *fork_lex_parse(const char *p, const char *end, const char **value_end, fork_lexed *lx);

/* The literal of lx standing behind node, or NULL. */
fork_raw *fork_lex_find(const fork_lexed *lx, const cJSON *node);

/* The literal's text cut to max_chars characters plus the marker (as
 * fork_cut_text makes it; the literal has more), malloc'd; *cut_len its
 * length. */
char *fork_raw_cut(const fork_raw *r, size_t max_chars, size_t *cut_len);

void fork_lex_free(fork_lexed *lx);

#endif

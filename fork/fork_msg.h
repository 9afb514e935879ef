/*
 * fork_msg.h — fork's reading of one message of an OpenCode history (parsed
 * by cJSON), and the character and token counts it uses. Internal to fork/;
 * pure functions, callable from any thread.
 */
#ifndef OCBG_FORK_MSG_H
#define OCBG_FORK_MSG_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* What the token estimate and the character count need of a text. */
typedef struct fork_count {
    size_t ascii; /* bytes below 0x80 */
    size_t lead;  /* bytes 0xC0..0xFF: each starts a multi-byte character */
} fork_count;

/* The counts of s[0..n), in one pass. Characters = ascii + lead (what
 * utf8_count says); the estimate = fork_count_tokens. */
fork_count fork_count_text(const char *s, size_t n);

/* The characters of s[0..n) (ascii + lead of fork_count_text), faster on
 * ASCII text. */
size_t fork_count_chars(const char *s, size_t n);

static inline size_t fork_count_tokens(fork_count c)
{
    return (c.ascii + 3) / 4 + c.lead;
}

/* The marker a cut text ends with (the original's length in characters). */
#define FORK_CUT_MARKER                                                                                                \
    "\n[... cut for the forked context: the original was %zu characters; re-run the tool for all of it]"

/* Where character number `chars` (from 0) of s[0..n) starts: the first
 * byte after `chars` characters that does not continue one; n when there is
 * none. */
size_t fork_char_offset(const char *s, size_t n, size_t chars);

/* Appends the marker for a text of `chars` characters to sb (the cut text
 * so far) and returns sb's text (malloc'd); *cut_len (when not NULL) its
 * length. */
char *fork_cut_finish(strbuf *sb, size_t chars, size_t *cut_len);

/* s[0..len) (of `chars` characters, more than max_chars) cut to max_chars
 * characters plus the marker, malloc'd; *cut_len (when not NULL) its length. */
char *fork_cut_n(const char *s, size_t len, size_t chars, size_t max_chars, size_t *cut_len);

/* part.type == type (a string). */
bool fork_is_type(const cJSON *part, const char *type);

/* msg.info[key] when it is a string, else NULL (borrowed from msg). */
const char *fork_info_string(const cJSON *msg, const char *key);

/* A user message asking for a compaction (a part of type "compaction"). */
bool fork_is_compaction_request(const cJSON *msg);

/* A summary OpenCode counts as done: finished and without an error. */
bool fork_is_completed_summary(const cJSON *msg);

#endif

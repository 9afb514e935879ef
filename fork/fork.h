/*
 * fork.h — what a forked sub-agent sees of its parent's conversation: pure
 * functions over an OpenCode message history ([{info, parts}], oldest first).
 * No host, no lock, no threads: callable from any thread.
 *
 * 1. After a compaction, only what OpenCode shows its own model is kept: the
 *    messages from the compaction request (a user message with a
 *    "compaction" part) that the newest completed summary (summary:true or
 *    mode "compaction", finish set, no error) answers, by its parentID, else
 *    the nearest request before it. A failed or unfinished summary drops
 *    nothing. When that compaction is after the fork point (the sub-agent's
 *    own), nothing inherited is left.
 * 2. Tool results longer than max_tool_chars characters are cut: a tool part's
 *    state.output and state.error, and the text of any other tool-result part.
 *    The tool's name, its input and its call id are never touched. The cut
 *    text ends with a marker giving the original length. Characters are code
 *    points: a cut never splits a UTF-8 sequence.
 * 3. When the estimated total exceeds max_tokens, the oldest messages are
 *    dropped until it fits; the newest message is always kept.
 * Only the inherited context is processed: the messages before the first one
 * whose text starts with FORK_PREAMBLE_MARK (all of them when there is none).
 * What the sub-agent does after the fork point reaches its model untouched,
 * so its own fresh tool results are never cut; they do count in the total.
 *
 * The token estimate (no model files, no network): an ASCII character is a
 * quarter token (English text and code average about four characters per
 * token in BPE vocabularies), any other code point a whole token (CJK and
 * emoji are usually one or more tokens each). It counts the message's string
 * values (text, tool input, output), not the JSON punctuation around them. It
 * errs on the high side for non-Latin text, so a history it says fits does.
 */
#ifndef OCBG_FORK_H
#define OCBG_FORK_H

#include <stddef.h>

/* How the preamble begins: it marks the fork point in the child's history. */
#define FORK_PREAMBLE_MARK "[ocbg] You are a background sub-agent forked"

typedef struct fork_limits {
    size_t max_tool_chars; /* default 1500 */
    size_t max_tokens;     /* default 100000 */
} fork_limits;

typedef struct fork_stats {
    size_t messages_in, messages_kept;
    size_t results_cut;
    size_t tokens_after; /* the estimate of what is kept */
} fork_stats;

/* Estimated tokens of s[0..n) (valid UTF-8 or not: bytes >= 0x80 that start a
 * sequence count one each). */
size_t fork_estimate_tokens(const char *s, size_t n);

/* s cut to max_chars characters plus the marker, malloc'd; NULL when s is not
 * longer than max_chars characters (nothing to cut). */
char *fork_cut_text(const char *s, size_t max_chars);

/* Process a history. Returns 0 with *out = the processed history (malloc'd
 * JSON), or -EINVAL when messages_json is not a JSON array as cJSON_Parse
 * reads one (then *out NULL). Each kept
 * message is its input text byte for byte (the host's own spacing and
 * escapes), with only its cut results replaced (as JSON strings printed by
 * cJSON). Malformed messages and parts inside the array are kept as they
 * are. st may be NULL. It costs less than one cJSON parse of the history:
 * one message is parsed at a time, its long results read from their bytes. */
int fork_process(const char *messages_json, const fork_limits *lim, char **out, fork_stats *st);

/* The preamble told to a forked sub-agent (malloc'd). */
char *fork_preamble(const fork_limits *lim);

/* A processed history rendered as one text, for hosts that cannot fork: the
 * sub-agent gets it as one message (malloc'd; "" for an empty history). A
 * compaction request is rendered as a line saying the summary follows. */
char *fork_render(const char *processed_json);

#endif

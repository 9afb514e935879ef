/*
 * line_filter.h — a watched command's output cut into lines, and the lines
 * an optional pattern keeps (the monitor tools' `pattern`).
 *
 * The pattern is model-written: hostile input. glibc's regex expands a
 * bounded repetition by copying its atom (`((a{255}){255}){255}` asks for
 * gigabytes and seconds in regcomp) and matches back-references by
 * backtracking (`(a*)*\1` runs for minutes on one line). So a pattern is
 * refused unless it is short, has no back-reference, and its repetitions
 * expand to few copies: then matching one line (at most max_bytes) costs
 * milliseconds at worst.
 *
 * Pure data, owned by one thread (the shell thread matches off the engine
 * lock, so a slow pattern delays only its own command's lines): no lock, no
 * clock, no host.
 */
#ifndef OCBG_LINE_FILTER_H
#define OCBG_LINE_FILTER_H

#include "base/face_guard.h"
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

/* A pattern's length at most, in bytes. */
#define LINE_PATTERN_MAX_BYTES 256
/* Its size once repetitions are expanded (each atom 1, `x{m,n}` n copies of
 * x, `x+` two), at most: `(.?){250}x` is near it, ~20 ms on a 4,000-byte
 * line on a 2020 laptop core. */
#define LINE_PATTERN_MAX_SIZE 256

typedef struct line_filter {
    size_t max_bytes; /* a longer line is cut, at a character */
    bool has_pattern;
    regex_t pattern;
    strbuf partial;   /* a line not yet ended by a newline */
    bool partial_cut; /* partial reached max_bytes: the rest of the line is dropped */
} line_filter;

/* Set up f: lines cut at max_bytes, kept when they match pattern, a POSIX
 * extended regular expression (NULL or "": every line). Returns 0, or
 * -EINVAL with err (errlen bytes) saying why the pattern is refused; then f
 * holds nothing to free. */
int line_filter_init(line_filter *f, const char *pattern, size_t max_bytes, char *err, size_t errlen);

/* Where a kept line goes: line (len bytes, no '\n'; valid only during the
 * call) to arg. */
typedef void line_fn(void *arg, const char *line, size_t len);

/* n more bytes of output: each line they complete that the pattern keeps is
 * given to emit (a trailing '\r' dropped, cut at max_bytes), in order. */
void line_filter_feed(line_filter *f, const char *data, size_t n, line_fn *emit, void *arg);

/* The stream ended: its unended last line, if any and kept, is given to
 * emit. */
void line_filter_end(line_filter *f, line_fn *emit, void *arg);

/* A line_fn that appends the line and a '\n' to the strbuf arg. */
void line_to_strbuf(void *arg, const char *line, size_t len);

/* Free what f holds (f itself is the caller's); f may then be set up again. */
void line_filter_free(line_filter *f);

#endif

/*
 * watch.h — a watched command's output turned into events (the monitor
 * tools): the output is cut into lines, an optional pattern keeps some of
 * them, and the lines that come close together join one event. A rate bound
 * holds back the events past it and counts them ("N events suppressed"); a
 * flood that lasts, or a watch that reached its total, stops.
 *
 * Pure data: no thread, no lock, no clock of its own (every call takes the
 * monotonic time), no host. The caller (the engine, under its lock) feeds
 * output as it arrives, asks watch_next_due when to look again, and pushes
 * what watch_take hands it.
 */
#ifndef OCBG_WATCH_H
#define OCBG_WATCH_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"
#include "model/line_filter.h"

/* The bounds of one watch. Every one is on: watch_limits_default says the
 * values and why. */
typedef struct watch_limits {
    int64_t quiet_ms;    /* an event closes this long after its last line... */
    int64_t span_ms;     /* ...or this long after its first, for a steady stream */
    unsigned max_lines;  /* ...or when it holds this many lines */
    size_t max_bytes;    /* an event's text at most (a longer line is cut, at a character) */
    unsigned per_minute; /* events given in any 60 s at most; more are held back and counted */
    int64_t flood_ms;    /* events held back this long, without a 5 s pause: the watch stops */
    unsigned max_events; /* events in a watch's life; then it stops */
} watch_limits;

/* quiet 200 ms (lines within it are one burst of output), span 1 s, 50
 * lines and 4,000 bytes an event (a screenful the model reads), 12 events a
 * minute (each wakes the model: a model turn every 5 s at most), flood 30 s,
 * 100 events a watch. */
watch_limits watch_limits_default(void);

/* One event: its lines (malloc'd, the caller frees; joined by '\n', none
 * after the last), how many, and how many events were held back since the
 * last one given and merged into this one (0: none). */
typedef struct watch_event {
    char *lines;
    unsigned line_count;
    unsigned suppressed;
} watch_event;

typedef struct watch {
    watch_limits lim;
    line_filter lines; /* the output cut into lines, the pattern applied */
    strbuf pending;    /* the open event's lines, each ended by '\n' */
    unsigned pending_lines;
    int64_t first_ms; /* when the open event's first line came (0: no open event) */
    int64_t last_ms;  /* when its newest line came */
    bool ended;       /* the stream ended: what is open goes at once */
    char *held;       /* the newest event held back by the rate bound (malloc'd), or NULL */
    unsigned held_lines;
    unsigned suppressed;  /* events held back since the last one given, the one in `held` included */
    int64_t flood_since;  /* when the current run of holding back began (0: none) */
    int64_t last_held_ms; /* when an event was last held back */
    bool flooded;         /* held back for flood_ms, without a pause of 5 s: the watch stops */
    watch_event *ready;   /* closed events with a slot, not yet taken: a ring of per_minute, the oldest at ready_head */
    unsigned ready_head, ready_count;
    int64_t *given_ms; /* ring of the last per_minute events' times */
    unsigned given_pos, given_count;
    unsigned events; /* events given so far */
    bool stopped;
} watch;

/* What watch_take decided. */
typedef enum watch_verdict {
    WATCH_NOTHING,    /* nothing is due now */
    WATCH_EVENT,      /* *ev holds an event to push */
    WATCH_STOP_FLOOD, /* held back for flood_ms: stop the command, tell the model to filter more precisely */
    WATCH_STOP_LIMIT  /* max_events given: stop the command, say so */
} watch_verdict;

/* Set up w with limits lim and an optional POSIX extended regular expression
 * (NULL or "": every line). Returns 0, or -EINVAL with err (errlen bytes)
 * saying why the pattern is refused; then w holds nothing to free. */
int watch_init(watch *w, const watch_limits *lim, const char *pattern, char *err, size_t errlen);

/* n more bytes of output at monotonic time now: complete lines that the
 * pattern keeps join the open event (a trailing '\r' is dropped; a line is
 * cut at max_bytes). Nothing after the watch stopped or ended. */
void watch_feed(watch *w, const char *data, size_t n, int64_t now);

/* The stream ended at now: an unended last line counts as a line, and the
 * open event is due at once. */
void watch_end(watch *w, int64_t now);

/* What is due at now: an event to give (filled into *ev), a stop, or
 * nothing. Call it until it returns WATCH_NOTHING. After a stop the watch
 * gives nothing more. */
watch_verdict watch_take(watch *w, int64_t now, watch_event *ev);

/* The monotonic time at which watch_take may have something, or 0 when
 * nothing waits (no open event, nothing held back). */
int64_t watch_next_due(const watch *w);

/* Whether nothing waits and nothing more can come: the stream ended (or the
 * watch stopped) and every event was given. */
bool watch_done(const watch *w);

/* Free what w holds (w itself is the caller's). */
void watch_free(watch *w);

#endif

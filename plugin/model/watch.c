/* watch.c — a watched command's output as events (watch.h). */
#include "model/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MINUTE_MS 60000
/* A pause this long without an event held back ends a flood. */
#define FLOOD_PAUSE_MS 5000

watch_limits watch_limits_default(void)
{
    return (watch_limits){.quiet_ms = 200,
                          .span_ms = 1000,
                          .max_lines = 50,
                          .max_bytes = 4000,
                          .per_minute = 12,
                          .flood_ms = 30000,
                          .max_events = 100};
}

int watch_init(watch *w, const watch_limits *lim, const char *pattern, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->lim = *lim;
    if (w->lim.per_minute == 0)
        w->lim.per_minute = 1;
    int rc = line_filter_init(&w->lines, pattern, w->lim.max_bytes, err, errlen);
    if (rc != 0)
        return rc;
    w->given_ms = xcalloc(w->lim.per_minute, sizeof *w->given_ms);
    w->ready = xcalloc(w->lim.per_minute, sizeof *w->ready);
    return 0;
}

void watch_free(watch *w)
{
    line_filter_free(&w->lines);
    sb_free(&w->pending);
    free(w->held);
    for (unsigned i = 0; i < w->ready_count; i++)
        free(w->ready[(w->ready_head + i) % w->lim.per_minute].lines);
    free(w->ready);
    free(w->given_ms);
    memset(w, 0, sizeof *w);
}

/* Is a rate slot free at now: fewer than per_minute events in the last minute? */
static bool slot_free(const watch *w, int64_t now)
{
    if (w->ready_count >= w->lim.per_minute)
        return false; /* the ready list's room: nobody took them yet */
    if (w->given_count < w->lim.per_minute)
        return true;
    return w->given_ms[w->given_pos] <= now - MINUTE_MS; /* given_pos: the oldest, when full */
}

static void take_slot(watch *w, int64_t now)
{
    w->given_ms[w->given_pos] = now;
    w->given_pos = (w->given_pos + 1) % w->lim.per_minute;
    if (w->given_count < w->lim.per_minute)
        w->given_count++;
}

/* ev to the ready list's end (slot_free saw room for it). */
static void put_ready(watch *w, watch_event ev)
{
    w->ready[(w->ready_head + w->ready_count++) % w->lim.per_minute] = ev;
}

/* The event that closed (lines, malloc'd) goes to the ready list if a slot
 * is free, else it is held back in place of the one held before. */
static void close_lines(watch *w, char *lines, unsigned count, int64_t now)
{
    if (!w->held && slot_free(w, now)) {
        take_slot(w, now);
        put_ready(w, (watch_event){.lines = lines, .line_count = count});
        return;
    }
    free(w->held);
    w->held = lines;
    w->held_lines = count;
    w->suppressed++;
    if (!w->flood_since || now - w->last_held_ms > FLOOD_PAUSE_MS)
        w->flood_since = now;
    w->last_held_ms = now;
    if (now - w->flood_since >= w->lim.flood_ms)
        w->flooded = true;
}

/* The open event closes: its lines without the last '\n'. */
static void close_open(watch *w, int64_t now)
{
    if (!w->pending_lines)
        return;
    w->pending.len--; /* the last line's '\n' */
    w->pending.buf[w->pending.len] = '\0';
    unsigned count = w->pending_lines;
    char *lines = sb_take(&w->pending);
    w->pending_lines = 0;
    w->first_ms = 0;
    close_lines(w, lines, count, now);
}

static void add_line(watch *w, const char *line, size_t len, int64_t now)
{
    if (w->pending_lines && (w->pending_lines >= w->lim.max_lines || w->pending.len + len + 1 > w->lim.max_bytes))
        close_open(w, now);
    if (!w->pending_lines)
        w->first_ms = now;
    w->last_ms = now;
    sb_putn(&w->pending, line, len);
    sb_putn(&w->pending, "\n", 1);
    w->pending_lines++;
}

typedef struct feed_arg {
    watch *w;
    int64_t now;
} feed_arg;

/* line_fn: a kept line joins the open event. */
static void add_kept(void *arg, const char *line, size_t len)
{
    feed_arg *fa = arg;
    add_line(fa->w, line, len, fa->now);
}

void watch_feed(watch *w, const char *data, size_t n, int64_t now)
{
    if (w->stopped || w->ended)
        return;
    feed_arg fa = {w, now};
    line_filter_feed(&w->lines, data, n, add_kept, &fa);
}

void watch_end(watch *w, int64_t now)
{
    if (w->stopped || w->ended)
        return;
    feed_arg fa = {w, now};
    line_filter_end(&w->lines, add_kept, &fa);
    w->ended = true;
}

static bool open_due(const watch *w, int64_t now)
{
    return w->pending_lines && (w->ended || now >= w->last_ms + w->lim.quiet_ms || now >= w->first_ms + w->lim.span_ms);
}

/* Stop: nothing more is given. */
static watch_verdict stop(watch *w, watch_verdict why)
{
    w->stopped = true;
    free(w->held);
    w->held = NULL;
    sb_free(&w->pending);
    w->pending_lines = 0;
    return why;
}

watch_verdict watch_take(watch *w, int64_t now, watch_event *ev)
{
    if (w->stopped)
        return WATCH_NOTHING;
    if (w->events >= w->lim.max_events)
        return stop(w, WATCH_STOP_LIMIT);
    if (open_due(w, now))
        close_open(w, now);
    if (w->held && slot_free(w, now)) { /* what was held back goes, with the count */
        take_slot(w, now);
        put_ready(w, (watch_event){.lines = w->held, .line_count = w->held_lines, .suppressed = w->suppressed - 1});
        w->held = NULL;
        w->suppressed = 0;
    }
    if (w->ready_count) {
        *ev = w->ready[w->ready_head]; /* a ring: taking one moves none (per_minute may be large) */
        w->ready_head = (w->ready_head + 1) % w->lim.per_minute;
        w->ready_count--;
        w->events++;
        return WATCH_EVENT;
    }
    if (w->flooded)
        return stop(w, WATCH_STOP_FLOOD);
    return WATCH_NOTHING;
}

int64_t watch_next_due(const watch *w)
{
    if (w->stopped)
        return 0;
    if (w->ready_count || w->flooded || w->events >= w->lim.max_events)
        return 1; /* at once: any time already past */
    int64_t due = 0;
    if (w->pending_lines) {
        int64_t quiet = w->last_ms + w->lim.quiet_ms, span = w->first_ms + w->lim.span_ms;
        due = w->ended ? 1 : quiet < span ? quiet : span;
    }
    if (w->held) {
        int64_t slot = w->given_ms[w->given_pos] + MINUTE_MS; /* the oldest's slot frees */
        if (!due || slot < due)
            due = slot;
    }
    return due;
}

bool watch_done(const watch *w)
{
    if (w->stopped)
        return true;
    return w->ended && !w->pending_lines && !w->held && !w->ready_count;
}

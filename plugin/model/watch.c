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
    if (pattern && pattern[0]) {
        int rc = regcomp(&w->pattern, pattern, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[200];
            regerror(rc, &w->pattern, why, sizeof why);
            snprintf(err, errlen, "pattern is not a valid extended regular expression: %s", why);
            return -EINVAL;
        }
        w->has_pattern = true;
    }
    w->given_ms = xcalloc(w->lim.per_minute, sizeof *w->given_ms);
    w->ready = xcalloc(w->lim.per_minute, sizeof *w->ready);
    return 0;
}

void watch_free(watch *w)
{
    if (w->has_pattern)
        regfree(&w->pattern);
    sb_free(&w->partial);
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
    if (len && line[len - 1] == '\r')
        len--;
    if (w->has_pattern && regexec(&w->pattern, line, 0, NULL, 0) != 0)
        return;
    if (w->pending_lines && (w->pending_lines >= w->lim.max_lines || w->pending.len + len + 1 > w->lim.max_bytes))
        close_open(w, now);
    if (!w->pending_lines)
        w->first_ms = now;
    w->last_ms = now;
    sb_putn(&w->pending, line, len);
    sb_putn(&w->pending, "\n", 1);
    w->pending_lines++;
}

/* Keep n more bytes of the unended line, up to max_bytes (cut at a character). */
static void keep_partial(watch *w, const char *s, size_t n)
{
    if (w->partial_cut)
        return;
    size_t room = w->lim.max_bytes > w->partial.len ? w->lim.max_bytes - w->partial.len : 0;
    if (n > room) {
        n = utf8_floor(s, n, room);
        w->partial_cut = true;
    }
    sb_putn(&w->partial, s, n);
}

static void end_partial(watch *w, int64_t now)
{
    add_line(w, w->partial.buf ? w->partial.buf : "", w->partial.len, now);
    w->partial.len = 0;
    if (w->partial.buf)
        w->partial.buf[0] = '\0';
    w->partial_cut = false;
}

void watch_feed(watch *w, const char *data, size_t n, int64_t now)
{
    if (w->stopped || w->ended)
        return;
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t part = nl ? (size_t)(nl - data) : n;
        keep_partial(w, data, part);
        if (!nl)
            return;
        end_partial(w, now);
        data += part + 1;
        n -= part + 1;
    }
}

void watch_end(watch *w, int64_t now)
{
    if (w->stopped || w->ended)
        return;
    if (w->partial.len || w->partial_cut)
        end_partial(w, now);
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

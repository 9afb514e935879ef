/* The watch (model/watch.h): a command's output cut into lines, filtered,
 * coalesced into events, bounded by rate, flood and total. Pure: the clock is
 * the test's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/watch.h"
#include "tap.h"

/* Take everything due at now into events[] (texts joined by "|"); returns the
 * last verdict that was not WATCH_NOTHING (WATCH_NOTHING when none). */
static watch_verdict drain(watch *w, int64_t now, char *texts, size_t size, unsigned *count, unsigned *suppressed)
{
    watch_verdict last = WATCH_NOTHING, v;
    watch_event ev;
    while ((v = watch_take(w, now, &ev)) != WATCH_NOTHING) {
        last = v;
        if (v != WATCH_EVENT)
            continue;
        if (texts) {
            if (texts[0])
                strncat(texts, "|", size - strlen(texts) - 1);
            strncat(texts, ev.lines, size - strlen(texts) - 1);
        }
        if (count)
            (*count)++;
        if (suppressed)
            *suppressed += ev.suppressed;
        free(ev.lines);
    }
    return last;
}

static void lines_one_second_apart(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    is_int(watch_init(&w, &lim, NULL, err, sizeof err), 0, "a watch without a pattern");
    char texts[256] = "";
    unsigned n = 0;
    for (int i = 0; i < 5; i++) {
        char line[32];
        snprintf(line, sizeof line, "tick %d\n", i);
        watch_feed(&w, line, strlen(line), 1000 + i * 1000);
        is_int(watch_next_due(&w), 1000 + i * 1000 + 200, "tick %d is due 200 ms after it came", i);
        drain(&w, 1000 + i * 1000 + 199, texts, sizeof texts, &n, NULL);
        is_int(n, i, "tick %d: nothing before the quiet 200 ms", i);
        drain(&w, 1000 + i * 1000 + 200, texts, sizeof texts, &n, NULL);
    }
    is_int(n, 5, "a line a second for 5 s: 5 events");
    is_str(texts, "tick 0|tick 1|tick 2|tick 3|tick 4", "each event holds its line");
    ok(!watch_done(&w), "not done while the stream runs");
    watch_end(&w, 7000);
    ok(watch_done(&w), "done once it ended with nothing open");
    watch_free(&w);
}

static void close_lines_coalesce(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    watch_feed(&w, "first\r\n", 7, 1000);
    watch_feed(&w, "sec", 3, 1100);
    watch_feed(&w, "ond\nthird\n", 10, 1150);
    is_int(watch_next_due(&w), 1350, "the quiet time counts from the newest line");
    char texts[256] = "";
    unsigned n = 0;
    drain(&w, 1349, texts, sizeof texts, &n, NULL);
    is_int(n, 0, "nothing while lines keep coming");
    drain(&w, 1350, texts, sizeof texts, &n, NULL);
    is_int(n, 1, "three lines within 200 ms: one event");
    is_str(texts, "first\nsecond\nthird", "its lines, \\r dropped, a line split across reads joined");
    watch_free(&w);
}

static void steady_stream_closes_by_span(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    unsigned n = 0;
    for (int64_t t = 0; t < 3000; t += 100) {
        watch_feed(&w, "x\n", 2, 10000 + t);
        drain(&w, 10000 + t, NULL, 0, &n, NULL);
    }
    is_int(n, 2, "a line every 100 ms: an event closes each second of it (2 by 2.9 s)");
    drain(&w, 10000 + 2900 + 200, NULL, 0, &n, NULL);
    is_int(n, 3, "the rest closes when the stream pauses");
    watch_free(&w);
}

static void pattern_filters(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200] = "";
    is_int(watch_init(&w, &lim, "(", err, sizeof err), -EINVAL, "a bad pattern is refused");
    like(err, "pattern is not a valid extended regular expression: ", "and the refusal says why");
    is_int(watch_init(&w, &lim, "ERROR|FAIL(ED)?", err, sizeof err), 0, "an extended regular expression");
    const char *out = "ok 1\nERROR: disk\nok 2\ntest FAILED\n";
    watch_feed(&w, out, strlen(out), 500);
    char texts[256] = "";
    unsigned n = 0;
    drain(&w, 700, texts, sizeof texts, &n, NULL);
    is_str(texts, "ERROR: disk\ntest FAILED", "only the lines the pattern keeps");
    watch_feed(&w, "ok 3\n", 5, 2000);
    is_int(watch_next_due(&w), 0, "a line the pattern drops opens no event");
    watch_free(&w);
}

/* The pattern is model-written: the shapes that cost glibc's regex memory
 * or time (expanded repetitions, back-references, length) are refused with
 * the reason; the rest is an ordinary extended expression. */
static void hostile_patterns(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200] = "";
    is_int(watch_init(&w, &lim, "((a{255}){255}){255}", err, sizeof err), -EINVAL, "nested repetitions: refused");
    is_str(err, "pattern repeats too much (over 256 atoms once its repetitions are expanded)", "saying why");
    is_int(watch_init(&w, &lim, "(.?){300}x", err, sizeof err), -EINVAL, "a repetition over the size: refused");
    is_int(watch_init(&w, &lim, "(a|b){2,}c{1,99999}", err, sizeof err), -EINVAL, "a bound's upper count counts");
    is_int(watch_init(&w, &lim, "(a*)*\\1", err, sizeof err), -EINVAL, "a back-reference: refused");
    is_str(err, "pattern has a back-reference (\\1 to \\9), which extended expressions do not have", "saying why");
    char longest[LINE_PATTERN_MAX_BYTES + 2];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    is_int(watch_init(&w, &lim, longest, err, sizeof err), -EINVAL, "257 bytes: refused");
    is_str(err, "pattern is longer than 256 bytes", "saying why");
    longest[LINE_PATTERN_MAX_BYTES - 1] = '\0'; /* 255 a's: 255 atoms */
    is_int(watch_init(&w, &lim, longest, err, sizeof err), 0, "255 bytes of plain text: kept");
    watch_free(&w);
    const char *fine[] = {"(.?){200}x", "^[[:alpha:]_]{1,30}=", "[]a-z]+ \\{x\\}", "ERROR|FAIL(ED)?", "x{2}{3}"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        is_int(watch_init(&w, &lim, fine[i], err, sizeof err), 0, "a pattern within the bounds: %s", fine[i]);
        watch_free(&w);
    }
    is_int(watch_init(&w, &lim, "\\[\\(x", err, sizeof err), 0, "escaped brackets and parentheses are atoms");
    watch_free(&w);
    watch_init(&w, &lim, "done$", err, sizeof err);
    const char *crlf = "build done\r\nnot done yet\r\n";
    watch_feed(&w, crlf, strlen(crlf), 100);
    char texts[256] = "";
    unsigned n = 0;
    drain(&w, 400, texts, sizeof texts, &n, NULL);
    is_str(texts, "build done", "a CRLF line matches `$` at its end, and is told without the CR");
    watch_free(&w);
}

static void event_size_bounds(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    char burst[240 * 3 + 1] = "";
    for (int i = 0; i < 240; i++)
        strcat(burst, "ln\n");
    watch_feed(&w, burst, strlen(burst), 100);
    unsigned n = 0;
    watch_event ev;
    is_int(watch_take(&w, 100, &ev), WATCH_EVENT, "a full event goes before the quiet time");
    is_int(ev.line_count, 50, "an event holds at most 50 lines");
    free(ev.lines);
    n = 1;
    drain(&w, 100, NULL, 0, &n, NULL);
    is_int(n, 4, "240 lines at once: four full events");
    drain(&w, 300, NULL, 0, &n, NULL);
    is_int(n, 5, "and the last 40 after the quiet time");
    /* a line longer than max_bytes is cut at a character, the rest dropped */
    size_t big = lim.max_bytes + 10;
    char *line = malloc(big + 2);
    memset(line, 'a', big);
    memcpy(line + lim.max_bytes - 1, "\xc3\xa9", 2); /* an é across the cut */
    strcpy(line + big, "\n");
    watch_feed(&w, line, big + 1, 1000);
    free(line);
    ok(watch_take(&w, 1200, &ev) == WATCH_EVENT, "the long line's event");
    is_int(strlen(ev.lines), lim.max_bytes - 1, "cut before the character that would cross max_bytes");
    free(ev.lines);
    watch_free(&w);
}

static void rate_holds_back_and_counts(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    unsigned n = 0, supp = 0;
    char texts[1024] = "";
    for (int i = 0; i < 20; i++) {
        char line[32];
        snprintf(line, sizeof line, "e%d\n", i);
        watch_feed(&w, line, strlen(line), i * 1000);
        drain(&w, i * 1000 + 200, texts, sizeof texts, &n, &supp);
    }
    is_int(n, 12, "20 events in 20 s: 12 given (12 a minute)");
    is_int(watch_next_due(&w), 200 + 60000, "the held-back event waits for the oldest slot to free");
    is_int(drain(&w, 60199, NULL, 0, &n, NULL), WATCH_NOTHING, "nothing before then (no flood: it paused)");
    texts[0] = '\0';
    drain(&w, 60200, texts, sizeof texts, &n, &supp);
    is_int(n, 13, "then the newest held-back event goes");
    is_str(texts, "e19", "with the newest lines");
    is_int(supp, 7, "saying 7 more were suppressed");
    watch_end(&w, 61000);
    ok(watch_done(&w), "nothing left");
    watch_free(&w);
}

static void flood_stops(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    unsigned n = 0;
    int64_t stopped_at = 0, twelfth_at = 0;
    for (int64_t t = 0; t <= 60000 && !stopped_at; t += 100) {
        watch_feed(&w, "spam\n", 5, t);
        if (drain(&w, t, NULL, 0, &n, NULL) == WATCH_STOP_FLOOD)
            stopped_at = t;
        if (n == 12 && !twelfth_at)
            twelfth_at = t;
    }
    is_int(n, 12, "a flood: the minute's 12 events given");
    /* the next event closes about a second after the 12th and is held back: 30 s from then */
    ok(stopped_at - twelfth_at >= 30000 && stopped_at - twelfth_at <= 32500,
       "then 30 s of holding back stops it (%lld ms after the 12th event)", (long long)(stopped_at - twelfth_at));
    watch_feed(&w, "more\n", 5, stopped_at + 100);
    is_int(drain(&w, stopped_at + 5000, NULL, 0, &n, NULL), WATCH_NOTHING, "a stopped watch gives nothing");
    ok(watch_done(&w), "and is done");
    is_int(watch_next_due(&w), 0, "with nothing due");
    watch_free(&w);
}

static void total_limit_stops(void)
{
    watch_limits lim = watch_limits_default();
    lim.max_events = 3;
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    unsigned n = 0;
    watch_verdict last = WATCH_NOTHING;
    for (int i = 0; i < 5 && last != WATCH_STOP_LIMIT; i++) {
        watch_feed(&w, "x\n", 2, i * 1000);
        last = drain(&w, i * 1000 + 200, NULL, 0, &n, NULL);
    }
    is_int(n, 3, "max_events 3: three events");
    is_int(last, WATCH_STOP_LIMIT, "then the watch stops at its total");
    watch_free(&w);
}

static void stream_end_flushes(void)
{
    watch_limits lim = watch_limits_default();
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    watch_feed(&w, "done\nno newline", 15, 100);
    watch_end(&w, 120);
    is_int(watch_next_due(&w), 1, "an ended stream's event is due at once");
    char texts[64] = "";
    unsigned n = 0;
    drain(&w, 120, texts, sizeof texts, &n, NULL);
    is_str(texts, "done\nno newline", "the unended last line counts");
    ok(watch_done(&w), "done after the last event");
    watch_feed(&w, "late\n", 5, 200);
    is_int(watch_next_due(&w), 0, "output after the end is ignored");
    watch_free(&w);
}

/* Events nobody took yet wait in order, however many (a ring of per_minute:
 * the oldest goes first after the ring wrapped), and are freed with the watch. */
static void ready_events_keep_their_order(void)
{
    watch_limits lim = watch_limits_default();
    lim.max_lines = 1; /* a line is an event at once */
    lim.per_minute = 3;
    watch w;
    char err[200];
    watch_init(&w, &lim, NULL, err, sizeof err);
    watch_feed(&w, "a\nb\nc\n", 6, 0);
    watch_event ev;
    char texts[64] = "";
    for (int i = 0; i < 2; i++) {
        is_int(watch_take(&w, 0, &ev), WATCH_EVENT, "an event taken (%d)", i);
        strncat(texts, i ? "|" : "", sizeof texts - strlen(texts) - 1);
        strncat(texts, ev.lines, sizeof texts - strlen(texts) - 1);
        free(ev.lines);
    }
    watch_feed(&w, "d\ne\n", 4, 60000);                               /* a minute on: slots free, the ring wraps */
    drain(&w, 60000 + lim.quiet_ms, texts, sizeof texts, NULL, NULL); /* the last line closes when quiet */
    is_str(texts, "a|b|c|d|e", "in the order they came");
    watch_feed(&w, "f\ng\nh\n", 6, 120000);
    is_int(watch_next_due(&w), 1, "more wait to be taken");
    watch_free(&w); /* they are freed with it (ASan, valgrind) */
}

int main(void)
{
    lines_one_second_apart();
    close_lines_coalesce();
    steady_stream_closes_by_span();
    pattern_filters();
    hostile_patterns();
    event_size_bounds();
    rate_holds_back_and_counts();
    flood_stops();
    total_limit_stops();
    stream_end_flushes();
    ready_events_keep_their_order();
    return done_testing();
}

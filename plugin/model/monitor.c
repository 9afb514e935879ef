/* monitor.c — see monitor.h. */
#include "model/monitor.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

shell_monitor *shell_monitor_new(const watch_limits *lim, const char *pattern, int64_t timeout_ms, bool follows,
                                 char *err, size_t errlen)
{
    static atomic_uint_fast64_t serials;
    line_filter probe; /* the pattern is refused here, when the model gives it */
    if (line_filter_init(&probe, pattern, lim->max_bytes, err, errlen) != 0)
        return NULL;
    line_filter_free(&probe);
    shell_monitor *m = xcalloc(1, sizeof *m);
    watch_init(&m->w, lim, NULL, err, errlen); /* no pattern: it cannot fail */
    m->serial = (uint64_t)atomic_fetch_add(&serials, 1) + 1;
    m->pattern = pattern && pattern[0] ? xstrdup(pattern) : NULL;
    m->timeout_ms = timeout_ms;
    m->follows = follows;
    return m;
}

bool shell_monitor_feed(shell_monitor *m, const char *data, size_t n, int64_t now)
{
    if (m->end != MONITOR_LIVE)
        return false;
    int64_t before = watch_next_due(&m->w);
    watch_feed(&m->w, data, n, now);
    int64_t after = watch_next_due(&m->w);
    return after && (!before || after < before);
}

void shell_monitor_free(shell_monitor *m)
{
    if (!m)
        return;
    watch_free(&m->w);
    free(m->pattern);
    free(m);
}

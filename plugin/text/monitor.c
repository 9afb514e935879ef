/* monitor.c — see monitor.h. */
#include "text/monitor.h"

#include <stdlib.h>

#include "base/util.h"

/* "[ocbg] Monitor bg_… "description"" */
static void put_head(strbuf *sb, const task *t)
{
    sb_printf(sb, "[ocbg] Monitor %s \"%s\"", t->id, t->description ? t->description : "");
}

char *format_monitor_event(const task *t, const shell_monitor *m, const watch_event *ev)
{
    strbuf sb = {0};
    put_head(&sb, t);
    sb_printf(&sb, ", event %u:\n%s\n", m->w.events, ev->lines);
    if (ev->suppressed)
        sb_printf(&sb, "(%u more event%s suppressed before this one: at most %u a minute are told.)\n", ev->suppressed,
                  ev->suppressed == 1 ? " was" : "s were", m->w.lim.per_minute);
    return sb_take(&sb);
}

/* What happened to the command: a monitor's own is stopped with it; a
 * followed task goes on. */
static void put_command_fate(strbuf *sb, const task *t, const shell_monitor *m)
{
    if (m->follows)
        sb_printf(sb, " Task %s goes on running, no longer watched.", t->id);
    else
        sb_puts(sb, " Its command was stopped.");
}

char *format_monitor_end(const task *t, const shell_monitor *m)
{
    strbuf sb = {0};
    put_head(&sb, t);
    char how[96], dur[32];
    unsigned told = m->w.events;
    switch ((monitor_end)m->end) {
    case MONITOR_EXPIRED:
        format_duration(dur, sizeof dur, m->timeout_ms);
        sb_printf(&sb, " expired after %s (timeout_ms %lld), having told %u event%s.", dur, (long long)m->timeout_ms,
                  told, told == 1 ? "" : "s");
        put_command_fate(&sb, t, m);
        sb_puts(&sb, " Start a new monitor if you still need one.\n");
        break;
    case MONITOR_FLOODED:
        format_duration(dur, sizeof dur, m->w.lim.flood_ms);
        sb_printf(&sb,
                  " stopped: its lines came faster than %u events a minute for %s, too many to tell (%u told, %u "
                  "suppressed).",
                  m->w.lim.per_minute, dur, told, m->w.suppressed);
        put_command_fate(&sb, t, m);
        sb_puts(&sb, " Filter more precisely: a pattern that matches only the lines you must react to, or a filter "
                     "in the command (e.g. `... | grep --line-buffered ERROR`), then start a new monitor.\n");
        break;
    case MONITOR_LIMITED:
        sb_printf(&sb, " stopped: it told %u events, the most one monitor tells.", told);
        put_command_fate(&sb, t, m);
        sb_puts(&sb, " Start a new monitor, with a narrower pattern, if you still need one.\n");
        break;
    default: /* MONITOR_ENDED */
        shell_describe_exit(t->shell, how, sizeof how);
        sb_printf(&sb, ": stream ended (%s), having told %u event%s. Nothing more will come from it.\n", how, told,
                  told == 1 ? "" : "s");
        break;
    }
    return sb_take(&sb);
}

char *format_monitor_lost(const task *t)
{
    strbuf sb = {0};
    put_head(&sb, t);
    sb_printf(&sb,
              " stopped: the host restarted, and its command ($ %s) ended with it. Lines it had not told yet are "
              "lost. Start a new monitor if you still need one.\n",
              t->shell ? t->shell->command : "");
    return sb_take(&sb);
}

/* The fallback poll asks the host only when it is needed: while the running tasks' events arrive it reads the status
 * map less often; tasks silent now and then (a tool call a second) cost one map per three intervals, not one per tick;
 * a lost idle is still found within two map reads of the session going idle; sessions that vanish from the map while
 * they run are read one per tick, not all at once; with sessions missing from the status map and every event lost,
 * every task completes with at most one fallback host call per tick besides the checks the map asks for.
 *
 * Bounds on host calls are upper bounds over the elapsed time (a worker
 * cannot tick faster than its interval, whatever the load), or counts;
 * the waits have deadlines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "testlib.h"

#define NOTIFICATION_DONE "[ocbg] Background task completed: "
/* The events that end a turn: both idles, and the stored answer that ends it
 * (message.updated, which starts a check early). */
#define IDLE_EVENTS "session.idle,session.status,message.updated"

/* A script of `tools` tool steps of `ms` each (a tool part event every
 * `ms`: the task is alive), then `tail` (a step's JSON). malloc'd. */
static char *busy_script(int tools, int ms, const char *tail)
{
    strbuf sb = {0};
    sb_puts(&sb, J("{'steps':["));
    for (int i = 0; i < tools; i++)
        sb_printf(&sb, "{\"tool\":\"read\",\"input\":{\"n\":%d},\"output\":\"x\",\"ms\":%d},", i, ms);
    sb_printf(&sb, "%s]}", tail);
    return sb_take(&sb);
}

static int parts_at_least(sim_host *h, void *arg)
{
    return sim_events_delivered(h, "message.part.updated") >= *(size_t *)arg;
}

/* The parent session, its creation delivered; from then on every event is
 * lost (seeded: seed), so only the poll can tell what happens. */
static char *deaf_parent(sim_host *h, uint32_t seed)
{
    char *parent = sim_session_new(h, NULL, "main");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "the parent's creation delivered");
    sim_event_faults(h, seed, 1.0, 0, 0, NULL);
    return parent;
}

/* Events arrive: the status map is read on far fewer ticks than the
 * interval allows; the task's events stop (it hangs, busy, its last event a
 * tool call): the map is read again, every third tick (no faster: a task
 * silent mid-turn is not the answer's end). */
static void backs_off_then_reads_at_silent_gap(void)
{
    const int interval = 250;
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':250}"));
    char *script = busy_script(300, 20, J("{'hang':true}")); /* ~6 s of tool events */
    t_task(&f, "alive", script);
    char *child = t_task_session(h, 0);
    /* The alive phase: from the first tool event to the last. */
    is_int(sim_wait_calls(h, "session_status", NULL, 1, tap_timeout_ms(5000)), 0, "the map is read at first");
    int64_t t0 = mono_ms();
    size_t s0 = sim_calls(h, "session_status", NULL);
    size_t tool_events = 300 * 3; /* pending, running, completed */
    is_int(sim_wait(h, parts_at_least, &tool_events, tap_timeout_ms(30000)), 0, "every tool event delivered");
    int64_t alive_ms = mono_ms() - t0;
    size_t alive_reads = sim_calls(h, "session_status", NULL) - s0;
    diag("alive for %lld ms: %zu status reads (ticks: %lld)", (long long)alive_ms, alive_reads,
         (long long)(alive_ms / interval));
    ok(alive_ms >= 5000, "the task sent events for a while");
    ok((int64_t)alive_reads * 2 <= alive_ms / interval,
       "while events arrive, the map is read on at most half the ticks");

    /* Silent and busy: the map is read again, three intervals apart. */
    size_t s1 = sim_calls(h, "session_status", NULL);
    int64_t t1 = mono_ms();
    is_int(sim_wait_calls(h, "session_status", NULL, s1 + 10, tap_timeout_ms(30000)), 0, "ten more reads");
    int64_t silent_ms = mono_ms() - t1;
    diag("silent: 10 reads in %lld ms", (long long)silent_ms);
    ok(silent_ms >= 9 * 3 * interval - 50, "silent mid-turn: at most one read per three intervals");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    free(child);
    free(script);
    t_close(&f);
}

/* Three tasks send events (the poll backs off for 3 s, to its slowest);
 * one ends and the events that end its turn are lost (both idles and its
 * answer's message.updated dropped): the poll still
 * finds it, and the parent is told once. */
static void lost_idle_found_with_backed_off_poll(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':200}"));
    sim_event_faults(h, 5, 1.0, 0, 0, IDLE_EVENTS);
    char *long1 = busy_script(500, 20, J("{'reply':'long one'}"));
    char *long2 = busy_script(500, 20, J("{'reply':'long two'}"));
    char *quick = busy_script(150, 20, J("{'reply':'the quick one'}"));
    const char *a = t_task(&f, "long 1", long1);
    t_task(&f, "long 2", long2);
    const char *c = t_task(&f, "quick", quick);
    is_int(t_wait_status(h, f.parent, c, "completed", tap_timeout_ms(20000)), 0, "the quick task completed");
    t_output_like(h, f.parent, c, "Result:\nthe quick one", "with its answer");
    is_int(sim_events_delivered(h, "session.idle") + sim_events_delivered(h, "message.updated"), 0,
           "no idle and no turn end reached the plugin");
    t_output_like(h, f.parent, a, ": running\n", "the others still run");
    is_int(t_wait_messages_with(h, f.parent, c, 1, tap_timeout_ms(5000)), 0, "parent notified");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_notifications(h, f.parent, NOTIFICATION_DONE, c), 1, "notified exactly once");
    free(long1);
    free(long2);
    free(quick);
    t_close(&f);
}

/* Every event lost; a hanging task is silent and busy, so every tick reads
 * the map; another task's first check fails (the host's error): its
 * further checks still come, and it completes. */
static void known_idle_not_starved(void)
{
    sim_host *h = t_host(J("{'poll_interval_ms':50}"));
    char *parent = deaf_parent(h, 13);
    sim_fail(h, "session_messages", 1, 1, -EIO);
    char *hang = t_launch_script(h, parent, "hangs", J("{'steps':[{'hang':true}]}"));
    char *quick = t_launch_script(h, parent, "quick", J("{'steps':[{'reply':'after a failed check'}]}"));
    is_int(t_wait_status(h, parent, quick, "completed", tap_timeout_ms(10000)), 0,
           "the task whose first check failed completed");
    ok(sim_calls(h, "session_messages", NULL) >= 2, "it was checked again");
    t_output_like(h, parent, hang, ": running\n", "the hanging one still runs");
    sim_fail(h, NULL, 0, 0, 0);
    free(hang);
    free(quick);
    free(parent);
    sim_destroy(h);
}

struct all_done {
    const char *parent;
    char **ids;
    int n;
};

static int all_completed(sim_host *h, void *arg)
{
    struct all_done *d = arg;
    for (int i = 0; i < d->n; i++) {
        char *out = t_output(h, d->parent, d->ids[i]);
        int done = strstr(out, ": completed\n") != NULL;
        free(out);
        if (!done)
            return 0;
    }
    return 1;
}

/* Every event lost and the status map lists no session: each task gets one
 * check when the poll first finds its session idle, then at most one
 * fallback call per tick (a check, the longest overdue first, or the
 * map); every task completes, its parent told once. */
static void missing_from_map_bounded(void)
{
    enum {
        N = 60
    };
    const int interval = 50;
    sim_host *h = t_host(J("{'poll_interval_ms':50,'max_running_agents':100}"));
    char *parent = deaf_parent(h, 9);
    sim_status_omit(h, 1);
    sim_script(h, "MISSING", J("{'steps':[{'wait_ms':1500},{'reply':'missing done'}]}"), 0);
    char *ids[N];
    int64_t t0 = mono_ms();
    for (int i = 0; i < N; i++) {
        const char *args = J("{'description':'m%d','prompt':'MISSING %d','agent':'general'}", i, i);
        char *ans = t_tool(h, parent, "background_task", args);
        ids[i] = t_find_id(ans, "bg_");
        free(ans);
        if (!ids[i])
            bail_out("launch %d failed", i);
    }
    struct all_done d = {parent, ids, N};
    is_int(sim_wait(h, all_completed, &d, tap_timeout_ms(60000)), 0, "every task completed");
    int64_t elapsed = mono_ms() - t0;
    size_t reads = sim_calls(h, "session_messages", NULL), maps = sim_calls(h, "session_status", NULL);
    long ticks = (long)(elapsed / interval) + 1;
    diag("%lld ms (%ld ticks): %zu message reads, %zu status maps", (long long)elapsed, ticks, reads, maps);
    ok((long)(reads + maps) <= N + ticks + 2,
       "message reads and status maps: at most one per tick besides each task's first check");
    ok(reads > N, "tasks were checked again after their first check found them running");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    sim_status_omit(h, 0);
    is_int(t_sync_notifications(h, parent), 0, "sync point");
    int once = 0;
    for (int i = 0; i < N; i++) {
        once += t_count_notifications(h, parent, NOTIFICATION_DONE, ids[i]) == 1;
        free(ids[i]);
    }
    is_int(once, N, "each task notified exactly once");
    free(parent);
    sim_destroy(h);
}

static int session_is_busy(sim_host *h, void *arg)
{
    return sim_session_busy(h, arg) == 1;
}

/* A finished task's session busy again (the user typed into it) while a
 * sibling runs silent, so every tick reads the status map, which lists it
 * busy: the poll passes it by (a finished task has no run to watch), it
 * stays completed, the sibling goes on. */
static void ended_task_busy_in_map(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':100}"));
    const char *a = t_task(&f, "silent sibling", J("{'steps':[{'hang':true}]}"));
    sim_script(h, "the quick prompt", J("{'steps':[{'reply':'quick answer'}]}"), 1);
    char *b = t_launch(h, f.parent, "quick", "the quick prompt", "explore");
    is_int(t_wait_status(h, f.parent, b, "completed", tap_timeout_ms(10000)), 0, "the quick task completed");
    char *child = t_prompted_session(h, "the quick prompt", 0);
    sim_script(h, "the user types here", J("{'steps':[{'hang':true}]}"), 1);
    is_int(sim_session_prompt(h, child, J("{'parts':[{'type':'text','text':'the user types here'}]}")), 0,
           "the user prompts the finished task's session");
    is_int(sim_wait(h, session_is_busy, child, tap_timeout_ms(5000)), 0, "its session is busy again");
    size_t reads = sim_calls(h, "session_status", NULL);
    is_int(sim_wait_calls(h, "session_status", NULL, reads + 5, tap_timeout_ms(10000)), 0,
           "the map, listing it busy, is read five more times");
    char *out = t_output(h, f.parent, b);
    like(out, "Result:\nquick answer", "the finished task stays completed with its answer");
    free(out);
    t_output_like(h, f.parent, a, ": running\n", "its sibling still runs");
    free(child);
    free(b);
    t_close(&f);
}

/* A tool call every interval or so: a quick tool (its part at its start and
 * end), then a model call silent to ocbg of 0.45 to 1.45 intervals (seed:
 * where in the cycle the task starts). malloc'd. */
static char *rhythm_script(int tools, int interval, int seed)
{
    strbuf sb = {0};
    sb_puts(&sb, J("{'steps':["));
    for (int i = 0; i < tools; i++)
        sb_printf(&sb, "{\"tool\":\"read\",\"input\":{\"n\":%d},\"output\":\"x\",\"ms\":%d},{\"wait_ms\":%d},", i,
                  interval / 20, interval * (45 + (seed * 7 + i * 13) % 11 * 10) / 100);
    sb_puts(&sb, J("{'reply':'rhythm done'}]}"));
    return sb_take(&sb);
}

/* Ten tasks each call a tool about once an interval, out of step: each is
 * silent for a whole interval now and then, so some task is at most ticks,
 * yet the map is read at most once per three intervals (the old poll read
 * it at every such tick). Every task then completes. */
static void tool_a_tick_reads_rarely(void)
{
    enum {
        N = 10,
        TOOLS = 60
    };
    const int interval = 100;
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':100}"));
    char *ids[N];
    for (int i = 0; i < N; i++) {
        char *script = rhythm_script(TOOLS, interval, i);
        ids[i] = t_launch_script(h, f.parent, "rhythm", script);
        free(script);
    }
    size_t first = N * 3 * 3; /* three tool calls each: every task runs */
    is_int(sim_wait(h, parts_at_least, &first, tap_timeout_ms(10000)), 0, "every task calls tools");
    size_t s0 = sim_calls(h, "session_status", NULL);
    int64_t t0 = mono_ms();
    size_t most = N * (TOOLS - 15) * 3; /* well before any task ends */
    is_int(sim_wait(h, parts_at_least, &most, tap_timeout_ms(60000)), 0, "their tool calls go on");
    int64_t ms = mono_ms() - t0;
    size_t reads = sim_calls(h, "session_status", NULL) - s0;
    diag("%lld ms (%lld ticks): %zu status maps", (long long)ms, (long long)(ms / interval), reads);
    ok(ms >= 20 * interval, "the window spans many ticks");
    ok((int64_t)reads <= ms / (3 * interval) + 1, "the map: at most one read per three intervals");
    struct all_done d = {f.parent, ids, N};
    is_int(sim_wait(h, all_completed, &d, tap_timeout_ms(30000)), 0, "every task completed");
    for (int i = 0; i < N; i++)
        free(ids[i]);
    t_close(&f);
}

/* A task ends while every event is lost (its answer's text with them): the
 * first or second status map after its session goes idle finds it (the map
 * comes at most three intervals apart while a task is silent; with its
 * answer's text seen, at the first tick after a silent interval). */
static void lost_idle_found_within_two_maps(void)
{
    sim_host *h = t_host(J("{'poll_interval_ms':100}"));
    char *parent = deaf_parent(h, 21);
    char *hang = t_launch_script(h, parent, "hangs", J("{'steps':[{'hang':true}]}"));
    sim_script(h, "ends unheard", J("{'steps':[{'wait_ms':700},{'reply':'ended unheard'}]}"), 1);
    char *quiet = t_launch(h, parent, "quiet", "ends unheard", "explore");
    is_int(sim_wait_calls(h, "session_prompt", NULL, 2, tap_timeout_ms(5000)), 0, "both prompted");
    char *session = t_prompted_session(h, "ends unheard", 0);
    ok(session != NULL, "its session was prompted");
    is_int(session ? sim_wait_idle(h, session, tap_timeout_ms(10000)) : -1, 0, "its session went idle");
    size_t s0 = sim_calls(h, "session_status", NULL);
    is_int(t_wait_status(h, parent, quiet, "completed", tap_timeout_ms(10000)), 0, "it completed");
    size_t maps = sim_calls(h, "session_status", NULL) - s0;
    diag("status maps from its idle to its completion: %zu", maps);
    ok(maps <= 2, "found by the first or second map after its idle");
    t_output_like(h, parent, hang, ": running\n", "the hanging one still runs");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    free(session);
    free(quiet);
    free(hang);
    free(parent);
    sim_destroy(h);
}

/* Running tasks in a long silent model call vanish from the status map
 * (no event says so): their sessions are read at most one per tick (each
 * read finds its task running, so the map's word stays in doubt), not all
 * at once. Listed again, they end; each completes and is told once. */
static void vanished_read_one_per_tick(void)
{
    enum {
        N = 40
    };
    const int interval = 50;
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':50,'max_running_agents':100}"));
    sim_script(h, "VANISH", J("{'steps':[{'wait_ms':4000},{'reply':'vanish done'}]}"), 0);
    char *ids[N];
    for (int i = 0; i < N; i++) {
        char prompt[32];
        snprintf(prompt, sizeof prompt, "VANISH %d", i);
        ids[i] = t_launch(h, f.parent, "vanish", prompt, "explore");
    }
    is_int(sim_wait_calls(h, "session_prompt", NULL, N, tap_timeout_ms(10000)), 0, "every task prompted");
    size_t r0 = sim_calls(h, "session_messages", NULL);
    sim_status_omit(h, 1);
    int64_t t0 = mono_ms();
    is_int(sim_wait_calls(h, "session_messages", NULL, r0 + 10, tap_timeout_ms(10000)), 0, "ten sessions read");
    int64_t ms = mono_ms() - t0;
    size_t reads = sim_calls(h, "session_messages", NULL) - r0;
    diag("%zu message reads in %lld ms (%lld ticks)", reads, (long long)ms, (long long)(ms / interval));
    ok((int64_t)reads <= ms / interval + 1, "at most one read per tick");
    t_output_like(h, f.parent, ids[0], ": running\n", "the tasks still run");
    sim_status_omit(h, 0);
    struct all_done d = {f.parent, ids, N};
    is_int(sim_wait(h, all_completed, &d, tap_timeout_ms(30000)), 0, "every task completed");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    int once = 0;
    for (int i = 0; i < N; i++) {
        once += t_count_notifications(h, f.parent, NOTIFICATION_DONE, ids[i]) == 1;
        free(ids[i]);
    }
    is_int(once, N, "each task notified exactly once");
    t_close(&f);
}

int main(void)
{
    ended_task_busy_in_map();
    backs_off_then_reads_at_silent_gap();
    tool_a_tick_reads_rarely();
    lost_idle_found_within_two_maps();
    vanished_read_one_per_tick();
    lost_idle_found_with_backed_off_poll();
    known_idle_not_starved();
    missing_from_map_bounded();
    return done_testing();
}

/* poll.c — see poll.h.
 *
 * Events are the fast path; the poll covers lost ones, at a cost in host
 * calls that stays O(1) in the number of tasks:
 *
 * - A running agent task is silent when no progress event (a part, a usage
 *   report, a busy status) came for a whole interval and it is not known
 *   to be idle: its idle may be lost. The status map is read at the next
 *   tick for a task silent since its answer's text ended (a text part's
 *   end, no tool part after it: the turn has likely ended), once per such
 *   silence; for any other silent task (a tool ran, the model is at work:
 *   OpenCode's streamed text is not read) at most every SILENT_GAP
 *   intervals. A lost idle is so found within about 2 intervals of the
 *   answer's text, and within about 2 + SILENT_GAP intervals of the task's
 *   last event whatever it was, while tasks that each call a tool every
 *   second or so, silent for an interval now and then, cost one map per
 *   SILENT_GAP intervals, not one per tick.
 * - While no running task is silent, the map is read less often still, the
 *   gap doubling from SILENT_GAP up to POLL_GAP_MAX intervals: the event
 *   path is proven alive, and the tasks' own idle events will end them.
 * - A map that shows a silent task's session idle makes its completion
 *   check due (as its idle event would have); so does one that shows idle
 *   a task whose answer's text has ended, once it has been silent for an
 *   interval (its idle event, if not lost, comes first). A check that finds no answer
 *   makes the session "known idle" (idle_checks > 0), with its own back-off
 *   before the next. Due checks, those on the map's word and those of known
 *   idle sessions, are made at most check_budget per tick, the longest
 *   overdue first: every task is checked. The budget is 1 while the map's
 *   word is in doubt; it doubles (up to CHECK_BUDGET_MAX) at each tick
 *   after the checks made on the map's word all found their tasks finished,
 *   and drops back to 1 when one finds its task still running, or when no
 *   check is due. So sessions that leave the map while they run (a host
 *   that loses track of them) cost one read per tick, and 1,000 tasks that
 *   truly ended with their idles lost are all found within about a dozen
 *   ticks.
 * - A tick that reads the map only because the gap has passed makes no
 *   check, so a host that loses every event and whose map leaves the
 *   sessions out costs at most one call per tick; one that reads it for a
 *   silent task still makes its checks (else that task would starve them).
 *   A busy status (event or map) makes the session unknown again.
 */
#include "engine/poll.h"

#include "base/util.h"
#include "engine/defer.h"

/* How long a task whose session was deleted waits for its parent's deletion
 * (which a host sends right after its children's) before it ends in error. */
#define DELETE_GRACE_MS 500
/* The slowest status map for silent tasks but one whose answer's text
 * ended, in poll intervals. */
#define SILENT_GAP 3
/* The slowest status map while events prove the running tasks alive, in
 * poll intervals. */
#define POLL_GAP_MAX 8
/* The most completion checks one tick makes (each a session.messages read). */
#define CHECK_BUDGET_MAX 256

cJSON *poll_status_map(engine *eng)
{
    char *json = NULL;
    int rc = hostapi_session_status(&eng->api, &json, NULL);
    cJSON *busy = rc == 0 ? cJSON_Parse(json) : NULL;
    hostapi_free(&eng->api, json);
    if (!cJSON_IsObject(busy)) {
        cJSON_Delete(busy);
        return NULL;
    }
    return busy;
}

/* An agent task with its own session, which the poll looks at. */
static bool polled(const task *t)
{
    return t->type == TASK_AGENT && t->session_id && t->status != TASK_PENDING && !(t->session_gone && t->cancelling);
}

/* Did t report progress within the last interval? */
static bool alive(const engine *eng, const task *t, int64_t now)
{
    const task_active *p = t->active; /* this run's; none yet: no progress seen */
    return p && p->progress_mono > 0 && now - p->progress_mono < eng->opt.poll_interval_ms;
}

/* Does t need the status map at this tick: silent, not known idle, not
 * already shown idle by it, no check of it under way, not idle by design
 * (awaiting its own tasks), not waiting for the user's answer, not being
 * stopped? */
static bool needs_map(const engine *eng, const task *t, int64_t now)
{
    return polled(t) && t->active->idle_checks == 0 && !t->active->map_idle && !t->awaiting && !t->checking &&
           !t->cancelling && !task_permission_request(t) && !alive(eng, t, now);
}

/* Tasks whose session was deleted on their own (the parent lives on) end
 * in error once the grace has passed: the parent is told. */
static void end_deleted(engine *eng, int64_t now)
{
    for (task *t = eng->reg.active, *next; t; t = next) {
        next = t->active->anext;
        if (t->type == TASK_AGENT && t->session_gone && t->cancelling &&
            now - t->active->gone_at_mono >= DELETE_GRACE_MS)
            engine_finish(eng, t, TASK_ERROR, "The task's session was deleted.", NULL);
    }
}

/* Read the map; make a check due for each silent task it newly shows idle. */
static void read_map(engine *eng)
{
    engine_unlock(eng);
    cJSON *status_map = poll_status_map(eng);
    engine_lock(eng);
    uint64_t tick = ++eng->polls;
    int64_t now = mono_ms();
    eng->last_poll_mono = now;
    if (!status_map)
        return;
    const cJSON *item;
    cJSON_ArrayForEach (item, status_map) {
        task *t = registry_find_session(&eng->reg, item->string);
        if (t && t->active) /* an ended task's session may be busy too (the user typed into it) */
            t->active->busy_tick = tick;
    }
    defer_poll(eng, status_map); /* held notifications' parents: busy or no longer */
    cJSON_Delete(status_map);
    for (task *t = eng->reg.active; t; t = t->active->anext) {
        if (!polled(t))
            continue;
        task_active *p = t->active;
        if (p->busy_tick == tick) {
            t->woken = false;
            p->idle_checks = 0;
            p->next_check_mono = 0;
            p->map_idle = false;
        } else if (!t->awaiting && p->idle_checks == 0 && !p->map_idle && (p->said || !alive(eng, t, now))) {
            /* Its check is due once it is silent (check_due): an alive one's
             * own idle event should come first. One that is still sending
             * events is not marked unless its answer's text has ended, so
             * that a read between its turn's start and its first events
             * leaves it calling for the map. */
            p->map_idle = true;
            p->next_check_mono = now;
        }
    }
}

/* Is t's completion check due: shown idle by the map (and silent since),
 * or known idle and its back-off over? */
static bool check_due(const engine *eng, const task *t, int64_t now)
{
    const task_active *p = t->active;
    bool shown_idle = p->map_idle && p->idle_checks == 0 && !alive(eng, t, now);
    return polled(t) && (shown_idle || p->idle_checks > 0) && !t->awaiting && !t->checking && !t->cancelling &&
           !t->inherited && now >= p->next_check_mono;
}

/* The task whose check is due the longest, or NULL. */
static task *most_overdue(engine *eng, int64_t now)
{
    task *oldest = NULL;
    for (task *t = eng->reg.active; t; t = t->active->anext)
        if (check_due(eng, t, now) && (!oldest || t->active->next_check_mono < oldest->active->next_check_mono))
            oldest = t;
    return oldest;
}

/* What the checks made on the map's word found, once all have ended: each
 * task finished (it left the active list), the budget doubles; one still
 * running (its check found no answer), the budget is 1 again. */
static void settle_budget(engine *eng)
{
    if (eng->check_budget == 0)
        eng->check_budget = 1;
    if (eng->map_checks == 0)
        return;
    unsigned pending = 0, resolved = 0;
    bool wrong = false;
    for (task *t = eng->reg.active; t; t = t->active->anext) {
        task_active *p = t->active;
        if (!p->map_checked)
            continue;
        if (t->checking) {
            pending++;
            continue;
        }
        p->map_checked = false;
        resolved++;
        wrong = wrong || p->idle_checks > 0;
    }
    bool finished = eng->map_checks > pending + resolved;
    if (wrong)
        eng->check_budget = 1;
    else if (pending == 0 && finished)
        eng->check_budget = eng->check_budget * 2 < CHECK_BUDGET_MAX ? eng->check_budget * 2 : CHECK_BUDGET_MAX;
    eng->map_checks = pending;
}

/* This tick's checks: the budget's worth, the longest overdue first. */
static void check_oldest(engine *eng, int64_t now)
{
    settle_budget(eng);
    for (unsigned i = 0; i < eng->check_budget; i++) {
        task *t = most_overdue(eng, now);
        if (!t) {
            if (i == 0)
                eng->check_budget = 1; /* the burst is over: the next one starts in doubt */
            return;
        }
        if (t->active->map_idle && t->active->idle_checks == 0) {
            t->active->map_checked = true;
            eng->map_checks++;
        }
        t->active->map_idle = false;
        engine_request_check(eng, t); /* it is checking now: the next pick passes it by */
    }
}

void poll_tick(engine *eng, int64_t now)
{
    ENGINE_ASSERT_LOCKED(eng);
    end_deleted(eng, now);
    int64_t interval = eng->opt.poll_interval_ms, slow = interval * SILENT_GAP, most = interval * POLL_GAP_MAX;
    bool silent = false, answered = false;
    for (const task *t = eng->reg.active; t && !answered; t = t->active->anext) {
        if (!needs_map(eng, t, now))
            continue;
        silent = true;
        answered = t->active->said && t->active->progress_mono > eng->last_poll_mono; /* no map since its text */
    }
    if (eng->poll_gap_ms < slow)
        eng->poll_gap_ms = slow;
    if (answered || now - eng->last_poll_mono >= (silent ? slow : eng->poll_gap_ms)) {
        eng->poll_gap_ms = silent ? slow : eng->poll_gap_ms * 2 < most ? eng->poll_gap_ms * 2 : most;
        read_map(eng);
        if (!silent)
            return; /* a read only because the gap passed takes the tick's one call */
        now = mono_ms();
    }
    check_oldest(eng, now); /* also after a read a silent task asked for: a busy one must not starve them */
}

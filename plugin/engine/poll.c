/* poll.c — see poll.h.
 *
 * Events are the fast path; the poll covers lost ones, at a cost in host
 * calls that stays O(1) in the number of tasks:
 *
 * - The status map is read at the fast tick (every poll_interval_ms) only
 *   while some running agent task is silent (no progress event: a tool
 *   part, a usage report, a busy status, for a whole interval) and not yet
 *   known to be idle. A task whose events stopped is one whose idle may
 *   be lost: the next tick reads the map, so a lost idle is seen within
 *   about two intervals of the task's last event.
 * - While every running task's events arrive, the map is read less often,
 *   the gap doubling up to POLL_GAP_MAX intervals: the event path is
 *   proven alive, and the task's own idle event will end it.
 * - A map that shows a silent task's session newly idle queues its
 *   completion check at once (as its idle event would have). A check that
 *   finds no answer makes the session "known idle" (idle_checks > 0): it
 *   no longer calls for the map, and its further checks wait their turn,
 *   at most one per tick, the longest overdue first (each check moves it to
 *   the back, with its own back-off): every task is still checked. A tick
 *   that reads the map only because the gap has passed makes no such
 *   check, so a host that loses every event and whose map leaves the
 *   sessions out costs at most one call per tick; one that reads it for a
 *   silent busy task still makes one (else that task would starve them).
 *   A busy status (event or map) makes the session unknown again.
 */
#include "engine/poll.h"

#include "base/util.h"
#include "engine/defer.h"

/* How long a task whose session was deleted waits for its parent's deletion
 * (which a host sends right after its children's) before it ends in error. */
#define DELETE_GRACE_MS 500
/* The slowest status map while events prove the running tasks alive, in
 * poll intervals. */
#define POLL_GAP_MAX 8

cJSON *poll_status_map(engine *o)
{
    char *json = NULL;
    int rc = hc_session_status(&o->api, &json, NULL);
    cJSON *busy = rc == 0 ? cJSON_Parse(json) : NULL;
    hc_free(&o->api, json);
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
static bool alive(const engine *o, const task *t, int64_t now)
{
    const task_live *p = t->live; /* this run's; none yet: no progress seen */
    return p && p->progress_mono > 0 && now - p->progress_mono < o->opt.poll_interval_ms;
}

/* Does t need the status map at this tick: silent, not known idle, no
 * check of it under way, not idle by design (awaiting its own tasks), not
 * waiting for the user's answer, not being stopped? */
static bool needs_map(const engine *o, const task *t, int64_t now)
{
    return polled(t) && t->live->idle_checks == 0 && !t->awaiting && !t->finalizing && !t->cancelling &&
           !task_permission_request(t) && !alive(o, t, now);
}

/* Tasks whose session was deleted on their own (the parent lives on) end
 * in error once the grace has passed: the parent is told. */
static void end_deleted(engine *o, int64_t now)
{
    for (task *t = o->reg.active, *next; t; t = next) {
        next = t->live->anext;
        if (t->type == TASK_AGENT && t->session_gone && t->cancelling && now - t->live->gone_at_mono >= DELETE_GRACE_MS)
            engine_finish(o, t, TASK_ERROR, "The task's session was deleted.", NULL);
    }
}

/* Read the map; queue a check for each silent task it newly shows idle. */
static void read_map(engine *o)
{
    engine_unlock(o);
    cJSON *status_map = poll_status_map(o);
    engine_lock(o);
    uint64_t tick = ++o->polls;
    int64_t now = mono_ms();
    o->last_poll_mono = now;
    if (!status_map)
        return;
    const cJSON *item;
    cJSON_ArrayForEach (item, status_map) {
        task *t = registry_find_session(&o->reg, item->string);
        if (t && t->live) /* an ended task's session may be busy too (the user typed into it) */
            t->live->busy_tick = tick;
    }
    defer_poll(o, status_map); /* held notices' parents: busy or no longer */
    cJSON_Delete(status_map);
    for (task *t = o->reg.active; t; t = t->live->anext) {
        if (!polled(t))
            continue;
        if (t->live->busy_tick == tick) {
            t->woken = false;
            t->live->idle_checks = 0;
            t->live->next_check_mono = 0;
        } else if (!t->awaiting && t->live->idle_checks == 0 && !alive(o, t, now)) {
            engine_request_finalize(o, t); /* an alive one's own idle event will come */
        }
    }
}

/* One check for the known-idle task the longest overdue. */
static void check_oldest(engine *o, int64_t now)
{
    task *oldest = NULL;
    for (task *t = o->reg.active; t; t = t->live->anext) {
        if (!polled(t) || t->live->idle_checks == 0 || t->awaiting || t->finalizing || t->cancelling || t->inherited ||
            now < t->live->next_check_mono)
            continue;
        if (!oldest || t->live->next_check_mono < oldest->live->next_check_mono)
            oldest = t;
    }
    if (oldest)
        engine_request_finalize(o, oldest);
}

void poll_tick(engine *o, int64_t now)
{
    end_deleted(o, now);
    int64_t interval = o->opt.poll_interval_ms, most = interval * POLL_GAP_MAX;
    bool silent = false;
    for (const task *t = o->reg.active; t && !silent; t = t->live->anext)
        silent = needs_map(o, t, now);
    if (o->poll_gap_ms < interval)
        o->poll_gap_ms = interval;
    if (silent || now - o->last_poll_mono >= o->poll_gap_ms) {
        o->poll_gap_ms = silent ? interval : o->poll_gap_ms * 2 < most ? o->poll_gap_ms * 2 : most;
        read_map(o);
        if (!silent)
            return; /* a read only because the gap passed takes the tick's one call */
        now = mono_ms();
    }
    check_oldest(o, now); /* also after a read a silent task asked for: a busy one must not starve it */
}

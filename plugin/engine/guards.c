/* guards.c — see guards.h: usage totals, budgets, the runaway guards and
 * the time limits. */
#include "engine/guards.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"

/* What one parent session's tasks have cost, all of them, cleared or not. */
typedef struct session_spend {
    char *session_id; /* the map's key */
    double cost;
} session_spend;

/* The spend map's key: the value's own session id (map.h). */
static const char *spend_session_of(const void *s)
{
    return ((const session_spend *)s)->session_id;
}

void guards_init(engine *eng)
{
    map_init(&eng->spend, spend_session_of);
}

static void free_spend(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    session_spend *s = value;
    free(s->session_id);
    free(s);
}

void guards_free(engine *eng)
{
    map_each(&eng->spend, free_spend, NULL);
    map_free(&eng->spend);
}

void guards_forget_session(engine *eng, const char *session_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    session_spend *s = map_del(&eng->spend, session_id);
    if (s)
        free_spend(NULL, s, NULL);
}

static session_spend *spend_of(engine *eng, const char *session_id)
{
    session_spend *s = map_get(&eng->spend, session_id);
    if (!s) {
        s = xcalloc(1, sizeof *s);
        s->session_id = xstrdup(session_id);
        map_put(&eng->spend, s);
    }
    return s;
}

/* ---- budgets -------------------------------------------------------------- */

/* An active task over one of its own budgets is stopped. */
static void check_task_budgets(engine *eng, task *t)
{
    const usage *u = &t->usage->total;
    char text[256], amount[48];
    if (usage_tokens(u) > (uint64_t)eng->opt.max_task_tokens) {
        format_count(amount, sizeof amount, usage_tokens(u));
        snprintf(text, sizeof text, "Stopped by the token budget: this task used %s tokens (max_task_tokens is %d).",
                 amount, eng->opt.max_task_tokens);
        engine_fail_task(eng, t, text);
    } else if (u->cost > eng->opt.max_task_cost_usd) {
        format_usd(amount, sizeof amount, u->cost);
        snprintf(text, sizeof text, "Stopped by the cost budget: this task spent %s (max_task_cost_usd is %.15g).",
                 amount, eng->opt.max_task_cost_usd);
        engine_fail_task(eng, t, text);
    }
}

/* The session's tasks together over its budget: every active one stops. */
static void check_session_budget(engine *eng, parent *p, double spent)
{
    if (!(spent > eng->opt.max_session_cost_usd))
        return;
    char text[256], amount[48];
    format_usd(amount, sizeof amount, spent);
    snprintf(text, sizeof text,
             "Stopped by the session budget: this session's background tasks spent %s (max_session_cost_usd is %.15g).",
             amount, eng->opt.max_session_cost_usd);
    for (task *t = p->head; t; t = t->pnext)
        engine_fail_task(eng, t, text);
}

/* A nested task's spend is its launcher's session's, and every ancestor's
 * up to the person's session: each budget covers everything below it. */
static void add_spend(engine *eng, const task *t, double cost, bool check)
{
    parent *p = t->parent;
    for (int level = 0; p && level <= OPTIONS_MAX_DEPTH; level++) {
        session_spend *s = spend_of(eng, p->session_id);
        s->cost += cost;
        if (check)
            check_session_budget(eng, p, s->cost);
        task *launcher = registry_find_session(&eng->reg, p->session_id);
        p = launcher ? launcher->parent : NULL;
    }
}

void guards_note_usage(engine *eng, task *t, const char *message_id, const usage *u)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!t->usage)
        t->usage = xcalloc(1, sizeof *t->usage);
    usage d = usage_tracker_note(t->usage, message_id, u);
    task_active *p = t->active; /* NULL: a late report about a run that ended */
    if (p)
        p->progress_mono = mono_ms();
    if (usage_is_zero(&d))
        return; /* a repeat, or an older update */
    registry_touch(&eng->reg, t);
    if (task_status_active(t->status))
        check_task_budgets(eng, t);
    add_spend(eng, t, d.cost, true);
}

void guards_restore_spend(engine *eng, const task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (t->usage)
        add_spend(eng, t, t->usage->total.cost, false);
}

/* ---- runaway tool calls ------------------------------------------------------ */

/* Has the repeat guard counted call id `call_id` already? If not, it is now. */
static bool repeat_seen(task_active *p, const char *call_id)
{
    uint32_t h = (uint32_t)fnv64(FNV64_SEED, call_id, strlen(call_id)) | 1u;
    size_t n = sizeof p->repeat_seen / sizeof p->repeat_seen[0];
    for (size_t i = 0; i < n; i++)
        if (p->repeat_seen[i] == h)
            return true;
    p->repeat_seen[p->repeat_seen_next++ % n] = h;
    return false;
}

void guards_note_tool(engine *eng, task *t, const session_note *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    char text[256];
    if (t->tool_calls > (unsigned)eng->opt.max_tool_calls) {
        snprintf(text, sizeof text,
                 "Stopped by the tool call limit: this task made %u tool calls (max_tool_calls is %d).", t->tool_calls,
                 eng->opt.max_tool_calls);
        engine_fail_task(eng, t, text);
        return;
    }
    task_active *p = t->active;
    if (!p || !n->call_hash || !n->call_id || repeat_seen(p, n->call_id))
        return;
    if (n->call_hash == p->last_call) {
        p->repeat_count++;
    } else {
        p->last_call = n->call_hash;
        p->repeat_count = 1;
    }
    if (p->repeat_count > (unsigned)eng->opt.max_repeat_calls) {
        snprintf(text, sizeof text,
                 "Stopped by the repeat guard: this task made the same %.40s call (same input) %u times in a row "
                 "(max_repeat_calls is %d).",
                 n->tool ? n->tool : "tool", p->repeat_count, eng->opt.max_repeat_calls);
        engine_fail_task(eng, t, text);
    }
}

/* ---- time ------------------------------------------------------------------- */

/* The guards see t's run for the first time: it started when the task says
 * (by the host's clock), but never further back than two ticks, so a clock
 * that jumped cannot make it look old. */
static void run_seen(engine *eng, task *t, task_active *p, int64_t now, int64_t wall)
{
    int64_t ago = wall - t->started_ms, most = 2 * (int64_t)eng->opt.poll_interval_ms;
    ago = ago < 0 ? 0 : ago > most ? most : ago;
    p->guard_run = t->run;
    p->run_start_mono = now - ago;
    if (p->progress_mono < p->run_start_mono)
        p->progress_mono = p->run_start_mono;
}

/* A run past its timeout or max_runtime_ms is stopped; false then. */
static bool check_runtime(engine *eng, task *t, int64_t now)
{
    int64_t ran = now - t->active->run_start_mono, max = eng->opt.max_runtime_ms;
    bool own = t->timeout_ms > 0 && t->timeout_ms <= max;
    if (ran < (own ? t->timeout_ms : max))
        return true;
    char text[256], took[32], limit[32];
    format_duration(took, sizeof took, ran);
    format_duration(limit, sizeof limit, t->timeout_ms);
    if (own)
        snprintf(text, sizeof text, "Stopped by its timeout: this task ran for %s (its timeout is %s).", took, limit);
    else
        snprintf(text, sizeof text, "Stopped by the runtime limit: this task ran for %s (max_runtime_ms is %lld).",
                 took, (long long)max);
    engine_fail_task(eng, t, text);
    return false;
}

/* An agent whose session the latest poll saw busy, with no progress for
 * stale_ms (and no question waiting for the user), is stopped. */
static void check_stale(engine *eng, task *t, int64_t now)
{
    if (t->type != TASK_AGENT || !t->session_id || task_permission_request(t) || t->active->busy_tick != eng->polls)
        return;
    int64_t quiet = now - t->active->progress_mono;
    if (quiet < eng->opt.stale_ms)
        return;
    char text[256], took[32];
    format_duration(took, sizeof took, quiet);
    snprintf(text, sizeof text, "Stopped: no progress for %s while its session was busy (stale_ms is %d).", took,
             eng->opt.stale_ms);
    engine_fail_task(eng, t, text);
}

void guards_tick(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    int64_t now = mono_ms(), wall = engine_now(eng);
    for (task *t = eng->reg.active, *next; t; t = next) {
        next = t->active->anext; /* a task that fails leaves the active list */
        if (t->status == TASK_PENDING || t->cancelling || task_guard_error(t))
            continue;
        task_active *p = t->active;
        if (p->guard_run != t->run)
            run_seen(eng, t, p, now, wall);
        if (t->type == TASK_SHELL && t->foreground)
            continue; /* a foreground command has its call's own timeout */
        if (check_runtime(eng, t, now))
            check_stale(eng, t, now);
    }
}

/* ---- admission -------------------------------------------------------------- */

/* Why task t (to be resumed) has no budget left, into out; false if it has. */
static bool task_spent(engine *eng, const task *t, strbuf *out)
{
    const usage *u = task_usage(t);
    char amount[48];
    if (u && usage_tokens(u) >= (uint64_t)eng->opt.max_task_tokens) {
        format_count(amount, sizeof amount, usage_tokens(u));
        sb_printf(out, "Not resumed: task %s has used %s tokens, its whole budget (max_task_tokens is %d).", t->id,
                  amount, eng->opt.max_task_tokens);
    } else if (u && u->cost >= eng->opt.max_task_cost_usd) {
        format_usd(amount, sizeof amount, u->cost);
        sb_printf(out, "Not resumed: task %s has spent %s, its whole budget (max_task_cost_usd is %.15g).", t->id,
                  amount, eng->opt.max_task_cost_usd);
    } else if (t->tool_calls >= (unsigned)eng->opt.max_tool_calls) {
        sb_printf(out, "Not resumed: task %s has made %u tool calls, all it may (max_tool_calls is %d).", t->id,
                  t->tool_calls, eng->opt.max_tool_calls);
    } else {
        return false;
    }
    sb_puts(out, " Start a new task instead.");
    return true;
}

/* Has session s's spend reached max_session_cost_usd? Then why, into out,
 * beginning with `verb` and ending with `tail`. [lock held] */
static bool session_spent(engine *eng, const char *session_id, const char *verb, const char *tail, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    session_spend *s = map_get(&eng->spend, session_id);
    if (!s || s->cost < eng->opt.max_session_cost_usd)
        return false;
    char amount[48];
    format_usd(amount, sizeof amount, s->cost);
    sb_printf(out,
              "%s: this session's background tasks have spent %s, its whole budget "
              "(max_session_cost_usd is %.15g). %s",
              verb, amount, eng->opt.max_session_cost_usd, tail);
    return true;
}

int guards_admit(engine *eng, const char *session_id, const char *resume_id, strbuf *out)
{
    if (!session_id)
        return 0; /* the launch itself refuses a call without a session */
    engine_lock(eng);
    task *t = resume_id ? registry_find(&eng->reg, resume_id) : NULL;
    int rc = 0;
    if (session_spent(eng, session_id, resume_id ? "Not resumed" : "Not started",
                      resume_id ? "The task was not resumed." : "No task was created.", out)) {
        rc = -EDQUOT;
    } else if (t && t->status == TASK_COMPLETED && strcmp(t->parent->session_id, session_id) == 0 &&
               task_spent(eng, t, out)) {
        rc = -EDQUOT;
    }
    engine_unlock(eng);
    return rc;
}

int guards_admit_send(engine *eng, const char *session_id, strbuf *out)
{
    if (!session_id)
        return 0;
    engine_lock(eng);
    bool spent = session_spent(eng, session_id, "Not sent", "Nothing was sent.", out);
    engine_unlock(eng);
    return spent ? -EDQUOT : 0;
}

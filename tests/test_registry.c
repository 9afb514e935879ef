/* test_registry — the registry's bookkeeping that the store and the poller
 * rely on, driven directly (model/registry.h, no engine):
 * - the dirty queue hands every changed task to the store once, oldest
 *   change first, never one removed meanwhile, across its compactions;
 * - a task keeps its active state (task_active) exactly while it is active, and
 *   the active list and the lanes' queues follow its status. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "model/registry.h"
#include "tap.h"

#define N 300

/* The store's side, modelled: which tasks it should still be handed. */
typedef struct model {
    task *t[N];
    bool dirty[N], removed[N];
    task *seen[N];
    size_t n;       /* handed over in the last take */
    int unexpected; /* handed a task not dirty in the model (twice, or removed) */
} model;

static int slot_of(const model *m, const task *t)
{
    for (int i = 0; i < N; i++)
        if (m->t[i] == t && !m->removed[i])
            return i;
    return -1;
}

static void take_one(void *arg, task *t)
{
    model *m = arg;
    int i = slot_of(m, t);
    if (i < 0 || !m->dirty[i])
        m->unexpected++;
    else
        m->dirty[i] = false;
    if (m->n < N)
        m->seen[m->n++] = t;
}

static void touch(registry *r, model *m, int i)
{
    if (m->removed[i])
        return;
    registry_touch(r, m->t[i]);
    m->dirty[i] = true;
}

static void dirty_queue_cases(void)
{
    registry r;
    registry_init(&r);
    r.track = true;
    static model m;
    for (int i = 0; i < N; i++) {
        m.t[i] =
            registry_add(&r, i % 2 ? "ses_parent_a" : "ses_parent_b", TASK_AGENT, "general", TASK_RUNNING, 1000 + i);
        m.dirty[i] = true;
    }
    is_int((long long)r.dirty, N, "every new task is dirty once");

    ok(!registry_take_dirty(&r, 100, take_one, &m), "taking 100 of %d leaves some", N);
    is_int((long long)m.n, 100, "100 taken");
    int in_order = 1;
    for (int i = 0; i < 100; i++)
        in_order &= m.seen[i] == m.t[i];
    ok(in_order, "oldest change first");

    /* Touched again while still dirty: it keeps its place, before one
     * touched after it was taken. */
    touch(&r, &m, 150);
    touch(&r, &m, 0);
    m.n = 0;
    registry_take_dirty(&r, 51, take_one, &m);
    ok(m.n == 51 && m.seen[50] == m.t[150], "a task touched while dirty keeps its place");

    /* Churn: removals of dirty and clean tasks, touches, takes of one at a
     * time, enough for the queue to squeeze out its holes many times. */
    for (int i = 160; i < 200; i += 2) {
        registry_remove(&r, m.t[i]);
        m.removed[i] = true;
        m.dirty[i] = false;
    }
    for (int step = 0; step < 5000; step++) {
        touch(&r, &m, (step * 7) % N);
        if (step % 3 == 0) {
            int i = (step * 13) % N;
            if (!m.removed[i] && i % 5 == 0) {
                registry_remove(&r, m.t[i]);
                m.removed[i] = true;
                m.dirty[i] = false;
            }
        }
        m.n = 0;
        registry_take_dirty(&r, step % 4, take_one, &m);
    }
    size_t want = 0;
    for (int i = 0; i < N; i++)
        want += m.dirty[i];
    is_int((long long)r.dirty, (long long)want, "the queue counts what the store has still to copy");
    ok(r.dirty_cap <= 2 * N, "the queue reuses its room (capacity %zu for at most %d tasks)", r.dirty_cap, N);
    m.n = 0;
    ok(registry_take_dirty(&r, (size_t)-1, take_one, &m), "all taken at last");
    is_int((long long)m.n, (long long)want, "every task changed and not yet taken is handed over");
    is_int(m.unexpected, 0, "never a task twice for one change, never one removed");
    is_int((long long)r.dirty, 0, "nothing dirty left");
    int flags_clear = 1;
    for (int i = 0; i < N; i++)
        if (!m.removed[i])
            flags_clear &= m.t[i]->dirty_slot == 0;
    ok(flags_clear, "no task left marked dirty");
    registry_free(&r);
}

static void live_state_cases(void)
{
    registry r;
    registry_init(&r);
    task *a = registry_add(&r, "ses_p", TASK_AGENT, "general", TASK_RUNNING, 1);
    task *b = registry_add(&r, "ses_p", TASK_AGENT, "general", TASK_PENDING, 2);
    task *c = registry_add(&r, "ses_p", TASK_AGENT, "general", TASK_PENDING, 3);
    ok(a->active && b->active && c->active, "a new task is live: it has its live state");
    ok(a->lane->qhead == b && b->active->qnext == c && c->active->qprev == b, "pending tasks queue in launch order");
    is_int(r.active_count, 3, "three active");

    registry_set_status(&r, b, TASK_CANCELLED, 10);
    ok(b->active == NULL, "a cancelled pending task's live state is freed");
    ok(a->lane->qhead == c && c->active->qprev == NULL, "it left its lane's queue");
    is_int(r.active_count, 2, "two active");

    registry_set_status(&r, a, TASK_COMPLETED, 11);
    ok(a->active == NULL, "a completed task keeps no live state");
    ok(r.active == c && c->active->anext == NULL, "the active list holds the one still live");
    ok(task_permission_what(a) == NULL, "a finished task has no open question");

    registry_set_status(&r, a, TASK_RESUMED, 12);
    ok(a->active != NULL && a->active->idle_checks == 0 && a->active->guard_run == 0,
       "a resumed task is live again, its run's state fresh");
    is_int(r.active_count, 2, "back on the active list");
    registry_set_status(&r, c, TASK_RUNNING, 13);
    ok(a->lane->qhead == NULL && c->active != NULL, "admitted: off the queue, still live");
    registry_free(&r);
}

/* The short strings share one allocation; setting one keeps the others,
 * also when the new value is one of the task's own strings. */
static void task_strings_cases(void)
{
    registry r;
    registry_init(&r);
    task *t = registry_add(&r, "ses_p", TASK_AGENT, "general", TASK_RUNNING, 1);
    ok(!t->description && !t->session_id && !t->result_message_id, "a new task has none");
    task_set_description(t, "Summarise the parser");
    registry_set_session(&r, t, "ses_child000000000000000000001");
    is_str(t->description, "Summarise the parser", "the description kept when the session is set");
    is_str(t->session_id, "ses_child000000000000000000001", "the session set");
    ok(registry_find_session(&r, "ses_child000000000000000000001") == t, "found by its session");
    task_set_result_message(t, "msg_answer00000000000000000001");
    ok(registry_find_session(&r, "ses_child000000000000000000001") == t,
       "still found by its session once its strings moved");
    task_set_result_message(t, t->session_id); /* from its own block */
    is_str(t->result_message_id, "ses_child000000000000000000001", "a value taken from its own strings");
    is_str(t->description, "Summarise the parser", "the others unchanged");
    task_set_description(t, NULL);
    ok(t->description == NULL && strcmp(t->session_id, "ses_child000000000000000000001") == 0,
       "a string set to NULL; the block then starts at the next one");
    task_set_strings(t, NULL, t->session_id, NULL);
    ok(!t->description && !t->result_message_id && strcmp(t->session_id, "ses_child000000000000000000001") == 0,
       "all but the session cleared in one call");
    task *shell = registry_add(&r, "ses_p", TASK_SHELL, NULL, TASK_RUNNING, 2);
    task_set_strings(shell, "d", NULL, "msg_y");
    task_set_strings(shell, NULL, NULL, NULL);
    ok(!shell->description && !shell->result_message_id, "all cleared");
    task_set_description(shell, "again");
    registry_free(&r); /* frees each block: ASan/valgrind see a leak or a bad free */
}

int main(void)
{
    task_strings_cases();
    dirty_queue_cases();
    live_state_cases();
    return done_testing();
}

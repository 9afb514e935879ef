/* Nesting (max_depth): a task's own session may launch tasks only
 * below max_depth; such a task is told of its tasks in its own session and
 * waits for them without a run slot (so nesting never deadlocks under the
 * caps), and the notice that wakes it waits for a slot; a run that ends,
 * a cancel, a clear or a deletion takes every descendant with it.
 *
 * Tasks are gated (testlib.h): each ends when the test answers its question. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define DEPTH1_REFUSAL                                                                                                 \
    "Not launched: this session is a background task at depth 1, and max_depth is 1, so it cannot start "              \
    "background tasks of its own. Do the work in this session instead."
#define DEPTH2_REFUSAL                                                                                                 \
    "Not launched: this session is a background task at depth 2, and max_depth is 2, so it cannot start "              \
    "background tasks of its own. Do the work in this session instead."
#define WAITS_FOR_ITS_TASKS "Waiting for the background tasks it launched to end."
#define WAKE_PARKED "The background tasks it launched have ended; it continues when a slot frees."

/* Launch gated task <name> from `parent`; its id (malloc'd). */
static char *launch_expecting(sim_host *h, const char *parent, const char *name, const char *want_status)
{
    char *out = t_launch_gated(h, parent, name, "explore");
    is_int(t_rc, 0, "%s is accepted", name);
    char want[64];
    snprintf(want, sizeof want, "Status: %s", want_status);
    like(out, want, "%s is %s", name, want_status);
    char *id = t_find_id(out, "bg_");
    free(out);
    if (!id)
        bail_out("no task id for %s", name);
    return id;
}

/* The session of gated task <name>, once it started (malloc'd). */
static char *session_of(sim_host *h, const char *name)
{
    if (t_wait_gate_open(h, name, 5000) != 0)
        bail_out("%s never started", name);
    return t_gated_session(h, name);
}

/* How many notices of task id's end (completed, failed, cancelled) the
 * session holds. */
typedef struct lookup {
    const char *session, *id;
} lookup;

/* Does background_output answer "not found" for the task? */
static int task_gone(sim_host *h, void *arg)
{
    const lookup *l = arg;
    char *out = t_output(h, l->session, l->id);
    free(out);
    return t_rc == -ENOENT;
}

static int end_notices(sim_host *h, const char *session, const char *id)
{
    static const char *const ends[] = {"completed", "failed", "cancelled"};
    int n = 0;
    for (size_t i = 0; i < 3; i++) {
        char needle[96];
        snprintf(needle, sizeof needle, "[ocbg] Background task %s: %s", ends[i], id);
        n += t_count_messages_with(h, session, needle);
    }
    return n;
}

static char *try_launch_from(sim_host *h, const char *session)
{
    return t_tool(h, session, "background_task",
                  J("{'description':'nested','prompt':'nested work','agent':'explore'}"));
}

static void depth_one_is_the_default(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *a = launch_expecting(h, f.parent, "A", "running");
    char *as = session_of(h, "A");
    is_int(sim_session_tool_denied(h, as, "background_task"), 1, "a task at max_depth gets no ocbg tools");
    char *out = try_launch_from(h, as);
    is_int(t_rc, -EPERM, "a launch from its session anyway is refused");
    is_str(out, DEPTH1_REFUSAL, "with the reason");
    free(out);
    out = t_tool(h, as, "Bash", J("{'command':'echo nested','run_in_background':true}"));
    is_int(t_rc, -EPERM, "a background command too");
    is_str(out, DEPTH1_REFUSAL, "with the same reason");
    free(out);
    is_int(sim_calls(h, "session_create", NULL), 1, "nothing was created");
    t_release_gated(h, "A");
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "the task completes as before");
    free(as);
    free(a);
    t_close(&f);
}

/* One slot (max_running_agents 1): A launches B, which waits for the slot
 * A holds; A's turn ends, so A gives the slot back and B runs. The root's
 * C was queued after B: when B ends, C takes the slot, and the notice that
 * would wake A waits until C ends. A then answers again: that answer is
 * A's result, and the root hears of A once. */
static void nested_task_waits_without_a_slot(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_depth':2,'max_running_agents':1}")));
    char *a = launch_expecting(h, f.parent, "A", "running");
    char *as = session_of(h, "A");
    is_int(sim_session_tool_denied(h, as, "background_task"), 0, "a task above max_depth keeps the ocbg tools");
    char *b = launch_expecting(h, as, "B", "pending");
    char *c = launch_expecting(h, f.parent, "C", "pending");
    t_release_gated(h, "A"); /* A answers "done A" while B waits */
    char *bs = session_of(h, "B");
    ok(bs != NULL, "A's answer gave its slot to B");
    ok(!t_gated_started(h, "C"), "C still waits: B was queued first");
    is_int(t_wait_output_with(h, f.parent, a, WAITS_FOR_ITS_TASKS, 5000), 0, "A shows that it waits for its tasks");
    char *out = t_output(h, f.parent, a);
    like(out, ": running\n", "A is still running: its answer is not its result yet");
    free(out);
    const char *args = J("{'task_id':'%s','block':false}", a);
    out = t_tool(h, f.parent, "TaskOutput", args);
    like(out, "<waiting_for_tasks>the background tasks it launched are still running</waiting_for_tasks>",
         "TaskOutput says so too");
    free(out);
    is_int(sim_session_tool_denied(h, bs, "background_task"), 1, "B, at max_depth, gets no ocbg tools");
    out = try_launch_from(h, bs);
    is_int(t_rc, -EPERM, "B cannot launch");
    is_str(out, DEPTH2_REFUSAL, "and is told why");
    free(out);

    char wake[96], script[160];
    snprintf(wake, sizeof wake, "[ocbg] Background task completed: %s", b);
    snprintf(script, sizeof script, "{\"steps\":[{\"reply\":\"A final, after %s\"}]}", b);
    sim_script(h, wake, script, 1);
    t_release_gated(h, "B");
    is_int(t_wait_status(h, as, b, "completed", 5000), 0, "B completes");
    is_int(t_wait_gate_open(h, "C", 5000), 0, "C takes the slot B freed");
    is_int(t_wait_output_with(h, f.parent, a, WAKE_PARKED, 5000), 0, "A's wake waits for a slot, and says so");
    is_int(t_count_messages_with(h, as, wake), 0, "A has not been told yet: no slot");
    t_release_gated(h, "C");
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "once C ends, A is woken and completes");
    is_int(t_count_messages_with(h, as, wake), 1, "A was told of B once, in its own session");
    t_output_like(h, f.parent, a, "A final, after bg_", "A's result is its answer after its tasks");
    is_int(t_wait_status(h, f.parent, c, "completed", 5000), 0, "C completes");
    is_int(t_sync_notifications(h, f.parent), 0, "the root's notifications are out");
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", a);
    is_int(t_count_messages_with(h, f.parent, needle), 1, "the root hears of A once");
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", b);
    is_int(t_count_messages_with(h, f.parent, needle), 0, "and nothing of B (A was)");
    free(bs);
    free(as);
    free(a);
    free(b);
    free(c);
    t_close(&f);
}

/* The root's task A running, and A's task B running (max_depth 2). */
typedef struct tree {
    sim_host *h;
    char *root, *a, *as, *b, *bs; /* session, task, its session, task, its session */
} tree;

static tree tree_open(void)
{
    tree t;
    t.h = t_gated_host(J("{'max_depth':2}"));
    t.root = sim_session_new(t.h, NULL, "main");
    t.a = launch_expecting(t.h, t.root, "A", "running");
    t.as = session_of(t.h, "A");
    t.b = launch_expecting(t.h, t.as, "B", "running");
    t.bs = session_of(t.h, "B");
    return t;
}

static void tree_close(tree *t)
{
    free(t->bs);
    free(t->as);
    free(t->a);
    free(t->b);
    free(t->root);
    sim_destroy(t->h);
}

/* A and its task B both running: cancelling A cancels B too. */
static void cancel_cascades(void)
{
    tree t = tree_open();
    sim_host *h = t.h;
    const char *root = t.root, *a = t.a, *as = t.as, *b = t.b, *bs = t.bs;
    const char *args = J("{'task_id':'%s'}", a);
    char *out = t_tool(h, root, "background_cancel", args);
    is_int(t_rc, 0, "A is cancelled");
    free(out);
    is_int(t_wait_status(h, as, b, "cancelled", 5000), 0, "B, which A launched, is cancelled with it");
    is_int(sim_wait_calls(h, "session_abort", bs, 1, tap_timeout_ms(5000)), 0, "B's session is aborted");
    is_int(sim_wait_idle(h, bs, tap_timeout_ms(5000)), 0, "and stops");
    is_int(t_sync_notifications(h, root), 0, "the root's notifications are out");
    is_int(end_notices(h, as, b), 0, "A's session is not told of B's end (nobody is there)");
    is_int(end_notices(h, root, b), 0, "nor is the root");
    tree_close(&t);
}

/* The root session deleted with A and B running (children deleted first,
 * as OpenCode does): both sessions are aborted, nothing is left running. */
static void delete_takes_the_tree(void)
{
    tree t = tree_open();
    sim_host *h = t.h;
    const char *root = t.root, *a = t.a, *as = t.as, *b = t.b, *bs = t.bs;
    is_int(sim_session_delete(h, root), 0, "the root session is deleted");
    is_int(sim_wait_idle(h, bs, tap_timeout_ms(5000)), 0, "B's session stops");
    is_int(sim_wait_idle(h, as, tap_timeout_ms(5000)), 0, "A's session stops");
    is_int(sim_wait_calls(h, "session_abort", bs, 1, tap_timeout_ms(5000)), 0, "B's session was aborted");
    is_int(sim_wait_calls(h, "session_abort", as, 1, tap_timeout_ms(5000)), 0, "and A's");
    /* The aborts are recorded as they are made; the tasks are forgotten a
     * moment later, once they returned: wait for that, with a deadline. */
    lookup la = {root, a}, lb = {as, b};
    is_int(sim_wait(h, task_gone, &la, tap_timeout_ms(5000)), 0, "A is gone with its session");
    is_int(sim_wait(h, task_gone, &lb, tap_timeout_ms(5000)), 0, "and B with it");
    tree_close(&t);
}

/* A waits for B; the root clears its tasks: A is cancelled and removed, and
 * B with it, its session aborted. */
static void clear_takes_the_tree(void)
{
    tree t = tree_open();
    sim_host *h = t.h;
    const char *root = t.root, *a = t.a, *as = t.as, *b = t.b, *bs = t.bs;
    t_release_gated(h, "A");
    is_int(t_wait_output_with(h, root, a, WAITS_FOR_ITS_TASKS, 5000), 0, "A waits for B");
    char *out = t_tool(h, root, "background_clear", "{}");
    is_int(t_rc, 0, "the root clears its tasks");
    free(out);
    is_int(sim_wait_calls(h, "session_abort", bs, 1, tap_timeout_ms(5000)), 0, "B's session is aborted");
    is_int(sim_wait_idle(h, bs, tap_timeout_ms(5000)), 0, "and stops");
    out = t_output(h, as, b);
    is_int(t_rc, -ENOENT, "B went with A");
    free(out);
    tree_close(&t);
}

/* B (A's task) spends over the session budget: the budget of A's session
 * and the root's both count it, so both stop, and the root may launch no
 * more. */
static void spend_rolls_up(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_depth':2,'max_session_cost_usd':1}")));
    char *a = launch_expecting(h, f.parent, "A", "running");
    char *as = session_of(h, "A");
    /* B reports what its model call cost, then waits for the test. */
    char *b = t_launch_script(h, as, "B",
                              J("{'steps':[{'usage':{'input':100,'output':10,'cost':1.5}},"
                                "{'ask':{'permission':'bash','patterns':['gate B']}},{'reply':'done B'}]}"));
    const char *text = "Stopped by the session budget: this session's background tasks spent $1.50 "
                       "(max_session_cost_usd is 1).";
    is_int(t_wait_status(h, as, b, "error", 5000), 0, "B stops: A's session is over its budget");
    is_int(t_wait_output_with(h, as, b, text, 5000), 0, "with the spend in its error");
    is_int(t_wait_status(h, f.parent, a, "error", 5000), 0, "A stops too: the root's session counts B's spend");
    is_int(t_wait_output_with(h, f.parent, a, text, 5000), 0, "with the same text");
    char *out = try_launch_from(h, f.parent);
    is_int(t_rc, -EDQUOT, "the root may launch no more");
    like(out, "this session's background tasks have spent $1.50", "and is told what was spent");
    free(out);
    free(as);
    free(a);
    free(b);
    t_close(&f);
}

int main(void)
{
    depth_one_is_the_default();
    nested_task_waits_without_a_slot();
    cancel_cascades();
    delete_takes_the_tree();
    clear_takes_the_tree();
    spend_rolls_up();
    return done_testing();
}

/* background_cancel, background_list, background_clear. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define HANG "{\"steps\":[{\"hang\":true}]}"

static char *batch_of(sim_host *h, const char *session, const char *id)
{
    char *out = t_output(h, session, id);
    char *b = t_find_id(out, "batch_");
    free(out);
    return b;
}

static void cancel_running_task(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Endless", J("{'steps':[{'tool':'read','ms':100000}]}"));
    char *child = t_task_session(h, 0);
    char *out = t_cancel(h, f.parent, id);
    is_int(t_rc, 0, "cancel succeeds");
    char want[160];
    snprintf(want, sizeof want, "Task %s cancelled: Endless\nIts session was aborted; status: cancelled.", id);
    is_str(out, want, "exact answer");
    free(out);
    is_int(sim_calls(h, "session_abort", child), 1, "its session was aborted once");
    is_int(sim_wait_idle(h, child, tap_timeout_ms(5000)), 0, "the sub-agent stopped");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "the abort's events delivered");
    is_int(t_wait_status(h, f.parent, id, "cancelled", 100), 0, "still cancelled after the abort's idles");
    t_output_like(h, f.parent, id, "Cancelled after ", "the report says when");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_messages_with(h, f.parent, id), 0, "no notification for a cancelled task");
    out = t_cancel(h, f.parent, id);
    is_int(t_rc, -EINVAL, "cancelling it again is refused");
    snprintf(want, sizeof want, "Cannot cancel task %s: its status is cancelled. Only running tasks can be cancelled.",
             id);
    is_str(out, want, "naming the status");
    free(out);
    free(child);
    t_close(&f);
}

static void cancel_refusals(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    const char *done = t_task(&f, "Done", J("{'steps':[{'reply':'r'}]}"));
    is_int(t_wait_status(h, f.parent, done, "completed", 5000), 0, "a completed task");
    char *out = t_cancel(h, f.parent, done);
    is_int(t_rc, -EINVAL, "cancel of a completed task refused");
    t_is_strf(out, "naming its status",
              "Cannot cancel task %s: its status is completed. Only running tasks can be cancelled.", done);
    free(out);
    out = t_cancel(h, f.parent, "bg_00000000");
    is_int(t_rc, -ENOENT, "unknown id");
    is_str(out, "Task not found: bg_00000000. Use background_list to see available tasks.", "not found");
    free(out);
    char *foreign = t_launch_script(h, other, "Not yours", HANG);
    char *child = t_task_session(h, 1);
    out = t_cancel(h, f.parent, foreign);
    is_int(t_rc, -ENOENT, "another session's task cannot be cancelled");
    free(out);
    is_int(sim_calls(h, "session_abort", NULL), 0, "nothing aborted");
    t_output_like(h, other, foreign, ": running\n", "it still runs");
    free(child);
    free(foreign);
    free(other);
    t_close(&f);
}

static void cancel_by_batch(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    const char *a = t_task(&f, "A", HANG);
    const char *b = t_task(&f, "B", HANG);
    const char *c = t_task(&f, "C", J("{'steps':[{'reply':'c done'}]}"));
    is_int(t_wait_status(h, f.parent, c, "completed", 5000), 0, "C completed");
    char *batch = batch_of(h, f.parent, a), *batch_b = batch_of(h, f.parent, b), *batch_c = batch_of(h, f.parent, c);
    ok(batch && strcmp(batch, batch_b) == 0 && strcmp(batch, batch_c) == 0, "tasks launched together share a batch");
    char *res = t_cancel(h, other, batch);
    is_int(t_rc, -ENOENT, "another session cannot cancel the batch");
    char want[160];
    snprintf(want, sizeof want, "Batch not found: %s. Use background_list to see available tasks.", batch);
    is_str(res, want, "it is not found there");
    free(res);
    res = t_cancel(h, f.parent, batch);
    is_int(t_rc, 0, "batch cancel succeeds");
    snprintf(want, sizeof want, "Cancelled 2 running tasks of batch %s:", batch);
    like(res, want, "two cancelled");
    like(res, a, "A named");
    like(res, b, "B named");
    unlike(res, c, "C (finished) not named");
    free(res);
    is_int(t_wait_status(h, f.parent, a, "cancelled", 100), 0, "A cancelled");
    is_int(t_wait_status(h, f.parent, b, "cancelled", 100), 0, "B cancelled");
    is_int(t_wait_status(h, f.parent, c, "completed", 100), 0, "C still completed");
    is_int(sim_calls(h, "session_abort", NULL), 2, "two sessions aborted");
    res = t_cancel(h, f.parent, batch);
    is_int(t_rc, -EINVAL, "nothing left to cancel");
    snprintf(want, sizeof want, "No running tasks in batch %s: all 3 of its tasks have already finished.", batch);
    is_str(res, want, "says so");
    free(res);
    res = t_cancel(h, f.parent, "batch_00000000");
    is_int(t_rc, -ENOENT, "unknown batch");
    free(res);
    /* A task launched when nothing runs opens a new batch. */
    const char *d = t_task(&f, "D", HANG);
    char *batch_d = batch_of(h, f.parent, d);
    ok(batch_d && strcmp(batch_d, batch) != 0, "a new batch once the old one finished");
    free(batch_d);
    free(batch);
    free(batch_b);
    free(batch_c);
    free(other);
    t_close(&f);
}

static int pos(const char *hay, const char *needle)
{
    const char *p = hay && needle ? strstr(hay, needle) : NULL;
    return p ? (int)(p - hay) : -1;
}

static void list_filters(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    t_list_empty(h, f.parent, "empty list");
    const char *t1 = t_task(&f, "First", J("{'steps':[{'reply':'one'}]}"));
    is_int(t_wait_status(h, f.parent, t1, "completed", 5000), 0, "t1 completed");
    const char *t2 = t_task(&f, "Second", HANG);
    const char *t3 = t_task(&f, "Third", J("{'steps':[{'error':'bad'}]}"));
    const char *t4 = t_task(&f, "Fourth", HANG);
    char *t5 = t_launch_script(h, other, "Fifth", HANG);
    is_int(t_wait_status(h, f.parent, t3, "error", 5000), 0, "t3 error");
    free(t_cancel(h, f.parent, t4));
    char *b1 = batch_of(h, f.parent, t1), *b2 = batch_of(h, f.parent, t2);

    char *out = t_tool(h, f.parent, "background_list", "{}");
    is_int(t_rc, 0, "list succeeds");
    static const char heading[] = "Background tasks of this session (newest first):\n";
    ok(strncmp(out, heading, sizeof heading - 1) == 0, "heading");
    ok(pos(out, t4) >= 0 && pos(out, t4) < pos(out, t3) && pos(out, t3) < pos(out, t2) && pos(out, t2) < pos(out, t1),
       "newest first");
    unlike(out, t5, "another session's task is not listed");
    char line[160];
    snprintf(line, sizeof line, "- %s | First | agent: explore | completed | ", t1);
    like(out, line, "a line: id, description, agent, status");
    snprintf(line, sizeof line, " | %s\n", b1);
    like(out, line, "and the batch");
    snprintf(line, sizeof line, "- %s | Second | agent: explore | running | ", t2);
    like(out, line, "the running one");
    like(out, "\nTotal: 4 tasks (1 running, 1 completed, 1 error, 1 cancelled)", "totals by status");
    free(out);

    out = t_tool(h, f.parent, "background_list", J("{'status':'running'}"));
    like(out, t2, "status filter keeps the running task");
    ok(pos(out, t1) < 0 && pos(out, t3) < 0 && pos(out, t4) < 0, "and only it");
    like(out, "\nTotal: 1 task (1 running)", "its total");
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'error'}"));
    ok(pos(out, t3) >= 0 && pos(out, t2) < 0, "status error: the failed one");
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'resumed'}"));
    is_str(out, "No background tasks found (filter: status resumed)", "no match names the filter");
    free(out);
    const char *args = J("{'batch_id':'%s'}", b1);
    out = t_tool(h, f.parent, "background_list", args);
    ok(pos(out, t1) >= 0 && pos(out, t2) < 0, "batch filter");
    like(out, "\nTotal: 1 task (1 completed)", "batch total");
    free(out);
    args = J("{'batch_id':'%s','status':'completed'}", b2);
    out = t_tool(h, f.parent, "background_list", args);
    t_is_strf(out, "both filters", "No background tasks found (filter: status completed batch %s)", b2);
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'done'}"));
    is_int(t_rc, -EINVAL, "an unknown status is refused");
    like(out, "argument 'status' must be one of: pending running completed error cancelled resumed", "listing them");
    free(out);
    out = t_tool(h, other, "background_list", "{}");
    ok(pos(out, t5) >= 0 && pos(out, t1) < 0, "the other session sees only its own");
    like(out, "\nTotal: 1 task (1 running)", "one task there");
    free(out);
    free(b1);
    free(b2);
    free(t5);
    free(other);
    t_close(&f);
}

static void clear_own_session(void)
{
    sim_host *h = t_host(NULL);
    char *p1 = sim_session_new(h, NULL, "one");
    char *p2 = sim_session_new(h, NULL, "two");
    char *out = t_tool(h, p1, "background_clear", "{}");
    is_str(out, "No background tasks to clear.", "nothing to clear");
    free(out);
    char *done = t_launch_script(h, p1, "Done", J("{'steps':[{'reply':'r'}]}"));
    is_int(t_wait_status(h, p1, done, "completed", 5000), 0, "a completed task");
    char *run1 = t_launch_script(h, p1, "Run1", HANG);
    char *run2 = t_launch_script(h, p1, "Run2", HANG);
    char *kept = t_launch_script(h, p2, "Kept", HANG);
    char *c1 = t_task_session(h, 1), *c2 = t_task_session(h, 2), *ck = t_task_session(h, 3);
    out = t_tool(h, p1, "background_clear", "{}");
    is_int(t_rc, 0, "clear succeeds");
    is_str(out, "Cleared 3 background tasks of this session (2 running tasks were aborted).", "exact answer");
    free(out);
    is_int(sim_calls(h, "session_abort", c1), 1, "first running session aborted");
    is_int(sim_calls(h, "session_abort", c2), 1, "second running session aborted");
    is_int(sim_calls(h, "session_abort", ck), 0, "the other session's task not aborted");
    is_int(sim_wait_idle(h, c1, tap_timeout_ms(5000)), 0, "the sub-agent stopped");
    t_list_empty(h, p1, "the list is empty");
    out = t_output(h, p1, done);
    is_int(t_rc, -ENOENT, "a cleared task is not found");
    free(out);
    t_output_like(h, p2, kept, ": running\n", "the other session's task still runs");
    is_int(t_sync_notifications(h, p1), 0, "sync point");
    is_int(t_count_messages_with(h, p1, run1), 0, "no notification for a cleared task");
    char *last = t_launch_script(h, p1, "Last", HANG);
    out = t_tool(h, p1, "background_clear", "{}");
    is_str(out, "Cleared 2 background tasks of this session (1 running task was aborted).", "singular");
    free(out);
    free(last);
    free(c1);
    free(c2);
    free(ck);
    free(done);
    free(run1);
    free(run2);
    free(kept);
    free(p1);
    free(p2);
    sim_destroy(h);
}

int main(void)
{
    cancel_running_task();
    cancel_refusals();
    cancel_by_batch();
    list_filters();
    clear_own_session();
    return done_testing();
}

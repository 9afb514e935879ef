/* Every host call failing in turn: session_create, session_prompt,
 * session_messages, session_abort, session_status. Each failure must leave a
 * visible, truthful result: an error text, the right task state, or an
 * eventual completion by a retry or the poll. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define HANG "{\"steps\":[{\"hang\":true}]}"

static void create_fails(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_fail(h, "session_create", 1, 1, -EIO);
    char *out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'a'}"));
    is_int(t_rc, -EIO, "create failure: -EIO");
    is_str(out, "Failed to create a session for the background task: simulated failure of session_create",
           "exact text");
    free(out);
    is_int(sim_calls(h, "session_prompt", NULL), 0, "no prompt sent");
    const char *id = t_task(&f, "Second try", J("{'steps':[{'reply':'fine now'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the next launch works");
    t_list_like(h, f.parent, "\nTotal: 1 task (1 completed)", "only the good task exists");
    t_close(&f);
}

static void prompt_fails(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'notify_retries':0}"));
    sim_fail(h, "session_prompt", 1, 1, -EIO);
    char *out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'a'}"));
    is_int(t_rc, -EIO, "the task's prompt failing: -EIO");
    char *id = t_find_id(out, "bg_");
    t_is_strf(out, "exact text",
              "Background task %s could not start. Failed to send the prompt to the sub-agent: simulated failure of "
              "session_prompt\nIts status is error.",
              id);
    free(out);
    is_int(t_wait_status(h, f.parent, id, "error", 2000), 0, "the task is error");
    is_int(t_wait_messages_with(h, f.parent, "Background task failed", 1, 5000), 0, "the parent is told");
    /* (the message can be visible a moment before the call is recorded) */
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 1, tap_timeout_ms(5000)), 0, "its push recorded");

    /* The parent gone (-ENOENT) when a notice is pushed: dropped, not retried or held. */
    t_task(&f, "Orphaned notice", HANG);
    sim_fail(h, "session_prompt", 1, 1, -ENOENT);
    size_t before = sim_calls(h, "session_prompt", f.parent);
    char *child = t_task_session(h, 1);
    char ev[256];
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.error\",\"properties\":{\"sessionID\":\"%s\",\"error\":{\"name\":"
             "\"APIError\",\"data\":{\"message\":\"x\"}}}}",
             child);
    sim_emit(h, ev);
    is_int(sim_wait_calls(h, "session_prompt", f.parent, before + 1, tap_timeout_ms(5000)), 0, "one push tried");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    out = t_tool(h, f.parent, "background_list", "{}");
    unlike(out, "could not be delivered", "a notice for a vanished session is not held");
    free(out);
    free(child);
    free(id);
    t_close(&f);
}

/* Reading the answer fails. The answers' part events are lost, so each
 * check must read the messages (the events would otherwise tell the
 * answer). */
static void messages_fail(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':50}"));
    sim_event_faults(h, 3, 1.0, 0, 0, "message.part.updated");
    sim_fail(h, "session_messages", 1, 1, -EIO);
    const char *id = t_task(&f, "Read once", J("{'steps':[{'reply':'second read wins'}]}"));
    char *child = t_task_session(h, 0);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "completed although the first read failed");
    ok(sim_calls(h, "session_messages", child) >= 2, "the messages were read again");
    t_output_like(h, f.parent, id, "Result:\nsecond read wins\n", "with the right result");

    /* Failing for a while: running meanwhile, completed once it works. */
    sim_fail(h, "session_messages", 1, -1, -EIO);
    const char *id2 = t_task(&f, "Read later", J("{'steps':[{'reply':'eventually'}]}"));
    char *child2 = t_task_session(h, 1);
    is_int(sim_wait_calls(h, "session_messages", child2, 3, tap_timeout_ms(5000)), 0, "several failed reads");
    t_output_like(h, f.parent, id2, ": running\n", "still running, not a false completion or error");
    sim_fail(h, "session_messages", 0, 0, 0);
    is_int(t_wait_status(h, f.parent, id2, "completed", 5000), 0, "completed once the host answers");
    is_int(t_wait_messages_with(h, f.parent, "eventually", 1, 5000), 0, "and notified");

    /* The host says the session is gone. */
    sim_fail(h, "session_messages", 1, -1, -ENOENT);
    const char *id3 = t_task(&f, "Vanished", J("{'steps':[{'reply':'lost'}]}"));
    is_int(t_wait_status(h, f.parent, id3, "error", 5000), 0, "-ENOENT: error");
    t_output_like(h, f.parent, id3, "Error: The task's session no longer exists.", "saying why");
    free(child);
    free(child2);
    t_close(&f);
}

static void abort_fails(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Stubborn", HANG);
    char *child = t_task_session(h, 0);
    sim_fail(h, "session_abort", 1, 1, -EIO);
    char *out = t_cancel(h, f.parent, id);
    is_int(t_rc, -EIO, "a failed abort fails the cancel");
    char want[200];
    snprintf(want, sizeof want,
             "Could not cancel task %s: aborting its session failed (simulated failure of session_abort). It is still "
             "running.",
             id);
    is_str(out, want, "exact text");
    free(out);
    t_output_like(h, f.parent, id, ": running\n", "the task is still running");
    is_int(sim_session_busy(h, child), 1, "and so is its session");
    out = t_cancel(h, f.parent, id);
    is_int(t_rc, 0, "a second cancel works");
    free(out);
    is_int(t_wait_status(h, f.parent, id, "cancelled", 100), 0, "cancelled");

    /* Batch: one abort fails, the other succeeds. */
    const char *a = t_task(&f, "A", HANG);
    t_task(&f, "B", HANG);
    out = t_output(h, f.parent, a);
    char *batch = t_find_id(out, "batch_");
    free(out);
    sim_fail(h, "session_abort", 1, 1, -EIO);
    const char *args = J("{'task_id':'%s'}", batch);
    out = t_tool(h, f.parent, "background_cancel", args);
    is_int(t_rc, 0, "partly successful batch cancel succeeds");
    snprintf(want, sizeof want, "Cancelled 1 running task of batch %s: ", batch);
    like(out, want, "one cancelled");
    like(out, "could not abort its session (simulated failure of session_abort); it is still running.",
         "the other reported");
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'running'}"));
    like(out, "Total: 1 task (1 running)", "one still running");
    free(out);

    /* Clear: the answer must not claim an abort that failed. */
    char *c3 = t_task_session(h, 2);
    sim_fail(h, "session_abort", 1, -1, -EIO);
    out = t_tool(h, f.parent, "background_clear", "{}");
    unlike(out, "1 running task was aborted", "a failed abort is not reported as done");
    like(out, "aborting its session failed (simulated failure of session_abort); it is still running and was kept.",
         "the answer says the task was kept");
    is_int(t_rc, -EIO, "and the call is an error");
    free(out);
    sim_fail(h, NULL, 0, 0, 0);
    out = t_tool(h, f.parent, "background_list", J("{'status':'running'}"));
    like(out, "Total: 1 task (1 running)", "the kept task is still listed, and can be cancelled later");
    free(out);
    free(c3);
    free(batch);
    free(child);
    t_close(&f);
}

static void status_fails(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':50}"));
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "setup events delivered");
    sim_event_faults(h, 5, 1.0, 0, 0, NULL); /* only the poll can see the end */
    sim_fail(h, "session_status", 1, -1, -EIO);
    const char *id = t_task(&f, "Polled", J("{'steps':[{'reply':'seen by the poll'}]}"));
    is_int(sim_wait_calls(h, "session_status", NULL, 3, tap_timeout_ms(5000)), 0, "several failed polls");
    t_output_like(h, f.parent, id, ": running\n", "running while the status map cannot be read");
    sim_fail(h, "session_status", 0, 0, 0);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "completed once the poll works");
    t_output_like(h, f.parent, id, "Result:\nseen by the poll\n", "with its result");
    is_int(t_wait_messages_with(h, f.parent, "seen by the poll", 1, 5000), 0, "and notified");
    t_close(&f);
}

int main(void)
{
    create_fails();
    prompt_fails();
    messages_fail();
    abort_fails();
    status_fails();
    return done_testing();
}

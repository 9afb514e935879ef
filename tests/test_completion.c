/* How a task ends: by its idle event, by the fallback poll when every idle is
 * lost, once only under duplicated events, as an error on session.error, and
 * when its session or its parent session is deleted. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define NOTIFICATION_DONE "[ocbg] Background task completed: "
#define NOTIFICATION_FAIL "[ocbg] Background task failed: "

/* The fast path: the idle event alone completes the task (the poll is set so
 * slow it cannot have done it), with the sub-agent's last text. */
static void completes_by_idle_event(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':600000}"));
    const char *id = t_task(&f, "Read code",
                            J("{'steps':[{'tool':'read','output':'x'},{'wait_ms':30},"
                              "{'reply':'the answer is 42'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "idle event: task completed");
    char *out = t_output(h, f.parent, id);
    is_int(t_rc, 0, "output of a completed task succeeds");
    char first[64];
    snprintf(first, sizeof first, "Task %s: completed\n", id);
    ok(strncmp(out, first, strlen(first)) == 0, "report starts with 'Task <id>: completed'");
    like(out, "Description: Read code\nAgent: explore\n", "report names description and agent");
    like(out, "Duration: ", "report gives the duration");
    like(out, "\n\nResult:\nthe answer is 42\n", "result is the last assistant text");
    is_int(sim_calls(h, "session_status", NULL), 0, "no poll was needed");
    char *child = t_task_session(h, 0);
    is_int(sim_calls(h, "session_messages", child), 0,
           "the answer came with the events (its text part's end, the turn-ending message): no read of the child's "
           "messages");
    is_int(t_wait_messages_with(h, f.parent, NOTIFICATION_DONE, 1, 5000), 0, "parent notified");
    free(child);
    free(out);
    t_close(&f);
}

/* session.idle dropped: the session.status idle event still completes it. */
static void completes_by_status_idle(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':600000}"));
    sim_event_faults(h, 7, 1.0, 0, 0, "session.idle");
    const char *id = t_task(&f, "status idle", J("{'steps':[{'reply':'via status'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "session.status idle completes the task");
    is_int(sim_events_delivered(h, "session.idle"), 0, "no session.idle reached the plugin");
    is_int(t_wait_output_with(h, f.parent, id, "Result:\nvia status", 2000), 0, "with its reply");
    t_close(&f);
}

/* Every event lost (idle, status, parts): the poll finds the session idle. */
static void completes_by_poll_when_events_lost(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':50}"));
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "the parent's creation delivered");
    size_t before = sim_events_delivered(h, NULL);
    sim_event_faults(h, 11, 1.0, 0, 0, NULL);
    const char *id = t_task(&f, "lost events", J("{'steps':[{'wait_ms':40},{'reply':'found by polling'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "poll fallback completes the task");
    is_int(sim_events_delivered(h, NULL), before, "no event at all reached the plugin");
    ok(sim_calls(h, "session_status", NULL) >= 1, "the status map was polled");
    t_output_like(h, f.parent, id, "Result:\nfound by polling", "the poll completion carries the reply");
    is_int(t_wait_messages_with(h, f.parent, "found by polling", 1, 5000), 0, "parent notified after a poll");
    /* Once nothing is active the poll stops: a finished plugin makes no calls. */
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    size_t polls = sim_calls(h, "session_status", NULL);
    is_int(t_sync_notifications(h, f.parent), 0, "a later task completes too");
    ok(sim_calls(h, "session_status", NULL) <= polls + 2, "no steady polling while idle");
    t_close(&f);
}

/* The answer's text part events lost: the check reads the messages for it
 * (the events tell no answer), with the same result. */
static void reads_the_answer_when_its_part_events_are_lost(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':600000}"));
    sim_event_faults(h, 5, 1.0, 0, 0, "message.part.updated");
    const char *id = t_task(&f, "parts lost", J("{'steps':[{'reply':'read from the messages'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "completed without its part events");
    is_int(sim_events_delivered(h, "message.part.updated"), 0, "no part event reached the plugin");
    char *child = t_task_session(h, 0);
    ok(sim_calls(h, "session_messages", child) >= 1, "the child's messages were read instead");
    is_int(t_wait_output_with(h, f.parent, id, "Result:\nread from the messages\n", 2000), 0, "with its reply");
    is_int(t_wait_messages_with(h, f.parent, "read from the messages", 1, 5000), 0,
           "and the parent is notified with it");
    free(child);
    t_close(&f);
}

/* The message.updated of the child's newest message, hand-made: its id, the
 * finish reason (NULL: none) and whether it is a compaction's summary. */
static void emit_answer_update(sim_host *h, const char *child, const char *finish, bool summary)
{
    char *json = sim_session_messages_json(h, child);
    cJSON *msgs = cJSON_Parse(json ? json : "[]");
    free(json);
    const cJSON *info =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(msgs, cJSON_GetArraySize(msgs) - 1), "info");
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id"));
    char ev[512], fin[48] = "";
    if (finish)
        snprintf(fin, sizeof fin, ",\"finish\":\"%s\"", finish);
    snprintf(ev, sizeof ev,
             "{\"type\":\"message.updated\",\"properties\":{\"info\":{\"id\":\"%s\",\"sessionID\":\"%s\","
             "\"role\":\"assistant\",\"time\":{\"created\":1},\"tokens\":{\"input\":1,\"output\":1}%s%s}}}",
             msg ? msg : "msg_x", child, fin, summary ? ",\"summary\":true,\"mode\":\"compaction\"" : "");
    sim_emit(h, ev);
    cJSON_Delete(msgs);
}

/* OpenCode stores the answer that ends the model's turn (finish "stop") before
 * its own housekeeping and the idle: that update alone completes the task
 * (every other event lost, the poll too slow to matter). A tool-call step's
 * finish, or a summary's, does not. */
static void completes_by_the_turn_ending_answer(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':600000}"));
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "the parent's creation delivered");
    sim_event_faults(h, 5, 1.0, 0, 0, NULL);
    const char *id = t_task(&f, "early", J("{'steps':[{'reply':'answered early'}]}"));
    char *child = t_task_session(h, 0);
    is_int(sim_wait_idle(h, child, tap_timeout_ms(5000)), 0, "the sub-agent answered (its events lost)");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "nothing left to deliver");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    emit_answer_update(h, child, "tool-calls", false);
    emit_answer_update(h, child, NULL, false);
    emit_answer_update(h, child, "stop", true);
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "a tool-call step's, an unfinished and a summary's update");
    is_int(t_wait_status(h, f.parent, id, "completed", 300), -ETIMEDOUT, "none of them completes the task");
    is_int(sim_calls(h, "session_messages", child), 0, "nor reads the sub-agent's messages");
    emit_answer_update(h, child, "stop", false);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the turn-ending answer's update completes it");
    is_int(t_wait_output_with(h, f.parent, id, "Result:\nanswered early", 2000), 0, "with its answer");
    is_int(t_wait_messages_with(h, f.parent, NOTIFICATION_DONE, 1, 5000), 0, "the parent is notified");
    is_int(sim_calls(h, "session_status", NULL), 0, "no poll was needed");
    free(child);
    t_close(&f);
}

/* Every event delivered twice (and idles injected by hand): one completion,
 * one notification. */
static void duplicated_events_complete_once(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_event_faults(h, 3, 0, 1.0, 0, NULL);
    const char *id = t_task(&f, "dup events", J("{'steps':[{'tool':'grep'},{'reply':'only once'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "completed under duplicated events");
    char *child = t_task_session(h, 0);
    const char *ev = J("{'type':'session.idle','properties':{'sessionID':'%s'}}", child);
    sim_emit(h, ev);
    sim_emit(h, ev);
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "events flushed");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_notifications(h, f.parent, NOTIFICATION_DONE, id), 1, "exactly one notification");
    t_output_like(h, f.parent, id, "Result:\nonly once\n", "the one result");
    free(child);
    t_close(&f);
}

/* session.error: status error with the reason; the idles after it (OpenCode
 * sends two) do not turn it completed. */
static void session_error_ends_in_error(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "will fail", J("{'steps':[{'tool':'read'},{'error':'model overloaded'}]}"));
    is_int(t_wait_status(h, f.parent, id, "error", 5000), 0, "session.error: task error");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "the idles after the error delivered");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    char *out = t_output(h, f.parent, id);
    char first[64];
    snprintf(first, sizeof first, "Task %s: error\n", id);
    ok(strncmp(out, first, strlen(first)) == 0, "still error after the idles");
    like(out, "\n\nError: APIError: model overloaded\n", "the error names the host's reason");
    is_int(t_count_notifications(h, f.parent, NOTIFICATION_FAIL, id), 1, "one failure notification");
    is_int(t_count_notifications(h, f.parent, NOTIFICATION_DONE, id), 0, "no completion notification");
    free(out);
    t_close(&f);
}

/* The task's own session deleted while it runs. */
static void task_session_deleted(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "doomed", J("{'steps':[{'hang':true}]}"));
    char *child = t_task_session(h, 0);
    is_int(sim_session_delete(h, child), 0, "child session deleted");
    is_int(t_wait_status(h, f.parent, id, "error", 5000), 0, "task ends in error");
    t_output_like(h, f.parent, id, "Error: The task's session was deleted.", "the error says why");
    is_int(t_wait_messages_with(h, f.parent, NOTIFICATION_FAIL, 1, 5000), 0, "parent told of the failure");
    free(child);
    t_close(&f);
}

/* The parent deleted (the host deletes its children first): its tasks are
 * gone; another session's tasks stay. */
static void parent_session_deleted(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *other = sim_session_new(h, NULL, "other");
    const char *done = t_task(&f, "finished", J("{'steps':[{'reply':'r'}]}"));
    is_int(t_wait_status(h, f.parent, done, "completed", 5000), 0, "first task completed");
    const char *running = t_task(&f, "running", J("{'steps':[{'hang':true}]}"));
    char *kept = t_launch_script(h, other, "kept", J("{'steps':[{'hang':true}]}"));
    is_int(sim_session_delete(h, f.parent), 0, "parent deleted");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "its events delivered");
    char *out = t_output(h, f.parent, done);
    is_int(t_rc, -ENOENT, "a deleted parent's finished task is gone");
    free(out);
    out = t_output(h, f.parent, running);
    is_int(t_rc, -ENOENT, "a deleted parent's running task is gone");
    free(out);
    t_list_empty(h, f.parent, "its list is empty");
    t_output_like(h, other, kept, ": running\n", "another session's task is untouched");
    char *child = t_task_session(h, 1);
    is_int(sim_session_exists(h, child), 0, "the running task's session went with its parent");
    is_int(t_count_notifications(h, other, "[ocbg] Background task", ""), 0, "nothing told to the other session");
    free(child);
    free(kept);
    free(other);
    t_close(&f);
}

/* A session.deleted for the parent alone (the children's events lost): the
 * running task's session is aborted, not left running. */
static void parent_deleted_aborts_running(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *running = t_task(&f, "orphan", J("{'steps':[{'hang':true}]}"));
    char *child = t_task_session(h, 0);
    const char *ev = J("{'type':'session.deleted','properties':{'info':{'id':'%s'}}}", f.parent);
    sim_emit(h, ev);
    is_int(sim_wait_calls(h, "session_abort", child, 1, tap_timeout_ms(5000)), 0, "running child aborted");
    is_int(sim_wait_idle(h, child, tap_timeout_ms(5000)), 0, "the child session stops");
    t_output_like(h, f.parent, running, "Task not found: ", "the task is gone");
    free(child);
    t_close(&f);
}

/* Events dropped, duplicated and reordered at random: every task still ends
 * once, with its own result and one notification. */
static void chaos_each_task_ends_once(void)
{
    enum {
        N = 6
    };
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':50}"));
    sim_event_faults(h, 20261121, 0.3, 0.5, 30, NULL);
    char *ids[N];
    for (int i = 0; i < N; i++) {
        const char *script =
            J("{'steps':[{'tool':'read','ms':%d},{'%s':'chaos result %d'}]}", 5 * i, i == 2 ? "error" : "reply", i);
        ids[i] = t_launch_script(h, f.parent, "Chaos", script);
    }
    for (int i = 0; i < N; i++) {
        is_int(t_wait_status(h, f.parent, ids[i], i == 2 ? "error" : "completed", 10000), 0, "task %d ended", i);
        char want[64];
        snprintf(want, sizeof want, "chaos result %d\n", i);
        is_int(t_wait_output_with(h, f.parent, ids[i], want, 1000), 0, "task %d has its own result", i);
    }
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    for (int i = 0; i < N; i++) {
        is_int(t_count_notifications(h, f.parent, i == 2 ? NOTIFICATION_FAIL : NOTIFICATION_DONE, ids[i]), 1,
               "task %d: one notice", i);
        free(ids[i]);
    }
    t_close(&f);
}

/* A stop during a completion check that an idle asked to repeat: the check
 * returns while the abort is still in flight, then the abort ends the task.
 * It ends cancelled, quietly (the model stopped it), and the check's
 * repeat request does not outlive the check. */
static void stopped_during_a_repeated_check(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'poll_interval_ms':600000}"));
    sim_event_faults(h, 5, 1.0, 0, 0, "message.part.updated"); /* the check must read the messages */
    t_started read = {"session_messages", sim_calls_started(h, "session_messages") + 1};
    sim_slow(h, "session_messages", tap_timeout_ms(1000));
    sim_slow(h, "session_abort", tap_timeout_ms(3000));
    const char *id = t_task(&f, "stopped mid-check", J("{'steps':[{'reply':'too late'}]}"));
    is_int(sim_wait(h, t_calls_started, &read, tap_timeout_ms(5000)), 0, "the completion check is reading");
    char *child = t_task_session(h, 0);
    const char *ev = J("{'type':'session.idle','properties':{'sessionID':'%s'}}", child);
    sim_emit(h, ev);
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "an idle came during the check");
    char *out = t_cancel(h, f.parent, id); /* returns after the slow abort, the check long over */
    is_int(t_rc, 0, "the stop succeeds");
    free(out);
    sim_slow(h, "session_messages", 0);
    sim_slow(h, "session_abort", 0);
    is_int(t_wait_status(h, f.parent, id, "cancelled", 5000), 0, "the task ends cancelled");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_notifications(h, f.parent, NOTIFICATION_DONE, id), 0,
           "no completion notice for a task the model stopped");
    free(child);
    t_close(&f);
}

int main(void)
{
    completes_by_idle_event();
    completes_by_status_idle();
    completes_by_poll_when_events_lost();
    reads_the_answer_when_its_part_events_are_lost();
    completes_by_the_turn_ending_answer();
    duplicated_events_complete_once();
    stopped_during_a_repeated_check();
    session_error_ends_in_error();
    task_session_deleted();
    parent_session_deleted();
    parent_deleted_aborts_running();
    chaos_each_task_ends_once();
    return done_testing();
}

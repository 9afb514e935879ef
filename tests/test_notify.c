/* Notifications into the parent session (never lost, never duplicated,
 * wake when it matters): one per finished task,
 * their content, silent vs waking, the cap, retries, holding for the next
 * answer, and none after a blocking call returned the result. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* The body of the (first) notification push into `parent` about task `id`,
 * parsed; NULL when there is none. *count = how many pushes were about it. */
static cJSON *notice_body(sim_host *h, const char *parent, const char *id, int *count)
{
    cJSON *found = NULL;
    *count = 0;
    char *b;
    for (int n = 0; (b = sim_call_body(h, "session_prompt", parent, n)); n++) {
        if (strstr(b, id)) {
            if (!found)
                found = cJSON_Parse(b);
            (*count)++;
        }
        free(b);
    }
    return found;
}

typedef struct notice_arg {
    const char *parent, *id;
} notice_arg;

static int has_notice(sim_host *h, void *arg)
{
    notice_arg *a = arg;
    int count;
    cJSON *b = notice_body(h, a->parent, a->id, &count);
    cJSON_Delete(b);
    return count > 0;
}

/* The push about `id` into `parent`, once recorded (the message may be visible
 * in the session a moment before the call is in the host's record). */
static cJSON *wait_notice(sim_host *h, const char *parent, const char *id)
{
    notice_arg a = {parent, id};
    if (sim_wait(h, has_notice, &a, tap_timeout_ms(5000)) != 0)
        diag("no push about %s recorded", id);
    int count;
    return notice_body(h, parent, id, &count);
}

static const char *body_text(const cJSON *b)
{
    return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "parts"), 0), "text"));
}

static int body_quiet(const cJSON *b)
{
    return cJSON_IsTrue(cJSON_GetObjectItem(b, "noReply"));
}

static void one_notification_with_content(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Map the API", J("{'steps':[{'reply':'three endpoints'}]}"));
    char *batch = NULL;
    char *out = t_output(h, f.parent, id);
    batch = t_find_id(out, "batch_");
    free(out);
    is_int(t_wait_messages_with(h, f.parent, "three endpoints", 1, 5000), 0, "the parent got the result");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    cJSON_Delete(wait_notice(h, f.parent, id));
    int count;
    cJSON *b = notice_body(h, f.parent, id, &count);
    is_int(count, 1, "exactly one push about the task");
    char head[128];
    snprintf(head, sizeof head, "[ocbg] Background task completed: %s \"Map the API\" (agent: explore, ", id);
    const char *text = body_text(b);
    ok(text && strncmp(text, head, strlen(head)) == 0, "it names the task, description and agent");
    char line[96];
    snprintf(line, sizeof line, "\nBatch %s: all 1 task done.\n", batch);
    like(text, line, "batch progress");
    like(text, "\n\nResult:\nthree endpoints\n", "and the full result");
    ok(!body_quiet(b), "the only task wakes the parent");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(b, "agent")), "build", "the parent goes on with its agent");
    ok(!cJSON_GetObjectItem(b, "tools"), "no tools denied to the parent");
    is_int(t_count_messages_with(h, f.parent, "three endpoints"), 1, "one message in the parent");
    cJSON_Delete(b);
    free(batch);
    t_close(&f);
}

/* A batch: an early finisher joins quietly, the last one wakes. */
static void quiet_until_last(const char *options, int expect_quiet)
{
    t_fixture f;
    sim_host *h = t_open(&f, options);
    const char *script = J("{'steps':[{'wait_ms':%d},{'reply':'slow result'}]}", tap_timeout_ms(300));
    const char *slow = t_task(&f, "Slow", script);
    const char *fast = t_task(&f, "Fast", J("{'steps':[{'reply':'fast result'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "fast result", 1, 5000), 0, "fast task's notice arrives");
    cJSON *b = wait_notice(h, f.parent, fast);
    if (expect_quiet)
        ok(body_quiet(b), "a finisher with siblings running is quiet (noReply)");
    else
        ok(!body_quiet(b), "wake=always: it wakes the parent too");
    like(body_text(b), "tasks done, 1 still running.\n", "it says one is still running");
    like(body_text(b), ": 1 of 2 tasks done", "1 of 2 done");
    cJSON_Delete(b);
    is_int(t_wait_messages_with(h, f.parent, "slow result", 1, 5000), 0, "slow task's notice arrives");
    b = wait_notice(h, f.parent, slow);
    ok(!body_quiet(b), "the last one wakes the parent");
    like(body_text(b), ": all 2 tasks done.\n", "all done");
    cJSON_Delete(b);
    t_close(&f);
}

/* A failure wakes the parent even while siblings run. */
static void failure_wakes(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    t_task(&f, "Slow", J("{'steps':[{'hang':true}]}"));
    const char *bad = t_task(&f, "Broken", J("{'steps':[{'error':'quota exceeded'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "quota exceeded", 1, 5000), 0, "failure notice arrives");
    cJSON *b = wait_notice(h, f.parent, bad);
    char head[96];
    snprintf(head, sizeof head, "[ocbg] Background task failed: %s \"Broken\"", bad);
    like(body_text(b), head, "it says failed");
    like(body_text(b), "\n\nError: APIError: quota exceeded\n", "with the error");
    ok(!body_quiet(b), "a failure wakes the parent while a sibling runs");
    cJSON_Delete(b);
    t_close(&f);
}

/* A long result is cut, with a pointer to the full text. */
static void long_result_is_capped(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'notify_max_chars':200}"));
    char reply[301];
    for (int i = 0; i < 300; i++)
        reply[i] = (char)('a' + i % 26);
    reply[300] = '\0';
    const char *script = J("{'steps':[{'reply':'%s'}]}", reply);
    const char *id = t_task(&f, "Verbose", script);
    is_int(t_wait_messages_with(h, f.parent, "[Cut at 200 of 300 characters.", 1, 5000), 0, "cut notice arrives");
    cJSON *b = wait_notice(h, f.parent, id);
    char want[512];
    snprintf(want, sizeof want,
             "\n\nResult:\n%.200s\n\n[Cut at 200 of 300 characters. The full text: "
             "background_output(task_id=\"%s\")]\n",
             reply, id);
    like(body_text(b), want, "the first 200 characters and the pointer");
    cJSON_Delete(b);
    t_output_like(h, f.parent, id, reply, "background_output has the full text");
    t_close(&f);
}

/* Failed pushes are retried; the notice arrives once. */
static void failed_push_is_retried(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'notify_retries':2,'notify_retry_ms':20}"));
    sim_script(h, "retried task", J("{'steps':[{'reply':'made it'}]}"), 1);
    sim_fail(h, "session_prompt", 2, 2, -EIO); /* the 1st is the task's own prompt */
    char *id = t_launch(h, f.parent, "Retry me", "retried task", "explore");
    is_int(t_wait_messages_with(h, f.parent, "made it", 1, 5000), 0, "notice delivered on the third try");
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 3, tap_timeout_ms(5000)), 0, "pushes recorded");
    is_int(sim_calls(h, "session_prompt", f.parent), 3, "two failed pushes then one good");
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_messages_with(h, f.parent, "made it"), 1, "delivered once");
    char *out = t_tool(h, f.parent, "background_list", "{}");
    unlike(out, "could not be delivered", "nothing held");
    free(out);
    free(id);
    t_close(&f);
}

typedef struct held_arg {
    const char *session;
    char *got;
} held_arg;

/* Polls the session's answers until one carries held notices (keeps it). */
static int answer_has_held(sim_host *h, void *arg)
{
    held_arg *a = arg;
    char *out = t_tool(h, a->session, "background_output", J("{'task_id':'bg_00000000'}"));
    if (strstr(out, "Notifications that could not be delivered earlier")) {
        a->got = out;
        return 1;
    }
    free(out);
    return 0;
}

/* Out of retries: held, and appended to that session's next ocbg answer once. */
static void undeliverable_is_held_for_next_answer(void)
{
    sim_host *h = t_host(J("{'notify_retries':1,'notify_retry_ms':10}"));
    char *p1 = sim_session_new(h, NULL, "one");
    char *p2 = sim_session_new(h, NULL, "two");
    char *id1 = t_launch_script(h, p1, "First", J("{'steps':[{'hang':true}]}"));
    char *id2 = t_launch_script(h, p2, "Second", J("{'steps':[{'hang':true}]}"));
    sim_fail(h, "session_prompt", 1, -1, -EIO); /* every push from now on */
    /* End both with a session.error (their scripts never end by themselves). */
    char *c1 = t_task_session(h, 0), *c2 = t_task_session(h, 1);
    char ev[256];
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.error\",\"properties\":{\"sessionID\":\"%s\",\"error\":{\"name\":\"APIError\","
             "\"data\":{\"message\":\"held one\"}}}}",
             c1);
    sim_emit(h, ev);
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.error\",\"properties\":{\"sessionID\":\"%s\",\"error\":{\"name\":\"APIError\","
             "\"data\":{\"message\":\"held two\"}}}}",
             c2);
    sim_emit(h, ev);
    is_int(sim_wait_calls(h, "session_prompt", p1, 2, tap_timeout_ms(5000)), 0, "p1: push and one retry");
    is_int(sim_wait_calls(h, "session_prompt", p2, 2, tap_timeout_ms(5000)), 0, "p2: push and one retry");
    held_arg a = {p1, NULL};
    is_int(sim_wait(h, answer_has_held, &a, tap_timeout_ms(5000)), 0, "p1's next answer carries it");
    like(a.got, "Task not found: bg_00000000.", "appended to whatever the answer was");
    like(a.got, "\n\n[ocbg] Notifications that could not be delivered earlier:\n", "under a heading");
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task failed: %s", id1);
    like(a.got, needle, "p1's own notice");
    like(a.got, "Error: APIError: held one", "with its content");
    unlike(a.got, id2, "not p2's");
    free(a.got);
    char *out = t_tool(h, p1, "background_list", "{}");
    unlike(out, "could not be delivered", "delivered once only");
    free(out);
    a = (held_arg){p2, NULL};
    is_int(sim_wait(h, answer_has_held, &a, tap_timeout_ms(5000)), 0, "p2's next answer carries its own");
    like(a.got, "Error: APIError: held two", "p2's notice");
    unlike(a.got, id1, "not p1's");
    free(a.got);
    is_int(sim_calls(h, "session_prompt", p1), 2, "no further pushes into p1");
    free(c1);
    free(c2);
    free(id1);
    free(id2);
    free(p1);
    free(p2);
    sim_destroy(h);
}

/* block=true returned the result: no notification for it. */
static void block_suppresses_notification(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *script = J("{'steps':[{'wait_ms':%d},{'reply':'returned by the wait'}]}", tap_timeout_ms(100));
    const char *id = t_task(&f, "Awaited", script);
    const char *args = J("{'task_id':'%s','block':true}", id);
    char *out = t_tool(h, f.parent, "background_output", args);
    like(out, "Result:\nreturned by the wait\n", "the wait returned the result");
    free(out);
    is_int(t_sync_notifications(h, f.parent), 0, "sync point");
    is_int(t_count_messages_with(h, f.parent, "returned by the wait"), 0, "no notification after the wait");
    t_close(&f);
}

int main(void)
{
    one_notification_with_content();
    quiet_until_last(NULL, 1);
    quiet_until_last(J("{'wake':'always'}"), 0);
    failure_wakes();
    long_result_is_capped();
    failed_push_is_retried();
    undeliverable_is_held_for_next_answer();
    block_suppresses_notification();
    return done_testing();
}

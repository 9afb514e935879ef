/* Notices to the user (ABI 1.3 notify_user; a toast in OpenCode): a batch
 * that finishes gives one notice summing it up, a failure one of level
 * error, a question for the user one of level warning; unknown options are
 * no refusal but a warning, shown and logged. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* The nth notify_user call's field (malloc'd), or NULL. */
static char *notice_field(sim_host *h, int n, const char *field)
{
    char *b = sim_call_body(h, "notify_user", NULL, n);
    cJSON *j = cJSON_Parse(b);
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(j, field));
    char *copy = v ? strdup(v) : NULL;
    cJSON_Delete(j);
    free(b);
    return copy;
}

/* A batch of 20 behind a cap of one: 19 finish silently, the last wakes the
 * model, and the user gets one notice for all of them. */
static void batch_gives_one_notice(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'max_running_agents':1,'max_queued':30}"));
    const char *first = J("{'steps':[{'wait_ms':%d},{'reply':'r0'}]}", tap_timeout_ms(1500));
    char *ids[20];
    ids[0] = t_launch_script(h, f.parent, "Task 0", first);
    for (int i = 1; i < 20; i++)
        ids[i] = t_launch_script(h, f.parent, "Task n", J("{'steps':[{'reply':'rn'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "all 20 tasks done", 1, 20000), 0, "the batch's last notice arrives");
    is_int(sim_wait_calls(h, "notify_user", NULL, 1, tap_timeout_ms(5000)), 0, "the user is notified");
    is_int((int)sim_calls(h, "notify_user", NULL), 1, "once for the whole batch of 20");
    char *msg = notice_field(h, 0, "message"), *level = notice_field(h, 0, "level"),
         *title = notice_field(h, 0, "title");
    is_str(msg, "20 background tasks: 20 completed", "the notice sums the batch up");
    is_str(level, "success", "level success");
    is_str(title, "ocbg", "titled ocbg");
    free(msg);
    free(level);
    free(title);
    for (int i = 0; i < 20; i++)
        free(ids[i]);
    t_close(&f);
}

static void failure_is_an_error_notice(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    t_task(&f, "Broken build", J("{'steps':[{'error':'quota exceeded'}]}"));
    is_int(sim_wait_calls(h, "notify_user", NULL, 1, tap_timeout_ms(5000)), 0, "the user is notified");
    char *msg = notice_field(h, 0, "message"), *level = notice_field(h, 0, "level");
    is_str(msg, "Background task failed: Broken build", "it names the task");
    is_str(level, "error", "level error");
    free(msg);
    free(level);
    t_close(&f);
}

static void question_is_a_warning_notice(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *out = t_launch_gated(h, f.parent, "g1", "explore");
    free(out);
    is_int(t_wait_gate_open(h, "g1", 5000), 0, "the task asks the user");
    is_int(sim_wait_calls(h, "notify_user", NULL, 1, tap_timeout_ms(5000)), 0, "the user is notified");
    char *msg = notice_field(h, 0, "message"), *level = notice_field(h, 0, "level");
    like(msg, "Background task waits for your permission: ", "it says a task waits for the user");
    is_str(level, "warning", "level warning");
    free(msg);
    free(level);
    t_release_gated(h, "g1");
    t_close(&f);
}

static void unknown_option_is_a_warning(void)
{
    sim_host *h = t_host(J("{'poll_interval_ms':500,'newer_option':true}"));
    ok(sim_plugin_count(h) == 1, "a config with an unknown key loads the plugin (its tools stay)");
    is_int(sim_wait_calls(h, "notify_user", NULL, 1, tap_timeout_ms(5000)), 0, "the user is told");
    char *msg = notice_field(h, 0, "message"), *level = notice_field(h, 0, "level");
    is_str(msg,
           "ocbg ignored unknown option 'newer_option' in its plugin options (written for a newer ocbg, or misspelt?)",
           "the notice names the key");
    is_str(level, "warning", "level warning");
    char *log = sim_call_body(h, "log", NULL, -1);
    like(log, "ignored unknown option 'newer_option'", "the log says the same");
    free(log);
    free(msg);
    free(level);
    sim_destroy(h);
}

int main(void)
{
    batch_gives_one_notice();
    failure_is_an_error_notice();
    question_is_a_warning_notice();
    unknown_option_is_a_warning();
    return done_testing();
}

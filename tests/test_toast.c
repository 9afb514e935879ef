/* Notices to the user (ABI 1.3 notify_user; a toast in OpenCode): a batch
 * that finishes gives one notice summing it up, a failure one of level
 * error, a stop by the person none, a question for the user one of level
 * warning; unknown options are no refusal but a warning, shown and logged. */
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

/* Waits (under label) for the first notice and checks its message (want
 * exactly, or containing want when !exact) and its level. */
static void first_notice_is(sim_host *h, const char *label, const char *want, int exact, const char *msg_label,
                            const char *level)
{
    is_int(sim_wait_calls(h, "notify_user", NULL, 1, tap_timeout_ms(5000)), 0, "%s", label);
    char *msg = notice_field(h, 0, "message"), *lvl = notice_field(h, 0, "level");
    if (exact)
        is_str(msg, want, "%s", msg_label);
    else
        like(msg, want, "%s", msg_label);
    is_str(lvl, level, "level %s", level);
    free(msg);
    free(lvl);
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
    first_notice_is(h, "the user is notified", "Background task failed: Broken build", 1, "it names the task", "error");
    t_close(&f);
}

/* A task the person stops from the panel tells its launcher "stopped by the
 * user", and the person nothing (they asked for it): the first notice is the
 * next task's completion, not "Background task failed". */
static void user_stop_gives_no_notice(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    const char *id = t_task(&f, "Stopped", J("{'steps':[{'wait_ms':%d},{'reply':'late'}]}", tap_timeout_ms(60000)));
    is_int(t_wait_status(h, f.parent, id, "running", 5000), 0, "the task runs");
    char *reply = NULL;
    sim_ui_request(h, 0, J("{'v':1,'id':'r1','action':'stop','task_id':'%s'}", id), &reply);
    free(reply);
    is_int(t_wait_messages_with(h, f.parent, "stopped by the user", 1, 5000), 0,
           "the launcher is told the person stopped it");
    t_task(&f, "After", J("{'steps':[{'reply':'done'}]}"));
    first_notice_is(h, "the user is notified of the next task", "Background task completed: After", 1,
                    "the first notice is the next task's, none for the stopped one", "success");
    t_close(&f);
}

static void question_is_a_warning_notice(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *out = t_launch_gated(h, f.parent, "g1", "explore");
    free(out);
    is_int(t_wait_gate_open(h, "g1", 5000), 0, "the task asks the user");
    first_notice_is(h, "the user is notified", "Background task waits for your permission: ", 0,
                    "it says a task waits for the user", "warning");
    t_release_gated(h, "g1");
    t_close(&f);
}

static void unknown_option_is_a_warning(void)
{
    sim_host *h = t_host(J("{'poll_interval_ms':500,'newer_option':true}"));
    ok(sim_plugin_count(h) == 1, "a config with an unknown key loads the plugin (its tools stay)");
    first_notice_is(h, "the user is told",
                    "ocbg ignored unknown option 'newer_option' in its plugin options (written for a newer ocbg, or "
                    "misspelt?)",
                    1, "the notice names the key", "warning");
    char *log = sim_call_body(h, "log", NULL, -1);
    like(log, "ignored unknown option 'newer_option'", "the log says the same");
    free(log);
    sim_destroy(h);
}

int main(void)
{
    batch_gives_one_notice();
    failure_is_an_error_notice();
    user_stop_gives_no_notice();
    question_is_a_warning_notice();
    unknown_option_is_a_warning();
    return done_testing();
}

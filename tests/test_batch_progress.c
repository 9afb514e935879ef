/* A batch's progress in each notification: "Batch <id>: 2 of 3 tasks
 * done, 1 still running." or "Batch <id>: all 3 tasks done.", kept by
 * counters on each status change, right through completions, cancels, resumes, clears and a
 * restart from the store; and a notice's text is the run it is about even
 * when its task is resumed before the notice is pushed (texts are formatted
 * when pushed). Gated tasks (testlib.h) let the test decide which ends when. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

static char dir[] = "/tmp/ocbg-batch-XXXXXX";
static char store_opts[512];

static char *notice_text(sim_host *h, const char *parent, const char *id, int k)
{
    char needle[64];
    snprintf(needle, sizeof needle, "completed: %s", id);
    int n = sim_session_message_count(h, parent);
    for (int i = 0; i < n; i++) {
        char *text = sim_session_message_text(h, parent, i);
        if (text && strstr(text, needle) && k-- == 0)
            return text;
        free(text);
    }
    return NULL;
}

/* Wait for the n-th completion notice about id; its text (malloc'd, never
 * NULL). */
static char *wait_notice(sim_host *h, const char *parent, const char *id, int n)
{
    char needle[64];
    snprintf(needle, sizeof needle, "completed: %s", id);
    if (t_wait_messages_with(h, parent, needle, n, 5000) != 0)
        diag("no notice #%d about %s", n, id);
    char *text = notice_text(h, parent, id, n - 1);
    return text ? text : strdup("");
}

/* A gated task's launch: its id and batch (malloc'd). */
typedef struct launched {
    char *id, *batch;
} launched;

static launched launch_in_batch(sim_host *h, const char *parent, const char *name)
{
    char *ans = t_launch_gated(h, parent, name, "general");
    launched l = {t_find_id(ans, "bg_"), t_find_id(ans, "batch_")};
    if (!l.id || !l.batch)
        bail_out("launch of %s failed: %s", name, ans);
    free(ans);
    return l;
}

static void launched_free(launched *l)
{
    free(l->id);
    free(l->batch);
}

/* Release gated task `name` and check its notice's batch line. */
static void release_says(sim_host *h, const char *parent, const char *name, const launched *l, int nth,
                         const char *progress)
{
    t_release_gated(h, name);
    char *text = wait_notice(h, parent, l->id, nth);
    char want[160];
    snprintf(want, sizeof want, "\nBatch %s: %s\n", l->batch, progress);
    like(text, want, "%s's notice: %s", name, progress);
    free(text);
}

static void completions(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    launched a = launch_in_batch(h, f.parent, "A"), b = launch_in_batch(h, f.parent, "B"),
             c = launch_in_batch(h, f.parent, "C");
    is_str(b.batch, a.batch, "tasks launched while one runs share its batch");
    is_str(c.batch, a.batch, "all three");
    release_says(h, f.parent, "B", &b, 1, "1 of 3 tasks done, 2 still running.");
    release_says(h, f.parent, "A", &a, 1, "2 of 3 tasks done, 1 still running.");
    release_says(h, f.parent, "C", &c, 1, "all 3 tasks done.");
    /* A new launch once none runs opens a new batch of its own. */
    launched d = launch_in_batch(h, f.parent, "D");
    ok(strcmp(d.batch, a.batch) != 0, "a launch after the batch ended opens a new one");
    release_says(h, f.parent, "D", &d, 1, "all 1 task done.");
    launched_free(&a), launched_free(&b), launched_free(&c), launched_free(&d);
    t_close(&f);
}

/* A cancelled task is done for its batch (and gets no notice). */
static void cancels(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    launched a = launch_in_batch(h, f.parent, "A"), b = launch_in_batch(h, f.parent, "B"),
             c = launch_in_batch(h, f.parent, "C");
    const char *args = J("{'task_id':'%s'}", a.id);
    free(t_tool(h, f.parent, "background_cancel", args));
    is_int(t_wait_status(h, f.parent, a.id, "cancelled", 5000), 0, "A is cancelled");
    release_says(h, f.parent, "B", &b, 1, "2 of 3 tasks done, 1 still running.");
    release_says(h, f.parent, "C", &c, 1, "all 3 tasks done.");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(t_count_notifications(h, f.parent, "completed: ", a.id), 0, "no notice for the cancelled task");
    launched_free(&a), launched_free(&b), launched_free(&c);
    t_close(&f);
}

/* A resumed task runs again in its batch: the batch is not done until its
 * follow-up ends; a launch meanwhile joins that batch. */
static void resumes(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    launched a = launch_in_batch(h, f.parent, "A"), b = launch_in_batch(h, f.parent, "B");
    release_says(h, f.parent, "A", &a, 1, "1 of 2 tasks done, 1 still running.");
    /* A's follow-up asks at its own gate, in A's session. */
    sim_script(h, "follow-up A",
               J("{'steps':[{'ask':{'permission':'bash','patterns':['gate A2']}},"
                 "{'reply':'second A'}]}"),
               1);
    const char *args = J("{'task_id':'%s','message':'follow-up A'}", a.id);
    char *ans = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, 0, "A resumed");
    free(ans);
    launched c = launch_in_batch(h, f.parent, "C");
    is_str(c.batch, a.batch, "a launch while A's follow-up runs joins its batch");
    release_says(h, f.parent, "B", &b, 1, "1 of 3 tasks done, 2 still running.");
    release_says(h, f.parent, "C", &c, 1, "2 of 3 tasks done, 1 still running.");
    release_says(h, f.parent, "A", &a, 2, "all 3 tasks done.");
    char *text = notice_text(h, f.parent, a.id, 1);
    like(text, " (resumed)", "A's second notice is its follow-up's");
    like(text, "Result:\nsecond A\n", "with the follow-up's answer");
    free(text);
    launched_free(&a), launched_free(&b), launched_free(&c);
    t_close(&f);
}

/* Cleared tasks leave their batch; a task kept by the clear (its abort
 * failed) is its batch's only one, and a launch joins it. */
static void clears(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    launched a = launch_in_batch(h, f.parent, "A"), b = launch_in_batch(h, f.parent, "B"),
             c = launch_in_batch(h, f.parent, "C");
    release_says(h, f.parent, "A", &a, 1, "1 of 3 tasks done, 2 still running.");
    sim_fail(h, "session_abort", 1, 1, -EIO);
    char *ans = t_tool(h, f.parent, "background_clear", "{}");
    like(ans, "was kept", "one task whose abort failed is kept");
    bool b_kept = strstr(ans, b.id) != NULL;
    launched *kept = b_kept ? &b : &c;
    const char *kept_name = b_kept ? "B" : "C";
    free(ans);
    char *list = t_tool(h, f.parent, "background_list", "{}");
    like(list, kept->id, "the kept task is listed");
    unlike(list, a.id, "the finished one is cleared");
    free(list);
    launched d = launch_in_batch(h, f.parent, "D");
    is_str(d.batch, kept->batch, "a launch while the kept task runs joins its batch");
    release_says(h, f.parent, kept_name, kept, 1, "1 of 2 tasks done, 1 still running.");
    release_says(h, f.parent, "D", &d, 1, "all 2 tasks done.");
    launched_free(&a), launched_free(&b), launched_free(&c), launched_free(&d);
    t_close(&f);
}

/* The counters come back from the store: a restart mid-batch goes on
 * counting where it was. */
static void restart(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(store_opts));
    launched a = launch_in_batch(h, f.parent, "A"), b = launch_in_batch(h, f.parent, "B"),
             c = launch_in_batch(h, f.parent, "C");
    release_says(h, f.parent, "A", &a, 1, "1 of 3 tasks done, 2 still running.");
    is_int(t_wait_gate_open(h, "B", 5000), 0, "B runs");
    is_int(t_wait_gate_open(h, "C", 5000), 0, "C runs");
    sim_unload_plugins(h);
    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), store_opts) != 1)
        bail_out("reloading ocbg: %s", sim_load_error(h));
    release_says(h, f.parent, "C", &c, 1, "2 of 3 tasks done, 1 still running.");
    release_says(h, f.parent, "B", &b, 1, "all 3 tasks done.");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(t_count_notifications(h, f.parent, "completed: ", a.id), 1, "A's notice was not sent again");
    launched_free(&a), launched_free(&b), launched_free(&c);
    t_close(&f);
}

/* A task resumed before the worker pushed its notice: the notice, formatted
 * when pushed, still tells the run that ended (its answer, not resumed).
 * A slow message read keeps the worker busy with the other task's check
 * while the first task's notice waits in the queue; the result must be the
 * same however the race goes. */
static void resumed_before_push(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_slow(h, "session_messages", tap_timeout_ms(300));
    char *a = t_launch_script(h, f.parent, "first", J("{'steps':[{'reply':'first answer'}]}"));
    char *b = t_launch_script(h, f.parent, "second", J("{'steps':[{'reply':'other answer'}]}"));
    is_int(t_wait_status(h, f.parent, a, "completed", 10000), 0, "the first task completed");
    int before = t_count_notifications(h, f.parent, "completed: ", a);
    sim_script(h, "follow-up first", J("{'steps':[{'reply':'answer two'}]}"), 1);
    const char *args = J("{'task_id':'%s','message':'follow-up first'}", a);
    char *ans = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, 0, "resumed at once");
    free(ans);
    if (before > 0)
        diag("the notice was pushed before the resume: the race went the other way");
    char *two = wait_notice(h, f.parent, a, 2);
    char *one = notice_text(h, f.parent, a, 0);
    like(one, "\n\nResult:\nfirst answer\n", "the first notice has the first run's answer");
    unlike(one, "(resumed)", "and is not the resumed run's");
    like(two, " (resumed)", "the second is the follow-up's");
    like(two, "\n\nResult:\nanswer two\n", "with its answer");
    sim_slow(h, "session_messages", 0);
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(t_count_notifications(h, f.parent, "completed: ", a), 2, "one notice per run");
    free(one), free(two), free(a), free(b);
    t_close(&f);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp failed");
    snprintf(store_opts, sizeof store_opts, "{\"store_path\":\"%s/ocbg.db\"}", dir);
    completions();
    cancels();
    resumes();
    clears();
    restart();
    resumed_before_push();
    t_remove_dir(dir);
    return done_testing();
}

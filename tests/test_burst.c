/* A burst of completions: each
 * completion's notice is pushed before the next task's completion check
 * reads its answer, so a finished task's result leaves memory (once its
 * notice is delivered and its row committed) while the burst goes on, and
 * the burst never holds every result at once. The notifications stay
 * exactly as before: one per task, each with its whole answer, silent but
 * the batch's last, which says "all N tasks done" and wakes the parent.
 *
 * The burst: N tasks finish while the host is slow to take notifications
 * (sim_slow on session_prompt), so their completions pile up in the
 * worker's queue. At every push the test counts, under the engine's lock,
 * the tasks that hold a result in memory (sim_on_call).
 *
 * The plugin is the one linked in from libocbg-internal.a (sim_load_entry),
 * so that the test can look at what tasks keep in memory. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "testlib.h"

#define TASKS 40
/* Results in memory at a push: the task being notified, and one whose
 * check ran while the previous push was under way; the margin is for a
 * row whose commit the store thread has taken but not finished. */
#define RESULTS_BOUND 4

static char dir[] = "/tmp/ocbg-burst-XXXXXX";

static engine *eng;
static char *psid; /* the parent session every task is launched from */
static pthread_mutex_t peak_mu = PTHREAD_MUTEX_INITIALIZER;
static int peak_results, pushes_seen;

/* At every session_prompt call (no engine lock held then): the tasks that
 * hold a result in memory now. */
static void count_results(void *unused)
{
    (void)unused;
    int n = 0;
    engine_lock(eng);
    parent *p = registry_parent(&eng->reg, psid);
    for (task *t = p ? p->head : NULL; t; t = t->pnext)
        n += t->result != NULL;
    engine_unlock(eng);
    pthread_mutex_lock(&peak_mu);
    pushes_seen++;
    if (n > peak_results)
        peak_results = n;
    pthread_mutex_unlock(&peak_mu);
}

static int64_t mono_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The i-th task's answer: long enough to be worth leaving memory, and its
 * own (a notice carries its task's answer). */
static void answer_of(int i, char *out, size_t size)
{
    int used = snprintf(out, size, "answer %d:", i);
    while (used + 40 < (int)size - 20)
        used += snprintf(out + used, size - (size_t)used, " the parser returns early on EOF.");
    snprintf(out + used, size - (size_t)used, " END-%d", i);
}

static void burst(void)
{
    char opts[512];
    snprintf(opts, sizeof opts,
             "{\"store_path\":\"%s/burst.db\",\"max_running_agents\":100,\"poll_interval_ms\":600000}", dir);
    sim_host *h = sim_create();
    if (!h || sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("loading the linked-in ocbg: %s", h ? sim_load_error(h) : "no host");
    eng = sim_plugin(h, 0)->userdata;
    psid = sim_session_new(h, NULL, "main");

    char *ids[TASKS];
    char answer[1200], script[1400];
    /* They all end together, a second after the first launch (when
     * launches are slower than that, the first end before the last start:
     * the checks below hold either way). */
    int64_t end_at = mono_now_ms() + 1000;
    for (int i = 0; i < TASKS; i++) {
        answer_of(i, answer, sizeof answer);
        int64_t wait = end_at - mono_now_ms();
        snprintf(script, sizeof script, "{\"steps\":[{\"wait_ms\":%lld},{\"reply\":\"%s\"}]}",
                 (long long)(wait > 1 ? wait : 1), answer);
        ids[i] = t_launch_script(h, psid, "Burst", script);
    }
    sim_slow(h, "session_prompt", 10);
    sim_on_call(h, "session_prompt", count_results, NULL);

    if (t_wait_messages_with(h, psid, "[ocbg] Background task completed", TASKS, tap_timeout_ms(20000)) != 0)
        bail_out("not every task was notified");
    /* A call is recorded once it returns, after its message is stored. */
    if (sim_wait_calls(h, "session_prompt", psid, TASKS, tap_timeout_ms(5000)) != 0)
        bail_out("the host did not record every notification push");
    sim_on_call(h, "session_prompt", NULL, NULL);
    sim_slow(h, "session_prompt", 0);

    pthread_mutex_lock(&peak_mu);
    int peak = peak_results, seen = pushes_seen;
    pthread_mutex_unlock(&peak_mu);
    ok(seen >= TASKS, "every notification push was sampled (%d)", seen);
    ok(peak <= RESULTS_BOUND, "at most %d results were in memory at any push during the burst of %d (peak %d)",
       RESULTS_BOUND, TASKS, peak);

    int once = 0, whole = 0;
    char want[64];
    for (int i = 0; i < TASKS; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "completed: %s", ids[i]);
        once += t_count_messages_with(h, psid, needle) == 1;
        char *text = t_message_with(h, psid, needle);
        snprintf(want, sizeof want, "END-%d", i);
        whole += text && strstr(text, want) != NULL;
        free(text);
    }
    is_int(once, TASKS, "every task is notified exactly once");
    is_int(whole, TASKS, "each notice carries its task's whole answer");
    /* Silent but a batch's last (its progress says all are done), which
     * wakes the parent; the last notice is the whole batch's. */
    size_t calls = sim_calls(h, "session_prompt", psid);
    int notices = 0, wake_right = 0, last_all = 0;
    snprintf(want, sizeof want, "all %d tasks done", TASKS);
    for (size_t i = 0; i < calls; i++) {
        char *body = sim_call_body(h, "session_prompt", psid, (int)i);
        if (body && strstr(body, "[ocbg] Background task completed")) {
            bool wakes = !strstr(body, J("'noReply':true"));
            notices++;
            wake_right += wakes == (strstr(body, " tasks done.") != NULL);
            last_all = wakes && strstr(body, want) != NULL;
        }
        free(body);
    }
    is_int(wake_right, notices, "each notice wakes the parent exactly when all of its batch launched so far are done");
    ok(last_all, "the last notice says \"%s\" and wakes the parent", want);
    for (int i = 0; i < TASKS; i++)
        free(ids[i]);
    free(psid);
    sim_destroy(h);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    burst();
    t_remove_dir(dir);
    return done_testing();
}

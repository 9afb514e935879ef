/* bench_sched — what the scheduler costs, with few and with many tasks queued.
 *
 * admit_latency_us: a running task's end to the next queued task's start.
 * Measured from the host calling the session.idle callback of the task that
 * holds the only slot (max_running_agents 1) to the prompt of the oldest
 * pending task entering the host's session_prompt: the completion check
 * (the finished task's messages read), the slot freed, the scheduler's pick,
 * the new session created and prompted. p50 and p99 over SAMPLES hand-overs,
 * with the queue kept at 10,000 tasks (and, for comparison, at 10: the
 * _q10 figures); the two must be alike.
 * list_pending_us: background_list in the session that launched them all (its
 * lines capped, its totals over all), median over LIST_RUNS calls, with
 * 10,000 and with 10 tasks queued (list_pending_q10_us). (list_us, from
 * bench_registry, is a list among 10,000 running tasks of other sessions.)
 *
 * Checks: every hand-over starts the oldest pending task (its prompt carries
 * its launch number); the list reports the right total and pending count.
 * The plugin is loaded on a copy of the simulated host's table whose
 * session_prompt timestamps task prompts; it is not among the sim's plugins,
 * so the bench hands it each idle itself (the poll is pushed out of the way).
 * Prints "name: value unit". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simhost.h"

#define SAMPLES 200
#define WARMUP 10
#define LIST_RUNS 50

static sim_host *H;
static const ocp_host *real;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned prompts;         /* task prompts seen */
static int64_t prompt_ns;        /* when the last one entered session_prompt */
static char prompt_session[128]; /* its session */
static char prompt_text[160];    /* the start of its body */

static int wrap_prompt(void *ud, const char *sid, const char *body, char **out)
{
    int64_t t = bench_ns();
    if (strstr(body, "\"tools\"")) { /* a task's own prompt denies the plugin's tools */
        pthread_mutex_lock(&mu);
        prompts++;
        prompt_ns = t;
        snprintf(prompt_session, sizeof prompt_session, "%s", sid);
        snprintf(prompt_text, sizeof prompt_text, "%s", body);
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return real->session_prompt(ud, sid, body, out);
}

static int launch(const ocp_plugin *p, const char *parent, unsigned n)
{
    char args[160];
    snprintf(args, sizeof args, "{\"description\":\"queued\",\"prompt\":\"answer at once #%u#\",\"agent\":\"general\"}",
             n);
    char *out = NULL;
    int rc = bench_tool(p, parent, "background_task", args, &out);
    if (rc != 0)
        fprintf(stderr, "bench_sched: launch %u refused: %.200s\n", n, out ? out : "?");
    free(out);
    return rc;
}

/* Wait until more than `seen` task prompts were made; the newest one's time
 * and session. */
static int next_prompt(unsigned seen, int64_t *ns, char *session, size_t size, char *text, size_t tsize)
{
    pthread_mutex_lock(&mu);
    int64_t deadline = bench_ns() + 10000000000LL;
    while (prompts <= seen && bench_ns() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&cv, &mu, &ts);
    }
    int ok = prompts > seen;
    *ns = prompt_ns;
    snprintf(session, size, "%s", prompt_session);
    snprintf(text, tsize, "%s", prompt_text);
    pthread_mutex_unlock(&mu);
    return ok ? 0 : -1;
}

static unsigned prompt_count(void)
{
    pthread_mutex_lock(&mu);
    unsigned n = prompts;
    pthread_mutex_unlock(&mu);
    return n;
}

/* One hand-over: the running task (session cur) ends, the oldest pending one
 * (launch number want) starts. */
static int hand_over(const ocp_plugin *p, char *cur, size_t size, unsigned want, double *us)
{
    if (sim_wait_messages(H, cur, 2, 10000) != 0 || sim_wait_idle(H, cur, 10000) != 0) {
        fprintf(stderr, "bench_sched: the running sub-agent did not answer\n");
        return -1;
    }
    unsigned seen = prompt_count();
    char ev[256], text[160], mark[32];
    snprintf(ev, sizeof ev, "{\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"%s\"}}", cur);
    int64_t tc = bench_ns();
    p->on_event(p->userdata, ev);
    int64_t tp;
    if (next_prompt(seen, &tp, cur, size, text, sizeof text) != 0) {
        fprintf(stderr, "bench_sched: no queued task started within 10 s\n");
        return -1;
    }
    snprintf(mark, sizeof mark, "#%u#", want);
    if (!strstr(text, mark)) {
        fprintf(stderr, "bench_sched: expected task %s to start, got: %.120s\n", mark, text);
        return -1;
    }
    *us = (double)(tp - tc) / 1000.0;
    return 0;
}

static double list_median(const ocp_plugin *p, const char *parent, unsigned total, unsigned pending)
{
    double v[LIST_RUNS];
    char want[96], want_pending[64];
    snprintf(want, sizeof want, "Total: %u tasks (", total);
    snprintf(want_pending, sizeof want_pending, "%u pending", pending);
    for (int i = 0; i < LIST_RUNS; i++) {
        char *out = NULL;
        int64_t t0 = bench_ns();
        int rc = bench_tool(p, parent, "background_list", "{}", &out);
        v[i] = (double)(bench_ns() - t0) / 1000.0;
        if (rc != 0 || !out || !strstr(out, want) || !strstr(out, want_pending)) {
            fprintf(stderr, "bench_sched: the list is wrong (want '%s', '%s'): %.300s\n", want, want_pending,
                    out ? out + (strlen(out) > 300 ? strlen(out) - 300 : 0) : "?");
            exit(1);
        }
        free(out);
    }
    return bench_median(v, LIST_RUNS);
}

/* With `queued` tasks waiting behind the one running: hand-overs, then the list. */
static void run(const ocp_plugin *p, unsigned queued, const char *suffix)
{
    char *par = sim_session_new(H, NULL, "bench parent");
    unsigned seen = prompt_count(), launched = 0;
    for (unsigned i = 0; i <= queued; i++)
        if (launch(p, par, launched++) != 0)
            exit(1);
    char cur[128], text[160];
    int64_t tp;
    if (next_prompt(seen, &tp, cur, sizeof cur, text, sizeof text) != 0)
        exit(1);
    double admit[SAMPLES];
    size_t n = 0;
    for (unsigned i = 0; i < WARMUP + SAMPLES; i++) {
        double us;
        if (hand_over(p, cur, sizeof cur, i + 1, &us) != 0)
            exit(1);
        if (i >= WARMUP)
            admit[n++] = us;
        if (launch(p, par, launched++) != 0) /* the queue stays at `queued` */
            exit(1);
    }
    char name[64];
    snprintf(name, sizeof name, "admit_latency%s_us_p50", suffix);
    printf("%s: %.1f us\n", name, bench_quantile(admit, n, 0.5));
    snprintf(name, sizeof name, "admit_latency%s_us_p99", suffix);
    printf("%s: %.1f us\n", name, bench_quantile(admit, n, 0.99));
    /* done: WARMUP + SAMPLES completed; 1 running; `queued` pending */
    double list = list_median(p, par, launched, queued);
    printf("list_pending%s_us: %.1f us (%u tasks, %u pending)\n", suffix, list, launched, queued);
    bench_tool(p, par, "background_clear", "{}", NULL); /* frees the slot for the next run */
    free(par);
}

int main(void)
{
    H = sim_create();
    real = sim_table(H);
    ocp_host table = *real;
    table.session_prompt = wrap_prompt;
    const ocp_plugin *p =
        bench_plugin(&table, "{\"max_running_agents\":1,\"max_queued\":100000,\"poll_interval_ms\":600000}");
    run(p, 10, "_q10");
    run(p, 10000, "");
    p->shutdown(p->userdata);
    sim_destroy(H);
    return 0;
}

/* bench_notify — how fast the plugin reacts to a task's end.
 *
 * notify_latency_us: from the session.idle event's delivery on a host thread
 * (the moment before the host calls plugin->on_event) to the host's
 * session_prompt call that pushes the notification into the parent
 * returning: the event callback, the worker's wake-up, the completion check (the
 * task's messages read), the notification formatted and pushed. The pushed
 * text is checked (the task's id, "completed", its answer). block_wake_us:
 * from the same moment to a background_output(block=true) waiting on the
 * task returning to its host thread. notify_host_prompt_us: of the first,
 * the simulated host's own time in the push call. p50 and p99 over SAMPLES runs (after
 * WARMUP discarded ones). Both end after the start on the same clock, so
 * neither can be negative. Goal: notify_latency_us_p99 <= 1000.
 *
 * Baselines (sched_wake_1hop_us, sched_wake_2hop_us), measured in the same
 * run between the samples: the machine's cost of waking a thread blocked on
 * a condition variable, and of a relay of two such wake-ups. A notification
 * is one hop (event thread -> plugin worker, which pushes it), a blocking
 * wait's wake two (event thread -> worker -> waiting host thread): tails
 * shared with the baseline are the scheduler's (a loaded machine), not the
 * plugin's.
 *
 * The plugin comes from libocbg-internal.a, loaded on a copy of the simulated
 * host's table whose session_prompt forwards to the sim and timestamps
 * (CLOCK_MONOTONIC, ns) when it returns. Loaded this way it is not among the
 * sim's plugins, so the sim delivers it no events: each task's sub-agent
 * replies at once, its session goes idle, and the bench then hands the
 * plugin that one session.idle itself, from its own thread as a host's event
 * thread does. The poll is pushed out of the way (poll_interval_ms 600000)
 * so only the event ends a task. notify_latency_store_on_us: the same with
 * the durable store on (a file in a temp dir): the notification is committed
 * as "being sent" before the push. Prints "name: value unit". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/engine.h"
#include "simhost.h"

#define SAMPLES 300
#define WARMUP 20

static sim_host *H;
static const ocp_host *real;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char watch[128];        /* the parent session whose prompt is timed */
static char watch_id[32];      /* the task its notification is about */
static int64_t prompt_ns;      /* when that prompt returned; 0 = not yet */
static int64_t prompt_call_ns; /* how long the host took in that call */
static int prompt_ok;          /* it was pushed, and is that task's notification with its answer */
static char task_session[128]; /* the session of the last task prompt */

static int wrap_prompt(void *ud, const char *sid, const char *body, char **out)
{
    int64_t t0 = bench_ns();
    int rc = real->session_prompt(ud, sid, body, out);
    int64_t t = bench_ns();
    pthread_mutex_lock(&mu);
    if (watch[0] && strcmp(sid, watch) == 0 && prompt_ns == 0) {
        prompt_ns = t;
        prompt_call_ns = t - t0;
        prompt_ok = rc == 0 && strstr(body, watch_id) && strstr(body, "Background task completed") &&
                    strstr(body, "Result:\\nbench answer");
        pthread_cond_broadcast(&cv);
    }
    if (strstr(body, "\"tools\"")) /* a task's own prompt denies the plugin's tools */
        snprintf(task_session, sizeof task_session, "%s", sid);
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Launch a task from a new parent session and wait until its sub-agent has
 * answered and its session is idle. Returns 0 and the ids. */
static int finished_task(const ocp_plugin *p, char *psid, size_t psize, char *id, size_t isize, char *session,
                         size_t ssize)
{
    char *par = sim_session_new(H, NULL, "bench parent");
    snprintf(psid, psize, "%s", par);
    free(par);
    char *out = NULL;
    int rc = bench_tool(p, psid, "background_task",
                        "{\"description\":\"bench\",\"prompt\":\"answer at once\",\"agent\":\"general\"}", &out);
    if (rc != 0 || bench_task_id(out, id, isize) != 0) {
        fprintf(stderr, "bench_notify: launch failed: %s\n", out ? out : "?");
        free(out);
        return -1;
    }
    free(out);
    pthread_mutex_lock(&mu);
    snprintf(session, ssize, "%s", task_session);
    pthread_mutex_unlock(&mu);
    if (sim_wait_messages(H, session, 2, 5000) != 0 || sim_wait_idle(H, session, 5000) != 0) {
        fprintf(stderr, "bench_notify: the sub-agent did not answer\n");
        return -1;
    }
    return 0;
}

static void emit_idle(const ocp_plugin *p, const char *session)
{
    char ev[256];
    snprintf(ev, sizeof ev, "{\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"%s\"}}", session);
    p->on_event(p->userdata, ev);
}

/* One notification: *us its latency, *host_us the host's own time in the
 * push call. */
static int notify_sample(const ocp_plugin *p, double *us, double *host_us)
{
    char psid[128], id[32], session[128];
    pthread_mutex_lock(&mu);
    watch[0] = '\0';
    pthread_mutex_unlock(&mu);
    if (finished_task(p, psid, sizeof psid, id, sizeof id, session, sizeof session) != 0)
        return -1;
    pthread_mutex_lock(&mu);
    snprintf(watch, sizeof watch, "%s", psid);
    snprintf(watch_id, sizeof watch_id, "%s", id);
    prompt_ns = 0;
    prompt_ok = 0;
    pthread_mutex_unlock(&mu);

    int64_t tc = bench_ns();
    emit_idle(p, session);

    pthread_mutex_lock(&mu);
    int64_t deadline = bench_ns() + 5000000000LL;
    while (prompt_ns == 0 && bench_ns() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&cv, &mu, &ts);
    }
    int64_t tp = prompt_ns;
    *host_us = (double)prompt_call_ns / 1000.0;
    int good = prompt_ok;
    watch[0] = '\0';
    pthread_mutex_unlock(&mu);
    if (tp == 0 || !good) {
        fprintf(stderr, "bench_notify: %s\n",
                tp ? "the push was not the task's notification with its answer" : "no notification within 5 s");
        return -1;
    }
    *us = (double)(tp - tc) / 1000.0;
    /* Let the parent's turn on the notice end before the next sample. */
    sim_wait_messages(H, psid, 2, 5000);
    sim_wait_idle(H, psid, 5000);
    return 0;
}

typedef struct blocker {
    const ocp_plugin *p;
    char psid[128], args[128];
    int rc;
    int64_t returned_ns;
    char *out;
} blocker;

static void *block_main(void *arg)
{
    blocker *b = arg;
    b->rc = bench_tool(b->p, b->psid, "background_output", b->args, &b->out);
    b->returned_ns = bench_ns();
    return NULL;
}

static int has_waiter(const ocp_plugin *p)
{
    engine *eng = p->userdata; /* the instance starts with its engine */
    engine_lock(eng);
    int yes = eng->waiters != NULL;
    engine_unlock(eng);
    return yes;
}

static int block_sample(const ocp_plugin *p, double *us)
{
    blocker b = {.p = p};
    char id[32], session[128];
    if (finished_task(p, b.psid, sizeof b.psid, id, sizeof id, session, sizeof session) != 0)
        return -1;
    snprintf(b.args, sizeof b.args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":30}", id);
    pthread_t th;
    if (pthread_create(&th, NULL, block_main, &b) != 0)
        return -1;
    int64_t deadline = bench_ns() + 5000000000LL;
    while (!has_waiter(p) && bench_ns() < deadline)
        bench_sleep_ms(0), sched_yield();
    /* The waiter is registered and about to sleep; give it time to. */
    bench_sleep_ms(1);
    int64_t tc = bench_ns();
    emit_idle(p, session);
    pthread_join(th, NULL);
    int ok = b.rc == 0 && b.out && strstr(b.out, ": completed");
    if (!ok)
        fprintf(stderr, "bench_notify: blocking output did not return the result (rc %d): %.200s\n", b.rc,
                b.out ? b.out : "");
    free(b.out);
    *us = (double)(b.returned_ns - tc) / 1000.0;
    return ok ? 0 : -1;
}

/* A relay of threads blocked on condition variables: station i wakes i+1;
 * the last one timestamps. */
typedef struct station {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, stop;
    struct station *next;
    int64_t woke_ns;
} station;

static station stations[2];

static void *station_main(void *arg)
{
    station *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->go && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop)
            break;
        s->go = 0;
        s->woke_ns = bench_ns();
        if (s->next) {
            pthread_mutex_lock(&s->next->mu);
            s->next->go = 1;
            pthread_cond_signal(&s->next->cv);
            pthread_mutex_unlock(&s->next->mu);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* One wake-up through `hops` stations: µs from the signal to the last wake. */
static double relay_sample(int hops)
{
    station *first = &stations[2 - hops], *last = &stations[1];
    pthread_mutex_lock(&last->mu);
    last->woke_ns = 0;
    pthread_mutex_unlock(&last->mu);
    stations[0].next = hops == 2 ? &stations[1] : NULL;
    bench_sleep_ms(1); /* let every station go to sleep */
    int64_t t0 = bench_ns();
    pthread_mutex_lock(&first->mu);
    first->go = 1;
    pthread_cond_signal(&first->cv);
    pthread_mutex_unlock(&first->mu);
    int64_t t1 = 0;
    while (!(t1 = __atomic_load_n(&last->woke_ns, __ATOMIC_ACQUIRE)))
        sched_yield();
    return (double)(t1 - t0) / 1000.0;
}

static void report(const char *name, double *v, size_t n)
{
    if (n == 0) {
        printf("%s_p50: n/a\n%s_p99: n/a\n", name, name);
        return;
    }
    printf("%s_p50: %.1f us\n", name, bench_quantile(v, n, 0.5));
    printf("%s_p99: %.1f us\n", name, bench_quantile(v, n, 0.99));
}

int main(void)
{
    H = sim_create();
    if (!H) {
        fprintf(stderr, "bench_notify: cannot create the simulated host\n");
        return 1;
    }
    /* every task's sub-agent answers this at once */
    sim_script(H, "answer at once", "{\"steps\":[{\"reply\":\"bench answer\"}]}", 0);
    real = sim_table(H);
    ocp_host table = *real;
    table.session_prompt = wrap_prompt;
    const ocp_plugin *p = bench_plugin(&table, "{\"poll_interval_ms\":600000}");

    pthread_t relay[2];
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&stations[i].mu, NULL);
        pthread_cond_init(&stations[i].cv, NULL);
        pthread_create(&relay[i], NULL, station_main, &stations[i]);
    }
    double notify[SAMPLES], host[SAMPLES], block[SAMPLES], us, hus;
    double hop1[SAMPLES], hop2[SAMPLES];
    size_t nn = 0, nb = 0;
    for (int i = 0; i < WARMUP + SAMPLES; i++) {
        if (notify_sample(p, &us, &hus) == 0 && i >= WARMUP) {
            host[nn] = hus;
            notify[nn++] = us;
        }
        double h = relay_sample(1);
        if (i >= WARMUP)
            hop1[i - WARMUP] = h;
    }
    for (int i = 0; i < WARMUP + SAMPLES; i++) {
        if (block_sample(p, &us) == 0 && i >= WARMUP)
            block[nb++] = us;
        double h = relay_sample(2);
        if (i >= WARMUP)
            hop2[i - WARMUP] = h;
    }
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&stations[i].mu);
        stations[i].stop = 1;
        pthread_cond_signal(&stations[i].cv);
        pthread_mutex_unlock(&stations[i].mu);
        pthread_join(relay[i], NULL);
    }
    report("notify_latency_us", notify, nn);
    printf("notify_samples: %zu samples\n", nn);
    report("notify_host_prompt_us", host, nn);
    report("block_wake_us", block, nb);
    printf("block_wake_samples: %zu samples\n", nb);
    report("sched_wake_1hop_us", hop1, SAMPLES);
    report("sched_wake_2hop_us", hop2, SAMPLES);
    p->shutdown(p->userdata);

    /* The same with the durable store on, as a user runs it: the
     * notification is marked "being sent" on disk (a commit) first. */
    char dir[] = "/tmp/ocbg-bench-notify-XXXXXX", opts[256];
    if (!mkdtemp(dir))
        return 1;
    snprintf(opts, sizeof opts, "{\"poll_interval_ms\":600000,\"store_path\":\"%s/ocbg.db\"}", dir);
    p = bench_plugin(&table, opts);
    nn = 0;
    for (int i = 0; i < WARMUP + SAMPLES; i++)
        if (notify_sample(p, &us, &hus) == 0 && i >= WARMUP)
            notify[nn++] = us;
    report("notify_latency_store_on_us", notify, nn);
    printf("notify_store_on_samples: %zu samples\n", nn);
    p->shutdown(p->userdata);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_notify: could not remove %s\n", dir);
    sim_destroy(H);
    return 0;
}

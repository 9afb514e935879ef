/* bench_complete — what a task's completion costs, and what a finished task
 * keeps, with typical texts: a 500-byte prompt, a 40-byte description, a
 * 2,000-byte answer (the sub-agent's last message).
 *
 * complete_us_10_per_parent: 10,000 running tasks, 10 under each of 1,000
 *   parents; the host's session.idle for every task is delivered from one
 *   thread (as a host's event thread does), and the figure is the wall time
 *   from the first event's delivery to the last notification push returning,
 *   divided by 10,000: the event callback, the completion check (the task's
 *   messages read and decided), the status change, the notification
 *   formatted and pushed, the wake decision. Median of ROUNDS. With the
 *   store off (as the figure was first taken; the memory rows have it on).
 * complete_us_10000_per_parent: the same with all 10,000 under one parent
 *   (one batch). complete_ratio: the second over the first; ~1 when no step
 *   of a completion walks the parent's or the batch's tasks.
 *
 * The memory rows run with the durable store on, as in OpenCode by default
 * (a fresh database file in a temporary directory), each in a child
 * process of its own (a fresh heap and resident set):
 * heap_per_task_bytes: heap (mallinfo2) after the 10,000 tasks of the first
 *   layout have finished, their notifications were delivered and the store
 *   has written every change (a finished, delivered task's prompt and result
 *   then active only in the store), less the heap before the plugin was
 *   loaded, per task: SQLite's own heap (page cache, statements) included.
 *   heap_per_task_texts_bytes: of that, the chunks of the task's own texts
 *   (prompt, result, description and the short strings: ids; agent names
 *   are one shared copy each, not the task's),
 *   measured with malloc_usable_size; the rest is the task struct, map
 *   entries, batches, parents and SQLite. store_sqlite_heap_bytes: SQLite's
 *   heap then (sqlite3_memory_used), in all: a fixed cost, not per task.
 * rss_per_task_bytes: the process's resident set (/proc/self/statm) after
 *   the same, less before the launches, per task.
 * rss_per_task_burst_bytes: the resident set's peak during the burst of
 *   10,000 completions (sampled every 200 us), less before the launches, per
 *   task; rss_burst_excess_per_task_bytes: that peak less the resident set
 *   once every notification is delivered: what the burst itself holds.
 * The same three with the store off (`store: false`: every text stays in
 *   memory): heap_per_task_store_off_bytes, rss_per_task_store_off_bytes,
 *   rss_per_task_burst_store_off_bytes.
 *
 * Goals: complete_ratio <= 1.5; heap_per_task_bytes <= 512 and
 * rss_per_task_burst_bytes <= 2048.
 *
 * output_finished_us: then, background_output of a finished, delivered task
 *   (the first task of each of 1,000 parents), median: with the store on
 *   its result is read back from the store (and the call commits the
 *   result's retrieval, as every call that changes a task); _store_off: the
 *   same from memory.
 *
 * Checked: every task is notified exactly once, each notice carries the
 *   full answer, and each batch's last notice says "all N tasks done"; with
 *   the store on, every finished task's prompt and result have left memory;
 *   each background_output gives the whole answer; else it exits 1.
 *
 * The plugin comes from libocbg-internal.a on the instant fake host
 * (bench.h) whose session_messages returns the finished answer; the poll is
 * pushed out, so only the events end tasks. Prints "name: value unit". */
#include <malloc.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "engine/engine.h"

#define TASKS 10000
#define ROUNDS 5
#define PROMPT_BYTES 500
#define ANSWER_BYTES 2000

static char launch_args[1024];
static char *messages_json;  /* what every task session holds: its prompt, a finished answer */
static char answer_tail[64]; /* the answer's last characters: a notice carries all of it */
static char store_dir[] = "/tmp/ocbg-bench-complete-XXXXXX";

/* Counted by the fake host's session_prompt for parent sessions. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long pushes, pushes_full, pushes_all_done;
static char all_done_text[64];
static int64_t last_push_ns;

static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static size_t rss_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static void make_texts(void)
{
    char prompt[PROMPT_BYTES + 1], answer[ANSWER_BYTES + 1];
    for (int i = 0; i < PROMPT_BYTES; i++)
        prompt[i] = "abcdefghij klmnopqrstuvwxyz."[i % 28];
    prompt[PROMPT_BYTES] = '\0';
    for (int i = 0; i < ANSWER_BYTES; i++)
        answer[i] = "The parser returns early on EOF. "[i % 33];
    snprintf(answer + ANSWER_BYTES - 12, 13, "END-OF-ANSWR");
    snprintf(answer_tail, sizeof answer_tail, "END-OF-ANSWR\\n"); /* as JSON escapes it */
    snprintf(launch_args, sizeof launch_args,
             "{\"description\":\"Summarise the parser module's error paths\",\"prompt\":\"%s\",\"agent\":\"general\"}",
             prompt);
    messages_json = malloc(PROMPT_BYTES + ANSWER_BYTES + 512);
    sprintf(messages_json,
            "[{\"info\":{\"id\":\"msg_fakeusermessage00000000001\",\"role\":\"user\",\"time\":{\"created\":1}},"
            "\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]},"
            "{\"info\":{\"id\":\"msg_fakeanswermessage000000001\",\"role\":\"assistant\",\"time\":{\"created\":2,"
            "\"completed\":3},"
            "\"finish\":\"stop\"},\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}]}]",
            prompt, answer);
}

static int fake_messages(void *ud, const char *session_id, int limit, char **out)
{
    (void)ud;
    (void)session_id;
    (void)limit;
    *out = strdup(messages_json);
    return 0;
}

/* A task's own prompt goes to its session (ses_fake…); a notification to
 * its parent (ses_fakeparent…). */
static int fake_prompt(void *ud, const char *session_id, const char *body, char **out)
{
    (void)ud;
    *out = NULL;
    if (strncmp(session_id, "ses_fakeparent", 14) != 0)
        return 0;
    int full = strstr(body, answer_tail) != NULL, all = strstr(body, all_done_text) != NULL;
    int64_t t = bench_ns();
    pthread_mutex_lock(&mu);
    pushes++;
    pushes_full += full;
    pushes_all_done += all;
    last_push_ns = t;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Peak resident set while `on`. */
typedef struct sampler {
    volatile int on;
    size_t peak;
} sampler;

static void *sample_main(void *arg)
{
    sampler *s = arg;
    while (__atomic_load_n(&s->on, __ATOMIC_ACQUIRE)) {
        size_t r = rss_bytes();
        if (r > s->peak)
            s->peak = r;
        usleep(200);
    }
    return NULL;
}

/* The heap chunks of t's own texts (its agent names are shared copies,
 * base/intern.h: not its own). Its description, session id and result
 * message id share one chunk, which the first of them set begins. */
static size_t text_bytes(const task *t)
{
    const char *strings = t->description ? t->description : t->session_id ? t->session_id : t->result_message_id;
    const char *texts[] = {t->prompt, t->result, t->error, t->parent_message, strings};
    size_t n = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i])
            n += malloc_usable_size((void *)texts[i]) + sizeof(size_t);
    return n;
}

static void sum_texts(const char *key, void *value, void *arg)
{
    (void)key;
    size_t *n = arg;
    *n += text_bytes(value);
}

typedef struct figures {
    double us;
    double heap, heap_texts, rss, rss_burst, rss_excess;
    size_t sqlite_heap;
    unsigned long in_memory; /* finished tasks whose result is still in memory */
    double output_us;        /* background_output of a finished, delivered task, median */
} figures;

static void count_in_memory(const char *key, void *value, void *arg)
{
    (void)key;
    const task *t = value;
    *(unsigned long *)arg += t->result != NULL || t->prompt != NULL;
}

/* Until the store has written every change (the texts it may drop are
 * dropped after the commit). */
static void wait_store_idle(engine *eng)
{
    int64_t deadline = bench_ns() + 60000000000LL;
    for (;;) {
        engine_lock(eng);
        bool idle = !eng->reg.track || (eng->reg.dirty == 0 && eng->reg.nremoved == 0 && !eng->ps.writing);
        engine_unlock(eng);
        if (idle)
            return;
        if (bench_ns() > deadline) {
            fprintf(stderr, "bench_complete: the store still writing after 60 s\n");
            exit(1);
        }
        bench_sleep_ms(1);
    }
}

/* background_output of the first task of `parents` parents: each its whole
 * answer, read back from the store; the median time of a call (us). */
static double check_output(const ocp_plugin *p, int parents)
{
    engine *eng = p->userdata;
    double *us = malloc(sizeof *us * (size_t)parents);
    for (int i = 0; i < parents; i++) {
        char psid[32], id[TASK_ID_SIZE] = "";
        snprintf(psid, sizeof psid, BENCH_PARENT_FMT, i);
        engine_lock(eng);
        parent *par = registry_parent(&eng->reg, psid);
        if (par && par->head)
            memcpy(id, par->head->id, sizeof id);
        engine_unlock(eng);
        char args[64], *out = NULL;
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
        int64_t t0 = bench_ns();
        bench_tool(p, psid, "background_output", args, &out);
        us[i] = (double)(bench_ns() - t0) / 1000.0;
        if (!out || !strstr(out, "END-OF-ANSWR") || !strstr(out, "The parser returns early on EOF.")) {
            fprintf(stderr, "bench_complete: background_output of %s lacks the answer: %.200s\n", id, out ? out : "");
            exit(1);
        }
        free(out);
    }
    double m = bench_median(us, (size_t)parents);
    free(us);
    return m;
}

static void launch_all(const ocp_plugin *p, int per_parent)
{
    char psid[32];
    for (int i = 0; i < TASKS; i++) {
        snprintf(psid, sizeof psid, BENCH_PARENT_FMT, i / per_parent);
        if (bench_tool(p, psid, "background_task", launch_args, NULL) != 0) {
            fprintf(stderr, "bench_complete: launch %d failed\n", i);
            exit(1);
        }
    }
}

static void wait_pushes(unsigned long want)
{
    int64_t deadline = bench_ns() + 60000000000LL;
    for (;;) {
        pthread_mutex_lock(&mu);
        unsigned long n = pushes;
        pthread_mutex_unlock(&mu);
        if (n >= want)
            return;
        if (bench_ns() > deadline) {
            fprintf(stderr, "bench_complete: %lu of %lu notifications after 60 s\n", n, want);
            exit(1);
        }
        bench_sleep_ms(1);
    }
}

/* 10,000 tasks, per_parent under each parent, all completed by a burst of
 * idle events; memory figures when `mem`, the store on when `stored`. */
static figures run(const ocp_host *host, int per_parent, int mem, int stored)
{
    figures f = {0};
    pthread_mutex_lock(&mu);
    pushes = pushes_full = pushes_all_done = 0;
    snprintf(all_done_text, sizeof all_done_text, ": all %d tasks done.\\n", per_parent);
    pthread_mutex_unlock(&mu);
    char opts_json[512];
    if (stored)
        snprintf(opts_json, sizeof opts_json,
                 "{\"poll_interval_ms\":600000,\"max_running_agents\":100000,\"store_path\":\"%s/ocbg.db\"}",
                 store_dir);
    else
        snprintf(opts_json, sizeof opts_json,
                 "{\"poll_interval_ms\":600000,\"max_running_agents\":100000,\"store\":false}");
    size_t heap0 = heap_used(), rss0 = rss_bytes();
    const ocp_plugin *p = bench_plugin(host, opts_json);
    unsigned long first = __atomic_load_n(&bench_fake_sessions, __ATOMIC_RELAXED) + 1;
    launch_all(p, per_parent);

    sampler s = {.on = 1};
    pthread_t th;
    if (mem)
        pthread_create(&th, NULL, sample_main, &s);
    char ev[160];
    int64_t t0 = bench_ns();
    for (unsigned long k = first; k < first + TASKS; k++) {
        snprintf(ev, sizeof ev, "{\"type\":\"session.idle\",\"properties\":{\"sessionID\":\"" BENCH_SESSION_FMT "\"}}",
                 k);
        p->on_event(p->userdata, ev);
    }
    wait_pushes(TASKS);
    f.us = (double)(last_push_ns - t0) / 1000.0 / TASKS;
    if (mem) {
        __atomic_store_n(&s.on, 0, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
        bench_sleep_ms(50); /* the worker's last bookkeeping after the last push */
        engine *eng = p->userdata;
        wait_store_idle(eng);
        size_t texts = 0;
        engine_lock(eng);
        map_each(&eng->reg.by_id, sum_texts, &texts);
        map_each(&eng->reg.by_id, count_in_memory, &f.in_memory);
        engine_unlock(eng);
        f.sqlite_heap = (size_t)sqlite3_memory_used();
        size_t heap1 = heap_used(), rss1 = rss_bytes();
        size_t peak = s.peak > rss1 ? s.peak : rss1;
        f.heap = ((double)heap1 - (double)heap0) / TASKS;
        f.heap_texts = (double)texts / TASKS;
        f.rss = ((double)rss1 - (double)rss0) / TASKS;
        f.rss_burst = ((double)peak - (double)rss0) / TASKS;
        f.rss_excess = ((double)peak - (double)rss1) / TASKS;
    }
    pthread_mutex_lock(&mu);
    int ok = pushes == TASKS && pushes_full == TASKS && pushes_all_done == (unsigned long)(TASKS / per_parent);
    if (!ok)
        fprintf(stderr,
                "bench_complete: %lu notifications (want %d), %lu with the whole answer, %lu saying all done "
                "(want %d)\n",
                pushes, TASKS, pushes_full, pushes_all_done, TASKS / per_parent);
    pthread_mutex_unlock(&mu);
    if (ok && mem)
        f.output_us = check_output(p, 1000);
    p->shutdown(p->userdata);
    if (!ok)
        exit(1);
    return f;
}

/* The memory figures of one run in a child process (a fresh heap and
 * resident set: a run after another reuses its freed memory). */
static void memory_rows(const ocp_host *host, int stored)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        figures m = run(host, 10, 1, stored);
        if (stored && m.in_memory) {
            fprintf(stderr, "bench_complete: %lu finished, delivered tasks still hold their texts\n", m.in_memory);
            exit(1);
        }
        const char *sfx = stored ? "" : "_store_off";
        printf("heap_per_task%s_bytes: %.0f bytes\n", sfx, m.heap);
        if (stored) {
            printf("heap_per_task_texts_bytes: %.0f bytes\n", m.heap_texts);
            printf("store_sqlite_heap_bytes: %zu bytes\n", m.sqlite_heap);
        }
        printf("rss_per_task%s_bytes: %.0f bytes\n", sfx, m.rss);
        printf("rss_per_task_burst%s_bytes: %.0f bytes\n", sfx, m.rss_burst);
        if (stored)
            printf("rss_burst_excess_per_task_bytes: %.0f bytes\n", m.rss_excess);
        printf("output_finished_us%s: %.1f us\n", sfx, m.output_us);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_complete: the memory run (store %s) failed: %s %d\n", stored ? "on" : "off",
                pid < 0               ? "fork failed"
                : WIFSIGNALED(status) ? "signal"
                                      : "exit status",
                pid < 0               ? 0
                : WIFSIGNALED(status) ? WTERMSIG(status)
                                      : WEXITSTATUS(status));
        exit(1);
    }
}

int main(void)
{
    mallopt(M_ARENA_MAX, 1); /* every thread's allocations in the one arena mallinfo2 reports */
    make_texts();
    if (!mkdtemp(store_dir)) {
        perror("bench_complete: mkdtemp");
        return 1;
    }
    ocp_host host = bench_fake_host();
    host.session_messages = fake_messages;
    host.session_prompt = fake_prompt;

    /* Memory first, each in a fresh process. */
    memory_rows(&host, 1);
    memory_rows(&host, 0);
    double small[ROUNDS], big[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        small[r] = run(&host, 10, 0, 0).us;
        big[r] = run(&host, TASKS, 0, 0).us;
    }
    double s = bench_median(small, ROUNDS), b = bench_median(big, ROUNDS);
    printf("complete_us_10_per_parent: %.1f us\n", s);
    printf("complete_us_10000_per_parent: %.1f us\n", b);
    printf("complete_ratio: %.2f x\n", b / s);
    free(messages_json);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", store_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_complete: could not remove %s\n", store_dir);
    return 0;
}

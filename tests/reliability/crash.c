/* crash.c — the host dies (SIGKILL) and comes back (make check-crash): per
 * seed, life 1 (a forked child) runs the simulated host with its journal on
 * (sim_journal_open) and ocbg's store on, launches agent tasks and background
 * commands and cancels some, each task id written to <dir>/ids as soon as
 * its call returns; the parent kills it at a seed-chosen moment (after the
 * k-th call, then 0..300 ms; or, for half the lives, 0..3 ms after the j-th
 * notification reaches the parent session). For a third of the seeds a second life does the
 * same on what the first left, and is killed too. The last life (another
 * child, so ASan and leaks stay per life) starts a host on the same journal
 * and data dir, loads ocbg again and checks:
 *   (a) every id in <dir>/ids still resolves (background_output);
 *   (b) none is left running or pending, a few seconds after the restart;
 *   (c) every task that ended completed or error has exactly one
 *       notification in the parent session, over every life;
 *   (d) a cancelled one has none;
 *   (e) the notification says what the task's status says (completed, or
 *       failed for error).
 * Failures are printed per seed ("crash: seed S: (x) task …"); the summary
 * line is "crash: N seeds, M tasks, K bad". CRASH_SEEDS=n (default 100),
 * CRASH_FIRST=seed (default 1), CRASH_NO_STORE=1 (ocbg's store off: every
 * seed with a task should fail). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "crash_lives.h"
#include "rel.h"
#include "tap.h"

/* Read the life's reports ('k' a call returned, 'n' a notification landed)
 * until it has made k calls and j notifications, then delay_ms more; a life
 * with no j-th notification within 1.5 s is killed then. Returns 1 when the
 * moment came, 0 when the life stalled before its k-th call, -1 on EOF. */
static int await_moment(int fd, int k, int j, int delay_ms, int *calls, int *notices)
{
    int64_t until = -1, give_up = -1;
    for (;;) {
        int64_t now = rel_now_ms();
        if (until < 0 && *calls >= k && give_up < 0)
            give_up = now + 1500; /* not scaled: the moment only, never a verdict */
        if (until < 0 && *calls >= k && (*notices >= j || now >= give_up))
            until = now + delay_ms;
        int left = until >= 0 ? (int)(until - now) : give_up >= 0 ? (int)(give_up - now) : tap_timeout_ms(15000);
        if (until >= 0 && left <= 0)
            return 1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, left > 0 ? left : 0);
        if (n == 0 && until < 0 && give_up < 0)
            return 0; /* stalled before its k-th call */
        char b[64];
        ssize_t rd = n > 0 ? read(fd, b, sizeof b) : 0;
        if (n > 0 && rd <= 0)
            return -1;
        for (ssize_t i = 0; i < rd; i++)
            (b[i] == 'k' ? calls : notices)[0]++;
    }
}

/* Kills: after a call (+ 0-300 ms), just after a notification, or when no
 * notification came. */
static long kill_kinds[3];

/* A life in a child, killed at the moment await_moment finds. Returns 0
 * (killed as planned) or -1 (it died or stalled on its own). */
static int life_and_kill(crash_run *r, int k, int j, int delay_ms)
{
    int rep[2];
    if (pipe(rep) != 0)
        return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(rep[0]);
        crash_life(r, rep[1]);
    }
    close(rep[1]);
    int calls = 0, notices = 0;
    int came = await_moment(rep[0], k, j, delay_ms, &calls, &notices);
    kill_kinds[j == 0 ? 0 : notices >= j ? 1 : 2]++;
    kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    close(rep[0]);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
        printf("crash: seed %u: life %d ended on its own (status 0x%x) after %d of %d calls\n", r->seed, r->life,
               status, calls, k);
        return -1;
    }
    if (came <= 0) {
        printf("crash: seed %u: life %d stalled after %d of %d calls\n", r->seed, r->life, calls, k);
        return -1;
    }
    return 0;
}

static int last_life_fn(void *arg)
{
    return crash_last_life(arg);
}

/* How the tasks ended, over every seed (the last lives' tally lines). */
static const char *const tally_names[] = {"completed", "error", "restarted", "cancelled", "lost", "other"};
static long tally[6];

static void tally_add(const char *path)
{
    cJSON *lines = crash_lines(path);
    const cJSON *l;
    cJSON_ArrayForEach (l, lines) {
        size_t i = 0;
        while (i < 5 && strncmp(l->valuestring, tally_names[i], strlen(tally_names[i])) != 0)
            i++;
        tally[i]++;
    }
    cJSON_Delete(lines);
}

static void remove_dir(const char *dir)
{
    static const char *const names[] = {"host.jsonl",  "ids",         "parent",          "tally", "ocbg.db",
                                        "ocbg.db-wal", "ocbg.db-shm", "ocbg.db-journal", NULL};
    char p[600];
    for (const char *const *n = names; *n; n++) {
        snprintf(p, sizeof p, "%s/%s", dir, *n);
        unlink(p);
    }
    if (rmdir(dir) != 0)
        printf("# crash: %s left behind (%s)\n", dir, strerror(errno));
}

/* One seed: one or two lives killed, then the checking life. Returns 0
 * (good) or 1; adds its tasks to *ntasks. */
static int run_seed(uint32_t seed, long *ntasks)
{
    char dir[] = "/tmp/ocbg-crash-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("crash: seed %u: mkdtemp: %s\n", seed, strerror(errno));
        return 1;
    }
    crash_run r;
    crash_paths(&r, dir, seed);
    uint32_t s = seed * 2654435761u;
    int kills = crash_rand(&s) % 3 == 0 ? 2 : 1, bad = 0;
    char plan[320] = "";
    for (r.life = 1; r.life <= kills && !bad; r.life++) {
        r.nops = 3 + (int)(crash_rand(&s) % 6);
        int k = (int)(crash_rand(&s) % (unsigned)(r.nops + 1));
        int delay = (int)(crash_rand(&s) % 301);
        int j = 0;
        if (crash_rand(&s) % 2) {
            /* Half the lives die just as a notification lands (0-3 ms
             * after it is in the parent session): ocbg may not have
             * recorded yet that it was sent. */
            k = r.nops;
            j = 1 + (int)(crash_rand(&s) % 3);
            delay = (int)(crash_rand(&s) % 4);
        }
        r.rng = crash_rand(&s);
        size_t used = strlen(plan);
        snprintf(plan + used, sizeof plan - used, "%slife %d: %d calls, killed after call %d, notification %d, + %d ms",
                 used ? "; " : "", r.life, r.nops, k, j, delay);
        bad = life_and_kill(&r, k, j, delay) != 0;
    }
    int64_t ms = 0;
    int st = bad ? 0 : rel_run_isolated(last_life_fn, &r, tap_timeout_ms(60000), &ms);
    if (st != 0) {
        bad = 1;
        printf("crash: seed %u: life %d (the check) %s (%d, %lld ms)\n", seed, r.life,
               st == -ETIMEDOUT ? "passed its deadline"
               : st >= 128      ? "crashed (signal)"
               : st == 1        ? "found broken invariants (above)"
                                : "had a sanitizer report or a setup failure",
               st, (long long)ms);
    }
    cJSON *ids = crash_lines(r.ids);
    *ntasks += cJSON_GetArraySize(ids);
    tally_add(r.tally);
    if (bad)
        printf("crash: seed %u: %s; %d task ids; files kept in %s\n", seed, plan, cJSON_GetArraySize(ids), dir);
    cJSON_Delete(ids);
    if (!bad)
        remove_dir(dir);
    return bad;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* failures show as they happen, also in a log */
    long n = rel_env_long("CRASH_SEEDS", 100);
    long first = rel_env_long("CRASH_FIRST", 1);
    long tasks = 0;
    int bad = 0;
    int64_t t0 = rel_now_ms();
    for (long i = 0; i < n; i++)
        bad += run_seed((uint32_t)(first + i), &tasks);
    printf("crash: %ld seeds, %ld tasks, %d bad (%lld ms)\n", n, tasks, bad, (long long)(rel_now_ms() - t0));
    printf("crash: tasks after the restart:");
    for (size_t i = 0; i < 6; i++)
        printf(" %s %ld", tally_names[i], tally[i]);
    printf(" (restarted: an error because the kill cut its run short)\n");
    printf("crash: kills: %ld after a call, %ld just after a notification landed, %ld waiting for one in vain\n",
           kill_kinds[0], kill_kinds[1], kill_kinds[2]);
    return bad ? 1 : 0;
}

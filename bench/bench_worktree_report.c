/* bench_worktree_report — what an isolated task's report costs its wake:
 * worktree_report (plugin/worktree/report.c), the call the engine's git
 * thread makes before the notification is pushed, on a worktree made by
 * worktree_make, in a small repository (12 files) and in a generated one of
 * 10,000 files (100 folders of 100 files, 40 lines each). The task's work:
 * two files edited and one made, nothing committed (`_committed`: one of
 * the edits committed). Medians of RUNS, interleaved with the same report
 * made the way it was before (the five git commands one after another:
 * `_sequential`): wall time, and the CPU time of the git processes
 * (`_cpu`, steadier on a busy machine). Each report is checked to be word
 * for word the same both ways and to say what the task did before any
 * figure is printed.
 *
 * `worktree_make_ms_`: what making the worktree costs the launch.
 *
 * The 10,000-file rows come twice. Files that git wrote in the same second
 * as the index are "racily clean" to it (their time is not older than the
 * index's), so every git command that compares the work tree reads and
 * hashes them (none of ocbg's git may write the index to settle them).
 * worktree_make settles the index it made; `_racy` shows what a report
 * costs without that: every file racily clean (the index's time set back
 * to the second of the first file written, what `git worktree add` leaves
 * when its checkout takes under a second). Prints "name: value unit". */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "bench.h"
#include "testlib.h"
#include "worktree/bind.h"
#include "worktree/worktree.h"
#include "wtref.h"

#define RUNS 15

static char top[128];

static void die(const char *what)
{
    fprintf(stderr, "bench_worktree_report: %s\n", what);
    exit(1);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        die("cannot write a file of the repository");
}

/* A repository of `folders` x `files` files of 40 short lines, committed. */
static char *make_repo(const char *name, int folders, int files)
{
    char *dir = xasprintf("%s/%s", top, name);
    if (t_sh(top, "git init -q -b main %s", name) != 0)
        die("git init failed");
    strbuf body = {0};
    for (int f = 0; f < folders; f++) {
        char *sub = xasprintf("%s/src%03d", dir, f);
        mkdir(sub, 0755);
        for (int i = 0; i < files; i++) {
            body.len = 0;
            for (int l = 0; l < 40; l++)
                sb_printf(&body, "int value_%d_%d_%d = %d; /* a line of code */\n", f, i, l, l * i);
            char *path = xasprintf("%s/file%03d.c", sub, i);
            write_file(path, body.buf);
            free(path);
        }
        free(sub);
    }
    sb_free(&body);
    if (t_sh(dir, "git add . && git -c user.name=b -c user.email=b@example.com commit -q -m base") != 0)
        die("git commit failed");
    return dir;
}

static char *report_now(const worktree_made *m)
{
    char *report = NULL, *err = NULL;
    if (worktree_report(m->checkout, m->path, m->branch, m->base, &report, &err) != 0)
        die(err);
    return report;
}

/* The report says what the task did, and both ways say it alike. */
static void check(const worktree_made *m, bool committed)
{
    char *now = report_now(m), *before = wtref_report_sequential(m);
    const char *want = committed ? ", 1 commit: 1 file changed, 1 insertion(+)\nUncommitted in %s: 1 file changed, 1 "
                                   "insertion(+); 1 untracked file\n"
                                 : ", 0 commits: nothing committed\nUncommitted in %s: 2 files changed, 2 "
                                   "insertions(+); 1 untracked file\n";
    char *line = xasprintf(want, m->path);
    if (strcmp(now, before) != 0 || !strstr(now, line) || !strstr(now, "2 files changed, 2 insertions(+)\nUntracked:"))
        die("the report is not what the task did, or not what the five commands said");
    free(line), free(now), free(before);
}

/* CPU ms of the processes this one waited for, so far. */
static double children_cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* Medians of RUNS reports each way, interleaved: wall and git's CPU ms. */
typedef struct figures {
    double now, before, now_cpu, before_cpu;
} figures;

static figures measure(const worktree_made *m)
{
    double a[RUNS], b[RUNS], ac[RUNS], bc[RUNS];
    for (int i = 0; i < RUNS; i++) {
        double c0 = children_cpu_ms();
        int64_t t0 = bench_ns();
        free(report_now(m));
        int64_t t1 = bench_ns();
        double c1 = children_cpu_ms();
        free(wtref_report_sequential(m));
        int64_t t2 = bench_ns();
        a[i] = (double)(t1 - t0) / 1e6;
        b[i] = (double)(t2 - t1) / 1e6;
        ac[i] = c1 - c0;
        bc[i] = children_cpu_ms() - c1;
    }
    return (figures){bench_median(a, RUNS), bench_median(b, RUNS), bench_median(ac, RUNS), bench_median(bc, RUNS)};
}

/* A task's worktree of `repo` and its work: two files edited and one made;
 * `commit`: the first edit committed. */
static void make_task_worktree(const char *repo, const char *id, const char *edit1, const char *edit2, bool commit,
                               worktree_made *m)
{
    char *err = NULL;
    if (worktree_make(repo, top, id, ISOLATION_WORKTREE, m, &err) != 0)
        die(err);
    if (t_sh(m->path, "echo edited >> %s && %s echo edited >> %s && echo new > made.txt", edit1,
             commit ? "git -c user.name=b -c user.email=b@example.com commit -q -am work &&" : "", edit2) != 0)
        die("the task's work failed");
}

/* The worktree's index file. malloc'd. */
static char *index_of(const worktree_made *m)
{
    bound_worktree w;
    char *err = NULL;
    if (worktree_bind(m->checkout, m->path, &w, &err) != 0)
        die(err);
    char *index = xasprintf("%s/index", w.admin);
    bound_worktree_free(&w);
    return index;
}

/* Every file racily clean: the index's time set back to the second of the
 * first file the checkout wrote (not one the task edited; the index's
 * entries keep their own times). */
static void all_racy(const worktree_made *m)
{
    char *index = index_of(m);
    if (t_sh(m->path, "touch -m -d @$(stat -c %%Y src000/file001.c) '%s'", index) != 0)
        die("cannot set the index's time");
    free(index);
}

static void row(const char *name, const char *variant, const worktree_made *m)
{
    figures f = measure(m);
    printf("worktree_report_ms_%s%s: %.1f ms\nworktree_report_ms_%s%s_sequential: %.1f ms\n", name, variant, f.now,
           name, variant, f.before);
    printf("worktree_report_ms_%s%s_cpu: %.1f ms\nworktree_report_ms_%s%s_sequential_cpu: %.1f ms\n", name, variant,
           f.now_cpu, name, variant, f.before_cpu);
    fflush(stdout);
}

/* worktree_make's wall time (what an isolated launch waits for), median
 * of MAKES. */
#define MAKES 3
static void make_row(const char *repo, const char *name)
{
    double ms[MAKES];
    for (int i = 0; i < MAKES; i++) {
        char *id = xasprintf("bg_%sm%d", name, i), *err = NULL;
        worktree_made m;
        int64_t t0 = bench_ns();
        if (worktree_make(repo, top, id, ISOLATION_WORKTREE, &m, &err) != 0)
            die(err);
        ms[i] = (double)(bench_ns() - t0) / 1e6;
        worktree_made_free(&m);
        free(id);
    }
    printf("worktree_make_ms_%s: %.1f ms\n", name, bench_median(ms, MAKES));
}

static void scenario(const char *repo, const char *name, const char *edit1, const char *edit2, bool big)
{
    worktree_made m, mc;
    char *id = xasprintf("bg_%s", name), *idc = xasprintf("bg_%sc", name);
    make_task_worktree(repo, id, edit1, edit2, false, &m);
    make_task_worktree(repo, idc, edit1, edit2, true, &mc);
    check(&m, false);
    check(&mc, true);
    row(name, "", &m);
    row(name, "_committed", &mc);
    if (big) {
        all_racy(&m);
        all_racy(&mc);
        check(&m, false);
        check(&mc, true);
        row(name, "_racy", &m);
        row(name, "_committed_racy", &mc);
    }
    make_row(repo, name);
    worktree_made_free(&m), worktree_made_free(&mc);
    free(id), free(idc);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/ocbg-bench-wtreport-XXXXXX");
    if (!mkdtemp(top))
        die("mkdtemp");
    setenv("HOME", top, 1); /* no user config of this machine's */
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    char *small = make_repo("small", 3, 4);
    scenario(small, "small", "src000/file000.c", "src002/file003.c", false);
    char *big = make_repo("big", 100, 100);
    scenario(big, "10k", "src000/file000.c", "src099/file099.c", true);
    t_sh(top, "rm -rf '%s'", top);
    free(small), free(big);
    return 0;
}

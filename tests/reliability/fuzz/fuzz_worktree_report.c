/* fuzz_worktree_report — the words of an isolated task's report from what
 * git printed (plugin/worktree/report.c worktree_report_compose). git's
 * outputs are whatever the task's folder made it print (the file names are
 * the task's), and the branch, base and path come from the task's record.
 * Input: the eight parts separated by NUL bytes, in report_parts' order
 * (branch, base, path, commits, committed, uncommitted, untracked, stat); a
 * git output the input runs out before is NULL (none printed). Checked:
 *   - the report begins "Branch: <branch> (from " and has
 *     "Uncommitted in <path>: " and "; N untracked file", N the number of
 *     untracked's lines;
 *   - past 12 lines of the stat and 5 untracked names, the rest are counted
 *     ("(N more)"), so it is never much longer than its parts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worktree/worktree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    PARTS = 8
};

static void require(int ok, const char *what, const char *report)
{
    if (!ok) {
        fprintf(stderr, "fuzz_worktree_report: %s:\n%s\n", what, report ? report : "(none)");
        abort();
    }
}

/* As git's text is read: a line per "\n", the last one unterminated too. */
static unsigned lines_of(const char *s)
{
    unsigned n = 0;
    while (s && *s) {
        n++;
        s = strchr(s, '\n');
        s = s ? s + 1 : NULL;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The input with a NUL after it: its NUL-separated pieces are the parts. */
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *part[PARTS] = {"", "", ""};
    size_t at = 0;
    for (int i = 0; i < PARTS && at <= size; i++) {
        part[i] = text + at;
        at += strlen(text + at) + 1;
    }
    report_parts p = {part[0], part[1], part[2], part[3], part[4], part[5], part[6], part[7]};
    char *report = worktree_report_compose(&p);
    require(report != NULL, "no report", NULL);
    char head[64 + 4096];
    snprintf(head, sizeof head, "Branch: %.4096s (from ", p.branch);
    require(strncmp(report, head, strlen(head)) == 0, "the first line does not name the branch", report);
    char *where = NULL;
    if (asprintf(&where, "Uncommitted in %s: ", p.path) < 0)
        abort();
    require(strstr(report, where) != NULL, "no line of what is uncommitted in the folder", report);
    free(where);
    unsigned nu = lines_of(p.untracked);
    char count[64];
    snprintf(count, sizeof count, "; %u untracked file%s\n", nu, nu == 1 ? "" : "s");
    require(strstr(report, count) != NULL, "the untracked files miscounted", report);
    unsigned ns = lines_of(p.stat);
    if (ns > 12) {
        snprintf(count, sizeof count, "  (%u more)\n", ns - 12);
        require(strstr(report, count) != NULL, "the stat lines past 12 not counted", report);
    }
    if (nu > 5) {
        snprintf(count, sizeof count, "  (%u more)\n", nu - 5);
        require(strstr(report, count) != NULL, "the untracked names past 5 not counted", report);
    }
    require(strlen(report) <= size + 1024, "a report much longer than its parts", report);
    free(report);
    free(text);
    return 0;
}

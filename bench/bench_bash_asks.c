/* bench_bash_asks — what reading a command line's permission questions
 * costs, at the caps (ops/bash_asks.h), through the real path: a `Bash`
 * tool call on the plugin (libocbg-internal.a on the instant fake host),
 * its arguments parsed, the line parsed and walked, the questions asked of
 * the host. The host allows "external_directory" and denies "bash", so
 * nothing runs.
 *
 * bash_asks_<shape>_ms: the call's wall time, median of RUNS;
 *   bash_asks_<shape>_cpu_ms: its thread's CPU time, median (steadier on a
 *   busy machine: the call runs on the calling thread).
 * bash_asks_<shape>_peak_kb: the most heap in use during the call above
 *   what was in use before it (a counting allocator: this program's own
 *   malloc, free, calloc, realloc and the aligned ones, over glibc's, count
 *   every active block's usable size, the plugin's, tree-sitter's, cJSON's
 *   and libc's alike), max of RUNS.
 *
 * Shapes, each line as long as is read (BASH_ASKS_MAX_BYTES, 32 KiB):
 *   words     "git config --global w w …": one command of 16,000 words
 *   commands  "Aaa;Baa;…": 8,192 distinct commands
 *   nested    6 nested $(…) around a word filling the line: the most text a
 *             line that is answered copies (7 patterns, 7 x 32 KiB)
 *   nested_deep  4,096 nested $(…): refused, its texts pass 256 KiB
 *   heredoc   a here-doc of some 3,600 $(…) substitutions
 *   paths     cat with some 3,270 distinct paths outside the project (a
 *             stat each)
 *   unbalanced   ")" x 32768: tree-sitter's error recovery is quadratic
 *             here (20 s); refused when the parse's CPU time runs out
 *   1mb       a 1,000,000-byte line: refused unread
 * Checked: each answer (the questions the host got, or the refusal's
 * text); a wrong one exits 1. Prints "name: value unit". */
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "bench.h"
#include "ops/bash_asks.h"

#define RUNS 7

/* ---- the counting allocator ---------------------------------------------- */

/* Seen by the shared libraries too (cJSON's, libc's own strdup…): objects
 * are built with hidden visibility. */
#define EXPORTED __attribute__((visibility("default")))

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);

/* Signed: a block allocated before this program's allocator was in place
 * (the loader's) may be freed through it. */
static _Atomic int64_t heap_now, heap_peak;

static void *counted(void *p)
{
    if (p) {
        int64_t size = (int64_t)malloc_usable_size(p);
        int64_t now = atomic_fetch_add(&heap_now, size) + size;
        int64_t peak = atomic_load(&heap_peak);
        while (now > peak && !atomic_compare_exchange_weak(&heap_peak, &peak, now))
            ;
    }
    return p;
}

static void uncount(void *p)
{
    if (p)
        atomic_fetch_sub(&heap_now, (int64_t)malloc_usable_size(p));
}

EXPORTED void *malloc(size_t n)
{
    return counted(__libc_malloc(n));
}

EXPORTED void *calloc(size_t n, size_t size)
{
    return counted(__libc_calloc(n, size));
}

EXPORTED void free(void *p)
{
    uncount(p);
    __libc_free(p);
}

EXPORTED void *realloc(void *p, size_t n)
{
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);
    if (!q && n)
        return NULL; /* p untouched */
    atomic_fetch_sub(&heap_now, (int64_t)old);
    return counted(q);
}

EXPORTED void *memalign(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

EXPORTED void *aligned_alloc(size_t align, size_t n)
{
    return counted(__libc_memalign(align, n));
}

EXPORTED int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = counted(__libc_memalign(align, n));
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

EXPORTED void *valloc(size_t n)
{
    return counted(__libc_memalign((size_t)sysconf(_SC_PAGESIZE), n));
}

EXPORTED void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return counted(__libc_memalign(page, (n + page - 1) / page * page));
}

/* ---- the host's questions ---------------------------------------------- */

static char *asked_dirs, *asked_patterns, *asked_always; /* the last call's */
static int asked;

static int ask(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out)
{
    (void)ud;
    (void)ctx;
    asked++;
    if (strcmp(req->permission, "external_directory") == 0) {
        asked_dirs = strdup(req->patterns_json);
        *out = NULL;
        return 0;
    }
    asked_patterns = strdup(req->patterns_json);
    asked_always = strdup(req->always_json);
    *out = strdup("the bench denies");
    return -EACCES;
}

static void forget(void)
{
    free(asked_dirs);
    free(asked_patterns);
    free(asked_always);
    asked_dirs = asked_patterns = asked_always = NULL;
    asked = 0;
}

/* ---- the shapes ------------------------------------------------------------ */

typedef struct shape {
    const char *name;
    char *line;
    /* checks the answer and the questions; NULL when right, else what is wrong */
    const char *(*check)(const struct shape *s, const char *answer);
    int expect;   /* -errno of a refusal, or 0 */
    size_t count; /* patterns wanted */
} shape;

static char project[] = "/tmp/ocbg-bench-asks-XXXXXX";

static cJSON *parsed(const char *json)
{
    cJSON *a = cJSON_Parse(json ? json : "");
    return cJSON_IsArray(a) ? a : (cJSON_Delete(a), NULL);
}

/* The answer asked "bash" with s->count patterns, the first the line
 * (whole_first), the always[0] wanted. */
static const char *check_bash(const shape *s, const char *answer, bool whole_first, const char *always0)
{
    if (strncmp(answer, "Permission denied: running `", 28) != 0)
        return "the answer is not the host's refusal";
    cJSON *p = parsed(asked_patterns), *a = parsed(asked_always);
    const char *bad = NULL;
    if (!p || !a)
        bad = "no bash question";
    else if ((size_t)cJSON_GetArraySize(p) != s->count)
        bad = "the number of patterns";
    else if (whole_first && strcmp(cJSON_GetArrayItem(p, 0)->valuestring, s->line) != 0)
        bad = "the first pattern is not the whole line";
    else if (strcmp(cJSON_GetArrayItem(a, 0)->valuestring, always0) != 0)
        bad = "the first always";
    cJSON_Delete(p);
    cJSON_Delete(a);
    return bad;
}

static const char *check_words(const shape *s, const char *answer)
{
    return check_bash(s, answer, true, "git config --global *");
}

static const char *check_commands(const shape *s, const char *answer)
{
    return check_bash(s, answer, false, "Aaa *");
}

static const char *check_nested(const shape *s, const char *answer)
{
    return check_bash(s, answer, true, "echo *");
}

static const char *check_heredoc(const shape *s, const char *answer)
{
    return check_bash(s, answer, true, "cat *");
}

static const char *check_paths(const shape *s, const char *answer)
{
    char want[128];
    snprintf(want, sizeof want, "[\"%s/*\"]", project);
    if (!asked_dirs || strcmp(asked_dirs, want) != 0)
        return "the external_directory question";
    return check_bash(s, answer, true, "cat *");
}

static const char *check_refused(const shape *s, const char *answer)
{
    const char *want = s->expect == -E2BIG ? "The command line is too long to check its permissions ("
                                           : "The command line is too complex to check its permissions (";
    if (strncmp(answer, want, strlen(want)) != 0)
        return "the refusal's text";
    if (s->expect == -ETIME && !strstr(answer, "(parsing it took more than"))
        return "not refused for its parse's time";
    if (s->expect == -EOVERFLOW && !strstr(answer, "(its commands' texts come to more than"))
        return "not refused for its texts";
    return asked ? "a refused line asked the host" : NULL;
}

/* ---- the lines ------------------------------------------------------------- */

static void fill(strbuf *sb, const char *unit, size_t max)
{
    while (sb->len + strlen(unit) <= max)
        sb_puts(sb, unit);
}

/* A distinct 3-letter name for each i < 26 * 52 * 52, never a shell keyword
 * (those are lower case; the first letter is upper case). */
static void name3(char out[4], size_t i)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    out[0] = (char)('A' + i % 26);
    out[1] = letters[i / 26 % 52];
    out[2] = letters[i / 1352 % 52];
    out[3] = '\0';
}

static void make_shapes(shape *s)
{
    const size_t max = BASH_ASKS_MAX_BYTES;
    strbuf sb = {0};
    sb_puts(&sb, "git config --global");
    fill(&sb, " w", max);
    s[0] = (shape){"words", sb_take(&sb), check_words, 0, 1};

    size_t n = 0;
    for (char name[4]; sb.len + 4 <= max; n++) {
        name3(name, n);
        sb_printf(&sb, "%s;", name);
    }
    s[1] = (shape){"commands", sb_take(&sb), check_commands, 0, n};

    for (int i = 0; i < 6; i++)
        sb_puts(&sb, "echo $(");
    fill(&sb, "x", max - 6);
    fill(&sb, ")", max);
    s[2] = (shape){"nested", sb_take(&sb), check_nested, 0, 7};

    for (n = 0; n < max / 8; n++)
        sb_puts(&sb, "echo $(");
    fill(&sb, ")", sb.len + n);
    s[3] = (shape){"nested_deep", sb_take(&sb), check_refused, -EOVERFLOW, 0};

    sb_puts(&sb, "cat > out <<EOF\n");
    for (n = 0; sb.len + 9 + 4 <= max; n++) {
        char name[4];
        name3(name, n);
        sb_printf(&sb, "$(%s %zu)\n", name, n % 10);
    }
    sb_puts(&sb, "EOF");
    s[4] = (shape){"heredoc", sb_take(&sb), check_heredoc, 0, n + 1};

    sb_puts(&sb, "cat");
    for (n = 0; sb.len + 10 <= max; n++)
        sb_printf(&sb, " ../%c%c%c%c%c", (char)('a' + n / 17576 % 26), (char)('a' + n / 676 % 26),
                  (char)('a' + n / 26 % 26), (char)('a' + n % 26), 'x');
    s[5] = (shape){"paths", sb_take(&sb), check_paths, 0, 1};

    fill(&sb, ")", max);
    s[6] = (shape){"unbalanced", sb_take(&sb), check_refused, -ETIME, 0};

    sb_puts(&sb, "echo ");
    fill(&sb, "x", 1000000);
    s[7] = (shape){"1mb", sb_take(&sb), check_refused, -E2BIG, 0};
}

/* ---- the calls ------------------------------------------------------------- */

static char *bash_args(const char *line)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "command", line);
    cJSON_AddStringToObject(a, "description", "bench");
    char *json = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return json;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One Bash call with the line; *ms its wall time, *cpu_ms its CPU time,
 * *peak_kb the heap it added at its most. Returns the answer (malloc'd). */
static char *call(const ocp_plugin *p, const char *dir, const char *args, double *ms, double *cpu_ms, double *peak_kb)
{
    ocp_call_ctx ctx = {.struct_size = sizeof ctx,
                        .session_id = "ses_benchasksparentsession0001",
                        .message_id = BENCH_LAUNCH_MESSAGE,
                        .agent = "build",
                        .call_id = "call_bench",
                        .directory = dir};
    forget();
    char *res = NULL;
    int64_t base = atomic_load(&heap_now);
    atomic_store(&heap_peak, base);
    int64_t t0 = bench_ns(), c0 = cpu_ns();
    p->tool_call(p->userdata, "Bash", args, &ctx, &res);
    *ms = (double)(bench_ns() - t0) / 1e6;
    *cpu_ms = (double)(cpu_ns() - c0) / 1e6;
    *peak_kb = (double)(atomic_load(&heap_peak) - base) / 1024;
    char *answer = strdup(res ? res : "");
    p->free(p->userdata, res);
    return answer;
}

static void run_shape(const ocp_plugin *p, const char *dir, const shape *s)
{
    char *args = bash_args(s->line);
    double ms[RUNS], cpu[RUNS], peak = 0;
    for (int r = 0; r < RUNS; r++) {
        double kb;
        char *answer = call(p, dir, args, &ms[r], &cpu[r], &kb);
        const char *bad = s->check(s, answer);
        if (bad) {
            fprintf(stderr, "bench_bash_asks: %s: %s: %.300s\n", s->name, bad, answer);
            exit(1);
        }
        free(answer);
        peak = kb > peak ? kb : peak;
    }
    printf("bash_asks_%s_ms: %.1f ms\n", s->name, bench_median(ms, RUNS));
    printf("bash_asks_%s_cpu_ms: %.1f ms\n", s->name, bench_median(cpu, RUNS));
    printf("bash_asks_%s_peak_kb: %.0f KiB\n", s->name, peak);
    free(args);
}

int main(void)
{
    if (!mkdtemp(project)) {
        perror("bench_bash_asks: mkdtemp");
        return 1;
    }
    char *dir = xasprintf("%s/p", project);
    mkdir(dir, 0700);
    ocp_host host = bench_fake_host();
    host.ask_permission = ask;
    const ocp_plugin *p = bench_plugin(&host, "{\"store\":false}");
    shape shapes[8];
    make_shapes(shapes);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        run_shape(p, dir, &shapes[i]);
        free(shapes[i].line);
    }
    forget();
    p->shutdown(p->userdata);
    rmdir(dir);
    rmdir(project);
    free(dir);
    return 0;
}

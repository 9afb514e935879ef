/* crash_lives.c — the crash test's lives (see crash_lives.h, crash.c): a life
 * launches and cancels tasks until it is killed; the last one restarts on
 * the same journal and database and checks that nothing was lost or sent
 * twice. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "crash_lives.h"
#include "rel.h"
#include "tap.h"
#include "testlib.h"

/* ---- what every life uses ------------------------------------------------ */

/* xorshift32: the seed decides the scenario and the moment of the kill. */
uint32_t crash_rand(uint32_t *s)
{
    uint32_t x = *s ? *s : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *s = x;
    return x;
}

void crash_paths(crash_run *r, const char *dir, uint32_t seed)
{
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    snprintf(r->journal, sizeof r->journal, "%s/host.jsonl", dir);
    snprintf(r->ids, sizeof r->ids, "%s/ids", dir);
    snprintf(r->parent, sizeof r->parent, "%s/parent", dir);
    snprintf(r->tally, sizeof r->tally, "%s/tally", dir);
    /* CRASH_NO_STORE=1 turns ocbg's store off: the harness must then report
     * the lost tasks (a check of the check). */
    int nostore = rel_env_long("CRASH_NO_STORE", 0) != 0;
    /* A third of the seeds run with small caps: tasks are pending (queued)
     * when the host dies. */
    int small = seed % 3 == 2;
    snprintf(r->options, sizeof r->options,
             "{\"store\":%s,\"store_path\":\"%s/ocbg.db\",\"poll_interval_ms\":50,\"notify_retry_ms\":5,"
             "\"max_running_agents\":%d,\"max_running_shells\":%d}",
             nostore ? "false" : "true", dir, small ? 2 : 5, small ? 1 : 8);
    r->seed = seed;
}

sim_host *crash_host(const crash_run *r)
{
    const char *plugins = getenv("OCBG_PLUGIN_DIR");
    sim_host *h = plugins ? sim_create() : NULL;
    if (!h) {
        fprintf(stderr, "# crash: no host (OCBG_PLUGIN_DIR %s)\n", plugins ? plugins : "unset");
        return NULL;
    }
    int rc = sim_journal_open(h, r->journal);
    sim_set_data_dir(h, r->dir);
    int n = rc == 0 ? sim_load_plugins(h, plugins, r->options) : -1;
    if (n != 1) {
        fprintf(stderr, "# crash: seed %u: journal %d, ocbg not loaded: %d (%s)\n", r->seed, rc, n, sim_load_error(h));
        sim_destroy(h);
        return NULL;
    }
    return h;
}

/* Append line and a newline to path in one write(2). */
int crash_append(const char *path, const char *line)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int rc = write(fd, buf, (size_t)n) == n ? 0 : -EIO;
    close(fd);
    return rc;
}

/* The lines of a file (whole ones only), as a JSON array of strings. */
cJSON *crash_lines(const char *path)
{
    cJSON *a = cJSON_CreateArray();
    FILE *f = fopen(path, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n < 2 || line[n - 1] != '\n')
            continue;
        line[n - 1] = 0;
        cJSON_AddItemToArray(a, cJSON_CreateString(line));
    }
    if (f)
        fclose(f);
    return a;
}

/* ---- life 1 (and every life that is killed) ------------------------------ */

/* A sub-agent's script: 0-2 tools (0-120 ms each), maybe a usage report, a
 * wait (0-200 ms), then an answer, or (1 in 6) an error. */
static char *agent_script(uint32_t *s, int i)
{
    cJSON *steps = cJSON_CreateArray();
    int ntools = (int)(crash_rand(s) % 3);
    for (int j = 0; j < ntools; j++) {
        cJSON *t = cJSON_CreateObject();
        char file[32];
        snprintf(file, sizeof file, "f%d_%d.c", i, j);
        cJSON_AddStringToObject(t, "tool", "read");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(t, "input"), "filePath", file);
        cJSON_AddStringToObject(t, "output", "int x;");
        cJSON_AddNumberToObject(t, "ms", crash_rand(s) % 121);
        cJSON_AddItemToArray(steps, t);
    }
    if (crash_rand(s) % 2)
        cJSON_AddItemToArray(steps, cJSON_Parse("{\"usage\":{\"input\":1000,\"output\":50,\"cost\":0.01}}"));
    cJSON *w = cJSON_CreateObject();
    cJSON_AddNumberToObject(w, "wait_ms", crash_rand(s) % 201);
    cJSON_AddItemToArray(steps, w);
    char end[64];
    if (crash_rand(s) % 6 == 0)
        snprintf(end, sizeof end, "{\"error\":\"boom %d\"}", i);
    else
        snprintf(end, sizeof end, "{\"reply\":\"answer %d\"}", i);
    cJSON_AddItemToArray(steps, cJSON_Parse(end));
    cJSON *script = cJSON_CreateObject();
    cJSON_AddItemToObject(script, "steps", steps);
    char *text = cJSON_PrintUnformatted(script);
    cJSON_Delete(script);
    return text;
}

/* One call of the scenario: an agent task (5 in 10), a background command
 * (3 in 10: 0-300 ms, 1 in 4 exits 3) or a cancel of an earlier task.
 * Returns the new task's id (malloc'd) or NULL. */
static char *life_op(sim_host *h, const char *p, uint32_t *s, int i, const cJSON *ids, uint32_t seed)
{
    unsigned kind = crash_rand(s) % 10;
    char args[512];
    if (kind >= 8 && cJSON_GetArraySize(ids) > 0) {
        const cJSON *victim = cJSON_GetArrayItem(ids, (int)(crash_rand(s) % (unsigned)cJSON_GetArraySize(ids)));
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", victim->valuestring);
        free(rel_tool(h, p, "background_cancel", args, NULL));
        return NULL;
    }
    const char *tool;
    if (kind >= 5 && kind < 8) {
        unsigned ms = crash_rand(s) % 301;
        snprintf(args, sizeof args,
                 "{\"command\":\"sleep %u.%03u; echo out-%d%s\",\"description\":\"command %d\","
                 "\"run_in_background\":true}",
                 ms / 1000, ms % 1000, i, crash_rand(s) % 4 == 0 ? "; exit 3" : "", i);
        tool = "Bash";
    } else {
        char match[64];
        snprintf(match, sizeof match, "crash-%u-%d", seed, i);
        char *script = agent_script(s, i);
        sim_script(h, match, script, 1);
        free(script);
        snprintf(args, sizeof args, "{\"description\":\"agent %d\",\"prompt\":\"%s: work\",\"agent\":\"general\"}", i,
                 match);
        tool = "background_task";
    }
    int rc = 0;
    char *out = rel_tool(h, p, tool, args, &rc);
    char *id = t_find_id(out, "bg_");
    if (!id)
        fprintf(stderr, "# crash: seed %u: %s gave no task id (rc %d): %.200s\n", seed, tool, rc, out);
    free(out);
    return id;
}

typedef struct events_after {
    size_t n;
} events_after;

static int events_reached(sim_host *h, void *arg)
{
    return sim_events_delivered(h, NULL) >= ((events_after *)arg)->n;
}

typedef struct notices_after {
    const char *p;
    int n;
} notices_after;

static int notices_reached(sim_host *h, void *arg)
{
    notices_after *a = arg;
    return rel_count_messages_with(h, a->p, "[ocbg] Background ") >= a->n;
}

/* The parent session: the one an earlier life made (back from the journal),
 * else a new one, recorded. NULL when neither. */
static char *parent_session(const crash_run *r, sim_host *h)
{
    cJSON *lines = crash_lines(r->parent);
    const char *old = cJSON_GetStringValue(cJSON_GetArrayItem(lines, 0));
    char *p = old && sim_session_exists(h, old) ? strdup(old) : NULL;
    cJSON_Delete(lines);
    if (!p && !old) {
        p = sim_session_new(h, NULL, "crash parent");
        if (p && crash_append(r->parent, p) != 0) {
            free(p);
            p = NULL;
        }
    }
    return p;
}

_Noreturn void crash_life(const crash_run *r, int report_fd)
{
    sim_host *h = crash_host(r);
    if (!h)
        _exit(3);
    uint32_t s = r->rng;
    /* Faults in a life that dies: a third lose, duplicate and reorder
     * events; a quarter fail one or two prompts (a launch, a notification). */
    if (crash_rand(&s) % 3 == 0)
        sim_event_faults(h, r->seed, 0.3, 0.2, 20, NULL);
    if (crash_rand(&s) % 4 == 0)
        sim_fail(h, "session_prompt", 1 + (int)(crash_rand(&s) % 4), 1 + (int)(crash_rand(&s) % 2), -EIO);
    char *p = parent_session(r, h);
    if (!p)
        _exit(4);
    cJSON *ids = crash_lines(r->ids);
    for (int i = 0; i < r->nops; i++) {
        /* Half the time, let the tasks move on first: wait for 1-15 more
         * host events (at most 300 ms), so the calls spread over their runs. */
        events_after ev = {sim_events_delivered(h, NULL) + 1 + crash_rand(&s) % 15};
        if (crash_rand(&s) % 2)
            sim_wait(h, events_reached, &ev, 300);
        char *id = life_op(h, p, &s, r->life * 100 + i, ids, r->seed);
        if (id) {
            if (crash_append(r->ids, id) != 0)
                _exit(5);
            cJSON_AddItemToArray(ids, cJSON_CreateString(id));
            free(id);
        }
        if (write(report_fd, "k", 1) != 1)
            _exit(6);
    }
    /* Then an 'n' for each notification as it lands, until the kill. */
    notices_after na = {p, rel_count_messages_with(h, p, "[ocbg] Background ")};
    for (;;) {
        int seen = na.n;
        na.n++;
        if (sim_wait(h, notices_reached, &na, 1000) != 0) {
            na.n = seen;
            continue;
        }
        for (na.n = rel_count_messages_with(h, p, "[ocbg] Background "); seen < na.n; seen++)
            if (write(report_fd, "n", 1) != 1)
                _exit(7);
    }
}

/* ---- the last life ------------------------------------------------------------- */

static int bad;

static void fail(const crash_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const crash_run *r, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("crash: seed %u: %s\n", r->seed, msg);
    fflush(stdout);
    bad++;
}

/* How many user messages of session p are ocbg notifications whose first
 * line names id; *said (may be NULL): what the last one says the task did
 * ("completed" or "failed", "" when none). */
static int notices_for(sim_host *h, const char *p, const char *id, const char **said)
{
    char *json = sim_session_messages_json(h, p);
    cJSON *msgs = json ? cJSON_Parse(json) : NULL;
    free(json);
    int n = 0;
    if (said)
        *said = "";
    const cJSON *m;
    cJSON_ArrayForEach (m, msgs) {
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(m, "info");
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role"));
        const cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "parts"), 0);
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (!role || strcmp(role, "user") != 0 || !text || strncmp(text, "[ocbg] Background ", 18) != 0)
            continue;
        const char *nl = strchr(text, '\n');
        const char *hit = strstr(text, id);
        if (!hit || (nl && hit > nl))
            continue;
        n++;
        const char *colon = strchr(text, ':');
        if (said && colon && colon < hit)
            *said = strstr(text, " completed:") && strstr(text, " completed:") < colon ? "completed" : "failed";
    }
    cJSON_Delete(msgs);
    return n;
}

/* The status background_output reports ("" when none, "lost" for Task not
 * found), in buf. */
static const char *status_of(sim_host *h, const char *p, const char *id, char *buf, size_t size)
{
    char args[128];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id);
    char *out = rel_tool(h, p, "background_output", args, NULL);
    snprintf(buf, size, "%s", strncmp(out, "Task not found", 14) == 0 ? "lost" : rel_status_of(out));
    /* "error" cut short by the restart: "restarted" (for the tally). */
    if (strcmp(buf, "error") == 0 && strstr(out, "the host restarted"))
        snprintf(buf, size, "restarted");
    free(out);
    return buf;
}

static int is_error(const char *st)
{
    return strcmp(st, "error") == 0 || strcmp(st, "restarted") == 0;
}

typedef struct settle_wait {
    const char *p;
    const cJSON *ids;
    int notices; /* 0: wait for every task to settle; 1: for every notification */
} settle_wait;

static int all_settled(sim_host *h, void *arg)
{
    settle_wait *w = arg;
    const cJSON *id;
    cJSON_ArrayForEach (id, w->ids) {
        char st[64];
        status_of(h, w->p, id->valuestring, st, sizeof st);
        if (strcmp(st, "lost") == 0 || strcmp(st, "cancelled") == 0)
            continue;
        if (!rel_status_terminal(st) && !is_error(st))
            return 0;
        if (w->notices && notices_for(h, w->p, id->valuestring, NULL) < 1)
            return 0;
    }
    return 1;
}

/* Launch a quick task and wait for its notification: the worker pushes them
 * in order, so any notification owed before it has been pushed by then. */
static void sync_notifications(const crash_run *r, sim_host *h, const char *p)
{
    char *out = rel_tool(h, p, "background_task",
                         "{\"description\":\"sync\",\"prompt\":\"crash-sync\",\"agent\":\"general\"}", NULL);
    char *id = t_find_id(out, "bg_");
    free(out);
    cJSON *one = cJSON_CreateArray();
    if (id)
        cJSON_AddItemToArray(one, cJSON_CreateString(id));
    settle_wait w = {p, one, 1};
    if (!id || sim_wait(h, all_settled, &w, tap_timeout_ms(10000)) != 0)
        fail(r, "the sync task after the restart (%s) was never notified", id ? id : "not launched");
    cJSON_Delete(one);
    free(id);
}

/* (a), (b), (c) for every id. */
static void check_tasks(const crash_run *r, sim_host *h, const char *p, const cJSON *ids)
{
    const cJSON *id;
    cJSON_ArrayForEach (id, ids) {
        char st[64];
        status_of(h, p, id->valuestring, st, sizeof st);
        const char *said;
        int n = notices_for(h, p, id->valuestring, &said);
        char tally[96];
        snprintf(tally, sizeof tally, "%s %d", st, n);
        crash_append(r->tally, tally);
        if (strcmp(st, "lost") == 0)
            fail(r, "(a) task %s is lost: background_output says Task not found (%d notifications)", id->valuestring,
                 n);
        else if (!rel_status_terminal(st) && !is_error(st))
            fail(r, "(b) task %s is still '%s' after the restart (%d notifications)", id->valuestring, st, n);
        else if (strcmp(st, "cancelled") != 0 && n != 1)
            fail(r, "(c) task %s ended %s with %d notifications over every life (want 1)", id->valuestring, st, n);
        else if (strcmp(st, "cancelled") == 0 && n != 0)
            fail(r, "(d) task %s was cancelled, yet has %d notifications ('%s')", id->valuestring, n, said);
        else if (n == 1 && strcmp(said, strcmp(st, "completed") == 0 ? "completed" : "failed") != 0)
            fail(r, "(e) task %s ended %s, but its notification says it %s", id->valuestring, st, said);
    }
}

int crash_last_life(const crash_run *r)
{
    cJSON *ids = crash_lines(r->ids);
    cJSON *parent = crash_lines(r->parent);
    const char *p = cJSON_GetStringValue(cJSON_GetArrayItem(parent, 0));
    sim_host *h = crash_host(r);
    if (!h) {
        cJSON_Delete(ids);
        cJSON_Delete(parent);
        return 3;
    }
    if (p) {
        settle_wait w = {p, ids, 0};
        sim_wait(h, all_settled, &w, tap_timeout_ms(8000));
        w.notices = 1;
        sim_wait(h, all_settled, &w, tap_timeout_ms(5000));
        sync_notifications(r, h, p);
        check_tasks(r, h, p, ids);
    }
    sim_destroy(h);
    cJSON_Delete(ids);
    cJSON_Delete(parent);
    return bad ? 1 : 0;
}

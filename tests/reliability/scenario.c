/* scenario.c — the scripted scenario of rel.h: launch, resume, fork, shell,
 * wait, block, cancel, list, /tasks, clear, shutdown; every step's answer is
 * checked for a sensible, explained outcome whatever host call failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel.h"
#include "tap.h"
#include "testlib.h"

const char *const rel_host_fns[] = {"session_create", "session_get",    "session_messages", "session_prompt",
                                    "session_abort",  "session_status", "session_fork",     "ask_permission"};
const size_t rel_host_fn_count = sizeof rel_host_fns / sizeof rel_host_fns[0];

#define NOTIFICATION_TASK "[ocbg] Background task "
#define NOTIFICATION_CMD "[ocbg] Background command "

/* Every answer the scenario got, for held notifications riding on them. */
typedef struct answers {
    char *buf;
    size_t len, cap;
} answers;

static void keep(answers *a, const char *text)
{
    size_t n = strlen(text);
    if (a->len + n + 2 > a->cap) {
        a->cap = (a->len + n + 2) * 2;
        a->buf = realloc(a->buf, a->cap);
    }
    memcpy(a->buf + a->len, text, n);
    a->len += n;
    a->buf[a->len++] = '\n';
    a->buf[a->len] = '\0';
}

static int count_in(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* A failed call must say why in words: non-empty, no "(null)". */
static void explained(int rc, const char *out, const char *what)
{
    if (rc == 0)
        return;
    rel_check(out && strlen(out) >= 10, "%s failed (rc %d) without a readable reason: '%s'", what, rc,
              out ? out : "(null)");
    rel_check(!out || !strstr(out, "(null)"), "%s: '(null)' in the error text: %s", what, out);
    rel_check(rc < 0, "%s: a failure code must be a negative errno, got %d", what, rc);
}

static char *call(sim_host *h, answers *ans, const char *ses, const char *tool, const char *args, int *rc,
                  const char *what)
{
    int r;
    char *out = rel_tool(h, ses, tool, args, &r);
    explained(r, out, what);
    keep(ans, out);
    if (rc)
        *rc = r;
    return out;
}

/* Notices about a task or command id, in the parent's messages and in answers. */
static int notices(sim_host *h, const char *parent, const answers *ans, const char *kind, const char *id)
{
    char needle[128];
    int n = 0;
    const char *whats[] = {"completed: ", "failed: "};
    for (int i = 0; i < 2; i++) {
        snprintf(needle, sizeof needle, "%s%s%s", kind, whats[i], id);
        n += rel_count_messages_with(h, parent, needle) + count_in(ans->buf, needle);
    }
    return n;
}

typedef struct expect_arg {
    const char *parent;
    const char *kind[8];
    const char *id[8];
    const char *label[8];
    int want[8];
    int n;
} expect_arg;

static int all_notified(sim_host *h, void *arg)
{
    expect_arg *e = arg;
    answers none = {(char *)"", 0, 0};
    for (int i = 0; i < e->n; i++)
        if (notices(h, e->parent, &none, e->kind[i], e->id[i]) < e->want[i])
            return 0;
    return 1;
}

/* Check a settled agent task's report: completed with `result`, or (under
 * faults) error with a reason. */
/* A refused command's answer: asking failed, and nothing ran. */
static int not_run(const char *out)
{
    return strstr(out, "Could not ask for permission") && strstr(out, "The command was not run.");
}

static void check_agent_end(const char *out, const char *id, const char *result, int faulty, const char *what)
{
    if (!rel_check(out != NULL, "%s %s never settled (still running past the deadline)", what, id))
        return;
    const char *st = rel_status_of(out);
    if (strcmp(st, "completed") == 0) {
        rel_check(strstr(out, "\n\nResult:\n") != NULL, "%s %s completed without a result: %s", what, id, out);
        if (result && !faulty)
            rel_check(strstr(out, result) != NULL, "%s %s: result '%s' missing: %s", what, id, result, out);
    } else if (strcmp(st, "error") == 0) {
        rel_check(faulty, "%s %s ended in error without any fault: %s", what, id, out);
        const char *e = strstr(out, "\nError: ");
        rel_check(e && strlen(e) > 12 && !strstr(e, "unknown error"), "%s %s: error without a reason: %s", what, id,
                  out);
    } else {
        rel_check(0, "%s %s: unexpected end status '%s': %s", what, id, st, out);
    }
}

/* A second conversation: a batch cancelled as a whole, the resume= form of
 * background_task then a blocking background_resume, and a third
 * conversation deleted while its task runs. */
static void scenario_more(sim_host *h, const rel_scenario_cfg *cfg, answers *ans)
{
    int faulty = cfg->faulty, settle = cfg->settle_ms > 0 ? cfg->settle_ms : 10000, rc;
    char args[512];
    char *q = sim_session_new(h, NULL, "second");
    sim_script(h, "rel-d#", "{\"steps\":[{\"hang\":true}]}", 1);
    sim_script(h, "rel-e#", "{\"steps\":[{\"tool\":\"grep\",\"ms\":1},{\"hang\":true}]}", 1);
    sim_script(h, "rel-f#", "{\"steps\":[{\"reply\":\"phi result\"}]}", 1);
    sim_script(h, "rel-f2#", "{\"steps\":[{\"reply\":\"phi second\"}]}", 1);
    sim_script(h, "rel-f3#", "{\"steps\":[{\"reply\":\"phi third\"}]}", 1);
    sim_script(h, "rel-g#", "{\"steps\":[{\"hang\":true}]}", 1);

    char *out = call(h, ans, q, "background_task",
                     "{\"description\":\"D\",\"prompt\":\"rel-d#\",\"agent\":\"general\"}", &rc, "launch D");
    char *d = rc == 0 ? t_find_id(out, "bg_") : NULL;
    char *batch = rc == 0 ? t_find_id(out, "batch_") : NULL;
    free(out);
    out = call(h, ans, q, "background_task", "{\"description\":\"E\",\"prompt\":\"rel-e#\",\"agent\":\"general\"}", &rc,
               "launch E");
    char *e = rc == 0 ? t_find_id(out, "bg_") : NULL;
    free(out);
    rel_check(faulty || (d && e), "second conversation launches");

    /* Cancel D's batch (E is in it unless D failed to launch). */
    if (batch) {
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", batch);
        for (int attempt = 0; attempt < 2; attempt++) {
            out = call(h, ans, q, "background_cancel", args, &rc, "cancel batch");
            int partial = strstr(out, "still running") != NULL;
            rel_check(rc == 0 || faulty, "batch cancel: rc %d %s", rc, out);
            rel_check(!partial || faulty, "batch cancel left a task running without a fault: %s", out);
            free(out);
            if (!partial && rc == 0)
                break;
        }
        const char *ids[] = {d, e};
        for (int i = 0; i < 2; i++) {
            if (!ids[i])
                continue;
            char *o2 = rel_wait_settled(h, q, ids[i], settle);
            const char *st = o2 ? rel_status_of(o2) : "(running)";
            /* Under faults E may have ended on its own first? No: it hangs. */
            rel_check(strcmp(st, "cancelled") == 0 || (faulty && strcmp(st, "error") == 0), "batch task %s ends %s: %s",
                      ids[i], st, o2 ? o2 : "");
            free(o2);
        }
    }

    /* F (launched after the batch is gone, so not in it): completed, resumed
     * by background_task(resume=), then a blocking resume. */
    out = call(h, ans, q, "background_task", "{\"description\":\"F\",\"prompt\":\"rel-f#\",\"agent\":\"explore\"}", &rc,
               "launch F");
    char *f = t_find_id(out, "bg_");
    int f_started = rc == 0;
    rel_check(faulty || f_started, "second conversation launches: %s", out);
    free(out);
    int f_notices = 0;
    char *of = f ? rel_wait_settled(h, q, f, settle) : NULL;
    if (f) {
        check_agent_end(of, f, "phi result", faulty, "task F");
        f_notices = 1;
    }
    if (of && strcmp(rel_status_of(of), "completed") == 0) {
        snprintf(args, sizeof args, "{\"resume\":\"%s\",\"prompt\":\"rel-f2# again\"}", f);
        free(call(h, ans, q, "background_task", args, &rc, "resume F (background_task resume=)"));
        rel_check(faulty || rc == 0, "resume= of F failed without a fault");
        f_notices += rc == 0;
        free(of);
        of = rel_wait_settled(h, q, f, settle);
        check_agent_end(of, f, rc == 0 ? "phi second" : NULL, faulty, "task F resumed");
        if (of && strcmp(rel_status_of(of), "completed") == 0) {
            snprintf(args, sizeof args,
                     "{\"task_id\":\"%s\",\"message\":\"rel-f3# block\",\"block\":true,\"timeout\":%d}", f,
                     settle / 1000);
            out = call(h, ans, q, "background_resume", args, &rc, "blocking resume F");
            rel_check(faulty || (rc == 0 && strstr(out, "phi third")), "blocking resume: rc %d %s", rc, out);
            free(out);
        }
    }
    free(of);
    (void)f_started;

    /* Every F notice in (launch, resume=), none for the blocking resume. */
    if (f) {
        char needle[96];
        snprintf(needle, sizeof needle, "%s%s", NOTIFICATION_TASK "completed: ", f);
        int got = rel_count_messages_with(h, q, needle) + count_in(ans->buf, needle);
        snprintf(needle, sizeof needle, "%s%s", NOTIFICATION_TASK "failed: ", f);
        got += rel_count_messages_with(h, q, needle) + count_in(ans->buf, needle);
        /* The blocking resume returns before its completion could be pushed:
         * waiting for f_notices is enough as the earlier ones precede it. */
        rel_check(got <= f_notices + (faulty ? 1 : 0), "task F: %d notifications, at most %d expected", got, f_notices);
    }

    /* A conversation deleted while its task runs: the task is dropped and
     * its session aborted. */
    char *r = sim_session_new(h, NULL, "third");
    out = call(h, ans, r, "background_task", "{\"description\":\"G\",\"prompt\":\"rel-g#\",\"agent\":\"general\"}", &rc,
               "launch G");
    char *g = rc == 0 ? t_find_id(out, "bg_") : NULL;
    free(out);
    sim_session_delete(h, r);
    out = call(h, ans, r, "background_list", "{}", &rc, "list of a deleted conversation");
    free(out);
    free(g);
    free(r);
    free(d);
    free(e);
    free(f);
    free(batch);
    free(q);
}

/* The main conversation's scenario, a step a function; what the steps
 * launched is kept here for the later steps' checks. */
typedef struct scene {
    sim_host *h;
    answers ans;
    char *parent;
    int faulty, settle;
    char *a, *a_failed, *b, *c, *s, *fg, *sync; /* task ids, NULL when not launched */
    int b_started, resumed, resume_tried;
} scene;

static void scene_launch(scene *sc)
{
    sim_host *h = sc->h;
    const char *parent = sc->parent;
    answers *ans = &sc->ans;
    int faulty = sc->faulty, rc;
    char *out;
    /* Launches: an agent, a hanging agent, a forked agent, a shell command. */
    out = call(h, ans, parent, "background_task",
               "{\"description\":\"Alpha\",\"prompt\":\"rel-alpha# read the code\",\"agent\":\"explore\"}", &rc,
               "launch A");
    sc->a = rc == 0 ? t_find_id(out, "bg_") : NULL;
    sc->a_failed = rc != 0 ? t_find_id(out, "bg_") : NULL; /* registered, then its start failed */
    rel_check(faulty || rc == 0, "launch A failed without a fault: %s", out);
    free(out);
    out = call(h, ans, parent, "background_task",
               "{\"description\":\"Hang\",\"prompt\":\"rel-hang# forever\",\"agent\":\"general\"}", &rc, "launch B");
    sc->b = t_find_id(out, "bg_");
    sc->b_started = rc == 0;
    rel_check(faulty || rc == 0, "launch B failed without a fault: %s", out);
    free(out);
    out = call(h, ans, parent, "background_task",
               "{\"description\":\"Gamma\",\"prompt\":\"rel-gamma# forked\",\"agent\":\"explore\",\"fork\":true}", &rc,
               "launch C (fork)");
    sc->c = t_find_id(out, "bg_");
    rel_check(faulty || rc == 0, "launch C failed without a fault: %s", out);
    free(out);
    out = call(h, ans, parent, "Bash",
               "{\"command\":\"echo shell-out\",\"description\":\"Shell\",\"run_in_background\":true}", &rc,
               "Bash background");
    /* A shell command's one host call is the permission question: when it
     * fails nothing runs, and the answer says so. */
    sc->s = rc == 0 ? t_find_id(out, "bg_") : NULL;
    rel_check((rc == 0 && sc->s) || (faulty && not_run(out)), "background Bash: rc %d %s", rc, out);
    free(out);

    /* Foregrounds: a shell command and a sub-agent. */
    out = call(h, ans, parent, "Bash", "{\"command\":\"echo fg-shell\"}", &rc, "Bash foreground");
    rel_check((rc == 0 && strstr(out, "fg-shell")) || (faulty && not_run(out)), "foreground Bash: rc %d %s", rc, out);
    free(out);
    out = call(h, ans, parent, "Task",
               "{\"description\":\"Fg\",\"prompt\":\"rel-fg# now\",\"subagent_type\":\"explore\"}", &rc,
               "Task foreground");
    rel_check(faulty || (rc == 0 && strstr(out, "foreground result")), "foreground Task: rc %d %s", rc, out);
    sc->fg = t_find_id(out, "bg_");
    free(out);
}

static void scene_settle(scene *sc)
{
    sim_host *h = sc->h;
    const char *parent = sc->parent;
    answers *ans = &sc->ans;
    int faulty = sc->faulty, settle = sc->settle, rc;
    char args[512], *out;
    const char *a = sc->a;
    const char *b = sc->b;
    const char *c = sc->c;
    const char *s = sc->s;
    int b_started = sc->b_started;
    /* A settles; resume it once it completed. */
    char *outa = a ? rel_wait_settled(h, parent, a, settle) : NULL;
    if (a)
        check_agent_end(outa, a, "alpha result", faulty, "task A");
    if (outa && strcmp(rel_status_of(outa), "completed") == 0) {
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"message\":\"rel-followup# more\"}", a);
        sc->resume_tried = 1;
        out = call(h, ans, parent, "background_resume", args, &rc, "resume A");
        sc->resumed = rc == 0;
        rel_check(faulty || rc == 0, "resume A failed without a fault: %s", out);
        free(out);
        free(outa);
        outa = rel_wait_settled(h, parent, a, settle);
        check_agent_end(outa, a, sc->resumed ? "alpha again" : NULL, faulty, "task A resumed");
    }
    free(outa);
    /* C and S settle (watched without blocking: a blocking call that returns
     * a result stands in for its notification, which is checked below). */
    if (c) {
        char *outc = rel_wait_settled(h, parent, c, settle);
        check_agent_end(outc, c, "gamma result", faulty, "task C (fork)");
        free(outc);
    }
    if (s) {
        char *outs = rel_wait_settled(h, parent, s, settle);
        rel_check(outs && strcmp(rel_status_of(outs), "completed") == 0 && strstr(outs, "shell-out"),
                  "shell task S: %s", outs ? outs : "never settled");
        free(outs);
    }

    /* Cancel the hanging task: a failed abort must say it is still running,
     * and a second try must work. */
    if (b) {
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", b);
        for (int attempt = 0; attempt < 2; attempt++) {
            out = call(h, ans, parent, "background_cancel", args, &rc, "cancel B");
            if (rc == 0) {
                rel_check(strstr(out, "cancelled") != NULL, "cancel B: %s", out);
                free(out);
                break;
            }
            if (!b_started) { /* its start failed: it is error, nothing to cancel */
                rel_check(strstr(out, "Only running tasks can be cancelled") != NULL, "cancel B (error): %s", out);
                free(out);
                break;
            }
            rel_check(faulty && attempt == 0 && strstr(out, "still running"), "cancel B attempt %d: rc %d %s", attempt,
                      rc, out);
            free(out);
        }
        char *outb = rel_wait_settled(h, parent, b, settle);
        const char *st = outb ? rel_status_of(outb) : "(running)";
        rel_check(strcmp(st, b_started ? "cancelled" : "error") == 0, "task B ends %s, wanted %s: %s", st,
                  b_started ? "cancelled" : "error", outb ? outb : "");
        free(outb);
    }
}

static void scene_notices(scene *sc)
{
    sim_host *h = sc->h;
    const char *parent = sc->parent;
    answers *ans = &sc->ans;
    int faulty = sc->faulty, settle = sc->settle, rc;
    char *out;
    const char *a = sc->a;
    const char *a_failed = sc->a_failed;
    const char *b = sc->b;
    const char *c = sc->c;
    const char *s = sc->s;
    const char *fg = sc->fg;
    int b_started = sc->b_started;
    /* Notifications: each finished task told exactly once (none for the
     * cancelled one or the foreground one). */
    expect_arg e = {.parent = parent};
    if (a) {
        e.kind[e.n] = NOTIFICATION_TASK, e.id[e.n] = a, e.label[e.n] = "A", e.want[e.n++] = 1 + sc->resumed;
    }
    if (a_failed) {
        e.kind[e.n] = NOTIFICATION_TASK, e.id[e.n] = a_failed, e.label[e.n] = "A (failed start)", e.want[e.n++] = 1;
    }
    if (c) {
        e.kind[e.n] = NOTIFICATION_TASK, e.id[e.n] = c, e.label[e.n] = "C (fork)", e.want[e.n++] = 1;
    }
    if (s) {
        e.kind[e.n] = NOTIFICATION_CMD, e.id[e.n] = s, e.label[e.n] = "S (shell)", e.want[e.n++] = 1;
    }
    if (b && !b_started) {
        e.kind[e.n] = NOTIFICATION_TASK, e.id[e.n] = b, e.label[e.n] = "B (failed start)", e.want[e.n++] = 1;
    }
    int all = sim_wait(h, all_notified, &e, tap_timeout_ms(settle)) == 0;
    /* A sync point: notices go out in order, so once the sync task's is in,
     * nothing earlier is still on its way. */
    out = call(h, ans, parent, "background_task",
               "{\"description\":\"Sync\",\"prompt\":\"rel-sync# now\",\"agent\":\"explore\"}", &rc, "sync launch");
    sc->sync = rc == 0 ? t_find_id(out, "bg_") : NULL;
    free(out);
    if (sc->sync) {
        expect_arg se = {.parent = parent, .kind = {NOTIFICATION_TASK}, .id = {sc->sync}, .want = {1}, .n = 1};
        int synced = sim_wait(h, all_notified, &se, tap_timeout_ms(settle)) == 0;
        rel_check(faulty || synced, "the sync task's notice never came");
    }
    out = call(h, ans, parent, "background_list", "{}", &rc, "list (to collect held notices)");
    free(out);
    for (int i = 0; i < e.n; i++) {
        int got = notices(h, parent, ans, e.kind[i], e.id[i]);
        if (faulty && e.id[i] == a && sc->resume_tried)
            rel_check(got >= 1 && got <= 2, "task %s %s: %d notifications (wanted 1 or 2)", e.label[i], e.id[i], got);
        else
            rel_check(got == e.want[i], "task %s %s: %d notifications, wanted exactly %d", e.label[i], e.id[i], got,
                      e.want[i]);
    }
    if (b && b_started)
        rel_check(notices(h, parent, ans, NOTIFICATION_TASK, b) == 0, "the cancelled task B was notified");
    if (fg)
        rel_check(notices(h, parent, ans, NOTIFICATION_TASK, fg) == 0, "the foreground task was notified");
    if (!all && getenv("REL_VERBOSE")) {
        char *calls = sim_calls_json(h);
        fprintf(stderr, "# calls: %s\n", calls);
        free(calls);
        char *msgs = sim_session_messages_json(h, parent);
        fprintf(stderr, "# parent messages: %s\n", msgs);
        free(msgs);
    }
}

static void scene_retrieve(scene *sc)
{
    sim_host *h = sc->h;
    const char *parent = sc->parent;
    answers *ans = &sc->ans;
    int faulty = sc->faulty, settle = sc->settle, rc;
    char args[512], *out;
    const char *a = sc->a;
    const char *c = sc->c;
    const char *s = sc->s;
    /* Blocking retrievals of what has finished. */
    if (a) {
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"block\":true,\"timeout\":5}", a);
        out = call(h, ans, parent, "background_output", args, &rc, "output A (block)");
        rel_check(rc == 0 && rel_status_terminal(rel_status_of(out)), "blocking output of settled A: rc %d %s", rc,
                  out);
        free(out);
    }

    /* Block on the fork and the shell command. */
    snprintf(args, sizeof args, "{\"task_ids\":[\"%s\"%s%s%s],\"timeout\":%d}", s ? s : "bg_00000000", c ? ",\"" : "",
             c ? c : "", c ? "\"" : "", settle / 1000);
    out = call(h, ans, parent, "background_block", args, &rc, "block C+S");
    rel_check(faulty || (rc == 0 && strstr(out, "finished")), "background_block: rc %d %s", rc, out);
    free(out);
    if (s) {
        snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"timeout\":%d}", s, settle);
        out = call(h, ans, parent, "TaskOutput", args, &rc, "TaskOutput S");
        rel_check(rc == 0 && strstr(out, "shell-out"), "TaskOutput of the shell task: rc %d %s", rc, out);
        free(out);
        snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", s);
        out = call(h, ans, parent, "TaskStop", args, &rc, "TaskStop S (finished)");
        rel_check(strstr(out, "already finished") != NULL, "TaskStop of a finished command: rc %d %s", rc, out);
        free(out);
    }
}

static void scene_list_clear(scene *sc)
{
    sim_host *h = sc->h;
    const char *parent = sc->parent;
    answers *ans = &sc->ans;
    int rc;
    char *out;
    /* The listing: every task there, every status valid, totals consistent. */
    out = call(h, ans, parent, "background_list", "{}", &rc, "list");
    rel_check(rc == 0, "list failed: %s", out);
    const char *ids[] = {sc->a, sc->a_failed, sc->b, sc->c, sc->s, sc->sync};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i])
            rel_check(strstr(out, ids[i]) != NULL, "task %s missing from the list: %s", ids[i], out);
    int lines = 0;
    for (const char *p = out; (p = strstr(p, "\n- bg_")) != NULL; p++) {
        lines++;
        const char *eol = strchr(p + 1, '\n');
        int valid = 0;
        const char *st[] = {"| running |", "| completed |", "| error |", "| cancelled |", "| resumed |", "| pending |"};
        for (size_t k = 0; k < 6; k++) {
            const char *q = strstr(p, st[k]);
            valid |= q && (!eol || q < eol);
        }
        rel_check(valid, "a listed task has no valid status: %.*s", eol ? (int)(eol - p) : 80, p + 1);
    }
    char total[64];
    snprintf(total, sizeof total, "\nTotal: %d task", lines);
    rel_check(strstr(out, total) != NULL, "list shows %d tasks but says otherwise: %s", lines, out);
    free(out);

    out = NULL;
    char *cmd = NULL;
    rc = sim_command(h, parent, "tasks", "", &cmd);
    explained(rc, cmd, "/tasks");
    rel_check(rc == 0, "/tasks failed: %s", cmd ? cmd : "");
    free(cmd);

    /* Clear: nothing running is left, so everything goes. */
    out = call(h, ans, parent, "background_clear", "{}", &rc, "clear");
    rel_check(rc == 0 && strstr(out, "Cleared "), "clear: rc %d %s", rc, out);
    free(out);
    out = call(h, ans, parent, "background_list", "{}", &rc, "list after clear");
    rel_check(strncmp(out, "No background tasks found", 25) == 0, "list after clear: %s", out);
    free(out);
}

int rel_scenario(sim_host *h, const rel_scenario_cfg *cfg)
{
    int before = rel_failures();
    scene sc = {.h = h, .faulty = cfg->faulty, .settle = cfg->settle_ms > 0 ? cfg->settle_ms : 10000};
    keep(&sc.ans, "");
    sc.parent = sim_session_new(h, NULL, "main");
    sim_script(h, "rel-alpha#",
               "{\"steps\":[{\"tool\":\"read\",\"output\":\"x\",\"ms\":2},{\"reply\":\"alpha result\"}]}", 1);
    sim_script(h, "rel-hang#", "{\"steps\":[{\"hang\":true}]}", 1);
    sim_script(h, "rel-gamma#", "{\"steps\":[{\"reply\":\"gamma result\"}]}", 1);
    sim_script(h, "rel-followup#", "{\"steps\":[{\"reply\":\"alpha again\"}]}", 1);
    sim_script(h, "rel-fg#", "{\"steps\":[{\"reply\":\"foreground result\"}]}", 1);
    sim_script(h, "rel-sync#", "{\"steps\":[{\"reply\":\"sync\"}]}", 1);
    scene_launch(&sc);
    scene_settle(&sc);
    scene_notices(&sc);
    scene_retrieve(&sc);
    scene_list_clear(&sc);
    scenario_more(h, cfg, &sc.ans);

    /* Shutdown, within a deadline. */
    int64_t t0 = rel_now_ms();
    sim_unload_plugins(h);
    int64_t took = rel_now_ms() - t0;
    rel_check(took < tap_timeout_ms(3000), "shutdown took %lld ms", (long long)took);

    free(sc.a);
    free(sc.a_failed);
    free(sc.b);
    free(sc.c);
    free(sc.s);
    free(sc.fg);
    free(sc.sync);
    free(sc.parent);
    free(sc.ans.buf);
    return rel_failures() - before;
}

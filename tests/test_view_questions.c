/* Every permission question reaches a screen (docs/panel.md): the open
 * questions of the tasks a task launched (max_depth 2 or more), which
 * OpenCode's own prompt shows on no screen, are carried on the view line of
 * the task the person's session launched, with their id, text and task,
 * until answered, rejected or ended; a question of an unrelated session
 * never shows there. Gated tasks (testlib.h) stay running, asking, until
 * the test answers. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

#define DEADLINE 10000

/* The question of task `asker` on `line` (borrowed), or NULL. */
static const cJSON *question_of(const cJSON *line, const char *asker)
{
    const cJSON *q;
    cJSON_ArrayForEach (q, jget(line, "questions"))
        if (jstr(q, "task") && strcmp(jstr(q, "task"), asker) == 0)
            return q;
    return NULL;
}

/* Whether any line of the view carries a question of task `asker`. */
static bool view_carries(const cJSON *view, const char *asker)
{
    const cJSON *t;
    cJSON_ArrayForEach (t, jget(view, "tasks"))
        if (question_of(t, asker))
            return true;
    return false;
}

typedef struct want {
    const char *session, *line, *asker;
    bool present;
} want;

/* sim_wait predicate: the newest view of w->session has line w->line, and
 * it carries a question of w->asker (or, present false, none). */
static int line_says(sim_host *h, void *arg)
{
    const want *w = arg;
    cJSON *view = t_parse(sim_view(h, w->session, -1));
    const cJSON *line = t_view_line(view, w->line);
    int yes = line && (question_of(line, w->asker) != NULL) == w->present;
    cJSON_Delete(view);
    return yes;
}

/* sim_wait predicate: the newest view of w->session shows line w->line completed. */
static int line_completed(sim_host *h, void *arg)
{
    const want *w = arg;
    cJSON *view = t_parse(sim_view(h, w->session, -1));
    const char *status = jstr(t_view_line(view, w->line), "status");
    int yes = status && strcmp(status, "completed") == 0;
    cJSON_Delete(view);
    return yes;
}

static int wait_question(sim_host *h, const char *session, const char *line, const char *asker, bool present)
{
    want w = {session, line, asker, present};
    return sim_wait(h, line_says, &w, tap_timeout_ms(DEADLINE));
}

/* Gated task <name> launched from `from`, started and asking; its id and
 * (session_out) its session, both kept by f. */
static const char *asking_task(t_fixture *f, const char *from, const char *name, const char **session_out)
{
    const char *id = t_keep(f, t_gated_id(f->h, from, name, "general"));
    if (t_wait_gate_open(f->h, name, tap_timeout_ms(DEADLINE)) != 0)
        bail_out("%s never asked", name);
    *session_out = t_keep(f, t_gated_session(f->h, name));
    return id;
}

/* A grandchild's question on its top-level ancestor's line: id, text, task;
 * the task's own question first; gone once answered, and the grandchild
 * runs on. */
static void grandchild_question_answered(t_fixture *f, const char *a, const char *as)
{
    sim_host *h = f->h;
    const char *bs;
    const char *b = asking_task(f, as, "B", &bs);
    char *qb = t_keep(f, sim_permission_open(h, bs)), *qa = t_keep(f, sim_permission_open(h, as));
    is_int(wait_question(h, f->parent, a, b, true), 0,
           "the grandchild's question shows on the line of the task the person's session launched");
    cJSON *view = t_parse(sim_view(h, f->parent, -1));
    const cJSON *line = t_view_line(view, a), *q = question_of(line, b);
    is_str(jstr(q, "id"), qb, "with the host's request id");
    is_str(jstr(q, "what"), "bash: gate B", "what it asks, as OpenCode words it (permission: patterns)");
    is_str(jstr(q, "description"), "B", "the asking task's description");
    ok(!jget(q, "directory"), "not isolated: no folder of its own (the project's)");
    is_str(jstr(line, "questions.0.task"), a, "the task's own question comes first");
    is_str(jstr(line, "questions.0.id"), qa, "with its id");
    is_str(jstr(line, "waiting"), "bash: gate A", "its own question still marks it waiting");
    is_int(cJSON_GetArraySize(jget(line, "questions")), 2, "two questions on the line, no more");
    cJSON_Delete(view);
    is_int(wait_question(h, as, b, b, true), 0, "the view of A's own session shows it on B's line too");
    view = t_parse(sim_view(h, as, -1));
    is_str(jstr(question_of(t_view_line(view, b), b), "id"), qb, "with the same request id");
    cJSON_Delete(view);

    is_int(sim_permission_reply(h, qb, "once", NULL), 0, "answered once");
    is_int(wait_question(h, f->parent, a, b, false), 0, "the answered question leaves the line");
    is_int(t_wait_status(h, as, b, "completed", tap_timeout_ms(DEADLINE)), 0, "and the grandchild runs on to its end");
}

/* Rejected, or its task cancelled: the question leaves the line. */
static void grandchild_question_rejected_or_ended(t_fixture *f, const char *a, const char *as)
{
    sim_host *h = f->h;
    const char *cs, *ds;
    const char *c = asking_task(f, as, "C", &cs);
    is_int(wait_question(h, f->parent, a, c, true), 0, "another grandchild's question shows");
    char *qc = sim_permission_open(h, cs);
    is_int(sim_permission_reply(h, qc, "reject", NULL), 0, "rejected");
    free(qc);
    is_int(wait_question(h, f->parent, a, c, false), 0, "the rejected question leaves the line");

    const char *d = asking_task(f, as, "D", &ds);
    is_int(wait_question(h, f->parent, a, d, true), 0, "a third grandchild's question shows");
    char *out = t_tool(h, as, "background_cancel", J("{'task_id':'%s'}", d));
    free(out);
    is_int(t_wait_status(h, as, d, "cancelled", tap_timeout_ms(DEADLINE)), 0, "its task is cancelled");
    is_int(wait_question(h, f->parent, a, d, false), 0, "the question of a task that ended leaves the line");
}

/* A question asked under another top-level session never shows on the
 * person's lines, only on its own session's. */
static void unrelated_question_never_shows(t_fixture *f, const char *a)
{
    sim_host *h = f->h;
    const char *other = t_session(f, "other");
    const char *xs;
    const char *x = asking_task(f, other, "X", &xs);
    is_int(wait_question(h, other, x, x, true), 0, "the other session's task shows its own question on its line");
    const char *ys;
    const char *y = asking_task(f, xs, "Y", &ys);
    is_int(wait_question(h, other, x, y, true), 0, "and its grandchild's, on the other session's view");
    cJSON *view = t_parse(sim_view(h, f->parent, -1));
    ok(t_view_line(view, a) && !view_carries(view, x) && !view_carries(view, y),
       "the person's session's view carries neither");
    cJSON_Delete(view);
    t_release_gated(h, "Y");
    t_release_gated(h, "X");
}

static void questions_of_descendants(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_depth':2}")));
    const char *as;
    const char *a = asking_task(&f, f.parent, "A", &as);
    grandchild_question_answered(&f, a, as);
    grandchild_question_rejected_or_ended(&f, a, as);
    unrelated_question_never_shows(&f, a);
    t_release_gated(h, "A");
    is_int(t_wait_status(h, f.parent, a, "completed", tap_timeout_ms(DEADLINE)), 0, "the top-level task completes");
    is_int(sim_wait(h, line_completed, &(want){f.parent, a, NULL, false}, tap_timeout_ms(DEADLINE)), 0,
           "the view shows it completed");
    cJSON *view = t_parse(sim_view(h, f.parent, -1));
    ok(!jget(t_view_line(view, a), "questions"), "an ended task's line carries no question");
    cJSON_Delete(view);
    t_close(&f);
}

/* max_depth 3: a great-grandchild's question shows on the top-level task's
 * line too, and on each line between (each session's own view). */
static void great_grandchild(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_depth':3}")));
    const char *as, *bs, *cs;
    const char *a = asking_task(&f, f.parent, "A3", &as);
    const char *b = asking_task(&f, as, "B3", &bs);
    const char *c = asking_task(&f, bs, "C3", &cs);
    is_int(wait_question(h, f.parent, a, c, true), 0, "a great-grandchild's question shows on the top-level line");
    is_int(wait_question(h, as, b, c, true), 0, "and on its grandparent's line in that one's session's view");
    cJSON *view = t_parse(sim_view(h, f.parent, -1));
    const cJSON *line = t_view_line(view, a);
    ok(question_of(line, a) && question_of(line, b) && question_of(line, c) &&
           cJSON_GetArraySize(jget(line, "questions")) == 3,
       "the top-level line carries the three open questions of its tree, once each");
    cJSON_Delete(view);
    t_release_gated(h, "C3");
    is_int(wait_question(h, f.parent, a, c, false), 0, "answered, it leaves the top-level line");
    t_release_gated(h, "B3");
    t_release_gated(h, "A3");
    is_int(t_wait_status(h, f.parent, a, "completed", tap_timeout_ms(DEADLINE)), 0, "the tree completes");
    t_close(&f);
}

/* An isolated task's question names its worktree's folder: OpenCode takes
 * the answer for that folder only (docs/worktrees.md#limits). Real git, in a
 * repository of its own (the test's folder becomes it). */
static void isolated_question_has_its_folder(void)
{
    char top[] = "/tmp/ocbg-vq-XXXXXX";
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    const char *repo = J("%s/repo", top), *data = J("%s/data", top);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    if (t_sh(top, "mkdir repo data && cd repo && git init -q -b main && echo base > a.txt && git add . && "
                  "git -c user.name=t -c user.email=t@example.com commit -qm init") != 0 ||
        chdir(repo) != 0)
        bail_out("cannot make the repository in %s", repo);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'store_path':'%s/ocbg.db'}", data)));
    const char *script = "{\"steps\":[{\"ask\":{\"permission\":\"bash\",\"patterns\":[\"gate W\"]}},"
                         "{\"reply\":\"done W\"}]}";
    char *out = t_keep(&f, t_launch_isolated(h, f.parent, "W", script, "worktree"));
    const char *id = t_id(&f, out, "bg_", "the isolated launch");
    is_int(wait_question(h, f.parent, id, id, true), 0, "an isolated task's question shows on its line");
    cJSON *view = t_parse(sim_view(h, f.parent, -1));
    const cJSON *q = question_of(t_view_line(view, id), id);
    is_str(jstr(q, "directory"), J("%s/worktrees/%s", data, id), "with its worktree's folder");
    is_str(jstr(q, "what"), "bash: gate W", "and what it asks");
    char *qid = sim_permission_open(h, NULL);
    is_str(jstr(q, "id"), qid, "its id is the open question's");
    cJSON_Delete(view);
    is_int(sim_permission_reply(h, qid, "once", NULL), 0, "answered");
    free(qid);
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(DEADLINE)), 0, "the task completes");
    free(t_tool(h, f.parent, "background_clear", "{}"));
    t_close(&f);
    if (chdir("/") != 0 || t_sh("/", "rm -rf '%s'", top) != 0)
        diag("could not remove %s", top);
}

int main(void)
{
    questions_of_descendants();
    great_grandchild();
    isolated_question_has_its_folder();
    return done_testing();
}

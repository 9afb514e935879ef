/* The person's view of the tasks (ABI 1.4; docs/panel.md): the views ocbg
 * publishes for the host's UI, and the person's requests (stop, detail,
 * sync) by ui_request. Gated tasks (testlib.h) stay running, asking, until
 * the test lets them go. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shelltest.h"
#include "testlib.h"

#define DEADLINE 10000

typedef struct want {
    const char *session, *id, *field, *value; /* value NULL: the field is absent */
} want;

/* The line's field as text: strings as they are, numbers and booleans printed. */
static char *field_text(const cJSON *line, const char *field)
{
    const cJSON *v = jget(line, field);
    if (!v)
        return NULL;
    if (cJSON_IsString(v))
        return strdup(v->valuestring);
    return cJSON_PrintUnformatted(v);
}

/* sim_wait predicate: the newest view of w->session has task w->id with
 * w->field equal to w->value (absent when value is NULL). */
static int view_says(sim_host *h, void *arg)
{
    want *w = arg;
    cJSON *view = t_parse(sim_view(h, w->session, -1));
    const cJSON *line = t_view_line(view, w->id);
    char *got = line ? field_text(line, w->field) : NULL;
    int yes = line && (w->value ? got && strcmp(got, w->value) == 0 : !got);
    free(got);
    cJSON_Delete(view);
    return yes;
}

static int wait_view(sim_host *h, const char *session, const char *id, const char *field, const char *value)
{
    want w = {session, id, field, value};
    return sim_wait(h, view_says, &w, tap_timeout_ms(DEADLINE));
}

/* The newest view of session's line for id, as a parsed view (the caller
 * deletes it) and the line in it. */
static cJSON *newest(sim_host *h, const char *session, const char *id, const cJSON **line)
{
    cJSON *view = t_parse(sim_view(h, session, -1));
    *line = t_view_line(view, id);
    return view;
}

/* Opens f on a gated host and launches gated task name, which asks the user
 * (checked under label). Returns the task's id (malloc'd). */
static char *open_asking(t_fixture *f, const char *name, const char *label)
{
    sim_host *h = t_open_with(f, t_gated_host(NULL));
    char *answer = t_keep(f, t_launch_gated(h, f->parent, name, "general"));
    char *id = t_find_id(answer, "bg_");
    is_int(t_wait_gate_open(h, name, tap_timeout_ms(DEADLINE)), 0, "%s", label);
    return id;
}

static void test_running_waiting_stop(void)
{
    t_fixture f;
    char *id = open_asking(&f, "alpha", "the task runs and asks");
    sim_host *h = f.h;
    is_int(wait_view(h, f.parent, id, "waiting", "bash: gate alpha"), 0,
           "the view marks the task waiting for the user, with what it asks");
    const cJSON *line;
    cJSON *view = newest(h, f.parent, id, &line);
    is_str(jstr(view, "session"), f.parent, "the view is of the session that launched it");
    ok(jnum(view, "seq", 0) >= 1 && jnum(view, "now", 0) > 0, "a view has a seq and the host's time");
    is_str(jstr(line, "status"), "running", "status running");
    is_str(jstr(line, "kind"), "agent", "kind agent");
    is_str(jstr(line, "agent"), "general", "its agent");
    ok(!jget(line, "branch"), "not isolated: no branch");
    is_str(jstr(line, "description"), "alpha", "its description");
    ok(jstr(line, "session") && strncmp(jstr(line, "session"), "ses_", 4) == 0, "its own session, to open");
    ok(jnum(line, "started", 0) > 0 && !jget(line, "ended"), "started, not ended");
    char *task_session = strdup(jstr(line, "session"));
    cJSON_Delete(view);

    char *out = NULL;
    int rc = sim_ui_request(h, 0, J("{'action':'stop','task_id':'%s'}", id), &out);
    is_int(rc, 0, "the person's stop is accepted");
    ok(out == NULL, "a stop answers nothing on success");
    free(out);
    is_int(wait_view(h, f.parent, id, "status", "cancelled"), 0, "the view shows it cancelled");
    is_int(wait_view(h, f.parent, id, "stopped_by_user", "true"), 0, "marked stopped by the user");
    ok(sim_calls(h, "session_abort", task_session) >= 1, "its session was aborted");
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task stopped by the user: %s", id);
    is_int(t_wait_messages_with(h, f.parent, notice, 1, tap_timeout_ms(DEADLINE)), 0,
           "the session that launched it is told, as for any ending");
    char *text = t_message_with(h, f.parent, notice);
    ok(text && strstr(text, "all 1 task done") && strstr(text, "The user stopped it from the task panel."),
       "the notification ends the batch and says the user stopped it");
    free(text);
    char *report = t_output(h, f.parent, id);
    ok(strstr(report, ", stopped by the user.") != NULL, "background_output says the user stopped it");
    free(report);

    rc = sim_ui_request(h, 0, J("{'action':'stop','task_id':'%s'}", id), &out);
    is_int(rc, -EINVAL, "stopping it again is refused");
    is_str(out, J("Task %s has already ended.", id), "saying it has ended");
    free(out);
    is_int(t_count_messages_with(h, f.parent, notice), 1, "and nothing is reported twice");
    free(task_session);
    free(id);
    t_close(&f);
}

static void test_bad_requests(void)
{
    t_fixture f;
    t_open(&f, NULL);
    char *out = NULL;
    is_int(sim_ui_request(f.h, 0, J("{'action':'stop','task_id':'bg_nope'}"), &out), -ENOENT, "an unknown task");
    is_str(out, "No task bg_nope.", "is named");
    free(out);
    is_int(sim_ui_request(f.h, 0, "{not json", &out), -EINVAL, "bad JSON is refused");
    is_str(out, "A request is a JSON object with a string \"action\".", "saying what a request is");
    free(out);
    is_int(sim_ui_request(f.h, 0, J("{'action':'stop'}"), &out), -EINVAL, "a stop without a task");
    is_str(out, "The stop request needs a string \"task_id\".", "is refused");
    free(out);
    is_int(sim_ui_request(f.h, 0, J("{'action':'launch'}"), &out), -EINVAL, "an unknown action");
    is_str(out, "Unknown action \"launch\" (sync, stop or detail).", "is refused by name");
    free(out);
    is_int(sim_ui_request(f.h, 0, J("{'action':'detail','task_id':'bg_nope'}"), &out), -ENOENT,
           "detail of an unknown task");
    free(out);
    t_close(&f);
}

static void test_pending_queue_and_detail(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    char *a1 = t_launch_gated(h, f.parent, "one", "general");
    char *a2 = t_launch_gated(h, f.parent, "two", "general");
    char *a3 = t_launch_gated(h, f.parent, "three", "general");
    char *id1 = t_find_id(a1, "bg_"), *id2 = t_find_id(a2, "bg_"), *id3 = t_find_id(a3, "bg_");
    is_int(wait_view(h, f.parent, id2, "queue", "1"), 0, "the first pending task is next in the queue");
    is_int(wait_view(h, f.parent, id3, "queue", "2"), 0, "the second waits behind it");
    const cJSON *line;
    cJSON *view = newest(h, f.parent, id3, &line);
    is_str(jstr(line, "status"), "pending", "a queued task is pending");
    is_str(jstr(jget(view, "tasks"), "0.id"), id3, "tasks newest first");
    cJSON_Delete(view);

    char *out = NULL;
    is_int(sim_ui_request(h, 0, J("{'action':'stop','task_id':'%s'}", id2), &out), 0, "a pending task can be stopped");
    free(out);
    is_int(wait_view(h, f.parent, id2, "status", "cancelled"), 0, "it ends cancelled");
    is_int(wait_view(h, f.parent, id3, "queue", "1"), 0, "and the one behind it moves up");

    t_release_gated(h, "one");
    is_int(t_wait_status(h, f.parent, id1, "completed", tap_timeout_ms(DEADLINE)), 0, "the first completes");
    is_int(sim_ui_request(h, 0, J("{'action':'detail','task_id':'%s'}", id1), &out), 0, "detail of a finished task");
    cJSON *d = t_parse(out);
    is_str(jstr(d, "status"), "completed", "its status");
    is_str(jstr(d, "answer"), "done one", "its answer");
    cJSON_Delete(d);
    t_release_gated(h, "three");
    is_int(t_wait_status(h, f.parent, id3, "completed", tap_timeout_ms(DEADLINE)), 0, "the last completes");
    free(a1);
    free(a2);
    free(a3);
    free(id1);
    free(id2);
    free(id3);
    t_close(&f);
}

/* A command's line and detail: its command line, exit and output. */
static void test_shell(void)
{
    t_fixture f;
    t_open(&f, NULL);
    char *answer = t_tool(f.h, f.parent, "Bash",
                          J("{'command':'echo view-out; exit 3','description':'three','run_in_background':true}"));
    const char *id = t_id(&f, answer, "bg_", "Bash");
    free(answer);
    is_int(wait_view(f.h, f.parent, id, "exit", "3"), 0, "the view shows the command's exit");
    const cJSON *line;
    cJSON *view = newest(f.h, f.parent, id, &line);
    is_str(jstr(line, "kind"), "shell", "kind shell");
    is_str(jstr(line, "command"), "echo view-out; exit 3", "its command line");
    ok(jnum(line, "ended", 0) > 0, "ended");
    cJSON_Delete(view);
    char *out = NULL;
    is_int(sim_ui_request(f.h, 0, J("{'action':'detail','task_id':'%s'}", id), &out), 0, "detail of a command");
    cJSON *d = t_parse(out);
    ok(jstr(d, "output") && strstr(jstr(d, "output"), "view-out"), "holds its output");
    is_int((int)jnum(d, "exit", -1), 3, "and its exit");
    cJSON_Delete(d);
    t_close(&f);
}

/* sim_wait predicate: more than *arg views published. */
static int views_above(sim_host *h, void *arg)
{
    return sim_views(h, NULL) > *(size_t *)arg;
}

static void test_sync_and_model_cancel(void)
{
    t_fixture f;
    char *id = open_asking(&f, "beta", "the task runs");
    sim_host *h = f.h;
    free(t_cancel(h, f.parent, id));
    is_int(wait_view(h, f.parent, id, "status", "cancelled"), 0, "the model's cancel shows in the view");
    is_int(wait_view(h, f.parent, id, "stopped_by_user", NULL), 0, "not as the user's");
    size_t before = sim_views(h, NULL);
    char *out = NULL;
    is_int(sim_ui_request(h, 0, J("{'action':'sync'}"), &out), 0, "a sync is accepted");
    ok(out == NULL, "and answers nothing");
    is_int(sim_wait(h, views_above, &before, tap_timeout_ms(DEADLINE)), 0,
           "the view is published again, though unchanged");
    const cJSON *line;
    cJSON *view = newest(h, f.parent, id, &line);
    is_str(jstr(line, "status"), "cancelled", "with the same state");
    cJSON_Delete(view);
    free(id);
    t_close(&f);
}

/* A host without publish_view gets no views; requests work the same. */
static void test_without_views(void)
{
    t_fixture f;
    sim_host *h = sim_create();
    sim_without(h, "publish_view");
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    is_int(sim_load_plugins(h, dir, NULL), 1, "ocbg loads without publish_view");
    t_open_with(&f, h);
    char *answer = t_tool(h, f.parent, "Bash", J("{'command':'true','description':'quiet','run_in_background':true}"));
    char *id = t_find_id(answer, "bg_");
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(DEADLINE)), 0, "its task completes");
    is_int((int)sim_views(h, NULL), 0, "no view was published");
    char *out = NULL;
    is_int(sim_ui_request(h, 0, J("{'action':'detail','task_id':'%s'}", id), &out), 0, "detail still works");
    free(out);
    free(answer);
    free(id);
    t_close(&f);
}

/* sim_wait predicate: a view of *arg's session came after the count in arg. */
typedef struct after {
    const char *session;
    size_t count;
} after;

static int view_after(sim_host *h, void *arg)
{
    after *a = arg;
    return sim_views(h, a->session) > a->count;
}

/* After a restart, the tasks the store gives back are shown again at once:
 * a UI that stayed open (the person's TUI) gets every session's view. */
static void test_restart_publishes(void)
{
    char dir[] = "/tmp/ocbg-view-XXXXXX", opts[128];
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s/ocbg.db\"}", dir);
    t_fixture f;
    sim_host *h = t_open(&f, opts);
    char *answer =
        t_tool(h, f.parent, "Bash", J("{'command':'echo kept','description':'kept','run_in_background':true}"));
    char *id = t_find_id(answer, "bg_");
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(DEADLINE)), 0, "a task completes");
    is_int(wait_view(h, f.parent, id, "status", "completed"), 0, "and its view says so");
    after a = {f.parent, sim_views(h, f.parent)};
    t_reload(h, opts);
    is_int(sim_wait(h, view_after, &a, tap_timeout_ms(DEADLINE)), 0, "after a restart the session's view comes again");
    const cJSON *line;
    cJSON *view = newest(h, f.parent, id, &line);
    is_str(jstr(line, "status"), "completed", "with the restored task");
    is_int((int)jnum(view, "seq", 0), 1, "from a new server part: its seq starts again");
    cJSON_Delete(view);
    free(answer);
    free(id);
    t_close(&f);
    char db[160];
    snprintf(db, sizeof db, "%s/ocbg.db", dir);
    unlink(db);
    rmdir(dir);
}

/* sim_wait predicate: the newest view of the session (arg) lists no task. */
static int view_empty(sim_host *h, void *session)
{
    cJSON *view = t_parse(sim_view(h, session, -1));
    int empty = view && cJSON_GetArraySize(jget(view, "tasks")) == 0;
    cJSON_Delete(view);
    return empty;
}

/* sim_wait predicate: the newest view of the session lists a task described "Hangs". */
static int view_has_hangs(sim_host *h, void *session)
{
    cJSON *view = t_parse(sim_view(h, session, -1));
    const char *d = jstr(view, "tasks.0.description");
    int yes = d && strcmp(d, "Hangs") == 0;
    cJSON_Delete(view);
    return yes;
}

/* A foreground Task is shown while its call waits, and gone once it returns. */
static void test_foreground_goes(void)
{
    t_fixture f;
    t_open(&f, NULL);
    if (sim_script(f.h, "foreground hang", J("{'steps':[{'hang':true}]}"), 1) != 0)
        bail_out("script");
    char *args = t_task_args("Hangs", "foreground hang", 0);
    sim_call *c = sim_tool_start(f.h, f.parent, "Task", args);
    free(args);
    is_int(sim_wait(f.h, view_has_hangs, f.parent, tap_timeout_ms(DEADLINE)), 0,
           "a foreground Task shows in the view while its call waits");
    char *out = t_esc(c, DEADLINE, "Esc ends the call");
    free(out);
    is_int(sim_wait(f.h, view_empty, f.parent, tap_timeout_ms(DEADLINE)), 0,
           "once the call returned, the session's view has no task left");
    t_close(&f);
}

int main(void)
{
    test_running_waiting_stop();
    test_bad_requests();
    test_pending_queue_and_detail();
    test_shell();
    test_sync_and_model_cancel();
    test_without_views();
    test_restart_publishes();
    test_foreground_goes();
    return done_testing();
}

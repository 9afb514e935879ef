/* Silent notices wait while the parent's own turn runs (engine/defer.h): a
 * noReply notice that lands during the turn costs the host one more model
 * step, so it is held until the parent is idle, then pushed silently; the
 * batch's last one wakes the parent once. Held notices are never lost (a
 * lost idle: pushed within the bound) nor pushed into a deleted parent.
 * The batch's tasks are commands gated on fifos: the test decides when each
 * ends, with no timing. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shelltest.h"
#include "testlib.h"

#define OPTS "{\"poll_interval_ms\":100}"

/* A command task of `parent` that ends (echoing "result <name>") once the
 * test writes to fifo <name>. */
static char *gated_command(sim_host *h, const char *parent, const char *name)
{
    if (mkfifo(t_tmp_path(name), 0600) != 0)
        bail_out("mkfifo %s", name);
    char cmd[256], desc[32];
    snprintf(cmd, sizeof cmd, "read x < %s; echo result %s", t_tmp_path(name), name);
    snprintf(desc, sizeof desc, "task %s", name);
    return t_bash_bg(h, parent, cmd, desc, T_LAUNCH_UNCHECKED);
}

static void finish(sim_host *h, const char *parent, const char *name, const char *id)
{
    t_release(h, name);
    is_int(t_wait_status(h, parent, id, "completed", 5000), 0, "task %s completed", name);
}

/* A host whose "edit" questions wait for the test (the parent's turn asks one). */
static sim_host *parent_host(void)
{
    sim_host *h = t_host(OPTS);
    sim_permission_rules(h, J("{'edit':'ask'}"));
    sim_permission_auto(h, NULL, NULL);
    return h;
}

/* Start a turn of `parent` that stays busy until end_parent_turn. */
static void busy_parent_turn(sim_host *h, const char *parent)
{
    sim_script(h, "parent turn",
               J("{'steps':[{'ask':{'permission':'edit','patterns':['gate parent']}},"
                 "{'reply':'parent done'}]}"),
               1);
    sim_session_prompt(h, parent, J("{'parts':[{'type':'text','text':'parent turn'}]}"));
    is_int(sim_wait(h, t_question_open, (void *)parent, tap_timeout_ms(5000)), 0, "the parent's turn runs");
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "its busy status reached the plugin");
}

static void end_parent_turn(sim_host *h, const char *parent)
{
    char *q = sim_permission_open(h, parent);
    is_int(q ? sim_permission_reply(h, q, "once", NULL) : -ENOENT, 0, "the parent's turn goes on to its end");
    free(q);
}

/* The nth push into parent: noReply (1), a waking prompt (0), -1 none. *text
 * (may be NULL): whether it names `needle`. */
static int push_quiet(sim_host *h, const char *parent, int n, const char *needle, int *names)
{
    char *b = sim_call_body(h, "session_prompt", parent, n);
    cJSON *j = b ? cJSON_Parse(b) : NULL;
    int quiet = j ? cJSON_IsTrue(cJSON_GetObjectItem(j, "noReply")) : -1;
    if (names)
        *names = b && strstr(b, needle) != NULL;
    cJSON_Delete(j);
    free(b);
    return quiet;
}

static int pushes_about(sim_host *h, const char *parent, const char *id)
{
    int count = 0;
    char *b;
    for (int n = 0; (b = sim_call_body(h, "session_prompt", parent, n)); n++) {
        count += strstr(b, id) != NULL;
        free(b);
    }
    return count;
}

/* A batch of 3 finishing while the parent's turn runs: the first two are
 * held, pushed silently when the turn ends; the last wakes it, once. */
static void held_until_idle(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, parent_host());
    char *other = sim_session_new(h, NULL, "other");
    busy_parent_turn(h, f.parent);
    char *a = gated_command(h, f.parent, "a1"), *b = gated_command(h, f.parent, "b1"),
         *c = gated_command(h, f.parent, "c1");
    finish(h, f.parent, "a1", a);
    finish(h, f.parent, "b1", b);
    is_int(t_sync_notifications(h, other), 0, "sync point");
    is_int((int)sim_calls(h, "session_prompt", f.parent), 0, "nothing pushed while the parent's turn runs");
    end_parent_turn(h, f.parent);
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 2, tap_timeout_ms(5000)), 0, "two pushes once it is idle");
    int names;
    is_int(push_quiet(h, f.parent, 0, a, &names), 1, "the first is silent (noReply)");
    ok(names, "about the first task");
    is_int(push_quiet(h, f.parent, 1, b, &names), 1, "the second is silent");
    ok(names, "about the second task");
    finish(h, f.parent, "c1", c);
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 3, tap_timeout_ms(5000)), 0, "the last one is pushed");
    is_int(push_quiet(h, f.parent, 2, c, &names), 0, "the last one wakes the parent");
    ok(names, "about the last task");
    is_int(t_sync_notifications(h, other), 0, "sync point");
    is_int((int)sim_calls(h, "session_prompt", f.parent), 3, "one push per task, one of them waking");
    is_int(pushes_about(h, f.parent, a) + pushes_about(h, f.parent, b) + pushes_about(h, f.parent, c), 3,
           "nothing pushed twice");
    free(a);
    free(b);
    free(c);
    free(other);
    t_close(&f);
}

/* The parent's idle never comes and the host cannot say it is idle: the
 * held notice goes out anyway, within the bound. */
static void lost_idle(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, parent_host());
    char *other = sim_session_new(h, NULL, "other");
    char ev[256];
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.status\",\"properties\":{\"sessionID\":\"%s\",\"status\":{\"type\":\"busy\"}}}",
             f.parent);
    sim_emit(h, ev);
    sim_events_flush(h, tap_timeout_ms(5000));
    sim_fail(h, "session_status", 1, -1, -EIO);
    char *a = gated_command(h, f.parent, "a2"), *b = gated_command(h, f.parent, "b2");
    finish(h, f.parent, "a2", a);
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 1, tap_timeout_ms(10000)), 0,
           "a held notice is pushed though no idle came");
    is_int(push_quiet(h, f.parent, 0, a, NULL), 1, "silently");
    finish(h, f.parent, "b2", b);
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 2, tap_timeout_ms(5000)), 0, "the last one is pushed");
    is_int(push_quiet(h, f.parent, 1, b, NULL), 0, "and wakes the parent");
    is_int(t_sync_notifications(h, other), 0, "sync point");
    is_int((int)sim_calls(h, "session_prompt", f.parent), 2, "nothing pushed twice");
    free(a);
    free(b);
    free(other);
    t_close(&f);
}

/* The parent is deleted while a notice is held: nothing is pushed. */
static void deleted_parent(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, parent_host());
    char *other = sim_session_new(h, NULL, "other");
    busy_parent_turn(h, f.parent);
    char *a = gated_command(h, f.parent, "a3"), *b = gated_command(h, f.parent, "b3");
    (void)b;
    finish(h, f.parent, "a3", a);
    is_int(t_sync_notifications(h, other), 0, "sync point");
    is_int(sim_session_delete(h, f.parent), 0, "the parent is deleted");
    sim_events_flush(h, tap_timeout_ms(5000));
    is_int(t_sync_notifications(h, other), 0, "sync point");
    is_int((int)sim_calls(h, "session_prompt", f.parent), 0, "nothing pushed into the deleted parent");
    free(a);
    free(b);
    free(other);
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("defer");
    if (t_shells_work(T_PROBE_SKIP)) {
        held_until_idle();
        lost_idle();
        deleted_parent();
    }
    static const char *const fifos[] = {"a1", "b1", "c1", "a2", "b2", "a3", "b3", NULL};
    t_tmpdir_remove(fifos);
    return done_testing();
}

/* The scheduler: a cap on running agent tasks with a FIFO queue,
 * per-agent caps, a cap on background commands, a full queue refused, a
 * rate-limit retry holding back its agent, and what each face says.
 *
 * A "gated" sub-agent asks the user a question first (rules {"bash":"ask"},
 * no automatic answer) and replies only once the test answers it: so a test
 * decides when each task ends, and nothing depends on timing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"
#include "testlib.h"

static int completion_notices(sim_host *h, const char *parent, const char *id)
{
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    return t_count_messages_with(h, parent, needle);
}

static void cap_two_five_launches(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':2}")));
    const char *names[5] = {"T1", "T2", "T3", "T4", "T5"};
    char *ids[5];
    for (int i = 0; i < 5; i++) {
        char *out = t_launch_gated(h, f.parent, names[i], "explore");
        is_int(t_rc, 0, "launch %s accepted", names[i]);
        ids[i] = t_find_id(out, "bg_");
        if (i < 2) {
            like(out, "Status: running", "%s runs at once", names[i]);
        } else {
            like(out, "Status: pending", "%s is pending", names[i]);
            char want[200];
            snprintf(want, sizeof want,
                     "Queued: all 2 agent slots are busy (max_running_agents 2); it starts when a slot frees (%d "
                     "ahead of it in the queue).",
                     i - 2);
            like(out, want, "%s is told why and its place", names[i]);
        }
        free(out);
    }
    is_int(sim_calls(h, "session_create", NULL), 2, "only the two running tasks have a session");
    char *out = t_tool(h, f.parent, "background_list", "{}");
    like(out, "Total: 5 tasks (3 pending, 2 running)", "the list shows 2 running and 3 pending");
    free(out);
    out = t_output(h, f.parent, ids[4]);
    like(out, ": pending\n", "a pending task's report says pending");
    like(out, "Waiting for a free slot to start.", "and that it waits for a slot");
    free(out);
    /* Each release frees one slot: the oldest pending task starts, in order. */
    for (int i = 0; i < 5; i++) {
        t_release_gated(h, names[i]);
        is_int(t_wait_status(h, f.parent, ids[i], "completed", 5000), 0, "%s completes", names[i]);
        if (i + 2 < 5) {
            is_int(t_wait_gate_open(h, names[i + 2], 5000), 0, "%s starts when %s's slot frees", names[i + 2],
                   names[i]);
            ok(i + 3 >= 5 || !t_gated_started(h, names[i + 3]), "%s still waits its turn",
               i + 3 < 5 ? names[i + 3] : "-");
        }
    }
    for (int i = 0; i < 5; i++) {
        /* Wait on the completion's own text: the id alone is also in the
         * notice of the task's question, sent when it asked. */
        char needle[96];
        snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", ids[i]);
        is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "%s's notification arrives", names[i]);
        is_int(completion_notices(h, f.parent, ids[i]), 1, "exactly one completion notification for %s", names[i]);
        free(ids[i]);
    }
    is_int(sim_calls(h, "session_create", NULL), 5, "five sessions in all");
    t_close(&f);
}

static void cancel_pending(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    char *a = t_gated_id(h, f.parent, "A", "explore");
    char *b = t_gated_id(h, f.parent, "B", "explore");
    const char *args = J("{'task_id':'%s'}", b);
    char *out = t_tool(h, f.parent, "background_cancel", args);
    is_int(t_rc, 0, "a pending task can be cancelled");
    like(out, "status: cancelled", "and is");
    free(out);
    is_int(t_wait_status(h, f.parent, b, "cancelled", 5000), 0, "its status is cancelled");
    t_release_gated(h, "A");
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "the running one completes");
    char done[96];
    snprintf(done, sizeof done, "[ocbg] Background task completed: %s", a);
    is_int(t_wait_messages_with(h, f.parent, done, 1, 5000), 0, "and its notification arrives");
    ok(!t_gated_started(h, "B"), "the cancelled task never started");
    is_int(sim_calls(h, "session_create", NULL), 1, "no session was ever created for it");
    is_int(t_count_messages_with(h, f.parent, b), 0, "no notification for it");
    free(a);
    free(b);
    t_close(&f);
}

static void per_agent_cap(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_per_agent':{'explore':1}}")));
    char *out = t_launch_gated(h, f.parent, "E1", "explore");
    like(out, "Status: running", "the first explore task runs");
    free(out);
    out = t_launch_gated(h, f.parent, "E2", "explore");
    like(out, "Status: pending", "the second waits");
    like(out, "Queued: all 1 explore slots are busy (max_running_per_agent explore: 1)", "for its agent's cap");
    char *e2 = t_find_id(out, "bg_");
    free(out);
    out = t_launch_gated(h, f.parent, "G1", "general");
    like(out, "Status: running", "another agent's task runs at once");
    free(out);
    t_release_gated(h, "E1");
    is_int(t_wait_gate_open(h, "E2", 5000), 0, "E2 starts when E1 ends");
    t_release_gated(h, "E2");
    t_release_gated(h, "G1");
    is_int(t_wait_status(h, f.parent, e2, "completed", 5000), 0, "E2 completes");
    free(e2);
    t_close(&f);
}

static void emit_status(sim_host *h, const char *session, const char *type)
{
    char ev[256];
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.status\",\"properties\":{\"sessionID\":\"%s\",\"status\":{\"type\":\"%s\"%s}}}",
             session, type, strcmp(type, "retry") == 0 ? ",\"attempt\":1,\"message\":\"rate limited\",\"next\":1" : "");
    sim_emit(h, ev);
    sim_events_flush(h, tap_timeout_ms(5000));
}

static void retry_pauses_admission(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *out = t_launch_gated(h, f.parent, "R1", "explore");
    free(out);
    t_wait_gate_open(h, "R1", 5000);
    char *s1 = t_prompted_session(h, "gated R1", 0);
    emit_status(h, s1, "retry");
    out = t_launch_gated(h, f.parent, "R2", "explore");
    like(out, "Status: pending", "while the host retries an explore task, a new explore task waits");
    like(out, "the host is retrying a rate-limited call of a running explore task", "saying why");
    free(out);
    out = t_launch_gated(h, f.parent, "G", "general");
    like(out, "Status: running", "another agent is not held back");
    free(out);
    emit_status(h, s1, "busy");
    is_int(t_wait_gate_open(h, "R2", 5000), 0, "once the retry clears, the waiting task starts");
    t_release_gated(h, "R1");
    t_release_gated(h, "R2");
    t_release_gated(h, "G");
    free(s1);
    t_close(&f);
}

static void queue_full_refused(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1,'max_queued':1}")));
    free(t_launch_gated(h, f.parent, "Q1", "explore"));
    free(t_launch_gated(h, f.parent, "Q2", "explore"));
    char *out = t_launch_gated(h, f.parent, "Q3", "explore");
    is_int(t_rc, -EAGAIN, "a launch over a full queue is refused");
    is_str(out,
           "Not launched: all 1 agent slots are busy (max_running_agents 1), and the queue is full (1 task waiting, "
           "max_queued 1). Wait for a task to finish, or cancel one, then launch again.",
           "with the exact text");
    free(out);
    t_list_like(h, f.parent, "Total: 2 tasks", "nothing was created for it");
    out = t_tool(h, f.parent, "Task",
                 J("{'description':'Q4','prompt':'gated Q4','subagent_type':'explore',"
                   "'run_in_background':true}"));
    is_int(t_rc, -EAGAIN, "the Claude face's Task is refused alike");
    like(out, "the queue is full", "with the same reason");
    free(out);
    t_release_gated(h, "Q1");
    t_release_gated(h, "Q2");
    t_close(&f);
}

static void resume_needs_a_slot(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    char *d = t_gated_id(h, f.parent, "D", "explore");
    t_release_gated(h, "D");
    t_wait_status(h, f.parent, d, "completed", 5000);
    free(t_launch_gated(h, f.parent, "H", "explore"));
    const char *args = J("{'task_id':'%s','message':'more'}", d);
    char *out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, -EAGAIN, "a resume with every slot busy is refused");
    t_is_strf(out, "with the exact text",
              "Task %s cannot be resumed now: all 1 agent slots are busy (max_running_agents 1). Resume it when a "
              "running task finishes.",
              d);
    free(out);
    is_int(t_wait_status(h, f.parent, d, "completed", 100), 0, "the task is still completed");
    t_release_gated(h, "H");
    free(d);
    t_close(&f);
}

/* A blocking wait on a pending task waits through its time in the queue. */
static void wait_includes_queue(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    free(t_launch_gated(h, f.parent, "W1", "explore"));
    char *w2 = t_gated_id(h, f.parent, "W2", "explore");
    const char *args = J("{'task_id':'%s','block':true,'timeout':60000}", w2);
    sim_call *c = sim_tool_start(h, f.parent, "TaskOutput", args);
    t_release_gated(h, "W1");
    t_release_gated(h, "W2");
    int rc;
    char *out = NULL;
    is_int(sim_tool_wait(c, tap_timeout_ms(10000), &rc, &out), 0, "the blocking TaskOutput returns");
    like(out, "done W2", "with the result of the task that was queued");
    free(out);
    sim_tool_free(c);
    free(w2);
    t_close(&f);
}

static int two_tasks_listed(sim_host *h, void *parent)
{
    char *out = t_tool(h, parent, "background_list", "{}");
    int yes = strstr(out, "Total: 2 tasks") != NULL;
    free(out);
    return yes;
}

/* A foreground Task waits in the queue like any other; Esc there takes it out
 * of the queue, and it was never started. */
static void foreground_task_queued_then_escaped(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    free(t_launch_gated(h, f.parent, "F1", "explore"));
    sim_call *c =
        sim_tool_start(h, f.parent, "Task", J("{'description':'F2','prompt':'gated F2','subagent_type':'explore'}"));
    is_int(sim_wait(h, two_tasks_listed, f.parent, tap_timeout_ms(5000)), 0, "the foreground task is queued");
    char *out = t_esc(c, 5000, "Esc returns the call");
    is_str(out, "Cancelled: the sub-agent was stopped.", "saying so");
    free(out);
    t_list_like(h, f.parent, "Total: 1 task", "the foreground task is gone");
    t_release_gated(h, "F1");
    ok(!t_gated_started(h, "F2"), "it never started");
    t_close(&f);
}

static void shell_cap(void)
{
    sim_host *h = t_host(J("{'max_running_shells':1}"));
    char *parent = sim_session_new(h, NULL, "main");
    const char *flag = t_tmp_path("shell_cap_go");
    remove(flag);
    char args[512];
    snprintf(args, sizeof args,
             "{\"command\":\"while [ ! -e %s ]; do sleep 0.02; done; echo first\",\"run_in_background\":true}", flag);
    char *out = t_tool(h, parent, "Bash", args);
    like(out, "Command running in the background.", "the first command runs");
    char *first = t_find_id(out, "bg_");
    free(out);
    out = t_tool(h, parent, "Bash", J("{'command':'echo second','run_in_background':true}"));
    like(out, "Command queued to run in the background.", "the second waits");
    like(out, "Queued: all 1 command slots are busy (max_running_shells 1)", "for the command cap");
    char *second = t_find_id(out, "bg_");
    free(out);
    out = t_tool(h, parent, "Bash", J("{'command':'echo foreground'}"));
    like(out, "foreground", "a foreground command runs at once, cap or not");
    free(out);
    FILE *f = fopen(flag, "w");
    if (f)
        fclose(f);
    is_int(t_wait_status(h, parent, first, "completed", 5000), 0, "the first command ends");
    is_int(t_wait_status(h, parent, second, "completed", 5000), 0, "then the second runs and ends");
    t_output_like(h, parent, second, "second", "with its output");
    remove(flag);
    free(first);
    free(second);
    free(parent);
    sim_destroy(h);
}

static void bad_options(void)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"max_running_agents\":0}", "option 'max_running_agents' must be a whole number from 1 to 100000"},
        {"{\"max_running_shells\":-1}", "option 'max_running_shells' must be a whole number from 1 to 100000"},
        {"{\"max_queued\":1.5}", "option 'max_queued' must be a whole number from 0 to 100000"},
        {"{\"max_running_per_agent\":3}", "option 'max_running_per_agent' must be an object of agent names to caps"},
        {"{\"max_running_per_agent\":{\"explore\":0}}",
         "option 'max_running_per_agent': the cap of 'explore' must be a whole number from 1 to 1000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_host *h = sim_create();
        sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), cases[i].json);
        is_int(sim_plugin_count(h), 0, "%s is refused", cases[i].json);
        like(sim_load_error(h), cases[i].want, "with a clear reason");
        sim_destroy(h);
    }
}

int main(void)
{
    cap_two_five_launches();
    cancel_pending();
    per_agent_cap();
    retry_pauses_admission();
    queue_full_refused();
    resume_needs_a_slot();
    wait_includes_queue();
    foreground_task_queued_then_escaped();
    shell_cap();
    bad_options();
    return done_testing();
}

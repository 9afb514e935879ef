/* background_send: a message into a running agent task.
 * It is queued into the task's busy session and answered at once; the task
 * keeps its one notification, at its real end, and its result is its last
 * answer, after the follow-up, even when the host stores the message only
 * after the answer before it was read (a slow host). A task that is not
 * running, someone else's task, an empty message and a refused permission
 * get a clear text, and nothing is sent. Sub-agents are gated (a question
 * the test answers), so the test decides when each turn ends. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"

#define SENT "Message sent to task "

static const char *parent; /* the test's main session */

/* Prompts to any session but the parent (where notices of questions
 * arrive on their own). */
static size_t task_prompts(sim_host *h, const char *unused)
{
    (void)unused;
    /* A notice may reach the parent between the two counts (a gated
     * sub-agent's permission question): read until the parent's count
     * held still around the total. */
    for (;;) {
        size_t before = sim_calls(h, "session_prompt", parent);
        size_t all = sim_calls(h, "session_prompt", NULL);
        if (sim_calls(h, "session_prompt", parent) == before)
            return all - before;
    }
}

/* The task's notification arrives once, with `answer` and not `not`. */
static void notified_once_with(sim_host *h, const char *s, const char *id, const char *answer, const char * not )
{
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, s, needle, 1, 5000), 0, "the task is notified when it ends");
    char *note = t_message_with(h, s, needle);
    like(note, answer, "with its last answer, the follow-up's");
    unlike(note, not, "not the answer before the follow-up");
    free(note);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    is_int(t_count_messages_with(h, s, needle), 1, "exactly once");
    char *out = t_output(h, s, id);
    like(out, answer, "background_output has the same result");
    free(out);
}

/* Opens f on a gated host (parent is its session) and launches gated task
 * name, busy asking its question (checked under label). Returns its id
 * (malloc'd). */
static char *open_busy(t_fixture *f, const char *name, const char *label)
{
    sim_host *h = t_open_with(f, t_gated_host(NULL));
    parent = f->parent;
    char *id = t_gated_id(h, f->parent, name, "explore");
    is_int(t_wait_gate_open(h, name, 5000), 0, "%s", label);
    return id;
}

/* The common case: the session is busy, the host queues the message. */
static void queued_follow_up(void)
{
    t_fixture f;
    char *id = open_busy(&f, "A", "the sub-agent is busy (waiting on its question)");
    sim_host *h = f.h;
    sim_script(h, "also check bar.c", J("{'steps':[{'tool':'read','output':'x'},{'reply':'bar.c is fine too'}]}"), 1);
    size_t prompts = task_prompts(h, f.parent);
    char *out = t_send(h, f.parent, id, "also check bar.c");
    is_int(t_rc, 0, "background_send to a running task succeeds");
    t_is_strf(out, "and answers at once that it was sent",
              SENT "%s: its sub-agent gets it as soon as its current step ends, and goes on with it.\n"
                   "You will be notified once, when the task finishes; its result is then its last answer.",
              id);
    free(out);
    is_int((int)(task_prompts(h, f.parent) - prompts), 1, "one prompt went to the host");
    char *child = t_prompted_session(h, "gated A", 0);
    char *body = sim_call_body(h, "session_prompt", child, -1);
    like(body, "also check bar.c", "into the task's own session, with the message");
    like(body, "[ocbg] Follow-up #1 for background task ", "marked as a follow-up");
    free(body);
    t_output_like(h, f.parent, id, "running", "the task still runs");
    t_release_gated(h, "A");
    notified_once_with(h, f.parent, id, "bar.c is fine too", "done A");
    free(child);
    free(id);
    t_close(&f);
}

/* sim_wait predicate: the child session's newest message is the first answer. */
typedef struct idle_arg {
    const char *child;
} idle_arg;

static int first_answer_stored(sim_host *h, void *arg)
{
    char *text = t_message_with(h, ((idle_arg *)arg)->child, "done B");
    free(text);
    return text != NULL;
}

/* sim_wait predicate: more permission questions than *arg. */
static int permission_asked(sim_host *h, void *arg)
{
    return sim_permission_count(h) > *(size_t *)arg;
}

/* sim_wait predicate: a session_prompt call entered the host after *arg. */
typedef struct started_arg {
    size_t before;
} started_arg;

static int prompt_started(sim_host *h, void *arg)
{
    return sim_calls_started(h, "session_prompt") > ((started_arg *)arg)->before;
}

/* A slow host: the message is stored only after the turn before it has
 * ended and its idle was seen. The completion check must not take that
 * turn's answer for the result. */
static void slow_host_follow_up(void)
{
    t_fixture f;
    char *id = open_busy(&f, "B", "the sub-agent is busy");
    sim_host *h = f.h;
    char *child = t_prompted_session(h, "gated B", 0);
    /* The question's notice to the parent first: from here the only prompt
     * is the send's. */
    is_int(t_wait_messages_with(h, f.parent, "is waiting for permission", 1, 5000), 0,
           "the parent heard of the question");
    sim_script(h, "look at baz.c", J("{'steps':[{'reply':'baz.c has the bug'}]}"), 1);
    sim_slow(h, "session_prompt", tap_timeout_ms(3000));
    const char *args = J("{'task_id':'%s','message':'look at baz.c'}", id);
    size_t asked = sim_permission_count(h);
    started_arg sa = {sim_calls_started(h, "session_prompt")};
    sim_call *c = sim_tool_start(h, f.parent, "background_send", args);
    /* Its permission asked (the rules allow it), the send is inside the slow
     * host: the turn before the follow-up ends meanwhile. */
    is_int(sim_wait(h, permission_asked, &asked, tap_timeout_ms(5000)), 0, "the send asked its permission");
    is_int(sim_wait(h, prompt_started, &sa, tap_timeout_ms(5000)), 0, "the send is inside the host's prompt call");
    t_release_gated(h, "B");
    idle_arg ia = {child};
    is_int(sim_wait(h, first_answer_stored, &ia, tap_timeout_ms(5000)), 0, "the answer before it is stored");
    size_t reads = sim_calls(h, "session_messages", child);
    is_int(sim_wait_calls(h, "session_messages", child, reads + 1, tap_timeout_ms(5000)), 0,
           "a completion check reads the session after its idle");
    /* Still running while the follow-up is on its way; on a loaded machine
     * the slow send may have landed and its turn ended by now: then ended
     * with the follow-up's answer. Never with the answer before it. */
    char *out = t_output(h, f.parent, id);
    if (strstr(out, ": completed\n"))
        like(out, "baz.c has the bug", "and does not end the task with the answer before the follow-up");
    else
        like(out, "running", "and does not end the task: the follow-up is not in the session yet");
    free(out);
    int rc = 0;
    out = NULL;
    is_int(sim_tool_wait(c, tap_timeout_ms(10000), &rc, &out), 0, "the send returns");
    sim_tool_free(c);
    is_int(rc, 0, "successfully");
    like(out, SENT, "saying it was sent");
    free(out);
    sim_slow(h, "session_prompt", 0);
    notified_once_with(h, f.parent, id, "baz.c has the bug", "done B");
    free(child);
    free(id);
    t_close(&f);
}

/* Every refusal: the exact text, and nothing sent to the host. */
static void refused(sim_host *h, const char *s, const char *id, const char *message, int want_rc, const char *want,
                    const char *what)
{
    size_t prompts = task_prompts(h, s);
    char *out = t_send(h, s, id, message);
    is_int(t_rc, want_rc, "%s: refused", what);
    is_str(out, want, "%s: the text", what);
    is_int((int)(task_prompts(h, s) - prompts), 0, "%s: nothing sent", what);
    free(out);
}

static void not_running(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'max_running_agents':1}")));
    parent = f.parent;
    char *other = sim_session_new(h, NULL, "other");
    char want[400];
    refused(h, f.parent, "bg_00000000", "hi", -ENOENT,
            "Task not found: bg_00000000. Use background_list to see available tasks.", "an unknown id");
    char *a = t_gated_id(h, f.parent, "C", "explore");
    char *pending = t_gated_id(h, f.parent, "D", "explore"); /* the one slot is C's */
    snprintf(want, sizeof want, "Task not found: %s. Use background_list to see available tasks.", a);
    refused(h, other, a, "hi", -ENOENT, want, "another session's task");
    refused(h, f.parent, a, "   ", -EINVAL, "background_send: argument 'message' must not be empty. Nothing was sent.",
            "an empty message");
    snprintf(want, sizeof want,
             "Task %s has not started yet (pending: waiting for a run slot), so no sub-agent can take the message. "
             "Nothing was sent; send it once the task is running.",
             pending);
    refused(h, f.parent, pending, "hi", -EINVAL, want, "a pending task");

    /* A rule that forbids the agent forbids talking to it. */
    sim_permission_rules(h, J("{'bash':'ask','task':{'explore':'deny'}}"));
    size_t prompts = task_prompts(h, f.parent);
    char *out = t_send(h, f.parent, a, "hi");
    is_int(t_rc, -EACCES, "a send the permission rules deny: refused");
    like(out, "Permission denied: sending a message to a running sub-agent of type \"explore\"", "saying why");
    like(out, "Nothing was sent.", "and that nothing was sent");
    is_int((int)(task_prompts(h, f.parent) - prompts), 0, "nothing sent");
    free(out);
    sim_permission_rules(h, J("{'bash':'ask'}"));

    t_release_gated(h, "C");
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "C completes");
    is_int(t_wait_gate_open(h, "D", 5000), 0, "D starts in the freed slot");
    snprintf(want, sizeof want,
             "Task %s is not running (status: completed). Nothing was sent. To follow up on a completed task: "
             "background_resume(task_id=\"%s\", message=...).",
             a, a);
    refused(h, f.parent, a, "hi", -EINVAL, want, "a completed task");
    out = t_tool(h, f.parent, "background_cancel", t_id_args(pending));
    free(out);
    snprintf(want, sizeof want,
             "Task %s is not running (status: cancelled). Nothing was sent. Start a new background_task instead.",
             pending);
    refused(h, f.parent, pending, "hi", -EINVAL, want, "a cancelled task");

    const char *e = t_task(&f, "Broken", J("{'steps':[{'error':'model overloaded'}]}"));
    is_int(t_wait_status(h, f.parent, e, "error", 5000), 0, "a task fails");
    snprintf(want, sizeof want,
             "Task %s is not running (status: error). Nothing was sent. Start a new background_task instead.", e);
    refused(h, f.parent, e, "hi", -EINVAL, want, "a failed task");
    free(a);
    free(pending);
    free(other);
    t_close(&f);
}

static void shell_task(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    parent = f.parent;
    char *id = t_bash_bg(h, f.parent, "sleep 30", NULL, T_LAUNCH_UNCHECKED);
    char want[200];
    snprintf(want, sizeof want, "Task %s is a shell command: it takes no messages. Nothing was sent.", id);
    refused(h, f.parent, id, "hi", -EINVAL, want, "a shell task");
    char *out = t_tool(h, f.parent, "TaskStop", t_id_args(id));
    free(out);
    free(id);
    t_close(&f);
}

int main(void)
{
    int shells = t_shells_work(T_PROBE_DIAG);
    queued_follow_up();
    slow_host_follow_up();
    not_running();
    if (shells)
        shell_task();
    else
        skip(4, "the plugin cannot run commands here");
    t_kill_leftovers();
    return done_testing();
}

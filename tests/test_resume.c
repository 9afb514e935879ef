/* Resume and explicit waits (background_block): mode
 * detection, validation order and texts, the resumed run's completion and
 * notification, blocking resumes, racing resumes, Esc, host failures. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define FIRST_REPLY "{\"steps\":[{\"reply\":\"first answer\"}]}"

/* A parent with one completed task; *id is the task. */
static sim_host *completed_task(char **parent, char **id)
{
    sim_host *h = t_host(NULL);
    *parent = sim_session_new(h, NULL, "main");
    sim_script(h, "initial work", FIRST_REPLY, 1);
    *id = t_launch(h, *parent, "Initial", "initial work", "general");
    if (t_wait_status(h, *parent, *id, "completed", 5000) != 0)
        bail_out("the task did not complete");
    t_wait_messages_with(h, *parent, "first answer", 1, 5000);
    return h;
}

static char *resume_args(const char *id, const char *prompt, const char *extra)
{
    char *s = NULL;
    if (asprintf(&s, "{\"resume\":\"%s\",\"prompt\":\"%s\"%s}", id, prompt, extra ? extra : "") < 0)
        bail_out("asprintf");
    return s;
}

static void resume_happy_path(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    char *child = t_task_session(h, 0);
    sim_script(h, "follow-up one", J("{'steps':[{'wait_ms':30},{'reply':'second answer'}]}"), 1);
    char *args = resume_args(id, "follow-up one", NULL);
    char *out = t_tool(h, parent, "background_task", args);
    is_int(t_rc, 0, "resume accepted");
    like(out, "Resumed task ", "confirmation");
    like(out, id, "confirmation has the task id");
    unlike(out, "Resume count", "the count is not shown for the first resume");
    char *body = sim_call_body(h, "session_prompt", child, -1);
    like(body, "follow-up one", "the follow-up went to the task's own session");
    like(body, J("'background_task':false"), "ocbg's tools stay off in the child");
    free(body);
    is_int(t_wait_status(h, parent, id, "completed", 5000), 0, "the resumed run completes");
    is_int(t_wait_messages_with(h, parent, "second answer", 1, 5000), 0,
           "the parent is notified with the new response");
    is_int(t_count_messages_with(h, parent, "[ocbg] Background task completed"), 2, "one notification per run");
    const char *get = J("{'task_id':'%s'}", id);
    free(out);
    out = t_tool(h, parent, "background_output", get);
    like(out, "second answer", "output returns the new response");
    like(out, "Resumed: 1 time", "output shows the resume count");
    free(out);
    t_list_marks(h, parent, id, "resumed", "(resumed) follows the id in the list");

    sim_script(h, "follow-up two", J("{'steps':[{'reply':'third answer'}]}"), 1);
    free(args);
    args = resume_args(id, "follow-up two", J(",'description':'x','agent':'y'"));
    out = t_tool(h, parent, "background_task", args);
    like(out, "Note: description and agent are ignored when resuming a task.", "extra arguments are warned about");
    like(out, "Resume count: 2", "the count shows from the second resume");
    is_int(t_wait_messages_with(h, parent, "third answer", 1, 5000), 0, "the second resume's response arrives");
    free(out);
    free(args);
    free(child);
    free(id);
    free(parent);
    sim_destroy(h);
}

static void resume_validation(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    char *out = t_tool(h, parent, "background_task", J("{'resume':'bg_00000000','prompt':'   '}"));
    is_str(out, "Prompt is required when resuming a task", "blank prompt is checked first");
    free(out);
    out = t_tool(h, parent, "background_task", J("{'resume':'bg_00000000'}"));
    is_str(out, "Prompt is required when resuming a task", "a missing prompt too");
    free(out);
    out = t_tool(h, parent, "background_task", J("{'resume':'bg_00000000','prompt':'go'}"));
    is_str(out, "Task not found: bg_00000000. Use background_list to see available tasks.", "unknown task");
    is_int(t_rc, -ENOENT, "unknown task is -ENOENT");
    free(out);
    char *other = sim_session_new(h, NULL, "another conversation");
    char *args = resume_args(id, "go", NULL);
    out = t_tool(h, other, "background_task", args);
    like(out, "Task not found: ", "another session's task cannot be resumed");
    free(out);

    sim_script(h, "slow work", J("{'steps':[{'hang':true}]}"), 1);
    char *running = t_launch(h, parent, "Slow", "slow work", "general");
    char *rargs = resume_args(running, "go", NULL);
    out = t_tool(h, parent, "background_task", rargs);
    is_str(out, "Only completed tasks can be resumed. Current status: running", "a running task cannot be resumed");
    free(out);

    sim_script(h, "hold on", J("{'steps':[{'hang':true}]}"), 1);
    free(args);
    args = resume_args(id, "hold on", NULL);
    out = t_tool(h, parent, "background_task", args);
    is_int(t_rc, 0, "first resume wins");
    free(out);
    out = t_tool(h, parent, "background_task", args);
    is_str(out, "Task is currently being resumed. Wait for completion.", "a second resume is refused");
    free(out);
    out = t_tool(h, parent, "background_resume", J("{'task_id':'bg_00000000','message':''}"));
    is_str(out, "Prompt is required when resuming a task", "background_resume: same validation");
    free(out);
    free(rargs);
    free(args);
    free(running);
    free(other);
    free(id);
    free(parent);
    sim_destroy(h);
}

static void resume_expired_session(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    char *args = resume_args(id, "more", NULL);
    /* The host says the session is gone without having told us. */
    sim_fail(h, "session_get", 1, 1, -ENOENT);
    char *out = t_tool(h, parent, "background_task", args);
    like(out, "Task session expired or no longer exists", "an expired session is reported");
    like(out, "Start a new background_task instead.", "with the suggestion to start a new task");
    free(out);
    const char *get = J("{'task_id':'%s'}", id);
    out = t_tool(h, parent, "background_output", get);
    like(out, ": completed", "the task is still completed");
    unlike(out, "Resumed:", "its resume count did not move");
    free(out);
    char *child = t_task_session(h, 0);
    is_int(sim_calls(h, "session_prompt", child), 1, "no follow-up was sent");

    sim_session_delete(h, child);
    sim_events_flush(h, tap_timeout_ms(2000));
    out = t_tool(h, parent, "background_task", args);
    like(out, "Task session expired or no longer exists", "a deleted session is reported too");
    free(out);
    free(child);
    free(args);
    free(id);
    free(parent);
    sim_destroy(h);
}

static void resume_prompt_failure(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    sim_fail(h, "session_prompt", 1, 1, -EIO);
    char *args = resume_args(id, "more", NULL);
    char *out = t_tool(h, parent, "background_task", args);
    is_int(t_rc, -EIO, "a failed follow-up is an error");
    like(out, "Failed to send the follow-up prompt to the sub-agent: simulated failure of session_prompt",
         "with the host's reason");
    is_int(t_wait_status(h, parent, id, "error", 2000), 0, "the task ends in error");
    free(out);
    free(args);
    free(id);
    free(parent);
    sim_destroy(h);
}

static void resume_blocking(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    sim_script(h, "quick follow-up", J("{'steps':[{'reply':'blocking answer'}]}"), 1);
    const char *args = J("{'task_id':'%s','message':'quick follow-up','block':true}", id);
    char *out = t_tool(h, parent, "background_resume", args);
    is_int(t_rc, 0, "blocking resume succeeds");
    is_str(out, "blocking answer", "it returns only the new response");
    free(out);
    /* A later run's notification proves the worker has drained: then count. */
    sim_script(h, "later follow-up", J("{'steps':[{'reply':'later answer'}]}"), 1);
    args = J("{'task_id':'%s','message':'later follow-up'}", id);
    free(t_tool(h, parent, "background_resume", args));
    is_int(t_wait_messages_with(h, parent, "later answer", 1, 5000), 0, "a non-blocking resume notifies");
    is_int(t_count_messages_with(h, parent, "blocking answer"), 0, "the blocking resume sent no notification");

    /* Esc during a blocking resume ends the wait, not the run. */
    sim_script(h, "slow follow-up", J("{'steps':[{'wait_ms':300},{'reply':'slow answer'}]}"), 1);
    args = J("{'task_id':'%s','message':'slow follow-up','block':true}", id);
    sim_call *c = sim_tool_start(h, parent, "background_resume", args);
    is_int(t_wait_status(h, parent, id, "resumed", 2000), 0, "the task shows resumed while it works");
    out = t_esc(c, 2000, "the cancelled call returns");
    is_int(t_rc, -ECANCELED, "with -ECANCELED");
    like(out, "Wait cancelled", "saying the wait was cancelled");
    free(out);
    is_int(t_wait_messages_with(h, parent, "slow answer", 1, 5000), 0,
           "the run goes on and notifies, since nobody took its result");
    free(id);
    free(parent);
    sim_destroy(h);
}

static void block_waits(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_script(h, "fast one", J("{'steps':[{'reply':'fast'}]}"), 1);
    sim_script(h, "slow one", J("{'steps':[{'wait_ms':200},{'reply':'slow'}]}"), 1);
    sim_script(h, "stuck one", J("{'steps':[{'hang':true}]}"), 1);
    char *a = t_launch(h, f.parent, "Fast", "fast one", "general");
    char *b = t_launch(h, f.parent, "Slow", "slow one", "general");
    const char *args = J("{'task_ids':['%s','%s']}", a, b);
    char *out = t_tool(h, f.parent, "background_block", args);
    is_int(t_rc, 0, "block returns");
    like(out, "All 2 tasks finished.", "when all are finished");
    like(out, a, "the summary lists the first task");
    like(out, b, "and the second");
    free(out);
    out = t_tool(h, f.parent, "background_block", args);
    like(out, "All 2 tasks finished.", "already finished: returns at once");
    free(out);

    char *c = t_launch(h, f.parent, "Stuck", "stuck one", "general");
    args = J("{'task_ids':['%s','%s'],'timeout':0.2}", a, c);
    out = t_tool(h, f.parent, "background_block", args);
    like(out, "Timed out after waiting 0.2s: 1 of 2 tasks finished; still running: ", "a timeout says what runs");
    like(out, c, "naming the running task");
    free(out);
    out = t_tool(h, f.parent, "background_block", J("{'task_ids':['bg_00000000']}"));
    is_str(out, "Task not found: bg_00000000. Use background_list to see available tasks.", "unknown id");
    free(out);
    out = t_tool(h, f.parent, "background_block", J("{'task_ids':[]}"));
    is_int(t_rc, -EINVAL, "an empty list is refused");
    free(out);

    /* A batch id stands for its tasks; a resume in progress is waited for. */
    sim_script(h, "resume me", J("{'steps':[{'wait_ms':100},{'reply':'resumed answer'}]}"), 1);
    char *rargs = resume_args(a, "resume me", NULL);
    free(t_tool(h, f.parent, "background_task", rargs));
    args = J("{'task_ids':['%s']}", a);
    out = t_tool(h, f.parent, "background_block", args);
    like(out, "All 1 task finished.", "block waits for the resumed run");
    free(out);
    args = J("{'task_id':'%s','block':true}", a);
    out = t_tool(h, f.parent, "background_output", args);
    like(out, "resumed answer", "output after a resume has the resume's response");
    free(out);
    free(rargs);
    free(a);
    free(b);
    free(c);
    t_close(&f);
}

static void racing_resumes(void)
{
    char *parent, *id;
    sim_host *h = completed_task(&parent, &id);
    sim_script(h, "race", J("{'steps':[{'hang':true}]}"), 0);
    char *args = resume_args(id, "race", NULL);
    sim_call *c1 = sim_tool_start(h, parent, "background_task", args);
    sim_call *c2 = sim_tool_start(h, parent, "background_task", args);
    int rc1 = 0, rc2 = 0;
    char *o1 = NULL, *o2 = NULL;
    sim_tool_wait(c1, tap_timeout_ms(3000), &rc1, &o1);
    sim_tool_wait(c2, tap_timeout_ms(3000), &rc2, &o2);
    int won = (rc1 == 0) + (rc2 == 0);
    is_int(won, 1, "exactly one of two racing resumes wins");
    const char *loser = rc1 == 0 ? o2 : o1;
    is_str(loser, "Task is currently being resumed. Wait for completion.", "the other is told to wait");
    char *child = t_task_session(h, 0);
    is_int(sim_calls(h, "session_prompt", child), 2, "one follow-up prompt was sent");
    free(child);
    free(o1);
    free(o2);
    sim_tool_free(c1);
    sim_tool_free(c2);
    free(args);
    free(id);
    free(parent);
    sim_destroy(h);
}

int main(void)
{
    resume_happy_path();
    resume_validation();
    resume_expired_session();
    resume_prompt_failure();
    resume_blocking();
    block_waits();
    racing_resumes();
    return done_testing();
}

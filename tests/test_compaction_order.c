/* A child session that OpenCode compacts right after its answer, in both
 * orders of the completion check and the compaction:
 *   - after: the check reads the session once the compaction has begun (in
 *     the simulated host, a "compact" step without wait_ms stores the answer
 *     and the compaction request together, and the answer's text part events
 *     are lost, so the check cannot take the answer from the events and
 *     reads: every check is after); the run goes on, and the result is the
 *     answer, then what the continue turn added, after the mark;
 *   - before: "wait_ms" holds the compaction back (OpenCode's snapshot
 *     between the answer and the compaction), so the check reads the answer
 *     first and the task completes with it; when the continue turn adds
 *     something, the result is amended and the parent told.
 * Each case checks which order it ran in. Never the summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"
#include "testlib.h"
#include "base/util.h"

#define SUMMARY "SUMMARY OF THE WORK"
#define MARK "\n\n[The sub-agent's context was compacted after this answer; then it continued:]\n"
/* How long the compaction waits after the answer in the "before" order: the
 * check (one session read) must come within it. */
#define WAIT_MS "1500"
#define COMPACT_NOW "{\"compact\":{\"summary\":\"" SUMMARY "\"}}"
#define COMPACT_LATER "{\"compact\":{\"summary\":\"" SUMMARY "\",\"wait_ms\":" WAIT_MS "}}"
#define MORE_WORK ",{\"tool\":\"read\",\"output\":\"x\"},{\"reply\":\"continued text\"}]}"
#define SIGN_OFF ",{\"reply\":\"Nothing more to do: the task is complete.\"}]}"

/* background_output's result is exactly `result`, never the summary. */
static void output_is(sim_host *h, const char *parent, const char *id, const char *result, const char *name)
{
    char *out = t_output(h, parent, id);
    char *tail = xasprintf("\n\nResult:\n%s\n", result);
    ok(t_ends_with(out, tail), "%s: background_output's result, exactly", name);
    if (!t_ends_with(out, tail))
        diag("got: %s", out);
    unlike(out, SUMMARY, "%s: background_output has no summary", name);
    free(tail);
    free(out);
}

/* The run's notification: one, its result exactly `result`. */
static void notified(sim_host *h, const char *parent, const char *id, const char *result, const char *name)
{
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, parent, needle, 1, 5000), 0, "%s: the parent is notified", name);
    char *body = t_message_with(h, parent, needle);
    char *tail = xasprintf("\n\nResult:\n%s\n", result);
    ok(t_ends_with(body, tail), "%s: the notification's result, exactly", name);
    unlike(body, SUMMARY, "%s: the notification has no summary", name);
    free(tail);
    free(body);
}

/* The notice of what the run added after it was reported. */
static char *added_notice(const char *id, const char *description, const char *added)
{
    return xasprintf("[ocbg] Background task %s \"%s\" (agent: explore) went on after its result was reported. "
                     "Its result now ends with:\n[The sub-agent's context was compacted after this answer; then it "
                     "continued:]\n%s\n",
                     id, description, added);
}

/* Launch `script` and wait until it completed; in the "before" order, check
 * that the check read the answer before the compaction began. */
static char *run_task(sim_host *h, const char *parent, const char *description, const char *script, int before,
                      char **child)
{
    char *id = t_launch_script(h, parent, description, script);
    if (t_wait_status(h, parent, id, "completed", 5000) != 0)
        bail_out("%s did not complete", description);
    *child = t_task_session(h, 0);
    int held = sim_session_message_count(h, *child);
    if (before)
        is_int(held, 2,
               "%s: completed while the child held its prompt and answer only (order: check before the "
               "compaction)",
               description);
    else
        ok(held >= 6,
           "%s: completed once the child held the compaction and the continue turn (order: check after "
           "it): %d messages",
           description, held);
    return id;
}

static void check_after(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_host_checking_after());
    char *child = NULL;
    char *id =
        run_task(h, f.parent, "After", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_NOW MORE_WORK, 0, &child);
    notified(h, f.parent, id, "REAL ANSWER" MARK "continued text", "after, more work");
    output_is(h, f.parent, id, "REAL ANSWER" MARK "continued text", "after, more work");
    free(id);
    free(child);
    id = run_task(h, f.parent, "After2", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_NOW SIGN_OFF, 0, &child);
    notified(h, f.parent, id, "REAL ANSWER", "after, a sign-off");
    output_is(h, f.parent, id, "REAL ANSWER", "after, a sign-off");
    free(id);
    free(child);
    t_close(&f);
}

static void check_before_more_work(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *child = NULL;
    char *id =
        run_task(h, f.parent, "Before", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_LATER MORE_WORK, 1, &child);
    notified(h, f.parent, id, "REAL ANSWER", "before, more work: the notification has the answer");
    char *want = added_notice(id, "Before", "continued text");
    is_int(t_wait_messages_with(h, f.parent, "went on after its result was reported", 1, 5000), 0,
           "before, more work: the parent is told what the continue turn added");
    char *got = t_message_with(h, f.parent, "went on after its result was reported");
    is_str(got, want, "before, more work: that notice, exactly");
    output_is(h, f.parent, id, "REAL ANSWER" MARK "continued text", "before, more work (amended)");
    free(got);
    free(want);
    free(child);

    /* A blocking resume of it, the same way: it returns the new answer; the
     * continue turn's work follows as a notice. */
    sim_script(h, "what next",
               "{\"steps\":[{\"reply\":\"NEW ANSWER\"}," COMPACT_LATER
               ",{\"tool\":\"read\",\"output\":\"x\"},{\"reply\":\"more after the resume\"}]}",
               1);
    const char *args = J("{'task_id':'%s','message':'what next','block':true}", id);
    char *out = t_tool(h, f.parent, "background_resume", args);
    is_str(out, "NEW ANSWER", "before, resume: the blocking resume returns the new answer");
    free(out);
    is_int(t_wait_output_with(h, f.parent, id, "NEW ANSWER" MARK "more after the resume", 5000), 0,
           "before, resume: the result gains what the continue turn added");
    is_int(t_wait_messages_with(h, f.parent,
                                "[The sub-agent's context was compacted after this answer; then it "
                                "continued:]\nmore after the resume\n",
                                1, 5000),
           0, "before, resume: the parent is told");
    output_is(h, f.parent, id, "NEW ANSWER" MARK "more after the resume", "before, resume (amended)");
    free(id);
    t_close(&f);
}

static void check_before_sign_off(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *child = NULL;
    char *id =
        run_task(h, f.parent, "Quiet", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_LATER SIGN_OFF, 1, &child);
    notified(h, f.parent, id, "REAL ANSWER", "before, a sign-off");
    size_t reads = sim_calls(h, "session_messages", child);
    is_int(sim_wait_messages(h, child, 6, tap_timeout_ms(5000)), 0, "before, a sign-off: the child compacted");
    is_int(sim_wait_idle(h, child, tap_timeout_ms(5000)), 0, "before, a sign-off: and went idle");
    is_int(sim_wait_calls(h, "session_messages", child, reads + 1, tap_timeout_ms(5000)), 0,
           "before, a sign-off: the plugin read what the continue turn did");
    /* Nothing comes of it: checked for a while after that read. */
    ok(t_wait_messages_with(h, f.parent, "went on after its result was reported", 1, 300) != 0,
       "before, a sign-off: no notice follows");
    output_is(h, f.parent, id, "REAL ANSWER", "before, a sign-off: the answer alone");
    free(child);
    free(id);
    t_close(&f);
}

/* A foreground Task: after the compaction, the whole result; before it, the
 * call has returned the answer (the task is gone with it). */
static void foreground_task(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_host_checking_after());
    char *out = t_claude_task(h, f.parent, "Fg", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_NOW MORE_WORK, 0);
    is_int(t_rc, 0, "foreground, after: succeeds");
    like(out, "REAL ANSWER" MARK "continued text", "foreground, after: the answer, then what the turn added");
    unlike(out, SUMMARY, "foreground, after: no summary");
    free(out);
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    out = t_claude_task(h, f.parent, "Fg2", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT_LATER MORE_WORK, 0);
    is_int(t_rc, 0, "foreground, before: succeeds");
    like(out, "REAL ANSWER", "foreground, before: the answer");
    unlike(out, "continued text", "foreground, before: the continue turn had not run when it returned");
    free(out);
    t_close(&f);
}

int main(void)
{
    check_after();
    check_before_more_work();
    check_before_sign_off();
    foreground_task();
    return done_testing();
}

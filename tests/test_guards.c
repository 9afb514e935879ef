/* Bounded work, usage and budgets: per-task usage summed from
 * the host's message updates and shown in every text; the token, cost and
 * session budgets; the tool call limit and the repeat guard; the options'
 * checks. (Time limits: test_guards_time.c.) */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/options.h"
#include "hooks/usage.h"
#include "shelltest.h"
#include "testlib.h"
#include "text/texts.h"

#define NOTIFICATION_FAIL "[ocbg] Background task failed: "

/* A hand-made message.updated for an assistant message of `session`, with
 * running totals: only for odd event input (a repeat, an older update
 * arriving late, another session's, a report after the task ended). A
 * sub-agent's own reports come from its script's "usage" steps. */
static void emit_usage(sim_host *h, const char *session, const char *msg, long in, long out, long reasoning,
                       long cache_read, long cache_write, double cost)
{
    char ev[640];
    snprintf(ev, sizeof ev,
             "{\"type\":\"message.updated\",\"properties\":{\"info\":{\"id\":\"%s\",\"sessionID\":\"%s\","
             "\"role\":\"assistant\",\"time\":{\"created\":1},\"tokens\":{\"input\":%ld,\"output\":%ld,"
             "\"reasoning\":%ld,\"cache\":{\"read\":%ld,\"write\":%ld}},\"cost\":%.6f}}}",
             msg, session, in, out, reasoning, cache_read, cache_write, cost);
    sim_emit(h, ev);
}

static void flush(sim_host *h)
{
    if (sim_events_flush(h, tap_timeout_ms(5000)) != 0)
        bail_out("events not delivered");
}

/* A pause in a script: the sub-agent asks to run `cmd` and waits for the
 * answer (each test's rules make bash ask). */
#define PAUSE(cmd) "{\"ask\":{\"permission\":\"bash\",\"patterns\":[\"" cmd "\"]}}"

/* The sub-agent has reached a PAUSE, and every event it emitted before it
 * (its usage reports) has reached the plugin. */
static void paused(sim_host *h, const char *child)
{
    is_int(sim_wait(h, t_question_open, (void *)child, tap_timeout_ms(5000)), 0, "the sub-agent is mid-run");
    flush(h);
}

/* The user allows the paused sub-agent's command: its script goes on. */
static void go_on(sim_host *h, const char *child)
{
    char *req = sim_permission_open(h, child);
    is_int(sim_permission_reply(h, req, "once", NULL), 0, "the question is answered");
    free(req);
}

/* How many notifications of the session announce that task id failed. */
static int failures(sim_host *h, const char *ps, const char *id)
{
    char needle[96];
    snprintf(needle, sizeof needle, "%s%s", NOTIFICATION_FAIL, id);
    return t_count_messages_with(h, ps, needle);
}

/* The task ended in error with exactly `text`, its session was aborted, and
 * the parent was told once (the notification carries the text). */
static void ended_by_guard(sim_host *h, const char *ps, const char *id, const char *child, const char *text)
{
    is_int(t_wait_status(h, ps, id, "error", 5000), 0, "the task ends in error");
    char *out = t_output(h, ps, id);
    char want[512];
    snprintf(want, sizeof want, "\n\nError: %s\n", text);
    like(out, want, "its report gives the guard's text");
    free(out);
    is_int(sim_wait_calls(h, "session_abort", child, 1, tap_timeout_ms(5000)), 0, "its session is aborted");
    char needle[96];
    snprintf(needle, sizeof needle, "%s%s", NOTIFICATION_FAIL, id);
    is_int(t_wait_messages_with(h, ps, needle, 1, 5000), 0, "the parent is notified");
    char *note = t_message_with(h, ps, needle);
    snprintf(want, sizeof want, "\nError: %s\n", text);
    like(note, want, "the notification gives the text");
    free(note);
}

/* ---- usage ----------------------------------------------------------------- */

#define PHRASE "14,690 tokens (in 12,345, out 2,000, reasoning 345, cache read 1,000,000, write 0), $0.0123"

/* The sub-agent's own reports: two model calls in its first assistant
 * message (running totals 10,000 in … $0.01), then a second message (2,345
 * in … $0.0023; the simulated host makes one assistant message a turn, and a
 * compaction's continue turn a new one); two messages add up. The first
 * PAUSE comes before any report, the second after them all. */
#define COUNTING_SCRIPT                                                                                                \
    "{\"steps\":[" PAUSE(                                                                                              \
        "make") ","                                                                                                    \
                "{\"usage\":{\"input\":5000,\"output\":1000,\"cache_read\":400000,\"cost\":0.005}},"                   \
                "{\"usage\":{\"input\":5000,\"output\":500,\"reasoning\":345,\"cache_read\":400000,\"cost\":0.005}},"  \
                "{\"reply\":\"first half\"},{\"compact\":true},"                                                       \
                "{\"usage\":{\"input\":2345,\"output\":500,\"cache_read\":200000,\"cost\":0.0023}}," PAUSE(            \
                    "make check") ",{\"reply\":\"counted\"}]}"

/* The id of the session's first assistant message (malloc'd, or NULL). */
static char *first_answer_id(sim_host *h, const char *session)
{
    char *json = sim_session_messages_json(h, session);
    cJSON *msgs = cJSON_Parse(json ? json : "[]");
    free(json);
    char *id = NULL;
    const cJSON *m;
    cJSON_ArrayForEach (m, msgs) {
        const cJSON *info = cJSON_GetObjectItemCaseSensitive(m, "info");
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "role"));
        if (!id && role && strcmp(role, "assistant") == 0)
            id = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id")));
    }
    cJSON_Delete(msgs);
    return id;
}

/* Odd event input, hand-made (no script makes it): a repeat of the first
 * message's last totals and an older update of it arriving late count
 * nothing; another session's report and a user message neither. */
static void emit_odd_updates(sim_host *h, const char *child)
{
    char *msg_a = first_answer_id(h, child);
    ok(msg_a != NULL, "the sub-agent's first answer is stored");
    emit_usage(h, child, msg_a ? msg_a : "msg_a", 10000, 1500, 345, 800000, 0, 0.01); /* a repeat */
    emit_usage(h, child, msg_a ? msg_a : "msg_a", 5000, 1000, 0, 400000, 0, 0.005);   /* an older update, late */
    emit_usage(h, "ses_not_a_task", "msg_c", 99999, 99999, 0, 0, 0, 9);               /* another session's */
    sim_emit(h, J("{'type':'message.updated','properties':{'info':{'id':'msg_u','role':'user'}}}"));
    flush(h);
    free(msg_a);
}

/* Every face shows the task's summed usage. */
static void usage_on_every_face(sim_host *h, const char *s, const char *id)
{
    char *out = t_output(h, s, id);
    like(out, "\nUsage: " PHRASE "\n", "background_output: the summed usage");
    free(out);
    out = t_tool(h, s, "background_list", "{}");
    like(out, " | Usage: " PHRASE "\n", "background_list: on the task's line");
    like(out, "\nUsage of the listed tasks: " PHRASE, "background_list: the total line");
    free(out);
    out = t_task_output(h, s, id, 0, 0);
    like(out, "<usage>" PHRASE "</usage>\n", "TaskOutput: a usage tag");
    free(out);
    out = t_command(h, s, "tasks");
    like(out, " [Usage: " PHRASE "]\n", "/tasks: on the task's row");
    like(out, "\nUsage of the listed tasks: " PHRASE, "/tasks: the total line");
    free(out);
}

static void usage_summed_and_shown(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    /* The run goes on past its compaction only when the check comes after it
     * began: with the answer's part events lost, the check reads, and finds it. */
    sim_event_faults(h, 1, 1.0, 0, 0, "message.part.updated");
    const char *id = t_task(&f, "Count tokens", COUNTING_SCRIPT);
    char *child = t_task_session(h, 0);
    paused(h, child);
    char *out = t_output(h, f.parent, id);
    unlike(out, "Usage:", "no usage is shown before the host reports any");
    free(out);
    go_on(h, child);
    paused(h, child);
    emit_odd_updates(h, child);
    usage_on_every_face(h, f.parent, id);

    /* A second task: the totals add both. */
    const char *id2 = t_task(&f, "More tokens", J("{'steps':[{'usage':{'input':1000,'cost':0.5}},{'hang':true}]}"));
    is_int(t_wait_output_with(h, f.parent, id2, "\nUsage: 1,000 tokens", 5000), 0, "the second task reports its usage");
    out = t_tool(h, f.parent, "background_list", "{}");
    like(out,
         "\nUsage of the listed tasks: 15,690 tokens (in 13,345, out 2,000, reasoning 345, cache read "
         "1,000,000, write 0), $0.5123",
         "the total line sums the listed tasks");
    free(out);
    out = t_tool(h, f.parent, "background_list", J("{'status':'running','batch_id':'none'}"));
    unlike(out, "Usage of the listed tasks", "no total line for an empty listing");
    free(out);

    /* The run ends: its notification carries the usage. */
    go_on(h, child);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes");
    is_int(t_wait_messages_with(h, f.parent, "Background task completed: ", 1, 5000), 0, "the parent is notified");
    char *note = t_message_with(h, f.parent, "Background task completed: ");
    like(note, "\nUsage: " PHRASE "\n", "the notification gives the usage");
    free(note);

    /* A late report of a finished task still counts (odd input, hand-made:
     * a script's reports all come before its end). */
    emit_usage(h, child, "msg_e", 5, 0, 0, 0, 0, 0);
    flush(h);
    t_output_like(h, f.parent, id, "\nUsage: 14,695 tokens (in 12,350,", "a late report is counted");
    free(child);
    t_close(&f);
}

/* ---- budgets ---------------------------------------------------------------- */

static void token_budget(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'max_task_tokens':1000}"));
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *id = t_task(&f, "Many tokens",
                            "{\"steps\":[{\"usage\":{\"input\":800,\"output\":150,\"reasoning\":50,"
                            "\"cache_read\":500000}}," PAUSE("more") ",{\"usage\":{\"output\":50}},"
                                                                     "{\"hang\":true}]}");
    char *child = t_task_session(h, 0);
    paused(h, child);
    t_output_like(h, f.parent, id, ": running\n", "1,000 tokens (cache reads apart) are within the budget");
    go_on(h, child);
    ended_by_guard(h, f.parent, id, child,
                   "Stopped by the token budget: this task used 1,050 tokens (max_task_tokens is 1000).");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(failures(h, f.parent, id), 1, "exactly one notification");
    free(child);
    t_close(&f);
}

static void cost_budget(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL); /* the default: 5 USD a task */
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *id = t_task(&f, "Expensive",
                            "{\"steps\":[{\"usage\":{\"input\":100,\"output\":10,\"cost\":3}},"
                            "{\"usage\":{\"input\":100,\"output\":10,\"cost\":2}}," PAUSE(
                                "more") ",{\"usage\":{\"input\":10,\"output\":1,\"cost\":0.02}},{\"hang\":true}]}");
    char *child = t_task_session(h, 0);
    paused(h, child);
    char *out = t_output(h, f.parent, id);
    like(out, ": running\n", "exactly 5 USD is within the budget");
    free(out);
    go_on(h, child);
    ended_by_guard(h, f.parent, id, child,
                   "Stopped by the cost budget: this task spent $5.02 (max_task_cost_usd is 5).");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(failures(h, f.parent, id), 1, "exactly one notification");

    /* A completed task over its budget (reported late) is not resumed. */
    const char *done = t_task(&f, "Finished", J("{'steps':[{'reply':'all done'}]}"));
    is_int(t_wait_status(h, f.parent, done, "completed", 5000), 0, "another task completes");
    char *child2 = t_task_session(h, 2); /* after the sync point's */
    /* Odd input, hand-made: the report comes after the task ended (late);
     * a script's would come before its end, and stop it. */
    emit_usage(h, child2, "msg_x", 10, 1, 0, 0, 0, 5.5);
    flush(h);
    const char *args = J("{'task_id':'%s','message':'more'}", done);
    size_t prompts = sim_calls(h, "session_prompt", child2);
    out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, -EDQUOT, "the resume is refused");
    t_is_strf(out, "and says which budget",
              "Not resumed: task %s has spent $5.50, its whole budget (max_task_cost_usd is 5). Start a new task "
              "instead.",
              done);
    free(out);
    is_int(sim_calls(h, "session_prompt", child2), prompts, "nothing was sent to its session");
    is_int(t_wait_status(h, f.parent, done, "completed", 1000), 0, "the task is still completed");
    free(child2);
    free(child);
    t_close(&f);
}

static void session_budget(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'max_session_cost_usd':1}"));
    sim_permission_rules(h, J("{'bash':'ask'}"));
    const char *a = t_task(&f, "Task A",
                           J("{'steps':[{'usage':{'input':100,'output':10,'cost':0.6}},"
                             "{'hang':true}]}"));
    const char *b = t_task(&f, "Task B",
                           "{\"steps\":[" PAUSE("more") ",{\"usage\":{\"input\":100,\"output\":10,"
                                                        "\"cost\":0.5}},{\"hang\":true}]}");
    char *ca = t_task_session(h, 0), *cb = t_task_session(h, 1);
    is_int(t_wait_output_with(h, f.parent, a, "\nUsage: 110 tokens", 5000), 0, "task A reports its usage");
    paused(h, cb);
    char *out = t_output(h, f.parent, b);
    like(out, ": running\n", "under the session's budget, both run");
    free(out);
    go_on(h, cb);
    const char *text = "Stopped by the session budget: this session's background tasks spent $1.10 "
                       "(max_session_cost_usd is 1).";
    ended_by_guard(h, f.parent, b, cb, text);
    ended_by_guard(h, f.parent, a, ca, text);

    size_t sessions = sim_session_count(h);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'explore'}"));
    is_int(t_rc, -EDQUOT, "a new launch is refused");
    is_str(out,
           "Not started: this session's background tasks have spent $1.10, its whole budget "
           "(max_session_cost_usd is 1). No task was created.",
           "with a clear text");
    free(out);
    out = t_tool(h, f.parent, "Task",
                 J("{'description':'d','prompt':'p','subagent_type':'explore',"
                   "'run_in_background':true}"));
    is_int(t_rc, -EDQUOT, "Task is refused too");
    like(out, "No task was created.", "with the same text");
    free(out);
    is_int(sim_session_count(h), sessions, "no session was created");
    t_list_like(h, f.parent, "\nTotal: 2 tasks (2 error)", "no task was registered");
    out = t_tool(h, f.parent, "background_clear", "{}");
    free(out);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'explore'}"));
    is_int(t_rc, -EDQUOT, "clearing the tasks does not reset what they spent");
    free(out);
    char *other = sim_session_new(h, NULL, "other");
    char *c = t_launch_script(h, other, "Elsewhere", J("{'steps':[{'reply':'fine'}]}"));
    is_int(t_wait_status(h, other, c, "completed", 5000), 0, "another session's budget is its own");
    free(c);
    free(other);
    free(ca);
    free(cb);
    t_close(&f);
}

/* ---- runaway tool calls ---------------------------------------------------------- */

#define READ(path) "{\"tool\":\"read\",\"input\":{\"filePath\":\"" path "\"},\"output\":\"x\"}"

static void tool_call_limit(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, J("{'max_tool_calls':3}"));
    /* Each call's part is updated three times (pending, running, completed): counted once. */
    const char *fine =
        t_task(&f, "Three calls", "{\"steps\":[" READ("/a") "," READ("/b") "," READ("/c") ",{\"reply\":\"three\"}]}");
    is_int(t_wait_status(h, f.parent, fine, "completed", 5000), 0, "three calls are allowed");
    const char *id = t_task(
        &f, "Four calls", "{\"steps\":[" READ("/a") "," READ("/b") "," READ("/c") "," READ("/d") ",{\"hang\":true}]}");
    char *child = t_task_session(h, 1);
    ended_by_guard(h, f.parent, id, child,
                   "Stopped by the tool call limit: this task made 4 tool calls (max_tool_calls is 3).");
    free(child);
    t_close(&f);
}

static void repeat_guard(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL); /* the default: 5 in a row */
    const char *fine = t_task(
        &f, "Varied",
        "{\"steps\":[" READ("/a") "," READ("/a") "," READ("/a") "," READ("/a") "," READ("/a") "," READ("/b") "," READ(
            "/a") "," READ("/a") "," READ("/a") "," READ("/a") "," READ("/a") ",{\"reply\":\"varied\"}]}");
    is_int(t_wait_status(h, f.parent, fine, "completed", 5000), 0,
           "five in a row, then another call, then five: allowed");
    const char *id = t_task(&f, "Looping",
                            "{\"steps\":[" READ("/a") "," READ("/a") "," READ("/a") "," READ("/a") "," READ(
                                "/a") "," READ("/a") ",{\"hang\":true}]}");
    char *child = t_task_session(h, 1);
    ended_by_guard(h, f.parent, id, child,
                   "Stopped by the repeat guard: this task made the same read call (same input) 6 times in a row "
                   "(max_repeat_calls is 5).");
    free(child);
    t_close(&f);
}

/* ---- options ------------------------------------------------------------------- */

static void refused_option(const char *json, const char *why)
{
    const char *dir = getenv("OCBG_PLUGIN_DIR");
    sim_host *h = sim_create();
    is_int(sim_load_plugins(h, dir, json), 0, "%s is refused", json);
    like(sim_load_error(h), why, "%s: the reason", json);
    sim_destroy(h);
}

static void options_checked(void)
{
    options o;
    char err[256];
    is_int(options_parse(&o, NULL, err, sizeof err), 0, "defaults");
    is_int(o.max_task_tokens, 20000000, "max_task_tokens: 20,000,000");
    ok(o.max_task_cost_usd == 5, "max_task_cost_usd: 5");
    ok(o.max_session_cost_usd == 20, "max_session_cost_usd: 20");
    is_int(o.max_tool_calls, 1000, "max_tool_calls: 1000");
    is_int(o.max_repeat_calls, 5, "max_repeat_calls: 5");
    is_int(o.stale_ms, 1200000, "stale_ms: 20 minutes");
    is_int(o.max_runtime_ms, 14400000, "max_runtime_ms: 4 hours");
    is_int(options_parse(&o, J("{'max_task_cost_usd':0.25,'max_session_cost_usd':2.5}"), err, sizeof err), 0,
           "fractions of a dollar are accepted");
    ok(o.max_task_cost_usd == 0.25 && o.max_session_cost_usd == 2.5, "and kept");

    refused_option(J("{'max_task_tokens':0}"),
                   "option 'max_task_tokens' must be a whole number from 1000 to 2000000000");
    refused_option(J("{'max_task_cost_usd':0}"),
                   "option 'max_task_cost_usd' must be a number from 0.01 to 1000000 (US dollars)");
    refused_option(J("{'max_session_cost_usd':'20'}"),
                   "option 'max_session_cost_usd' must be a number from 0.01 to 1000000 (US dollars)");
    refused_option(J("{'max_session_cost_usd':-1}"), "option 'max_session_cost_usd' must be a number from 0.01");
    refused_option(J("{'max_tool_calls':0}"), "option 'max_tool_calls' must be a whole number from 1 to 1000000");
    refused_option(J("{'max_repeat_calls':1}"), "option 'max_repeat_calls' must be a whole number from 2 to 1000");
    refused_option(J("{'stale_ms':999}"), "option 'stale_ms' must be a whole number from 1000 to 86400000");
    refused_option(J("{'max_runtime_ms':true}"),
                   "option 'max_runtime_ms' must be a whole number from 1000 to 604800000");
    refused_option(J("{'max_runtime_ms':1500.5}"), "option 'max_runtime_ms' must be a whole number");
}

/* The usage phrase's pieces. */
static void usage_units(void)
{
    char buf[32];
    format_count(buf, sizeof buf, 0);
    is_str(buf, "0", "0");
    format_count(buf, sizeof buf, 999);
    is_str(buf, "999", "999");
    format_count(buf, sizeof buf, 1234567);
    is_str(buf, "1,234,567", "1,234,567");
    format_usd(buf, sizeof buf, 0.0123);
    is_str(buf, "$0.0123", "cents and below: four decimals");
    format_usd(buf, sizeof buf, 20.04);
    is_str(buf, "$20.04", "dollars: two decimals");
    usage_tracker tr = {0};
    usage u = {100, 10, 0, 0, 0, 0.1}, d;
    for (int i = 0; i < USAGE_RECENT_MESSAGES; i++) {
        char id[16];
        snprintf(id, sizeof id, "m%d", i);
        d = usage_tracker_note(&tr, id, &u);
    }
    is_int(tr.total.input, 100 * USAGE_RECENT_MESSAGES, "each new message counts");
    d = usage_tracker_note(&tr, "m0", &u);
    is_int(d.input, 0, "a repeat of a kept message counts nothing");
}

int main(void)
{
    usage_units();
    options_checked();
    usage_summed_and_shown();
    token_budget();
    cost_budget();
    session_budget();
    tool_call_limit();
    repeat_guard();
    return done_testing();
}

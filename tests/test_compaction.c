/* A child session that compacts after its answer (OpenCode 1.18.33): the
 * task's result is the child's last real answer, never the
 * summary, on every face; resumes, manual and failed summaries; a fork of a
 * compacted parent inherits what the parent's model sees (from the summary
 * on). Also the simulated host's "compact" step itself. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork.h"
#include "shelltest.h"
#include "testlib.h"
#include "base/util.h"

#define CONTINUE_TEXT                                                                                                  \
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
#define SUMMARY "SUMMARY OF THE WORK"
#define COMPACT "{\"compact\":{\"summary\":\"" SUMMARY "\"}}"
/* Between the answer and what the turn after the compaction added. */
#define MARK "\n\n[The sub-agent's context was compacted after this answer; then it continued:]\n"

/* ---- the session's messages in short ------------------------------------ */

/* One part: its type, with what tells compaction parts apart. */
static void part_shape(strbuf *sb, const cJSON *part)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(part, "type"));
    sb_puts(sb, type ? type : "?");
    if (type && strcmp(type, "compaction") == 0)
        sb_printf(sb, "(%s)", cJSON_IsTrue(cJSON_GetObjectItem(part, "auto")) ? "auto" : "manual");
    if (cJSON_IsTrue(cJSON_GetObjectItem(part, "synthetic")))
        sb_puts(sb, "(synthetic)");
    if (cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(part, "metadata"), "compaction_continue")))
        sb_puts(sb, "(continue)");
}

/* "user: text | assistant stop: text | …": role, finish or error, summary
 * flag, then the part types. */
static char *shape(sim_host *h, const char *session)
{
    char *json = sim_session_messages_json(h, session);
    cJSON *msgs = cJSON_Parse(json);
    free(json);
    strbuf sb = {0};
    const cJSON *m;
    cJSON_ArrayForEach (m, msgs) {
        const cJSON *info = cJSON_GetObjectItem(m, "info");
        const char *finish = cJSON_GetStringValue(cJSON_GetObjectItem(info, "finish"));
        const char *err = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(info, "error"), "name"));
        sb_printf(&sb, "%s%s", sb.len ? " | " : "", cJSON_GetStringValue(cJSON_GetObjectItem(info, "role")));
        if (cJSON_IsTrue(cJSON_GetObjectItem(info, "summary")))
            sb_puts(&sb, " summary");
        if (finish)
            sb_printf(&sb, " %s", finish);
        if (err)
            sb_printf(&sb, " %s", err);
        sb_puts(&sb, ":");
        const cJSON *p;
        int i = 0;
        cJSON_ArrayForEach (p, cJSON_GetObjectItem(m, "parts")) {
            sb_puts(&sb, i++ ? ", " : " ");
            part_shape(&sb, p);
        }
    }
    cJSON_Delete(msgs);
    return sb_take(&sb);
}

static char *report_tail(const char *result)
{
    return xasprintf("\n\nResult:\n%s\n", result);
}

/* ---- the sim host's step ------------------------------------------------- */

static int event_count(sim_host *h, const char *type)
{
    sim_events_flush(h, tap_timeout_ms(5000));
    return (int)sim_events_delivered(h, type);
}

/* OpenCode's sequence, with no plugin: answer, compaction request, summary,
 * continue message, session.compacted, the continue turn; busy throughout. */
static void sim_step_shape(void)
{
    sim_host *h = sim_create();
    char *s = sim_session_new(h, NULL, "alone");
    sim_script(h, "", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT ",{\"reply\":\"continued text\"}]}", 1);
    sim_session_prompt(h, s, J("{'parts':[{'type':'text','text':'work'}]}"));
    is_int(sim_wait_messages(h, s, 6, tap_timeout_ms(5000)), 0, "six messages");
    is_int(sim_wait_idle(h, s, tap_timeout_ms(5000)), 0, "then idle");
    char *got = shape(h, s);
    is_str(got,
           "user: text | assistant stop: text | user: compaction(auto) | assistant summary stop: step-start, text, "
           "step-finish | user: text(synthetic)(continue) | assistant stop: text",
           "OpenCode's messages in order");
    free(got);
    char *json = sim_session_messages_json(h, s);
    cJSON *msgs = cJSON_Parse(json);
    free(json);
    const cJSON *req = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 2), "info");
    const cJSON *sum = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 3), "info");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "parentID")),
           cJSON_GetStringValue(cJSON_GetObjectItem(req, "id")), "the summary's parent is the compaction request");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "mode")), "compaction", "summary mode compaction");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "agent")), "compaction", "summary agent compaction");
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(req, "model"), "modelID")), "sim-model",
           "the request names the model");
    cJSON_Delete(msgs);
    char *text = sim_session_message_text(h, s, 3);
    is_str(text, SUMMARY, "the summary's text");
    free(text);
    text = sim_session_message_text(h, s, 4);
    is_str(text, CONTINUE_TEXT, "the continue message's text");
    free(text);
    is_int(event_count(h, "session.compacted"), 1, "one session.compacted");
    is_int(event_count(h, "session.idle"), 1, "one session.idle: busy throughout");
    is_int(event_count(h, "session.status"), 2, "status busy, then idle once");
    char *seen = sim_session_model_input(h, s);
    like(seen, CONTINUE_TEXT, "the continue turn's model saw the continue message");
    free(seen);
    free(s);
    sim_destroy(h);
}

/* Manual: no continue message, later steps not run. Failed: no compacted event. */
static void sim_step_manual_and_failed(void)
{
    sim_host *h = sim_create();
    char *s = sim_session_new(h, NULL, "alone");
    sim_script(h, "", J("{'steps':[{'reply':'A2'},{'compact':{'auto':false}},{'reply':'never'}]}"), 1);
    sim_session_prompt(h, s, J("{'parts':[{'type':'text','text':'again'}]}"));
    sim_wait_messages(h, s, 4, tap_timeout_ms(5000));
    sim_wait_idle(h, s, tap_timeout_ms(5000));
    sim_script(h, "", J("{'steps':[{'reply':'A3'},{'compact':{'fail':true}}]}"), 1);
    sim_session_prompt(h, s, J("{'parts':[{'type':'text','text':'once more'}]}"));
    is_int(sim_wait_messages(h, s, 8, tap_timeout_ms(5000)), 0, "four messages each");
    sim_wait_idle(h, s, tap_timeout_ms(5000));
    char *got = shape(h, s);
    is_str(got,
           "user: text | assistant stop: text | user: compaction(manual) | assistant summary stop: step-start, text, "
           "step-finish | user: text | assistant stop: text | user: compaction(auto) | assistant summary error "
           "ContextOverflowError: step-start",
           "manual: the summary ends it; failed: ContextOverflowError, finish error");
    free(got);
    is_int(event_count(h, "session.compacted"), 1, "session.compacted for the manual one, not the failed one");
    is_int(event_count(h, "session.error"), 0, "a failed summary is no session.error");
    is_int(event_count(h, "session.idle"), 2, "each turn ends with one idle");
    free(s);
    sim_destroy(h);
}

/* ---- the task's result --------------------------------------------------- */

/* A task whose child runs `script`; waits until it has ended. */
static char *task_with(sim_host *h, const char *parent, const char *script, const char *status)
{
    char *id = t_launch_script(h, parent, "Compacting", script);
    if (t_wait_status(h, parent, id, status, 5000) != 0)
        bail_out("the task did not reach %s", status);
    return id;
}

static void check_result(sim_host *h, const char *parent, const char *id, const char *result, const char *name)
{
    char *out = t_output(h, parent, id);
    char *tail = report_tail(result);
    ok(t_ends_with(out, tail), "%s: background_output's result, exactly", name);
    unlike(out, SUMMARY, "%s: never the summary", name);
    free(tail);
    free(out);
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, parent, needle, 1, 5000), 0, "%s: the parent is notified", name);
    char *body = t_message_with(h, parent, needle);
    tail = report_tail(result);
    ok(t_ends_with(body, tail), "%s: the notification's result, exactly", name);
    unlike(body, SUMMARY, "%s: the notification has no summary", name);
    free(tail);
    free(body);
}

static void auto_compaction_results(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_host_checking_after());
    char *id = task_with(h, f.parent, "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT "]}", "completed");
    check_result(h, f.parent, id, "REAL ANSWER", "continue turn without text");
    char *child = t_task_session(h, 0);
    char *got = shape(h, child);
    like(got,
         "| assistant summary stop: step-start, text, step-finish | user: text(synthetic)(continue) | "
         "assistant stop:",
         "the child did compact and continue");
    ok(t_ends_with(got, "assistant stop:"), "its continue turn said nothing");
    free(got);
    free(id);

    id = task_with(h, f.parent,
                   "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT ",{\"tool\":\"read\",\"output\":\"x\"},"
                   "{\"reply\":\"continued text\"}]}",
                   "completed");
    check_result(h, f.parent, id, "REAL ANSWER" MARK "continued text", "continue turn with a tool call and text");
    free(id);

    id = task_with(h, f.parent,
                   "{\"steps\":[{\"reply\":\"REAL ANSWER\"},{\"compact\":{\"auto\":false,\"summary\":\"" SUMMARY
                   "\"}}]}",
                   "completed");
    check_result(h, f.parent, id, "REAL ANSWER", "manual summary");
    free(id);

    id = task_with(h, f.parent, J("{'steps':[{'reply':'REAL ANSWER'},{'compact':{'fail':true}}]}"), "completed");
    check_result(h, f.parent, id, "REAL ANSWER", "failed summary: completed, not an error");
    free(id);
    free(child);
    t_close(&f);
}

/* The Claude face: TaskOutput, and a foreground Task, give the real answer. */
static void claude_face_results(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_host_checking_after());
    char *out =
        t_claude_task(h, f.parent, "Compacts",
                      "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT ",{\"reply\":\"continued text\"}]}", 1);
    char *id = t_find_id(out, "bg_");
    free(out);
    out = t_task_output(h, f.parent, id, 1, 0);
    like(out, "<status>completed</status>\n", "TaskOutput: completed");
    like(out, "<output>\nREAL ANSWER" MARK "continued text\n</output>\n",
         "TaskOutput: the answer, then the continue turn's text");
    unlike(out, SUMMARY, "TaskOutput: never the summary");
    free(out);
    free(id);
    out = t_claude_task(h, f.parent, "Foreground", "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT "]}", 0);
    is_int(t_rc, 0, "a foreground Task that compacts succeeds");
    like(out, "REAL ANSWER", "and returns the real answer");
    unlike(out, SUMMARY, "not the summary");
    free(out);
    t_close(&f);
}

/* A stray idle while the continue turn runs (here: waiting on a question)
 * finds the run unfinished; the task ends with the continue turn's answer. */
static void stray_idle_during_continue(void)
{
    t_fixture f;
    sim_host *h = t_host_checking_after();
    sim_permission_rules(h, J("{'bash':'ask'}"));
    t_open_with(&f, h);
    const char *id = t_task(&f, "Asks after compacting",
                            "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT ",{\"ask\":{\"permission\":\"bash\","
                            "\"patterns\":[\"make\"]}},{\"reply\":\"after the question\"}]}");
    char *child = t_task_session(h, 0);
    is_int(sim_wait(h, t_question_open, child, tap_timeout_ms(5000)), 0, "the continue turn asks a question");
    char *q = sim_permission_open(h, child);
    size_t reads = sim_calls(h, "session_messages", child);
    const char *ev = J("{'type':'session.idle','properties':{'sessionID':'%s'}}", child);
    sim_emit(h, ev);
    is_int(sim_wait_calls(h, "session_messages", child, reads + 1, tap_timeout_ms(5000)), 0,
           "the stray idle made the plugin read the child's messages");
    is_int(sim_permission_reply(h, q, "once", NULL), 0, "the question is answered");
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes");
    check_result(h, f.parent, id, "REAL ANSWER" MARK "after the question", "after a stray idle");
    free(q);
    free(child);
    t_close(&f);
}

static void resume_after_compaction(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *id = task_with(h, f.parent, "{\"steps\":[{\"reply\":\"REAL ANSWER\"}," COMPACT "]}", "completed");
    sim_script(h, "what next", J("{'steps':[{'reply':'NEW ANSWER'}]}"), 1);
    const char *args = J("{'task_id':'%s','message':'what next','block':true}", id);
    char *out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, 0, "a blocking resume of a compacted task succeeds");
    is_str(out, "NEW ANSWER", "it returns the new answer");
    free(out);
    sim_script(h, "and then", "{\"steps\":[{\"reply\":\"THIRD\"}," COMPACT "]}", 1);
    args = J("{'task_id':'%s','message':'and then'}", id);
    free(t_tool(h, f.parent, "background_resume", args));
    is_int(t_wait_output_with(h, f.parent, id, "Result:\nTHIRD\n", 5000), 0,
           "a resumed run that compacts again: its own answer");
    out = t_output(h, f.parent, id);
    unlike(out, SUMMARY, "never the summary");
    free(out);
    free(id);
    t_close(&f);
}

/* ---- fork ---------------------------------------------------------------- */

#define MSG(id, role, extra, parts)                                                                                    \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"" role "\"" extra "},\"parts\":[" parts "]}"
#define TEXT(t) "{\"type\":\"text\",\"text\":\"" t "\"}"
#define REQ(id) MSG(id, "user", "", "{\"type\":\"compaction\",\"auto\":true,\"overflow\":false}")
#define SUM(id, parent, extra)                                                                                         \
    MSG(id, "assistant", ",\"parentID\":\"" parent "\",\"summary\":true,\"mode\":\"compaction\"" extra, TEXT(SUMMARY))
#define DONE ",\"finish\":\"stop\""

static void fork_case(const char *history, const char *want, size_t in, size_t kept, const char *name)
{
    fork_limits lim = {1500, 100000};
    fork_stats st;
    char *out = NULL;
    is_int(fork_process(history, &lim, &out, &st), 0, "%s: processed", name);
    is_str(out, want, "%s: what the child inherits", name);
    is_int(st.messages_in, in, "%s: messages in", name);
    is_int(st.messages_kept, kept, "%s: messages kept", name);
    free(out);
}

static void fork_process_cases(void)
{
#define OLD MSG("m1", "user", "", TEXT("old prompt")) "," MSG("m2", "assistant", DONE, TEXT("old answer"))
#define AFTER MSG("m5", "user", "", TEXT("continue")) "," MSG("m6", "assistant", DONE, TEXT("new"))
    fork_case("[" OLD "," REQ("m3") "," SUM("m4", "m3", DONE) "," AFTER "]",
              "[" REQ("m3") "," SUM("m4", "m3", DONE) "," AFTER "]", 6, 4, "from the compaction request on");
    fork_case("[" OLD "," REQ("m3") "," SUM("m4", "m3", ",\"finish\":\"error\",\"error\":{\"name\":\"E\"}") "]",
              "[" OLD "," REQ("m3") "," SUM("m4", "m3", ",\"finish\":\"error\",\"error\":{\"name\":\"E\"}") "]", 4, 4,
              "a failed summary: everything stays");
    fork_case("[" OLD "," REQ("m3") "," SUM("m4", "m3", "") "]", "[" OLD "," REQ("m3") "," SUM("m4", "m3", "") "]", 4,
              4, "an unfinished summary: everything stays");
    fork_case("[" OLD "," REQ("m3") "," SUM("m4", "m3", DONE) "," REQ("m7") "," SUM("m8", "m7", DONE) "," AFTER "]",
              "[" REQ("m7") "," SUM("m8", "m7", DONE) "," AFTER "]", 8, 4, "two compactions: from the newest");
    fork_case("[" OLD "," REQ("x3") "," SUM("m4", "m3", DONE) "," AFTER "]",
              "[" REQ("x3") "," SUM("m4", "m3", DONE) "," AFTER "]", 6, 4,
              "ids rewritten by a fork: the nearest request before the summary");
    fork_case("[" OLD "," SUM("m4", "m3", DONE) "," AFTER "]", "[" OLD "," SUM("m4", "m3", DONE) "," AFTER "]", 5, 5,
              "a summary without its request: everything stays");
#undef OLD
#undef AFTER
    char *rendered = fork_render("[" REQ("m3") "," SUM("m4", "m3", DONE) "]");
    is_str(rendered,
           "--- user ---\n[the conversation before this point was compacted; its summary follows]\n--- assistant "
           "---\n" SUMMARY "\n",
           "the rendered history says what the compaction request stands for");
    free(rendered);
}

/* The sub-agent's own compaction after the fork point leaves nothing
 * inherited: its own long tool result is not cut. */
static void fork_own_compaction(void)
{
    fork_limits lim = {10, 100000};
    char *preamble = fork_preamble(&lim);
    char *h = xasprintf(
        "[" MSG("m1", "user", "", TEXT("old")) "," MSG("m2", "user", "", TEXT("%s")) "," REQ("m3") "," SUM(
            "m4", "m3", DONE) "," MSG("m5", "assistant", DONE,
                                      "{\"type\":\"tool\",\"tool\":\"read\",\"state\":{\"status\":"
                                      "\"completed\",\"input\":{},\"output\":\"a long result of the child\"}}") "]",
        preamble);
    fork_stats st;
    char *out = NULL;
    fork_process(h, &lim, &out, &st);
    is_int(st.messages_kept, 3, "the child's own compaction: from its request on");
    is_int(st.results_cut, 0, "nothing inherited is left to cut");
    like(out, "a long result of the child", "its own result is whole");
    free(out);
    free(h);
    free(preamble);
}

/* A parent that read a big file, answered, compacted and went on. */
static void compacted_parent(sim_host *h, const char *parent)
{
    sim_script(h, "long work",
               "{\"steps\":[{\"tool\":\"read\",\"input\":{\"filePath\":\"old.txt\"},\"output\":\"OLD TOOL OUTPUT\"},"
               "{\"reply\":\"OLD ANSWER\"}," COMPACT ",{\"reply\":\"PARENT CONTINUED\"}]}",
               1);
    sim_session_prompt(h, parent, J("{'parts':[{'type':'text','text':'long work'}]}"));
    if (sim_wait_messages(h, parent, 6, tap_timeout_ms(5000)) != 0 || sim_wait_idle(h, parent, tap_timeout_ms(5000)))
        bail_out("the parent's turn did not finish");
}

static void fork_of_compacted_parent(int host_fork)
{
    sim_host *h = sim_create();
    if (!host_fork)
        sim_without(h, "session_fork");
    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), NULL) != 1)
        bail_out("load: %s", sim_load_error(h));
    const char *how = host_fork ? "host fork" : "rendered";
    char *parent = sim_session_new(h, NULL, "main");
    compacted_parent(h, parent);
    sim_script(h, "pick it up", J("{'steps':[{'reply':'forked child done'}]}"), 1);
    char *out = t_tool(h, parent, "background_task",
                       J("{'description':'Forked','prompt':'pick it up','agent':'general','fork':true}"));
    is_int(t_rc, 0, "%s: the fork launches", how);
    char *id = t_find_id(out, "bg_");
    free(out);
    is_int(t_wait_status(h, parent, id, "completed", 5000), 0, "%s: the forked task completes", how);
    char *child = t_task_session(h, 0);
    char *seen = sim_session_model_input(h, child);
    like(seen, SUMMARY, "%s: the child's model sees the summary", how);
    like(seen, "PARENT CONTINUED", "%s: and what came after it", how);
    like(seen, "pick it up", "%s: and its task", how);
    unlike(seen, "OLD ANSWER", "%s: not the answer before the compaction", how);
    unlike(seen, "OLD TOOL OUTPUT", "%s: nor the tool results before it", how);
    if (host_fork)
        like(seen, J("'type':'compaction'"), "host fork: the compaction request is kept, as OpenCode shows it");
    else
        like(seen, "[the conversation before this point was compacted; its summary follows]",
             "rendered: the compaction is said in words");
    free(seen);
    free(child);
    free(id);
    free(parent);
    sim_destroy(h);
}

int main(void)
{
    sim_step_shape();
    sim_step_manual_and_failed();
    auto_compaction_results();
    claude_face_results();
    stray_idle_during_continue();
    resume_after_compaction();
    fork_process_cases();
    fork_own_compaction();
    fork_of_compacted_parent(1);
    fork_of_compacted_parent(0);
    return done_testing();
}

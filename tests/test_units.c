/* Pure pieces of the plugin, without threads or a host: options, the
 * completion decision from a message history, UTF-8 helpers, formatting. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/texts.h"
#include "base/map.h"
#include "base/options.h"
#include "model/outcome.h"
#include "model/shell_state.h"
#include "model/answer.h"
#include "testlib.h"
#include "base/util.h"

static void options_cases(void)
{
    options o;
    char err[256];
    is_int(options_parse(&o, NULL, err, sizeof err), 0, "no options: defaults");
    is_int(o.poll_interval_ms, 1000, "default poll interval 1000 ms");
    is_int(o.notify_max_chars, 4000, "default notification cap 4000 characters");
    is_int(o.wake, WAKE_LAST, "default wake policy: last");
    is_int(options_parse(&o, J("{'poll_interval_ms':250,'wake':'always','notify_retries':0}"), err, sizeof err), 0,
           "valid options accepted");
    is_int(o.poll_interval_ms, 250, "poll interval set");
    is_int(o.wake, WAKE_ALWAYS, "wake policy set");
    is_int(o.notify_retries, 0, "retries set");
    ok(options_parse(&o, J("{'poll_interval_ms':10}"), err, sizeof err) != 0, "below range refused");
    is_int(o.poll_interval_ms, 1000, "a refused parse leaves the defaults");
    ok(options_parse(&o, J("{'poll_interval_ms':100.5}"), err, sizeof err) != 0, "fraction refused");
    ok(options_parse(&o, J("{'wake':'sometimes'}"), err, sizeof err) != 0, "unknown wake policy refused");
    is_str(err, "option 'wake' must be \"last\" or \"always\"", "wake error text");
    ok(options_parse(&o, "{not json", err, sizeof err) != 0, "malformed JSON refused");
    is_str(err, "plugin options must be a JSON object", "malformed JSON error text");
}

static void outcome_case(const char *json, const char *prev, outcome_kind kind, const char *text, const char *name)
{
    outcome out;
    outcome_from_messages(json, prev, true, &out);
    is_int(out.kind, kind, "%s: kind", name);
    if (text)
        is_str(out.text, text, "%s: text", name);
    outcome_free(&out);
}

static void outcome_cases(void)
{
    const char *done = J("[{'info':{'id':'m1','role':'user'},'parts':[{'type':'text','text':'q'}]},"
                         "{'info':{'id':'m2','role':'assistant','time':{'created':1,'completed':2}},"
                         "'parts':[{'type':'step-start'},{'type':'text','text':'answer'},"
                         "{'type':'text','text':'more'}]}]");
    outcome_case(done, NULL, OUTCOME_COMPLETED, "answer\nmore", "finished answer");
    outcome_case(done, "m2", OUTCOME_NONE, NULL, "the previous run's answer is not a new one");
    outcome_case(J("[{'info':{'id':'m1','role':'user'},'parts':[]}]"), NULL, OUTCOME_NONE, NULL,
                 "only the prompt: not finished");
    outcome_case(J("[{'info':{'id':'m2','role':'assistant','time':{'created':1}},'parts':[]}]"), NULL, OUTCOME_NONE,
                 NULL, "assistant still writing");
    outcome_case(J("[{'info':{'id':'m2','role':'assistant','time':{'created':1,'completed':2},"
                   "'error':{'name':'APIError','data':{'message':'overloaded'}}},'parts':[]}]"),
                 NULL, OUTCOME_ERROR, "APIError: overloaded", "assistant error");
    outcome_case(J("[{'info':{'id':'m1','role':'user'},'parts':[]},"
                   "{'info':{'id':'m2','role':'assistant','finish':'tool-calls'},"
                   "'parts':[{'type':'text','text':'found it'}]},"
                   "{'info':{'id':'m3','role':'assistant','finish':'stop'},'parts':[]}]"),
                 NULL, OUTCOME_COMPLETED, "found it", "text from an earlier message of the same turn");
    outcome_case(J("[{'info':{'id':'m3','role':'assistant','finish':'stop'},'parts':[]}]"), NULL, OUTCOME_COMPLETED,
                 "(the sub-agent finished without a text reply)", "no text at all");
    outcome_case("[]", NULL, OUTCOME_NONE, NULL, "empty history");
    outcome_case("not json", NULL, OUTCOME_NONE, NULL, "malformed history");
    outcome_case(NULL, NULL, OUTCOME_NONE, NULL, "no history");
}

/* OpenCode's messages around a compaction (1.18.33), as JSON fragments. */
#define M_PROMPT(id, text)                                                                                             \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"user\",\"agent\":\"general\"},"                                           \
    "\"parts\":[{\"type\":\"text\",\"text\":\"" text "\"}]}"
#define M_ANSWER(id, parts)                                                                                            \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"assistant\",\"mode\":\"general\",\"agent\":\"general\","                  \
    "\"time\":{\"created\":1,\"completed\":2},\"finish\":\"stop\"},\"parts\":[" parts "]}"
#define M_TEXT(text) "{\"type\":\"text\",\"text\":\"" text "\"}"
#define M_COMPACT(id, autoflag)                                                                                        \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"user\",\"agent\":\"general\","                                            \
    "\"model\":{\"providerID\":\"p\",\"modelID\":\"m\"}},\"parts\":[{\"type\":\"compaction\",\"auto\":" autoflag       \
    ",\"overflow\":false}]}"
#define M_SUMMARY(id, parent)                                                                                          \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"assistant\",\"parentID\":\"" parent "\",\"mode\":\"compaction\","         \
    "\"agent\":\"compaction\",\"summary\":true,\"time\":{\"created\":3,\"completed\":4},\"finish\":\"stop\","          \
    "\"cost\":0},\"parts\":[{\"type\":\"step-start\"}," M_TEXT("SUMMARY OF IT ALL") ",{\"type\":\"step-finish\"}]}"
#define M_SUMMARY_FAILED(id, parent)                                                                                   \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"assistant\",\"parentID\":\"" parent "\",\"mode\":\"compaction\","         \
    "\"agent\":\"compaction\",\"summary\":true,\"time\":{\"created\":3,\"completed\":4},\"finish\":\"error\","         \
    "\"error\":{\"name\":\"ContextOverflowError\",\"data\":{\"message\":\"too large\"}}},\"parts\":[]}"
#define M_CONTINUE(id)                                                                                                 \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"user\",\"agent\":\"general\"},\"parts\":[{\"type\":\"text\","             \
    "\"text\":\"" OUTCOME_CONTINUE_TEXT "\",\"synthetic\":true,\"metadata\":{\"compaction_continue\":true}}]}"

/* Also checks which message ended the run (the next run's prev_message_id). */
static void outcome_id_case(const char *json, const char *prev, outcome_kind kind, const char *text,
                            const char *message_id, const char *name)
{
    outcome out;
    outcome_from_messages(json, prev, true, &out);
    is_int(out.kind, kind, "%s: kind", name);
    is_str(out.text, text, "%s: text", name);
    is_str(out.message_id, message_id, "%s: the message that ended the run", name);
    outcome_free(&out);
}

/* A run that answered "REAL ANSWER"; the same run after an automatic
 * compaction and a continue turn that said "continued text". */
#define RUN M_PROMPT("m1", "do it") "," M_ANSWER("m2", M_TEXT("REAL ANSWER"))
#define COMPACTED                                                                                                      \
    RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER(                       \
        "m6", M_TEXT("continued text"))

#define AFTER_CONTINUE RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") ","
#define M_TOOL(name) "{\"type\":\"tool\",\"tool\":\"" name "\",\"state\":{\"status\":\"completed\"}}"
#define M_STEP(id, parts)                                                                                              \
    "{\"info\":{\"id\":\"" id "\",\"role\":\"assistant\",\"time\":{\"created\":1,\"completed\":2},"                    \
    "\"finish\":\"tool-calls\"},\"parts\":[" parts "]}"
#define MARK "\n\n" OUTCOME_CONTINUED_MARK "\n"

/* What the continue turn adds: tool calls, text that is more than a
 * sign-off; each turn after a compaction of its own. */
static void outcome_compaction_continuations(void)
{
    outcome_case("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("Done: nothing more to do.")) "]", NULL, OUTCOME_COMPLETED,
                 "REAL ANSWER", "a sign-off adds nothing");
    outcome_case("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("All tasks are COMPLETE.")) "]", NULL, OUTCOME_COMPLETED,
                 "REAL ANSWER", "a sign-off in capitals");
    outcome_case("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("Done.\\n\\nAlso fixed b.c")) "]", NULL, OUTCOME_COMPLETED,
                 "REAL ANSWER" MARK "Done.\n\nAlso fixed b.c", "two paragraphs are more than a sign-off");
    outcome_case("[" AFTER_CONTINUE M_STEP("m6", M_TOOL("bash") "," M_TOOL("read") "," M_TOOL("bash")) "," M_ANSWER(
                     "m7", M_TEXT("Done.")) "]",
                 NULL, OUTCOME_COMPLETED, "REAL ANSWER" MARK "Done.",
                 "a tool call and a sign-off: the sign-off is what it said");
    outcome_case("[" AFTER_CONTINUE M_STEP("m6", M_TOOL("bash") "," M_TOOL("read") "," M_TOOL("bash")) "," M_ANSWER(
                     "m7", "") "]",
                 NULL, OUTCOME_COMPLETED, "REAL ANSWER" MARK "(no text reply; it called: bash, read)",
                 "tool calls without text: their names");
    outcome_case("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("second")) "," M_COMPACT("m7", "true") "," M_SUMMARY(
                     "m8", "m7") "," M_CONTINUE("m9") "," M_ANSWER("m10", M_TEXT("third")) "]",
                 NULL, OUTCOME_COMPLETED, "REAL ANSWER" MARK "second" MARK "third",
                 "two compactions: each turn marked");
    outcome_case(
        "[" M_PROMPT("m1", "do it") "," M_STEP("m2", M_TEXT("looking") "," M_TOOL("read")) "," M_COMPACT(
            "m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER("m6", M_TEXT("the answer")) "]",
        NULL, OUTCOME_COMPLETED, "the answer",
        "a compaction in the middle of the work (after a tool step): no mark, the answer");
    outcome_case("[" M_PROMPT("m1", "do it") "," M_ANSWER("m2", "") "," M_COMPACT("m3", "true") "," M_SUMMARY(
                     "m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER("m6", M_TEXT("only this")) "]",
                 NULL, OUTCOME_COMPLETED, "only this", "no text before the compaction: the text after it, unmarked");
}

/* After a run that ended with m2 (its check read the answer before the
 * compaction): what the session says since. */
static void after_case(const char *json, int want, outcome_kind kind, const char *text, const char *name)
{
    outcome out;
    is_int(outcome_after_compaction(json, "m2", &out), want, "%s: watched", name);
    is_int(out.kind, kind, "%s: kind", name);
    is_str(out.text, text, "%s: text", name);
    outcome_free(&out);
}

static void outcome_after_compaction_cases(void)
{
    after_case("[" RUN "]", 0, OUTCOME_NONE, NULL, "nothing after the answer");
    after_case("[" M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "]", -1, OUTCOME_NONE, NULL,
               "the answer out of sight");
    after_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "]", 0, OUTCOME_NONE, NULL,
               "no continue message yet: nothing to wait for so far");
    after_case("[" RUN "," M_COMPACT("m3", "false") "," M_SUMMARY("m4", "m3") "]", 0, OUTCOME_NONE, NULL,
               "a manual compaction");
    after_case("[" AFTER_CONTINUE M_STEP("m6", M_TOOL("bash")) ",{\"info\":{\"id\":\"m7\",\"role\":\"assistant\","
                                                               "\"time\":{\"created\":5}},\"parts\":[]}]",
               1, OUTCOME_NONE, NULL, "the continue turn goes on");
    after_case("[" AFTER_CONTINUE M_STEP("m6", M_TOOL("bash")) "," M_ANSWER("m7", M_TEXT("more")) "]", 1,
               OUTCOME_COMPLETED, "REAL ANSWER" MARK "more", "the continue turn added something");
    after_case("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("Done.")) "]", 1, OUTCOME_COMPLETED, "REAL ANSWER",
               "a sign-off");
    after_case("[" AFTER_CONTINUE M_ANSWER("m6", "") "," M_PROMPT("m7", "and now?") "," M_ANSWER("m8", M_TEXT("x")) "]",
               0, OUTCOME_NONE, NULL, "a new prompt since: another run");
}

/* A resumed run (prev m2, the previous run's answer): the turn after a
 * compaction of the previous run is not its end; its own prompt starts it. */
static void outcome_resumed_after_compaction_cases(void)
{
    outcome out;
    outcome_from_messages("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("Done.")) "]", "m2", true, &out);
    is_int(out.kind, OUTCOME_NONE, "resumed: the compaction's turn before its prompt is not its end");
    outcome_free(&out);
    outcome_from_messages("[" AFTER_CONTINUE M_ANSWER("m6", M_TEXT("Done.")) "," M_PROMPT(
                              "m7", "what next") "," M_ANSWER("m8", M_TEXT("NEW ANSWER")) "]",
                          "m2", true, &out);
    is_int(out.kind, OUTCOME_COMPLETED, "resumed: after its prompt, its answer ends it");
    is_str(out.text, "NEW ANSWER", "resumed: with its own answer");
    outcome_free(&out);
}

/* An automatic compaction after the answer: the run goes on until the
 * continue turn has ended; a summary is never the result. */
static void outcome_auto_compaction_cases(void)
{
    outcome_id_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER(
                        "m6", "{\"type\":\"step-start\"},{\"type\":\"step-finish\"}") "]",
                    NULL, OUTCOME_COMPLETED, "REAL ANSWER", "m6",
                    "auto compaction, continue turn without text: the answer before it");
    outcome_id_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER(
                        "m6", M_TEXT("continued text")) "]",
                    NULL, OUTCOME_COMPLETED, "REAL ANSWER\n\n" OUTCOME_CONTINUED_MARK "\ncontinued text", "m6",
                    "continue turn with text: the answer, then its text after the mark");
    outcome_compaction_continuations();
    outcome_after_compaction_cases();
    outcome_resumed_after_compaction_cases();
    outcome_case("[" RUN "," M_COMPACT("m3", "true") "]", NULL, OUTCOME_NONE, NULL,
                 "compaction asked, no summary yet: not finished");
    outcome_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "]", NULL, OUTCOME_NONE, NULL,
                 "automatic summary done, continue to come: not finished");
    outcome_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "]", NULL,
                 OUTCOME_NONE, NULL, "continue message newest: not finished");
    outcome_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE(
                     "m5") ","
                           "{\"info\":{\"id\":\"m6\",\"role\":\"assistant\",\"time\":{\"created\":5}},\"parts\":[]}]",
                 NULL, OUTCOME_NONE, NULL, "continue turn still writing: not finished");
    outcome_case("[" M_PROMPT("m1", "do it") "," M_ANSWER("m2", "") "," M_COMPACT("m3", "true") "," M_SUMMARY(
                     "m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER("m6", "") "]",
                 NULL, OUTCOME_COMPLETED, "(the sub-agent finished without a text reply)",
                 "no real text at all: never the summary");
}

/* Manual and failed summaries, resumes, and the edges of recognising them. */
static void outcome_other_compaction_cases(void)
{
    outcome_id_case("[" RUN "," M_COMPACT("m3", "false") "," M_SUMMARY("m4", "m3") "]", NULL, OUTCOME_COMPLETED,
                    "REAL ANSWER", "m4", "manual compaction (no continue): the answer before it");
    outcome_case("[" RUN "," M_COMPACT("m3", "false") "," M_SUMMARY("m4", "m3") "]", "m4", OUTCOME_NONE, NULL,
                 "a manual summary that ended the previous run ends no new one");
    outcome_id_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY_FAILED("m4", "m3") "]", NULL, OUTCOME_COMPLETED,
                    "REAL ANSWER", "m4", "failed summary: not an error, the answer stands");
    outcome_case("[" COMPACTED "]", "m6", OUTCOME_NONE, NULL, "resume sent, its prompt not stored yet: not finished");
    outcome_id_case("[" COMPACTED "," M_PROMPT("m7", "and now?") "," M_ANSWER("m8", M_TEXT("NEW ANSWER")) "]", "m6",
                    OUTCOME_COMPLETED, "NEW ANSWER", "m8", "resume of a compacted task: the new answer");
    outcome_case("[" COMPACTED "," M_PROMPT("m7", "and now?") "," M_ANSWER("m8", "") "]", "m6", OUTCOME_COMPLETED,
                 "(the sub-agent finished without a text reply)", "a resume's run stops at its own prompt");
    outcome_case("[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE(
                     "m5") ","
                           "{\"info\":{\"id\":\"m6\",\"role\":\"assistant\",\"time\":{\"created\":5,\"completed\":6},"
                           "\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"overloaded\"}}},\"parts\":[]}]",
                 NULL, OUTCOME_ERROR, "APIError: overloaded", "the continue turn failing is the task's error");
    outcome_case(
        "[" RUN "," M_COMPACT("m3", "true") "," M_SUMMARY(
            "m4", "m3") ","
                        "{\"info\":{\"id\":\"m5\",\"role\":\"user\"},\"parts\":[{\"type\":\"text\",\"synthetic\":true,"
                        "\"text\":\"" OUTCOME_CONTINUE_TEXT "\"}]}," M_ANSWER("m6", "") "]",
        NULL, OUTCOME_COMPLETED, "REAL ANSWER", "a synthetic continue text without the metadata flag");
    outcome_case("[" RUN "," M_PROMPT("m3", OUTCOME_CONTINUE_TEXT) "," M_ANSWER("m4", "") "]", NULL, OUTCOME_COMPLETED,
                 "(the sub-agent finished without a text reply)", "the same words typed by a user are a prompt");
    outcome_case(
        "[" M_PROMPT("m1", "do it") "," M_ANSWER(
            "m2", "") ","
                      "{\"info\":{\"id\":\"m3\",\"role\":\"user\"},\"parts\":[{\"type\":\"compaction\",\"auto\":true,"
                      "\"overflow\":true}]}," M_SUMMARY("m4", "m3") "," M_PROMPT("m5", "do it") "," M_ANSWER(
                          "m6", M_TEXT("after the replay")) "]",
        NULL, OUTCOME_COMPLETED, "after the replay", "overflow: the replayed prompt's answer");
    outcome_case("[" M_COMPACT("m3", "true") "," M_SUMMARY("m4", "m3") "," M_CONTINUE("m5") "," M_ANSWER(
                     "m6", M_TEXT("late")) "]",
                 NULL, OUTCOME_COMPLETED, "late", "the run's prompt out of sight (the newest messages only)");
}

static void utf8_cases(void)
{
    ok(utf8_valid("h\xc3\xa9llo", 6), "valid two-byte sequence");
    ok(!utf8_valid("\xff", 1), "0xff is invalid");
    ok(!utf8_valid("\xc0\xaf", 2), "overlong is invalid");
    ok(!utf8_valid("\xed\xa0\x80", 3), "surrogate is invalid");
    ok(!utf8_valid("\xe2\x82", 2), "truncated sequence is invalid");
    is_int(utf8_count("a\xc3\xa9\xe2\x82\xac", 6), 3, "three characters");
    is_int(utf8_count("abcdefg\xc3\xa9\xe2\x82\xac"
                      "abcdefghij\xf0\x9f\x98\x80",
                      26),
           20, "twenty characters counted across the 8-byte steps");
    is_int(utf8_offset("a\xc3\xa9\xe2\x82\xac", 6, 2), 3, "offset of the third character");
    is_int(utf8_floor("a\xc3\xa9", 3, 2), 1, "a cut never splits a sequence");
    char buf[32];
    format_duration(buf, sizeof buf, 12345);
    is_str(buf, "12.3s", "seconds with a tenth");
    format_duration(buf, sizeof buf, 125000);
    is_str(buf, "2m 05s", "minutes and seconds");
    format_duration(buf, sizeof buf, 3600000 * 2 + 180000);
    is_str(buf, "2h 03m", "hours and minutes");
}

/* A running agent's answer as the events tell it (model/answer.c). */
static void take_case(const event_answer *a, const char *prev, const char *want, const char *name)
{
    char *mid = NULL, *text = answer_take(a, prev, &mid);
    is_str(text, want, "%s", name);
    if (want)
        is_str(mid, "msg_2", "%s: the message it ends", name);
    free(text);
    free(mid);
}

static void event_answer_cases(void)
{
    event_answer a = {0};
    answer_note_part(&a, "msg_1", "prt_1", "looking", true);
    answer_note_message(&a, "msg_1", false);
    take_case(&a, NULL, NULL, "a tool-call step's text is no answer");
    answer_note_part(&a, "msg_2", "prt_3", "", false);
    answer_note_message(&a, "msg_2", true);
    take_case(&a, NULL, NULL, "a text part that started and has not ended: no answer from the events");
    answer_note_part(&a, "msg_2", "prt_3", "second", true);
    answer_note_part(&a, "msg_2", "prt_2", "first", true);
    answer_note_part(&a, "msg_2", "prt_4", "", true);
    take_case(&a, NULL, "first\nsecond", "the ended parts in part order, empty ones left out, joined by newlines");
    answer_note_part(&a, "msg_2", "prt_2", "", false);
    take_case(&a, NULL, "first\nsecond", "a late start after a part's end changes nothing");
    take_case(&a, "msg_2", NULL, "the previous run's answer is not this run's");
    answer_note_message(&a, "msg_3", false);
    take_case(&a, NULL, NULL, "a newer message: the turn went on");
    answer_note_message(&a, "msg_4", true);
    take_case(&a, NULL, NULL, "a turn-ending message without text: read the messages");
    answer_clear(&a);
    take_case(&a, NULL, NULL, "cleared: nothing");
}

/* ocbg's notices in a launcher task's session (max_depth > 1). */
#define M_NOTIFICATION(id, text) M_PROMPT(id, OUTCOME_NOTIFICATION_PREFIX text)

static void notice_cases(void)
{
    const char *quiet_after = "[" M_PROMPT("m1", "work") "," M_ANSWER("m2", M_TEXT("my answer")) "," M_NOTIFICATION(
        "m3", "task completed: bg_1") "]";
    outcome_case(quiet_after, NULL, OUTCOME_COMPLETED, "my answer", "a quiet notice after the answer is stepped over");
    outcome out;
    outcome_from_messages(quiet_after, NULL, false, &out);
    is_int(out.kind, OUTCOME_NONE, "a notice just pushed to wake the task: its run goes on");
    outcome_free(&out);
    const char *woken = "[" M_PROMPT("m1", "work") "," M_ANSWER("m2", M_TEXT("first")) "," M_NOTIFICATION(
        "m3", "task completed: bg_1") "," M_ANSWER("m4", M_TEXT("after my tasks")) "]";
    outcome_case(woken, "m2", OUTCOME_COMPLETED, "after my tasks", "the answer after the wake is the result");
    const char *textless = "[" M_PROMPT("m1", "work") "," M_ANSWER("m2", M_TEXT("first")) "," M_NOTIFICATION(
        "m3", "task completed: bg_1") "," M_ANSWER("m4", "") "]";
    outcome_case(textless, "m2", OUTCOME_COMPLETED, "first", "a notice is no boundary of the answer");
    const char *preamble = "[" M_ANSWER("m1", M_TEXT("inherited")) "," M_PROMPT("m2", "[ocbg] You are a forked") "]";
    outcome_case(preamble, NULL, OUTCOME_NONE, NULL, "the fork preamble is a prompt, not a notice");
}

/* A map value that owns its key, as the registry's tasks do. */
typedef struct keyed {
    char key[16];
    int value;
} keyed;

static const char *keyed_key_of(const void *k)
{
    return ((const keyed *)k)->key;
}

/* The registry's map: random puts, replaces and deletes (deletion moves
 * entries back within their runs) agree with a plain array of the truth.
 * Each key has two values that own equal copies of it: a put replaces
 * whichever is there. */
static void map_cases(void)
{
    enum {
        KEYS = 3000
    };
    static keyed values[KEYS][2];
    static int which[KEYS]; /* 0: absent, else the value stored (1 or 2) */
    map m;
    map_init(&m, keyed_key_of);
    unsigned seed = 12345, wrong = 0;
    for (int i = 0; i < KEYS; i++)
        for (int c = 0; c < 2; c++) {
            snprintf(values[i][c].key, sizeof values[i][c].key, "bg_%08x", (unsigned)i * 2654435761u);
            values[i][c].value = c + 1;
        }
    for (int step = 0; step < 60000; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)((seed >> 8) % KEYS);
        if ((seed >> 4) % 3 != 0) {
            int c = (int)((seed >> 20) & 1);
            map_put(&m, &values[k][c]);
            which[k] = c + 1;
        } else {
            char probe[16]; /* an equal key the map does not hold */
            memcpy(probe, values[k][0].key, sizeof probe);
            keyed *v = map_del(&m, probe);
            wrong += which[k] ? v != &values[k][which[k] - 1] : v != NULL;
            which[k] = 0;
        }
    }
    size_t present = 0;
    for (int k = 0; k < KEYS; k++) {
        keyed *v = map_get(&m, values[k][1].key);
        present += which[k] != 0;
        wrong += which[k] ? v != &values[k][which[k] - 1] : v != NULL;
    }
    is_int((int)wrong, 0, "map: every lookup and delete agrees with what was put and deleted");
    is_int((int)m.count, (int)present, "map: its count is the keys present");
    map_free(&m);

    /* A second value with an equal key replaces the first. */
    keyed first = {"ses_a", 1}, second = {"ses_a", 2};
    map_init(&m, keyed_key_of);
    map_put(&m, &first);
    map_put(&m, &second);
    keyed *got = map_get(&m, "ses_a");
    is_int(got ? got->value : 0, 2, "map: a put under an equal key replaces the value, and get returns the new one");
    is_int((int)m.count, 1, "map: a replacing put adds no entry");
    got = map_del(&m, first.key);
    is_int(got ? got->value : 0, 2, "map: delete by an equal key removes the new value");
    is_int(map_get(&m, "ses_a") == NULL && m.count == 0, 1, "map: after the delete the key is absent");
    map_free(&m);
}

/* A command's output written in pieces of `piece` bytes (a pipe's reads)
 * into buffers of output_cap bytes, then shrunk as its end does: the same
 * text before and after, in whole and cut to 100 characters, and buffers
 * of just what it holds. */
static void shrink_case(const char *name, size_t output_cap, size_t nbytes, size_t piece)
{
    shell_state *s = shell_state_new("make", "/tmp", output_cap);
    char buf[97];
    for (size_t done = 0; done < nbytes;) {
        size_t n = nbytes - done < piece ? nbytes - done : piece;
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)('a' + (done + i) % 26);
        buf[n - 1] = (done + n) % 5 == 0 ? '\n' : buf[n - 1];
        shell_output_append(&s->out, buf, n);
        done += n;
    }
    char *before = shell_output_text(s, SIZE_MAX), *cut_before = shell_output_text(s, 100);
    size_t head_len = s->out.head_len, tail_len = s->out.tail_len;
    shell_output_shrink(&s->out);
    char *after = shell_output_text(s, SIZE_MAX), *cut_after = shell_output_text(s, 100);
    char what[160];
    snprintf(what, sizeof what, "shrink, %s: the same text after", name);
    is_str(after, before, what);
    snprintf(what, sizeof what, "shrink, %s: the same text cut to 100 characters", name);
    is_str(cut_after, cut_before, what);
    snprintf(what, sizeof what, "shrink, %s: buffers of what they hold, nothing counted lost", name);
    ok(s->out.head_cap == head_len && s->out.tail_cap == tail_len && s->out.tail_len == tail_len &&
           s->out.total == nbytes,
       what);
    /* As a restart or a read-back from the store rebuilds it. */
    shell_output_set_text(&s->out, xstrdup(before));
    char *again = shell_output_text(s, 100);
    snprintf(what, sizeof what, "shrink, %s: rebuilt from its stored text, it shows the same", name);
    is_str(again, cut_before, what);
    free(before);
    free(cut_before);
    free(after);
    free(cut_after);
    free(again);
    shell_state_free(s);
}

static void shell_shrink_cases(void)
{
    shrink_case("no output", 64, 0, 7);
    shrink_case("shorter than the head", 64, 20, 7);
    shrink_case("the head full, the ring not yet", 64, 50, 7);
    shrink_case("the ring just full", 64, 64, 7);
    shrink_case("the ring wrapped", 64, 75, 7);
    shrink_case("bytes dropped in the middle", 64, 1000, 13);
    shrink_case("one write larger than the ring", 64, 97, 97);

    /* The note of what was left out stays right. */
    shell_state *s = shell_state_new("seq", NULL, 8);
    shell_output_append(&s->out, "0123456789abcdef", 16);
    shell_output_shrink(&s->out);
    char *text = shell_output_text(s, SIZE_MAX);
    is_str(text, "0123\n[... 8 bytes of output left out here ...]\ncdef", "shrink: the note counts the bytes left out");
    free(text);
    shell_output_drop(&s->out);
    ok(s->out.stored_only && !s->out.head && !s->out.tail, "drop: no buffers, marked as in the store only");
    shell_state_free(s);

    /* Buffers come with the output: none for a queued or quiet command, a
     * small head for a short one, the ring once the head is full. */
    s = shell_state_new("make", NULL, 1 << 20);
    ok(!s->out.head && !s->out.tail, "a new command holds no output buffers");
    shell_output_append(&s->out, "built\n", 6);
    ok(s->out.head_size == 4096 && !s->out.tail, "a short output: a 4 KiB head, no ring");
    char *big = xmalloc(600 << 10);
    for (size_t i = 0; i < (600 << 10); i++)
        big[i] = (char)('a' + i % 26);
    shell_output_append(&s->out, big, 600 << 10);
    ok(s->out.head_size == (512 << 10) && s->out.head_len == (512 << 10) && s->out.tail &&
           s->out.tail_len == (88 << 10) + 6,
       "past the head's half of the cap: the head full, the rest in the ring");
    text = shell_output_text(s, SIZE_MAX);
    ok(strncmp(text, "built\nabc", 9) == 0 && strlen(text) == 6 + (600 << 10) &&
           memcmp(text + strlen(text) - 26, big + (600 << 10) - 26, 26) == 0,
       "and its text is all of it, in order");
    free(text);
    free(big);
    shell_state_free(s);
}

int main(void)
{
    shell_shrink_cases();
    map_cases();
    options_cases();
    outcome_cases();
    notice_cases();
    event_answer_cases();
    outcome_auto_compaction_cases();
    outcome_other_compaction_cases();
    utf8_cases();
    return done_testing();
}

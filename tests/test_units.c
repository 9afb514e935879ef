/* Pure pieces of the plugin, without threads or a host: options, the
 * completion decision from a message history, UTF-8 helpers, formatting. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "options.h"
#include "outcome.h"
#include "permission.h"
#include "tap.h"
#include "util.h"

static void options_cases(void)
{
    options o;
    char err[256];
    is_int(options_parse(&o, NULL, err, sizeof err), 0, "no options: defaults");
    is_int(o.poll_interval_ms, 1000, "default poll interval 1000 ms");
    is_int(o.notify_max_chars, 4000, "default notification cap 4000 characters");
    is_int(o.wake, WAKE_LAST, "default wake policy: last");
    is_int(options_parse(&o, "{\"poll_interval_ms\":250,\"wake\":\"always\",\"notify_retries\":0}", err, sizeof err),
           0, "valid options accepted");
    is_int(o.poll_interval_ms, 250, "poll interval set");
    is_int(o.wake, WAKE_ALWAYS, "wake policy set");
    is_int(o.notify_retries, 0, "retries set");
    ok(options_parse(&o, "{\"poll_interval_ms\":10}", err, sizeof err) != 0, "below range refused");
    is_int(o.poll_interval_ms, 1000, "a refused parse leaves the defaults");
    ok(options_parse(&o, "{\"poll_interval_ms\":100.5}", err, sizeof err) != 0, "fraction refused");
    ok(options_parse(&o, "{\"wake\":\"sometimes\"}", err, sizeof err) != 0, "unknown wake policy refused");
    is_str(err, "option 'wake' must be \"last\" or \"always\"", "wake error text");
    ok(options_parse(&o, "{not json", err, sizeof err) != 0, "malformed JSON refused");
    is_str(err, "plugin options must be a JSON object", "malformed JSON error text");
}

static void outcome_case(const char *json, const char *prev, outcome_kind kind, const char *text, const char *name)
{
    outcome out;
    outcome_from_messages(json, prev, &out);
    is_int(out.kind, kind, "%s: kind", name);
    if (text)
        is_str(out.text, text, "%s: text", name);
    outcome_free(&out);
}

static void outcome_cases(void)
{
    const char *done = "[{\"info\":{\"id\":\"m1\",\"role\":\"user\"},\"parts\":[{\"type\":\"text\",\"text\":\"q\"}]},"
                       "{\"info\":{\"id\":\"m2\",\"role\":\"assistant\",\"time\":{\"created\":1,\"completed\":2}},"
                       "\"parts\":[{\"type\":\"step-start\"},{\"type\":\"text\",\"text\":\"answer\"},"
                       "{\"type\":\"text\",\"text\":\"more\"}]}]";
    outcome_case(done, NULL, OUTCOME_COMPLETED, "answer\nmore", "finished answer");
    outcome_case(done, "m2", OUTCOME_NONE, NULL, "the previous run's answer is not a new one");
    outcome_case("[{\"info\":{\"id\":\"m1\",\"role\":\"user\"},\"parts\":[]}]", NULL, OUTCOME_NONE, NULL,
                 "only the prompt: not finished");
    outcome_case("[{\"info\":{\"id\":\"m2\",\"role\":\"assistant\",\"time\":{\"created\":1}},\"parts\":[]}]", NULL,
                 OUTCOME_NONE, NULL, "assistant still writing");
    outcome_case("[{\"info\":{\"id\":\"m2\",\"role\":\"assistant\",\"time\":{\"created\":1,\"completed\":2},"
                 "\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"overloaded\"}}},\"parts\":[]}]",
                 NULL, OUTCOME_ERROR, "APIError: overloaded", "assistant error");
    outcome_case("[{\"info\":{\"id\":\"m1\",\"role\":\"user\"},\"parts\":[]},"
                 "{\"info\":{\"id\":\"m2\",\"role\":\"assistant\",\"finish\":\"tool-calls\"},"
                 "\"parts\":[{\"type\":\"text\",\"text\":\"found it\"}]},"
                 "{\"info\":{\"id\":\"m3\",\"role\":\"assistant\",\"finish\":\"stop\"},\"parts\":[]}]",
                 NULL, OUTCOME_COMPLETED, "found it", "text from an earlier message of the same turn");
    outcome_case("[{\"info\":{\"id\":\"m3\",\"role\":\"assistant\",\"finish\":\"stop\"},\"parts\":[]}]", NULL,
                 OUTCOME_COMPLETED, "(the sub-agent finished without a text reply)", "no text at all");
    outcome_case("[]", NULL, OUTCOME_NONE, NULL, "empty history");
    outcome_case("not json", NULL, OUTCOME_NONE, NULL, "malformed history");
    outcome_case(NULL, NULL, OUTCOME_NONE, NULL, "no history");
}

static void utf8_cases(void)
{
    ok(utf8_valid("h\xc3\xa9llo", 6), "valid two-byte sequence");
    ok(!utf8_valid("\xff", 1), "0xff is invalid");
    ok(!utf8_valid("\xc0\xaf", 2), "overlong is invalid");
    ok(!utf8_valid("\xed\xa0\x80", 3), "surrogate is invalid");
    ok(!utf8_valid("\xe2\x82", 2), "truncated sequence is invalid");
    is_int(utf8_count("a\xc3\xa9\xe2\x82\xac", 6), 3, "three characters");
    is_int(utf8_count("abcdefg\xc3\xa9\xe2\x82\xac" "abcdefghij\xf0\x9f\x98\x80", 26), 20,
           "twenty characters counted across the 8-byte steps");
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

/* The patterns a command line is asked under: every simple command, as
 * OpenCode's bash tool splits it, and each command's "always" prefix. */
static void bash_pattern_case(const char *command, const char *patterns, const char *always)
{
    cJSON *p = cJSON_CreateArray(), *a = cJSON_CreateArray();
    bash_patterns(command, p, a);
    char *ps = cJSON_PrintUnformatted(p), *as = cJSON_PrintUnformatted(a);
    char *name = xstrdup(command);
    for (char *c = name; *c; c++)
        if (*c == '\n')
            *c = '/';
    is_str(ps, patterns, "patterns of: %s", name);
    is_str(as, always, "always of: %s", name);
    free(name);
    free(ps);
    free(as);
    cJSON_Delete(p);
    cJSON_Delete(a);
}

static void bash_pattern_cases(void)
{
    bash_pattern_case("ls -la", "[\"ls -la\"]", "[\"ls *\"]");
    bash_pattern_case("git status && git push origin main", "[\"git status\",\"git push origin main\"]",
                      "[\"git status *\",\"git push *\"]");
    bash_pattern_case("make 2>&1 | tee log; echo done &", "[\"make 2>&1\",\"tee log\",\"echo done\"]",
                      "[\"make *\",\"tee *\",\"echo *\"]");
    bash_pattern_case("echo \"a; b\" 'c && d'", "[\"echo \\\"a; b\\\" 'c && d'\"]", "[\"echo *\"]");
    bash_pattern_case("echo $(rm -rf /tmp/x) `id`", "[\"rm -rf /tmp/x\",\"id\",\"echo $(rm -rf /tmp/x) `id`\"]",
                      "[\"rm *\",\"id *\",\"echo *\"]");
    bash_pattern_case("(cd sub && rm -f a) > out", "[\"cd sub\",\"rm -f a\"]", "[\"cd *\",\"rm *\"]");
    bash_pattern_case("echo \"$(whoami)\"", "[\"whoami\",\"echo \\\"$(whoami)\\\"\"]",
                      "[\"whoami *\",\"echo *\"]");
    bash_pattern_case("npm run build -- --prod\nnpm test", "[\"npm run build -- --prod\",\"npm test\"]",
                      "[\"npm run build *\",\"npm test *\"]");
    bash_pattern_case("git -C repo log", "[\"git -C repo log\"]", "[\"git *\"]");
    bash_pattern_case("echo 'unclosed", "[\"echo 'unclosed\"]", "[\"echo *\"]");
    bash_pattern_case(";;", "[\";;\"]", "[\";; *\"]");
}

int main(void)
{
    bash_pattern_cases();
    options_cases();
    outcome_cases();
    utf8_cases();
    return done_testing();
}

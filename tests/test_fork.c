/* Fork: the context processing at its edges, and fork=true on the
 * simulated host, with and without host fork support, checked by what the
 * child's model actually sees. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork.h"
#include "testlib.h"
#include "base/util.h"

static const fork_limits LIM = {1500, 100000};

/* A history of one tool part whose output is `output`. */
static char *tool_history(const char *output)
{
    cJSON *msgs = cJSON_CreateArray(), *m = cJSON_CreateObject(), *info = cJSON_CreateObject();
    cJSON_AddStringToObject(info, "id", "msg_1");
    cJSON_AddStringToObject(info, "role", "assistant");
    cJSON_AddItemToObject(m, "info", info);
    cJSON *parts = cJSON_AddArrayToObject(m, "parts"), *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "tool");
    cJSON_AddStringToObject(p, "tool", "read");
    cJSON_AddStringToObject(p, "callID", "call_42");
    cJSON *state = cJSON_AddObjectToObject(p, "state");
    cJSON_AddStringToObject(state, "status", "completed");
    cJSON *input = cJSON_AddObjectToObject(state, "input");
    cJSON_AddStringToObject(input, "filePath", "/src/big.c");
    cJSON_AddStringToObject(state, "output", output);
    cJSON_AddItemToArray(parts, p);
    cJSON_AddItemToArray(msgs, m);
    char *s = cJSON_PrintUnformatted(msgs);
    cJSON_Delete(msgs);
    return s;
}

static char *processed_output(const char *history, const fork_limits *lim)
{
    char *out = NULL;
    if (fork_process(history, lim, &out, NULL) != 0)
        return NULL;
    cJSON *m = cJSON_Parse(out);
    cJSON *state =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "parts"), 0), "state");
    char *o = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(state, "output")));
    cJSON_Delete(m);
    free(out);
    return o;
}

static void cutting_edges(void)
{
    char *s1500 = t_repeat("x", 1500), *s1501 = t_repeat("x", 1501);
    char *h = tool_history(s1500);
    char *o = processed_output(h, &LIM);
    is_str(o, s1500, "exactly 1500 characters: untouched");
    free(o);
    free(h);
    h = tool_history(s1501);
    o = processed_output(h, &LIM);
    ok(o && strncmp(o, s1500, 1500) == 0 && o[1500] == '\n', "1501 characters: the first 1500 kept");
    like(o, "the original was 1501 characters", "the cut says how long the original was");
    free(o);
    char *out = NULL;
    fork_process(h, &LIM, &out, NULL);
    like(out, J("'tool':'read'"), "the tool's name is kept");
    like(out, J("'callID':'call_42'"), "the call id is kept");
    like(out, J("'input':{'filePath':'/src/big.c'}"), "the input is kept");
    free(out);
    free(h);

    /* 1501 two-byte and four-byte characters: cut by characters, never inside one. */
    char *e = t_repeat("\xc3\xa9", 1501);
    h = tool_history(e);
    o = processed_output(h, &LIM);
    ok(o && strncmp(o, e, 3000) == 0 && o[3000] == '\n', "two-byte characters: 1500 characters = 3000 bytes kept");
    ok(o && utf8_valid(o, strlen(o)), "the cut text is valid UTF-8");
    free(o);
    free(h);
    free(e);
    e = t_repeat("\xf0\x9f\x98\x80", 1600);
    h = tool_history(e);
    o = processed_output(h, &LIM);
    ok(o && utf8_valid(o, strlen(o)) && strncmp(o, e, 6000) == 0 && o[6000] == '\n',
       "four-byte characters: cut after the 1500th");
    like(o, "the original was 1600 characters", "counted in characters, not bytes");
    free(o);
    free(h);
    free(e);
    e = t_repeat("\xc3\xa9", 1500);
    h = tool_history(e);
    o = processed_output(h, &LIM);
    is_str(o, e, "1500 two-byte characters (3000 bytes) are not cut");
    free(o);
    free(h);
    free(e);
    free(s1500);
    free(s1501);
}

/* The first `chars` characters of s, counted the plain way (test oracle). */
static size_t prefix_bytes(const char *s, size_t chars)
{
    size_t i = 0, seen = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && seen++ == chars)
            break;
    return i;
}

static void cut_and_count_edges(void)
{
    char *s1500 = t_repeat("x", 1500), *s1501 = t_repeat("x", 1501), *h = tool_history(s1501);
    char *o = processed_output(h, &LIM);
    char *want = xasprintf(
        "%s\n[... cut for the forked context: the original was 1501 characters; re-run the tool for all of it]", s1500);
    is_str(o, want, "the exact cut text: the kept characters, then the marker");
    free(want), free(o), free(h), free(s1500), free(s1501);

    /* Every cut point over characters of 1 to 4 bytes at every alignment. */
    char *mixed = t_repeat("a\xc3\xa9\xe4\xbd\xa0\xf0\x9f\x98\x80"
                           "bc",
                           60); /* 360 characters */
    int bad = 0;
    for (size_t max = 1; max < 360; max++) {
        char *cut = fork_cut_text(mixed, max);
        size_t keep = prefix_bytes(mixed, max);
        const char *tail =
            "\n[... cut for the forked context: the original was 360 characters; re-run the tool for all of it]";
        bad += !cut || strncmp(cut, mixed, keep) != 0 || strcmp(cut + keep, tail) != 0;
        free(cut);
    }
    is_int(bad, 0, "a cut at each of 359 points keeps exactly that many whole characters");
    ok(fork_cut_text(mixed, 360) == NULL, "a text of exactly the limit is not cut");
    free(mixed);

    /* Long texts, past the counters' 255 blocks of 16 bytes, at odd offsets. */
    char *e = t_repeat("\xc3\xa9", 10000), *cjk = t_repeat("\xe4\xbd\xa0", 5000),
         *emoji = t_repeat("\xf0\x9f\x98\x80", 10000);
    char *ascii = t_repeat("abcd", 25000);
    is_int(fork_estimate_tokens(e, strlen(e)), 10000, "10,000 two-byte characters: 10,000 tokens");
    is_int(fork_estimate_tokens(cjk, strlen(cjk)), 5000, "5,000 CJK characters: 5,000 tokens");
    is_int(fork_estimate_tokens(emoji, strlen(emoji)), 10000, "10,000 emoji: 10,000 tokens");
    is_int(fork_estimate_tokens(ascii + 1, strlen(ascii) - 1), 25000, "99,999 ASCII characters: 25,000 tokens");
    is_int(fork_estimate_tokens(e + 1, 201), 100, "starting inside a character: its continuation byte counts nothing");
    free(e), free(cjk), free(emoji), free(ascii);
}

/* A history in the host's own spacing and escapes. */
#define SPACED_M1                                                                                                      \
    "{ \"info\": {\"id\": \"m1\", \"role\": \"user\"},\n  \"parts\": [{\"type\": \"text\", \"text\": \"caf\\u00e9 "    \
    "\\/ 1.50\"}] }"

static void kept_as_they_were(void)
{
    char *x = t_repeat("x", 2000), *y = t_repeat("y", 1600), *out = NULL;
    /* m2: spaced, its error before its output, the output's key escaped. */
    const char *m2 =
        "{\"info\":{\"id\":\"m2\"},\"parts\":[ {\"type\":\"tool\",\"tool\":\"read\",\"callID\":\"c\",\"state\": "
        "{\"input\":{\"n\":1.0}, \"error\" : \"%s\", \"outp\\u0075t\":\"%s\"}} ]}";
    char *m2_in = xasprintf(m2, y, x);
    char *h = xasprintf("\xEF\xBB\xBF [ " SPACED_M1 " ,\n %s ] trailing", m2_in);
    fork_stats st;
    is_int(fork_process(h, &LIM, &out, &st), 0, "a BOM, spacing and text after the array are read as cJSON reads them");
    char *cut_y =
        xasprintf("%.1500s\\n[... cut for the forked context: the original was 1600 characters; re-run the tool "
                  "for all of it]",
                  y);
    char *cut_x =
        xasprintf("%.1500s\\n[... cut for the forked context: the original was 2000 characters; re-run the tool "
                  "for all of it]",
                  x);
    char *m2_out = xasprintf(m2, cut_y, cut_x);
    char *want = xasprintf("[" SPACED_M1 ",%s]", m2_out);
    is_str(out, want, "kept messages are their input text byte for byte, with only the cut results put in");
    is_int(st.results_cut, 2, "the output under its escaped key and the error are both cut");
    free(want), free(m2_out), free(cut_x), free(cut_y), free(m2_in), free(out), free(h), free(x), free(y);
    const char *refused[] = {"[1,]",
                             "[1 2]",
                             "[\xEF\xBB\xBF"
                             "1]",
                             "[{\"a\":}]",
                             " ",
                             "[1,2"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
        is_int(fork_process(refused[i], &LIM, &out, NULL), -EINVAL, "not a JSON array: %s", refused[i]);
}

/* Twelve messages, each with a 3000-character tool result, under a cap that
 * keeps three: those three carry their cut results. */
static void cut_messages_dropped_and_kept(void)
{
    char *q = t_repeat("q", 3000);
    strbuf sb = {0};
    sb_puts(&sb, "[");
    for (int i = 0; i < 12; i++)
        sb_printf(&sb, "%s{\"info\":{\"id\":\"m%d\"},\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\"}}]}",
                  i ? "," : "", i, q);
    sb_puts(&sb, "]");
    char *h = sb_take(&sb), *out = NULL;
    fork_limits lim = {1500, 1300}; /* a cut message: about 400 tokens */
    fork_stats st;
    fork_process(h, &lim, &out, &st);
    is_int(st.messages_kept, 3, "three cut messages fit");
    is_int(st.results_cut, 12, "every inherited result was cut");
    char *cut = fork_cut_text(q, 1500);
    /* Per message: the cut text, "tool" and the id (a token each). */
    is_int(st.tokens_after, 3 * (fork_estimate_tokens(cut, strlen(cut)) + 2), "the estimate counts the cut texts");
    cJSON *got = cJSON_Parse(out);
    const char *first = fork_render(out);
    like(first, "--- message ---", "the answer renders");
    free((char *)first);
    is_str(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "info")->child), "m9", "from m9");
    int whole = 0;
    for (int i = 0; i < 3; i++) {
        cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(got, i), "parts"), 0);
        const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(part, "state"), "output"));
        whole += o && strcmp(o, cut) == 0;
    }
    is_int(whole, 3, "each kept message holds its cut result");
    cJSON_Delete(got);
    free(cut), free(out), free(h), free(q);
}

static void history_edges(void)
{
    char *out = NULL;
    fork_stats st;
    is_int(fork_process("[]", &LIM, &out, &st), 0, "empty history processes");
    is_str(out, "[]", "and stays empty");
    free(out);
    is_int(fork_process(J("{'not':'a list'}"), &LIM, &out, NULL), -EINVAL, "not an array is refused");
    ok(out == NULL, "with no output");
    is_int(fork_process(J("[1,'x',{'parts':[{'type':'tool'},{'type':'tool','state':{'output':7}},"
                          "{'type':'text'}]},{'info':null}]"),
                        &LIM, &out, &st),
           0, "malformed messages and parts do not stop it");
    is_str(out,
           J("[1,'x',{'parts':[{'type':'tool'},{'type':'tool','state':{'output':7}},{'type':'text'}]},"
             "{'info':null}]"),
           "and are kept as they are");
    free(out);

    /* One huge message over the cap is still kept: the newest always stays. */
    char *big = t_repeat("word ", 200000); /* 1,000,000 ASCII characters: 250,000 tokens */
    cJSON *m = cJSON_CreateArray(), *msg = cJSON_CreateObject(), *parts = cJSON_AddArrayToObject(msg, "parts");
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "type", "text");
    cJSON_AddStringToObject(p, "text", big);
    cJSON_AddItemToArray(parts, p);
    cJSON_AddItemToArray(m, msg);
    char *json = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    fork_process(json, &LIM, &out, &st);
    is_int(st.messages_kept, 1, "one huge message is kept");
    /* 1,000,000 / 4, plus one for the part type string "text". */
    is_int(st.tokens_after, 250001, "its estimate: a quarter token per ASCII character");
    free(out);
    free(json);
    free(big);

    /* Ten messages of 20,000 tokens each under a 100,000 cap: the five newest stay. */
    m = cJSON_CreateArray();
    char *chunk = t_repeat("abcd", 20000);
    for (int i = 0; i < 10; i++) {
        msg = cJSON_CreateObject();
        cJSON *info = cJSON_AddObjectToObject(msg, "info");
        char id[16];
        snprintf(id, sizeof id, "msg_%d", i);
        cJSON_AddStringToObject(info, "id", id);
        parts = cJSON_AddArrayToObject(msg, "parts");
        p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "type", "text");
        cJSON_AddStringToObject(p, "text", chunk);
        cJSON_AddItemToArray(parts, p);
        cJSON_AddItemToArray(m, msg);
    }
    json = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    fork_process(json, &LIM, &out, &st);
    ok(st.tokens_after <= 100000, "the total fits the cap: %zu tokens", st.tokens_after);
    is_int(st.messages_kept, 4, "the newest messages that fit are kept");
    unlike(out, "\"msg_5\"", "the oldest are dropped");
    like(out, "\"msg_9\"", "the newest is kept");
    free(out);
    free(json);
    free(chunk);

    /* Only tool parts, with outputs and errors over the limit. */
    char *long_text = t_repeat("y", 5000);
    char *h = tool_history(long_text);
    cJSON *hist = cJSON_Parse(h);
    cJSON *state =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(hist, 0), "parts"), 0), "state");
    cJSON_AddStringToObject(state, "error", long_text);
    free(h);
    h = cJSON_PrintUnformatted(hist);
    cJSON_Delete(hist);
    fork_process(h, &LIM, &out, &st);
    is_int(st.results_cut, 2, "a tool part's output and error are both cut");
    free(out);
    free(h);
    free(long_text);

    is_int(fork_estimate_tokens("abcdefgh", 8), 2, "eight ASCII characters: two tokens");
    is_int(fork_estimate_tokens("\xe4\xbd\xa0\xe5\xa5\xbd", 6), 2, "two CJK characters: two tokens");
    /* 22 bytes: 16 ASCII (4 tokens) and two CJK characters across the 8-byte steps. */
    is_int(fork_estimate_tokens("abcdefgh\xe4\xbd\xa0\xe5\xa5\xbd"
                                "abcdefgh",
                                22),
           6, "mixed text: 4 + 2 tokens");
}

static void after_the_fork_point(void)
{
    /* The inherited part is processed; what the child did after the preamble is not. */
    char *long_text = t_repeat("z", 4000);
    char *h = tool_history(long_text);
    cJSON *hist = cJSON_Parse(h);
    cJSON *pre = cJSON_CreateObject(), *parts = cJSON_AddArrayToObject(pre, "parts"), *p = cJSON_CreateObject();
    char *preamble = fork_preamble(&LIM);
    cJSON_AddStringToObject(p, "type", "text");
    cJSON_AddStringToObject(p, "text", preamble);
    cJSON_AddItemToArray(parts, p);
    cJSON_AddItemToArray(hist, pre);
    cJSON_AddItemToArray(hist, cJSON_Duplicate(cJSON_GetArrayItem(hist, 0), 1)); /* the child's own read */
    free(h);
    h = cJSON_PrintUnformatted(hist);
    cJSON_Delete(hist);
    fork_stats st;
    char *out = NULL;
    fork_process(h, &LIM, &out, &st);
    is_int(st.results_cut, 1, "only the inherited tool result is cut");
    like(out, long_text, "the child's own result after the fork point is whole");
    free(out);
    free(h);
    free(preamble);
    free(long_text);
}

/* A parent whose history holds one long tool result. */
static sim_host *parent_with_history(char **parent, const char *options)
{
    sim_host *h = t_host(options);
    *parent = sim_session_new(h, NULL, "main");
    char *big = t_repeat("0123456789", 500); /* 5000 characters */
    char script[6000];
    snprintf(script, sizeof script,
             "{\"steps\":[{\"tool\":\"read\",\"input\":{\"filePath\":\"big.txt\"},\"output\":\"%s\"},"
             "{\"reply\":\"I read big.txt\"}]}",
             big);
    free(big);
    sim_script(h, "read the big file", script, 1);
    sim_session_prompt(h, *parent, J("{'parts':[{'type':'text','text':'read the big file'}]}"));
    if (sim_wait_messages(h, *parent, 2, tap_timeout_ms(5000)) != 0 || sim_wait_idle(h, *parent, tap_timeout_ms(5000)))
        bail_out("the parent's turn did not finish");
    return h;
}

static void fork_with_host_support(void)
{
    char *parent;
    sim_host *h = parent_with_history(&parent, NULL);
    sim_script(h, "continue the analysis", J("{'steps':[{'reply':'forked child done'}]}"), 1);
    char *out = t_tool(h, parent, "background_task",
                       J("{'description':'Forked','prompt':'continue the analysis','agent':'general',"
                         "'fork':true}"));
    is_int(t_rc, 0, "a forked launch succeeds");
    like(out, "(forked)", "the answer marks it forked");
    char *id = t_find_id(out, "bg_");
    free(out);
    is_int(sim_calls(h, "session_fork", parent), 1, "the parent session was forked through the host");
    is_int(sim_calls(h, "session_create", NULL), 0, "no plain child session was created");
    char *child = t_task_session(h, 0);
    char *body = sim_call_body(h, "session_prompt", child, 0);
    like(body, FORK_PREAMBLE_MARK, "the preamble goes first");
    like(body, J("'noReply':true"), "silently (noReply)");
    free(body);
    is_int(t_wait_status(h, parent, id, "completed", 5000), 0, "the forked task completes");
    char *seen = sim_session_model_input(h, child);
    like(seen, "the original was 5000 characters", "the child's model saw the long result cut");
    like(seen, J("'filePath':'big.txt'"), "with the tool's input intact");
    like(seen, "I read big.txt", "and the rest of the parent's history");
    like(seen, "continue the analysis", "and its task");
    free(seen);
    t_list_marks(h, parent, id, "forked", "(forked) follows the id in the list");
    is_int(t_wait_messages_with(h, parent, "forked child done", 1, 5000), 0, "the caller's session is notified");
    free(child);
    free(id);
    free(parent);
    sim_destroy(h);
}

/* A host's fork holds the parent's messages, the newest a finished answer.
 * A poll that reads the fork before its own first message is stored must not
 * take that answer for the child's (the prompts are made slow so that polls
 * land in that window). */
static void fork_polled_before_its_prompt(void)
{
    char *parent;
    sim_host *h = parent_with_history(&parent, J("{'poll_interval_ms':50}"));
    sim_script(h, "continue the analysis", J("{'steps':[{'reply':'forked child done'}]}"), 1);
    sim_slow(h, "session_prompt", 400);
    char *out = t_tool(h, parent, "background_task",
                       J("{'description':'Forked','prompt':'continue the analysis','agent':'general',"
                         "'fork':true}"));
    char *id = t_find_id(out, "bg_");
    free(out);
    is_int(t_wait_status(h, parent, id, "completed", 5000), 0, "the forked task completes");
    const char *args = J("{'task_id':'%s'}", id);
    out = t_tool(h, parent, "background_output", args);
    like(out, "forked child done", "with its own answer");
    unlike(out, "I read big.txt", "not the parent's last answer it inherited");
    free(out);
    free(id);
    free(parent);
    sim_destroy(h);
}

static void fork_without_host_support(void)
{
    t_fixture f;
    sim_host *h = sim_create();
    sim_without(h, "session_fork");
    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), NULL) != 1)
        bail_out("load: %s", sim_load_error(h));
    t_open_with(&f, h);
    char *big = t_repeat("0123456789", 500);
    char script[6000];
    snprintf(script, sizeof script,
             "{\"steps\":[{\"tool\":\"read\",\"input\":{\"filePath\":\"big.txt\"},\"output\":\"%s\"},"
             "{\"reply\":\"I read big.txt\"}]}",
             big);
    sim_script(h, "read the big file", script, 1);
    sim_session_prompt(h, f.parent, J("{'parts':[{'type':'text','text':'read the big file'}]}"));
    sim_wait_messages(h, f.parent, 2, tap_timeout_ms(5000));
    sim_wait_idle(h, f.parent, tap_timeout_ms(5000));
    sim_script(h, "continue without fork", J("{'steps':[{'reply':'inject child done'}]}"), 1);
    char *out = t_tool(h, f.parent, "background_task",
                       J("{'description':'Injected','prompt':'continue without fork','agent':'general',"
                         "'fork':true}"));
    is_int(t_rc, 0, "a fork on a host without fork support succeeds");
    char *id = t_find_id(out, "bg_");
    free(out);
    is_int(sim_calls(h, "session_create", f.parent), 1, "a child session of the caller was created instead");
    char *child = t_task_session(h, 0);
    char *body = sim_call_body(h, "session_prompt", child, 0);
    like(body, FORK_PREAMBLE_MARK, "the preamble comes first");
    like(body, J("'noReply':true"), "as a silent message");
    like(body, "The parent conversation so far:", "with the parent's history rendered in it");
    like(body, "the original was 5000 characters", "processed: the long result cut");
    unlike(body, big, "the full result is not there");
    free(body);
    is_int(t_wait_status(h, f.parent, id, "completed", 5000), 0, "the task completes");
    char *seen = sim_session_model_input(h, child);
    like(seen, "I read big.txt", "the child's model saw the parent's history");
    free(seen);
    free(big);
    free(child);
    free(id);
    t_close(&f);
}

static void fork_with_resume_refused(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *out = t_tool(h, f.parent, "background_task", J("{'prompt':'p','fork':true,'resume':'bg_00000000'}"));
    is_int(t_rc, -EINVAL, "fork with resume is refused");
    like(out, "fork and resume are mutually exclusive", "saying the two are mutually exclusive");
    free(out);
    is_int(sim_calls(h, "session_fork", NULL) + sim_calls(h, "session_create", NULL), 0, "nothing was created");
    sim_fail(h, "session_fork", 1, 1, -EIO);
    out = t_tool(h, f.parent, "background_task", J("{'description':'d','prompt':'p','agent':'a','fork':true}"));
    is_int(t_rc, -EIO, "a failed fork is an error");
    like(out, "Failed to fork this session for the background task: simulated failure of session_fork",
         "naming the host's reason");
    free(out);
    t_list_empty(h, f.parent, "and no task exists");
    t_close(&f);
}

int main(void)
{
    cutting_edges();
    cut_and_count_edges();
    kept_as_they_were();
    cut_messages_dropped_and_kept();
    history_edges();
    after_the_fork_point();
    fork_with_host_support();
    fork_polled_before_its_prompt();
    fork_without_host_support();
    fork_with_resume_refused();
    return done_testing();
}

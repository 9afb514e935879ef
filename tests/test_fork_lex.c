/* Fork's fast path (fork/fork_lex.c: long tool results read from their
 * bytes) against the plain one (cJSON decodes them): what fork_process
 * gives, on the inputs the fast path takes and on those it refuses, is what
 * the plain path gives. Expectations are literal or come from the plain
 * reference below (cJSON's decoding, the characters counted here); which
 * path a message took is checked with fork_lex_parse. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fork/fork.h"
#include "fork/fork_lex.h"
#include "testlib.h"

static const fork_limits LIM = {1500, 100000}, LIM10 = {10, 100000};

#define MARKER(n)                                                                                                      \
    "\n[... cut for the forked context: the original was " #n " characters; re-run the tool for all of it]"
#define MARKER_FMT "\n[... cut for the forked context: the original was %zu characters; re-run the tool for all of it]"

/* One tool part whose state.output literal is `raw`, as written (escapes
 * and all). Its other string values estimate 11 tokens: "m1" 1,
 * "assistant" 3, "tool" 1, "read" 1, "c1" 1, "completed" 3, "/a" 1. */
#define TOOL_MSG                                                                                                       \
    "{\"info\":{\"id\":\"m1\",\"role\":\"assistant\"},\"parts\":[{\"type\":\"tool\",\"tool\":\"read\",\"callID\":"     \
    "\"c1\",\"state\":{\"status\":\"completed\",\"input\":{\"filePath\":\"/a\"},\"output\":\"%s\"}}]}"

static char *tool_msg(const char *raw)
{
    return xasprintf(TOOL_MSG, raw);
}

static char *one_message(const char *msg)
{
    return xasprintf("[%s]", msg);
}

/* Literals fork_lex_parse replaced in msg (read from its bytes); -1 when the
 * message does not parse. */
static long lexed(const char *msg)
{
    fork_lexed lx = {0};
    const char *end = NULL;
    cJSON *m = fork_lex_parse(msg, msg + strlen(msg), &end, &lx);
    long n = m ? (long)lx.n : -1;
    cJSON_Delete(m);
    fork_lex_free(&lx);
    return n;
}

/* The plain reference: characters are the bytes that do not continue one;
 * the estimate is the ASCII bytes / 4 rounded up plus the lead bytes. */
static size_t ref_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static size_t ref_tokens(const char *s)
{
    size_t ascii = 0, lead = 0;
    for (; *s; s++) {
        ascii += (unsigned char)*s < 0x80;
        lead += (unsigned char)*s >= 0xC0;
    }
    return (ascii + 3) / 4 + lead;
}

/* decoded cut to max characters plus the marker; a copy when not longer. */
static char *ref_cut(const char *decoded, size_t max)
{
    size_t chars = ref_chars(decoded), i = 0, seen = 0;
    if (chars <= max)
        return xstrdup(decoded);
    for (; decoded[i]; i++)
        if (((unsigned char)decoded[i] & 0xC0) != 0x80 && seen++ == max)
            break;
    return xasprintf("%.*s" MARKER_FMT, (int)i, decoded, chars);
}

/* What fork_process made of a one-message TOOL_MSG history: state.output
 * decoded (malloc'd; NULL on failure), *json the whole answer. */
static char *processed(const char *history, const fork_limits *lim, fork_stats *st, char **json)
{
    *json = NULL;
    if (fork_process(history, lim, json, st) != 0)
        return NULL;
    cJSON *a = cJSON_Parse(*json);
    cJSON *part = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "parts"), 0);
    const char *o = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(part, "state"), "output"));
    char *copy = o ? xstrdup(o) : NULL;
    cJSON_Delete(a);
    return copy;
}

/* A JSON string literal's body and the text it stands for, built together. */
typedef struct text_pair {
    strbuf raw, decoded;
} text_pair;

static void add(text_pair *t, const char *raw, const char *decoded, size_t times)
{
    for (size_t i = 0; i < times; i++) {
        sb_puts(&t->raw, raw);
        sb_puts(&t->decoded, decoded);
    }
}

/* The output `raw` (standing for `decoded`) through fork_process, checked
 * against the plain reference: the cut text, its marker, the estimate, valid
 * UTF-8. Returns the number of differences. */
static int differs_from_plain(const char *raw, const char *decoded, const fork_limits *lim)
{
    char *msg = tool_msg(raw), *h = one_message(msg), *json;
    fork_stats st;
    char *got = processed(h, lim, &st, &json), *want = ref_cut(decoded, lim->max_tool_chars);
    int bad = !got || strcmp(got, want) != 0 || !utf8_valid(got, strlen(got));
    bad += st.tokens_after != 11 + ref_tokens(want);
    if (bad)
        diag("differs for output \"%.40s...\" (%zu bytes): tokens %zu, want %zu", raw, strlen(raw), st.tokens_after,
             11 + ref_tokens(want));
    free(got), free(want), free(json), free(h), free(msg);
    return bad;
}

static void escapes_before_and_across_the_cut(void)
{
    /* 1497 'a', then \n \" \\ (the 1498th to 1500th characters), \t \/ (the
     * first two cut), 500 two-byte 'é': 2002 characters. */
    char *a = t_repeat("a", 1497), *e = t_repeat("\xc3\xa9", 500);
    char *raw = xasprintf("%s\\n\\\"\\\\\\t\\/%s", a, e);
    char *msg = tool_msg(raw), *h = one_message(msg), *json;
    is_int(lexed(msg), 1, "the long output with one-character escapes is read from its bytes");
    fork_stats st;
    char *got = processed(h, &LIM, &st, &json);
    char *want = xasprintf("%s\n\"\\" MARKER_FMT, a, (size_t)2002);
    is_str(got, want, "the cut keeps 1500 decoded characters: the escapes before the cut, none after");
    /* 1500 + 98 ASCII bytes: 400 tokens, and the message's 11. */
    is_int(st.tokens_after, 411, "the estimate counts the cut text");
    is_int(st.results_cut, 1, "one result cut");
    char *cut_lit = xasprintf("%s\\n\\\"\\\\\\n[... cut for the forked context: the original was 2002 characters; "
                              "re-run the tool for all of it]",
                              a);
    char *want_json = xasprintf("[" TOOL_MSG "]", cut_lit);
    is_str(json, want_json, "the answer is the input with only the output replaced, as cJSON prints it");
    free(want_json), free(cut_lit), free(want), free(got), free(json), free(h), free(msg), free(raw);

    /* 1400 'a' and 100 \n: 1600 bytes, 1500 characters, not cut. */
    char *nl = t_repeat("\\n", 100);
    raw = xasprintf("%.1400s%s", a, nl);
    msg = tool_msg(raw), h = one_message(msg);
    is_int(lexed(msg), 1, "1500 characters in 1600 bytes: read from its bytes");
    is_int(fork_process(h, &LIM, &json, &st), 0, "processed");
    is_str(json, h, "1500 characters (more bytes, escapes) are not cut: the answer is the input");
    is_int(st.tokens_after, 386, "estimate: 1500 ASCII characters, 375 tokens, and 11");
    is_int(st.results_cut, 0, "nothing cut");
    free(json), free(h), free(msg), free(raw), free(nl), free(a), free(e);

    /* Every alignment of escapes and 1- to 4-byte characters at the cut: a
     * unit of 10 characters (6 escapes) after 1490 to 1509 'a'. */
    int bad = 0;
    for (size_t lead = 1490; lead < 1510; lead++) {
        text_pair t = {0};
        add(&t, "a", "a", lead);
        add(&t, "\\n\xc3\xa9\\\"\xe4\xbd\xa0\\\\\xf0\x9f\x98\x80\\t\\/x\\b",
            "\n\xc3\xa9\"\xe4\xbd\xa0\\\xf0\x9f\x98\x80\t/x\b", 40);
        char *msg_t = tool_msg(t.raw.buf);
        bad += lexed(msg_t) == 1 ? 0 : 100;
        free(msg_t);
        bad += differs_from_plain(t.raw.buf, t.decoded.buf, &LIM);
        sb_free(&t.raw), sb_free(&t.decoded);
    }
    is_int(bad, 0, "at 20 alignments of escapes and multi-byte characters: the plain path's cut, length, estimate");
}

static void unicode_escapes_take_the_plain_path(void)
{
    /* 1497 'a', \u00e9, a surrogate pair (U+1F600), \n: characters 1498 to
     * 1500; then 600 'b': 2100 characters. */
    char *a = t_repeat("a", 1497), *b = t_repeat("b", 600);
    char *raw = xasprintf("%s\\u00e9\\ud83d\\ude00\\n%s", a, b);
    char *msg = tool_msg(raw), *h = one_message(msg), *json;
    is_int(lexed(msg), 0, "a \\u escape: the output is left to cJSON");
    fork_stats st;
    char *got = processed(h, &LIM, &st, &json);
    char *want = xasprintf("%s\xc3\xa9\xf0\x9f\x98\x80\n" MARKER_FMT, a, (size_t)2100);
    is_str(got, want, "the cut: 1497 'a', the decoded e-acute and emoji, the newline");
    /* 1596 ASCII bytes (399 tokens), two other characters, and 11. */
    is_int(st.tokens_after, 412, "the estimate counts the decoded characters");
    free(want), free(got), free(json), free(h), free(msg), free(raw);

    /* The same characters at every alignment, written with \u escapes. */
    int bad = 0;
    for (size_t lead = 1494; lead < 1502; lead++) {
        text_pair t = {0};
        add(&t, "a", "a", lead);
        add(&t, "\\u00e9\\\"\\ud83d\\ude00\\u4f60\\n", "\xc3\xa9\"\xf0\x9f\x98\x80\xe4\xbd\xa0\n", 40);
        char *msg_t = tool_msg(t.raw.buf);
        bad += lexed(msg_t) == 0 ? 0 : 100;
        free(msg_t);
        bad += differs_from_plain(t.raw.buf, t.decoded.buf, &LIM);
        sb_free(&t.raw), sb_free(&t.decoded);
    }
    is_int(bad, 0, "\\u escapes and surrogate pairs at 8 alignments: the plain path's cut, length, estimate");
    free(a), free(b);
}

static void the_threshold_and_other_keys(void)
{
    char *c61 = t_repeat("c", 61), *c62 = t_repeat("c", 62);
    char *raw63 = xasprintf("\\n%s", c61), *raw64 = xasprintf("\\n%s", c62);
    char *m63 = tool_msg(raw63), *m64 = tool_msg(raw64), *h, *json;
    is_int(lexed(m63), 0, "63 bytes: left to cJSON");
    is_int(lexed(m64), 1, "64 bytes: read from its bytes");
    fork_stats st;
    h = one_message(m63);
    char *got = processed(h, &LIM10, &st, &json);
    is_str(got, "\nccccccccc" MARKER(62), "63 bytes (62 characters) cut to 10");
    is_int(st.tokens_after, 38, "its estimate: 106 ASCII bytes, 27 tokens, and 11");
    free(got), free(json), free(h);
    h = one_message(m64);
    got = processed(h, &LIM10, &st, &json);
    is_str(got, "\nccccccccc" MARKER(63), "64 bytes (63 characters) cut to 10");
    is_int(st.tokens_after, 38, "its estimate: 106 ASCII bytes, 27 tokens, and 11");
    free(got), free(json), free(h), free(m63), free(m64), free(raw63), free(raw64), free(c61), free(c62);

    /* A long string under "input" (never cut) and under "Output". */
    char *i = t_repeat("i", 1999);
    char *msg =
        xasprintf("{\"info\":{\"id\":\"m1\",\"role\":\"assistant\"},\"parts\":[{\"type\":\"tool\",\"tool\":\"read\","
                  "\"callID\":\"c1\",\"state\":{\"status\":\"completed\",\"input\":\"\\n%s\",\"Output\":\"\\t%s\","
                  "\"output\":\"done\"}}]}",
                  i, i);
    h = one_message(msg);
    is_int(lexed(msg), 0, "strings under \"input\" and \"Output\": left to cJSON");
    is_int(fork_process(h, &LIM, &json, &st), 0, "processed");
    is_str(json, h, "neither is cut: the answer is the input");
    /* 2000 ASCII characters twice (500 tokens each), "done" 1, the rest 10. */
    is_int(st.tokens_after, 1011, "both counted whole in the estimate");
    free(json), free(h), free(msg), free(i);
}

/* Long results in nested arrays and in the parts: each bound to its own
 * value. T and O (not results) stay, C and P are cut (to 10). */
static void nested_arrays(void)
{
    char *t = t_repeat("t", 99), *o = t_repeat("o", 99), *c = t_repeat("c", 79), *p = t_repeat("p", 89);
    const char *fmt =
        "{\"info\":{\"id\":\"m1\",\"role\":\"assistant\"},\"x\":[[\"s\",{\"text\":\"%s\"}],\"u\",[{\"output\":"
        "\"%s\"}]],\"parts\":[{\"type\":\"tool-result\",\"content\":\"%s\"},{\"type\":\"tool\",\"state\":{"
        "\"output\":\"%s\"}}]}";
    char *tr = xasprintf("\\\"%s", t), * or = xasprintf("\\/%s", o), *cr = xasprintf("\\\\%s", c);
    char *pr = xasprintf("\\t%s", p), *msg = xasprintf(fmt, tr, or, cr, pr), *h = one_message(msg), *json;
    is_int(lexed(msg), 4, "four long values under result keys, nested in arrays: read from their bytes");
    fork_stats st;
    is_int(fork_process(h, &LIM10, &json, &st), 0, "processed");
    char *want = xasprintf(fmt, tr, or,
                           "\\\\ccccccccc\\n[... cut for the forked context: the original was 80 "
                           "characters; re-run the tool for all of it]",
                           "\\tppppppppp\\n[... cut for the forked context: the original was 90 characters; re-run the "
                           "tool for all of it]");
    char *want_h = one_message(want);
    is_str(json, want_h, "the parts' results are cut, the others kept as written");
    is_int(st.results_cut, 2, "two results cut");
    /* 1 + 3 + "s" 1 + T 25 + "u" 1 + O 25 + "tool-result" 3 + C 27 + "tool" 1 + P 27. */
    is_int(st.tokens_after, 114, "the estimate: each value counted once, the cut ones as cut");
    free(want_h), free(want), free(json), free(h), free(msg), free(pr), free(cr), free(or), free(tr);
    free(t), free(o), free(c), free(p);
}

/* What main's fork did before fork_lex.c (a message cJSON refuses makes the
 * whole history "not a JSON array"): the same for each of these. */
static void malformed_as_before(void)
{
    char *l = t_repeat("L", 100);
    const char *msg_fmt[] = {
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s",               /* unterminated, the input ends */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\\",             /* ends in a backslash */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\"x}}]}",        /* a stray byte after it */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\" \"y\"}}]}",   /* a second string */
        "{\"parts\":[{\"type\":\"text\",\"text\":\"%s\"}}]}",                      /* } for ] in the array */
        "{\"parts\":[[{\"text\":\"%s\"}]}",                                        /* the nested array unclosed */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\\x\"}}]}",      /* an escape cJSON refuses */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\\ud800x\"}}]}", /* a lone surrogate */
        "{\"parts\":[{\"type\":\"tool\",\"state\":{\"output\":\"%s\"}}]} x",       /* a stray byte after the message */
    };
    for (size_t i = 0; i < sizeof msg_fmt / sizeof *msg_fmt; i++) {
        char *msg = xasprintf(msg_fmt[i], l), *h = xasprintf("[{\"info\":{\"id\":\"m0\"}},%s]", msg), *out = NULL;
        if (i + 1 < sizeof msg_fmt / sizeof *msg_fmt)
            is_int(lexed(msg), -1, "message %zu does not parse", i);
        is_int(fork_process(h, &LIM10, &out, NULL), -EINVAL, "history %zu: not a JSON array, as before", i);
        ok(out == NULL, "and no answer");
        free(out), free(h), free(msg);
    }
    /* A raw control byte in the literal: cJSON accepts it, so does fork. */
    char *raw = xasprintf("\t%s\n%s", l, l), *msg = tool_msg(raw), *h = one_message(msg), *json;
    is_int(lexed(msg), 1, "raw tab and newline bytes: read from its bytes");
    fork_stats st;
    char *got = processed(h, &LIM10, &st, &json);
    is_str(got, "\tLLLLLLLLL" MARKER(202), "cut as cJSON decodes it");
    is_int(st.tokens_after, 38, "the estimate: 106 ASCII bytes, 27 tokens, and 11");
    free(got), free(json), free(h), free(msg), free(raw), free(l);
}

/* A tool result of 3000 characters (written with escapes), the preamble
 * part as `text` in a part of `type`, then the child's own 3000-character
 * result: how many results were cut (1: the fork point was found). */
static size_t cut_around(const char *type, const char *text, long want_lexed)
{
    char *z = t_repeat("z\\n", 1500), *m1 = tool_msg(z), *m3 = tool_msg(z);
    char *m2 = xasprintf("{\"info\":{\"id\":\"m2\",\"role\":\"user\"},\"parts\":[{\"type\":\"%s\",\"text\":\"%s\"}]}",
                         type, text);
    char *h = xasprintf("[%s,%s,%s]", m1, m2, m3), *out = NULL;
    fork_stats st = {0};
    int rc = fork_process(h, &LIM, &out, &st);
    size_t n = st.results_cut;
    if (n == 1 && !(out && strstr(out, z))) /* one cut: the child's own must be whole */
        n = 99;
    if (rc != 0 || st.messages_kept != 3 || lexed(m2) != want_lexed)
        n = 100;
    free(out), free(h), free(m2), free(m3), free(m1), free(z);
    return n;
}

static void the_fork_point_mark(void)
{
    char *pre = fork_preamble(&LIM);
    ok(!strpbrk(pre, "\"\\"), "the preamble needs no escape in JSON");
    char *text = xasprintf("%s\\n\\nYour task: \\\"go on\\\" \\/ \\t", pre);
    is_int(cut_around("text", text, 1), 1, "a long preamble text read from its bytes is the fork point");
    free(text);
    /* The mark's first character as \u005b: left to cJSON, still found. */
    text = xasprintf("\\u005b%s\\n", pre + 1);
    is_int(cut_around("text", text, 0), 1, "the preamble written with a \\u escape: the fork point");
    free(text);
    is_int(cut_around("text", FORK_PREAMBLE_MARK, 0), 1, "the mark alone (44 bytes): the fork point");
    text = xasprintf(" %s\\n", pre);
    is_int(cut_around("text", text, 1), 2, "the mark after a space: no fork point, both results cut");
    free(text);
    text = xasprintf("\\n%s", pre);
    is_int(cut_around("text", text, 1), 2, "the mark after an escaped newline: no fork point");
    free(text);
    text = xasprintf("%s\\n", pre);
    is_int(cut_around("reasoning", text, 1), 2, "the mark in a part not of type text: no fork point");
    free(text);
    free(pre);
}

/* Bytes that are not UTF-8 (a lone Latin-1 lead byte, 0xE9): each one a
 * character, and a token, in the cut text's estimate too. As many
 * characters as bytes is not "all ASCII": an estimate that took it so
 * counted a quarter token each, too low for a history it says fits. */
static void lone_lead_bytes_count_a_token_each(void)
{
    fork_limits lim = {1500, 100000};
    fork_stats st;
    char *raw = t_repeat("\xE9", 2000), *msg = tool_msg(raw), *history = one_message(msg), *json = NULL;
    char *out = processed(history, &lim, &st, &json);
    char *want = ref_cut(raw, 1500);
    is_str(out, want, "2000 lone lead bytes: cut to 1500 and the marker");
    is_int(st.tokens_after, 11 + 1500 + 25, "the estimate: 1500 tokens for the bytes kept, 25 the marker, and 11");
    free(out), free(want), free(json), free(history), free(msg), free(raw);

    fork_limits small = {10, 100000};
    raw = t_repeat("\xE9", 40), msg = tool_msg(raw), history = one_message(msg);
    out = processed(history, &small, &st, &json);
    is_int(st.tokens_after, 11 + 10 + 24, "40 of them (the plain path), cut to 10: 10 tokens, 24 the marker, and 11");
    free(out), free(json), free(history), free(msg), free(raw);
}

int main(void)
{
    escapes_before_and_across_the_cut();
    unicode_escapes_take_the_plain_path();
    the_threshold_and_other_keys();
    nested_arrays();
    malformed_as_before();
    the_fork_point_mark();
    lone_lead_bytes_count_a_token_each();
    return done_testing();
}

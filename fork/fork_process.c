/* fork_process.c — fork_process (see fork.h), in two passes.
 *
 * The first parses one message at a time (cJSON, from its place in the
 * array; its long results read from their bytes by fork_lex.c, not decoded
 * by cJSON), cuts its results when it is inherited, notes what the decisions
 * need (where its text is, its estimate, the marks of fork.h rule 1) and
 * frees it while it is still in the cache: the whole tree never exists at
 * once. A message's cut texts are kept only while the newer messages leave
 * it room under the token cap. The second writes the answer from the input's
 * bytes: a kept message is copied as it is, its cut results spliced in
 * (fork_splice.c); nothing is re-serialised. A 10 MB history costs about
 * half a cJSON parse of it (docs/performance.md). */
#include "fork.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fork_lex.h"
#include "fork_msg.h"
#include "fork_splice.h"

/* One message as the first pass saw it. */
typedef struct msg_note {
    const char *json; /* its text in the input (not NUL-terminated there) */
    size_t len;
    size_t tokens;    /* its estimate, its results cut when it is inherited */
    size_t cuts;      /* results cut in it (inherited only) */
    fork_cut *cut;    /* their texts, while the message may be kept */
    bool request;     /* a compaction request */
    char *request_id; /* a request's info.id, malloc'd (NULL: none) */
} msg_note;

typedef struct history_scan {
    msg_note *msg;
    size_t n, cap;
    size_t max_chars, max_tokens;
    size_t window_from;   /* the oldest message whose cuts may be kept */
    size_t window_tokens; /* the estimate of the messages from it on */
    size_t fork_at;       /* the first fork point; SIZE_MAX: none yet */
    bool summary;         /* a completed summary was seen */
    size_t summary_at;    /* the newest one */
    char *summary_parent; /* its info.parentID, malloc'd (NULL: none) */
    fork_lexed lx;        /* the message being noted: its long results */
} history_scan;

/* Does the message hold a text part starting with the preamble mark? (A
 * long text read by fork_lex: its bytes start with the mark's, which has no
 * character its escapes make.) */
static bool is_fork_point(const cJSON *msg, const fork_lexed *lx)
{
    const size_t mark_len = strlen(FORK_PREAMBLE_MARK);
    const cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        const fork_raw *r = fork_lex_find(lx, text);
        const char *t = r ? r->raw : cJSON_GetStringValue(text);
        size_t len = r ? r->raw_len : t ? strlen(t) : 0;
        if (fork_is_type(part, "text") && t && len >= mark_len && memcmp(t, FORK_PREAMBLE_MARK, mark_len) == 0)
            return true;
    }
    return false;
}

static size_t tree_tokens(const cJSON *item)
{
    if (cJSON_IsString(item))
        return fork_estimate_tokens(item->valuestring, strlen(item->valuestring));
    size_t n = 0;
    for (const cJSON *c = item->child; c; c = c->next)
        n += tree_tokens(c);
    return n;
}

/* The cuts of one message, as cut_results makes them. */
typedef struct cut_list {
    fork_cut *cut;
    size_t n, cap, rank;
    size_t tokens;        /* the estimate of the cut texts */
    const fork_lexed *lx; /* the message's long results */
} cut_list;

/* Cut obj[key] when it is a long string: into the list (for the answer),
 * its estimate counted here. The original leaves the tree, so the
 * message's estimate (tree_tokens) is the rest plus list->tokens, without
 * a copy of the cut in the tree. */
static void cut_member(cJSON *obj, const char *key, size_t max_chars, cut_list *list)
{
    size_t rank = list->rank++;
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    fork_raw *r = fork_lex_find(list->lx, v);
    size_t len = r ? r->raw_len : cJSON_IsString(v) ? strlen(v->valuestring) : 0;
    if (len <= max_chars) /* fewer bytes than the limit: fewer characters too */
        return;
    size_t chars = r ? r->chars : fork_count_chars(v->valuestring, len), cut_len;
    if (chars <= max_chars)
        return;
    char *cut;
    if (r) { /* its "" counts nothing */
        cut = fork_raw_cut(r, max_chars, &cut_len);
        r->cut = true;
    } else {
        cut = fork_cut_n(v->valuestring, len, chars, max_chars, &cut_len);
        cJSON_Delete(cJSON_DetachItemViaPointer(obj, v));
    }
    /* Not "as many characters as bytes, so ASCII": a lone lead byte (Latin-1
     * in a hostile history) is a character of its own and counts a token. */
    list->tokens += fork_estimate_tokens(cut, cut_len);
    if (list->n == list->cap) {
        list->cap = list->cap ? 2 * list->cap : 4;
        list->cut = xrealloc(list->cut, list->cap * sizeof *list->cut);
    }
    list->cut[list->n++] = (fork_cut){rank, cut};
}

/* Cut every tool result of one message, in the order fork_splice finds
 * them again. */
static void cut_results(cJSON *msg, size_t max_chars, cut_list *list)
{
    cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        if (fork_is_type(part, "tool")) {
            /* state.input, tool and callID stay as they are. */
            cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
            cut_member(state, "output", max_chars, list);
            cut_member(state, "error", max_chars, list);
        } else if (fork_is_type(part, "tool-result") || fork_is_type(part, "tool_result")) {
            cut_member(part, "output", max_chars, list);
            cut_member(part, "content", max_chars, list);
            cut_member(part, "text", max_chars, list);
        }
    }
}

static void free_cuts(msg_note *m)
{
    for (size_t i = 0; m->cut && i < m->cuts; i++)
        free(m->cut[i].text);
    free(m->cut);
    m->cut = NULL;
}

/* Frees the cut texts of the messages that can no longer be kept: those
 * whose estimate with the newer ones' exceeds the cap (fork.h rule 3 drops
 * them, or a compaction does). The newest is never judged here: it may be
 * the last. */
static void release_dropped(history_scan *sc)
{
    size_t newest = sc->n - 1;
    while (sc->window_from < newest && sc->window_tokens > sc->max_tokens) {
        msg_note *m = &sc->msg[sc->window_from++];
        sc->window_tokens -= m->tokens;
        free_cuts(m);
    }
}

static void note_message(history_scan *sc, cJSON *m, const char *json, size_t len)
{
    if (sc->n == sc->cap) {
        sc->cap = sc->cap ? 2 * sc->cap : 256;
        sc->msg = xrealloc(sc->msg, sc->cap * sizeof *sc->msg);
    }
    size_t i = sc->n++;
    msg_note *note = &sc->msg[i];
    *note = (msg_note){.json = json, .len = len};
    if (sc->fork_at == SIZE_MAX && is_fork_point(m, &sc->lx))
        sc->fork_at = i;
    if (fork_is_completed_summary(m)) {
        free(sc->summary_parent);
        sc->summary_parent = xstrdup(fork_info_string(m, "parentID"));
        sc->summary = true;
        sc->summary_at = i;
    }
    if (fork_is_compaction_request(m)) {
        note->request = true;
        note->request_id = xstrdup(fork_info_string(m, "id"));
    }
    /* Before the first fork point: inherited (the child's own come after). */
    cut_list cuts = {.lx = &sc->lx};
    if (sc->fork_at == SIZE_MAX)
        cut_results(m, sc->max_chars, &cuts);
    note->cuts = cuts.n;
    note->cut = cuts.cut;
    note->tokens = tree_tokens(m) + cuts.tokens;
    for (size_t k = 0; k < sc->lx.n; k++) /* the long results not cut */
        note->tokens += sc->lx.raw[k].cut ? 0 : sc->lx.raw[k].tokens;
    cJSON_Delete(m);
    sc->window_tokens += note->tokens;
    release_dropped(sc);
}

/* JSON whitespace as cJSON reads it: any byte up to the space. */
static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (unsigned char)*p <= ' ')
        p++;
    return p;
}

/* Reads the array of messages as cJSON_Parse would accept it (a UTF-8 BOM
 * and whitespace before it, anything after its closing bracket); 0, or
 * -EINVAL when it is not a JSON array. */
static int scan_history(const char *json, history_scan *sc)
{
    const char *end = json + strlen(json), *p = json;
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
    p = skip_space(p, end);
    if (p == end || *p != '[')
        return -EINVAL;
    p = skip_space(p + 1, end);
    if (p < end && *p == ']')
        return 0;
    for (;;) {
        /* cJSON skips a BOM at the start of what it parses: here it is no
         * value (0xEF never starts one). */
        const char *value_end = NULL;
        cJSON *m = p < end && (unsigned char)*p != 0xEF ? fork_lex_parse(p, end, &value_end, &sc->lx) : NULL;
        if (!m)
            return -EINVAL;
        note_message(sc, m, p, (size_t)(value_end - p));
        p = skip_space(value_end, end);
        if (p < end && *p == ']')
            return 0;
        if (p == end || *p != ',')
            return -EINVAL;
        p = skip_space(p + 1, end);
    }
}

/* The index of the compaction request the newest completed summary answers:
 * the one its parentID names, else the nearest before it (a fork may give
 * messages new ids); 0 when there is none. */
static size_t request_index(const history_scan *sc)
{
    const char *parent = sc->summary_parent;
    size_t nearest = 0;
    bool found = false;
    for (size_t i = sc->summary_at; i-- > 0;) {
        const msg_note *m = &sc->msg[i];
        if (!m->request)
            continue;
        if (!found)
            nearest = i;
        found = true;
        if (!parent || (m->request_id && strcmp(m->request_id, parent) == 0))
            return i;
    }
    return nearest;
}

/* The answer: the messages [from, sc->n) as a JSON array. */
static void write_kept(const history_scan *sc, size_t from, char **out)
{
    strbuf sb = {0};
    sb_putn(&sb, "[", 1);
    for (size_t i = from; i < sc->n; i++) {
        if (i > from)
            sb_putn(&sb, ",", 1);
        const msg_note *m = &sc->msg[i];
        if (!m->cuts)
            sb_putn(&sb, m->json, m->len);
        else
            fork_splice(&sb, m->json, m->len, m->cut, m->cuts);
    }
    sb_putn(&sb, "]", 1);
    *out = sb_take(&sb);
}

/* Decides what is kept (fork.h rules 1 and 3) and writes it. */
static void keep_and_write(const history_scan *sc, char **out, fork_stats *st, size_t max_tokens)
{
    size_t n = sc->n, fork_at = sc->fork_at == SIZE_MAX ? n : sc->fork_at;
    size_t start = sc->summary ? request_index(sc) : 0;
    /* A compaction after the fork point (the sub-agent's own) leaves nothing
     * inherited; its messages were noted uncut. */
    size_t inherited_end = fork_at > start ? fork_at : start;
    size_t total = 0;
    for (size_t i = start; i < n; i++) {
        total += sc->msg[i].tokens;
        if (i < inherited_end)
            st->results_cut += sc->msg[i].cuts;
    }
    /* Drop the oldest inherited messages until it fits; the newest always stays. */
    size_t from = start;
    while (total > max_tokens && from < inherited_end && from + 1 < n)
        total -= sc->msg[from++].tokens;
    st->messages_kept = n - from;
    st->tokens_after = total;
    write_kept(sc, from, out);
}

int fork_process(const char *messages_json, const fork_limits *lim, char **out, fork_stats *st)
{
    fork_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    *out = NULL;
    history_scan sc = {.max_chars = lim->max_tool_chars, .max_tokens = lim->max_tokens, .fork_at = SIZE_MAX};
    int rc = messages_json ? scan_history(messages_json, &sc) : -EINVAL;
    if (rc == 0) {
        st->messages_in = sc.n;
        keep_and_write(&sc, out, st, lim->max_tokens);
    }
    for (size_t i = 0; i < sc.n; i++) {
        free(sc.msg[i].request_id);
        free_cuts(&sc.msg[i]);
    }
    free(sc.msg);
    free(sc.summary_parent);
    fork_lex_free(&sc.lx);
    return rc;
}

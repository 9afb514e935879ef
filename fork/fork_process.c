/* fork_process.c — fork_process (see fork.h), in two passes over the text.
 *
 * The first parses one message at a time (cJSON, from its place in the
 * array), notes what the decisions need (where it is, its estimate as it
 * will be once its results are cut, the marks of fork.h rule 1) and frees it
 * while it is still in the cache: the whole tree never exists at once. The
 * second writes the answer: a kept message that needs no cut is copied byte
 * for byte from the input (no re-serialising of the megabytes of tool
 * results that stay as they are); one with a cut is parsed again, cut and
 * printed. A 10 MB history costs about one parse plus a little. */
#include "fork.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "fork_msg.h"

/* One message as the first pass saw it. */
typedef struct msg_note {
    const char *json; /* its text in the input (not NUL-terminated there) */
    size_t len;
    size_t tokens;    /* its estimate, its results cut when it is inherited */
    size_t cuts;      /* results to cut in it (inherited only) */
    bool request;     /* a compaction request */
    char *request_id; /* a request's info.id, malloc'd (NULL: none) */
} msg_note;

typedef struct history_scan {
    msg_note *msg;
    size_t n, cap;
    size_t max_chars;
    size_t fork_at;       /* the first fork point; SIZE_MAX: none yet */
    bool summary;         /* a completed summary was seen */
    size_t summary_at;    /* the newest one */
    char *summary_parent; /* its info.parentID, malloc'd (NULL: none) */
} history_scan;

/* Does the message hold a text part starting with the preamble mark? */
static bool is_fork_point(const cJSON *msg)
{
    const cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (fork_is_type(part, "text") && t && strncmp(t, FORK_PREAMBLE_MARK, strlen(FORK_PREAMBLE_MARK)) == 0)
            return true;
    }
    return false;
}

/* The estimate of a string; of its cut when it is a result to cut. */
static size_t string_tokens(const cJSON *s, bool result, size_t max_chars, size_t *cuts)
{
    size_t len = strlen(s->valuestring);
    fork_count c = fork_count_text(s->valuestring, len);
    size_t chars = c.ascii + c.lead;
    if (!result || chars <= max_chars)
        return fork_count_tokens(c);
    (*cuts)++;
    return fork_cut_tokens(s->valuestring, len, chars, max_chars);
}

/* The estimate of a subtree's strings; slot[0..nslot): the results in it. */
static size_t tree_tokens(const cJSON *item, cJSON *const *slot, size_t nslot, size_t max_chars, size_t *cuts)
{
    if (cJSON_IsString(item)) {
        bool result = false;
        for (size_t i = 0; i < nslot; i++)
            result |= slot[i] == item;
        return string_tokens(item, result, max_chars, cuts);
    }
    size_t n = 0;
    for (const cJSON *c = item->child; c; c = c->next)
        n += tree_tokens(c, slot, nslot, max_chars, cuts);
    return n;
}

/* A message's estimate, as it will be once its results are cut when it is
 * inherited; *cuts: how many it will cut. */
static size_t message_tokens(cJSON *msg, bool inherited, size_t max_chars, size_t *cuts)
{
    cJSON *parts = cJSON_GetObjectItemCaseSensitive(msg, "parts");
    if (!inherited || !parts || cJSON_IsString(parts))
        return tree_tokens(msg, NULL, 0, max_chars, cuts);
    size_t n = 0;
    for (cJSON *c = msg->child; c; c = c->next) {
        if (c != parts) {
            n += tree_tokens(c, NULL, 0, max_chars, cuts);
            continue;
        }
        cJSON *part;
        cJSON_ArrayForEach(part, parts)
        {
            cJSON *slot[3];
            size_t nslot = fork_result_slots(part, slot);
            n += tree_tokens(part, slot, nslot, max_chars, cuts);
        }
    }
    return n;
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
    if (sc->fork_at == SIZE_MAX && is_fork_point(m))
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
    note->tokens = message_tokens(m, sc->fork_at == SIZE_MAX, sc->max_chars, &note->cuts);
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
        cJSON *m = p < end && (unsigned char)*p != 0xEF
                       ? cJSON_ParseWithLengthOpts(p, (size_t)(end - p), &value_end, false)
                       : NULL;
        if (!m)
            return -EINVAL;
        note_message(sc, m, p, (size_t)(value_end - p));
        cJSON_Delete(m);
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

/* Appends one message with its long results cut; -ENOMEM when cJSON fails. */
static int put_cut_message(strbuf *sb, const msg_note *note, size_t max_chars)
{
    cJSON *m = cJSON_ParseWithLengthOpts(note->json, note->len, NULL, false);
    cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(m, "parts"))
    {
        cJSON *slot[3];
        size_t nslot = fork_result_slots(part, slot);
        for (size_t i = 0; i < nslot; i++) {
            char *cut = cJSON_IsString(slot[i]) ? fork_cut_text(slot[i]->valuestring, max_chars) : NULL;
            if (cut)
                cJSON_SetValuestring(slot[i], cut);
            free(cut);
        }
    }
    char *s = m ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    if (!s)
        return -ENOMEM;
    sb_puts(sb, s);
    cJSON_free(s);
    return 0;
}

/* The answer: the messages [from, sc->n) as a JSON array. */
static int write_kept(const history_scan *sc, size_t from, char **out)
{
    strbuf sb = {0};
    sb_putn(&sb, "[", 1);
    for (size_t i = from; i < sc->n; i++) {
        if (i > from)
            sb_putn(&sb, ",", 1);
        if (!sc->msg[i].cuts)
            sb_putn(&sb, sc->msg[i].json, sc->msg[i].len);
        else if (put_cut_message(&sb, &sc->msg[i], sc->max_chars) != 0) {
            sb_free(&sb);
            return -ENOMEM;
        }
    }
    sb_putn(&sb, "]", 1);
    *out = sb_take(&sb);
    return 0;
}

/* Decides what is kept (fork.h rules 1 and 3) and writes it. */
static int keep_and_write(const history_scan *sc, char **out, fork_stats *st, size_t max_tokens)
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
    return write_kept(sc, from, out);
}

int fork_process(const char *messages_json, const fork_limits *lim, char **out, fork_stats *st)
{
    fork_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    *out = NULL;
    history_scan sc = {.max_chars = lim->max_tool_chars, .fork_at = SIZE_MAX};
    int rc = messages_json ? scan_history(messages_json, &sc) : -EINVAL;
    if (rc == 0) {
        st->messages_in = sc.n;
        rc = keep_and_write(&sc, out, st, lim->max_tokens);
    }
    for (size_t i = 0; i < sc.n; i++)
        free(sc.msg[i].request_id);
    free(sc.msg);
    free(sc.summary_parent);
    return rc;
}

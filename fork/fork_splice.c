/* fork_splice.c — see fork_splice.h. Re-serialising a kept message with
 * cJSON would print all of it again (its text parts, its other results);
 * this reads the message's own bytes, already checked by cJSON's parse, just
 * far enough to find where each cut result's string lies, and copies the
 * rest. */
#include "fork_splice.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A member of an object (key: its literal, quotes included) or an element of
 * an array (no key), in the message's text. */
typedef struct raw_item {
    const char *key, *key_end, *value, *value_end;
} raw_item;

/* A replacement: the bytes [from, to) become text as a JSON string. */
typedef struct splice_at {
    const char *from, *to, *text;
} splice_at;

typedef struct splice {
    const char *end;
    const fork_cut *cuts;
    size_t n, next, rank;
    splice_at *at;
    size_t nat;
} splice;

static const char *skip_space(const char *p, const char *end)
{
    while (p < end && (unsigned char)*p <= ' ')
        p++;
    return p;
}

/* Past the string literal at p (its closing quote: the first not escaped). */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return end;
        size_t backslashes = 0;
        while (q - backslashes > p && q[-1 - (ptrdiff_t)backslashes] == '\\')
            backslashes++;
        if (backslashes % 2 == 0)
            return q + 1;
        p = q + 1;
    }
    return end;
}

static const char *skip_value(const char *p, const char *end)
{
    if (p < end && *p == '"')
        return skip_string(p, end);
    if (p < end && (*p == '{' || *p == '[')) {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return end;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && (unsigned char)*p > ' ')
        p++;
    return p;
}

/* The next member or element after *p (just inside the bracket, or past the
 * previous one); false at the closing bracket. */
static bool next_item(const char **p, const char *end, bool object, raw_item *it)
{
    const char *q = skip_space(*p, end);
    if (q < end && *q == ',')
        q = skip_space(q + 1, end);
    if (q >= end || *q == '}' || *q == ']')
        return false;
    if (object) {
        it->key = q;
        it->key_end = q = skip_string(q, end);
        q = skip_space(skip_space(q, end) + 1, end); /* past the colon */
    }
    it->value = q;
    it->value_end = *p = skip_value(q, end);
    return true;
}

/* Is the literal [s, e) the string name, read as cJSON reads it? */
static bool literal_is(const char *s, const char *e, const char *name)
{
    if (s >= e || *s != '"')
        return false;
    size_t n = (size_t)(e - s) - 2;
    if (!memchr(s + 1, '\\', n))
        return n == strlen(name) && memcmp(s + 1, name, n) == 0;
    cJSON *str = cJSON_ParseWithLengthOpts(s, (size_t)(e - s), NULL, false);
    bool same = cJSON_IsString(str) && strcmp(str->valuestring, name) == 0;
    cJSON_Delete(str);
    return same;
}

/* The first member named name of the object at obj (NULL or not an
 * object: none), as cJSON_GetObjectItemCaseSensitive finds it. */
static bool find_member(const char *obj, const char *end, const char *name, raw_item *found)
{
    if (!obj || obj >= end || *obj != '{')
        return false;
    const char *p = obj + 1;
    while (next_item(&p, end, true, found)) {
        if (literal_is(found->key, found->key_end, name))
            return true;
    }
    return false;
}

static bool part_is(const char *part, const char *end, const char *type)
{
    raw_item t;
    return find_member(part, end, "type", &t) && literal_is(t.value, t.value_end, type);
}

/* The next result slot, obj[name]: noted when it is the next one cut. */
static void visit_slot(splice *sp, const char *obj, const char *name)
{
    size_t rank = sp->rank++;
    raw_item it;
    if (sp->next >= sp->n || sp->cuts[sp->next].slot != rank)
        return;
    if (find_member(obj, sp->end, name, &it))
        sp->at[sp->nat++] = (splice_at){it.value, it.value_end, sp->cuts[sp->next].text};
    sp->next++;
}

/* Visits the parts' result slots in fork's order (fork_process's cut_results). */
static void find_cuts(splice *sp, const char *msg)
{
    raw_item parts, part;
    if (!find_member(msg, sp->end, "parts", &parts) || (*parts.value != '[' && *parts.value != '{'))
        return;
    const char *p = parts.value + 1;
    bool object = *parts.value == '{';
    while (sp->next < sp->n && next_item(&p, sp->end, object, &part)) {
        if (part_is(part.value, sp->end, "tool")) {
            raw_item state;
            const char *s = find_member(part.value, sp->end, "state", &state) ? state.value : NULL;
            visit_slot(sp, s, "output");
            visit_slot(sp, s, "error");
        } else if (part_is(part.value, sp->end, "tool-result") || part_is(part.value, sp->end, "tool_result")) {
            visit_slot(sp, part.value, "output");
            visit_slot(sp, part.value, "content");
            visit_slot(sp, part.value, "text");
        }
    }
}

/* text as a JSON string, byte for byte as cJSON prints it (print_string_ptr:
 * \" \\ \b \f \n \r \t, \u00xx for the other bytes below 0x20, the rest as
 * they are), but a run of plain bytes in one copy: cJSON copies byte by
 * byte, which cost as much as the rest of the splice. */
static void put_string(strbuf *sb, const char *text)
{
    static const char short_escape[32] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    const unsigned char *p = (const unsigned char *)text;
    sb_putn(sb, "\"", 1);
    for (;;) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p != '"' && *p != '\\')
            p++;
        sb_putn(sb, (const char *)run, (size_t)(p - run));
        if (!*p)
            break;
        char esc[8] = {'\\', (char)*p};
        if (*p < 0x20 && short_escape[*p])
            esc[1] = short_escape[*p];
        else if (*p < 0x20)
            snprintf(esc, sizeof esc, "\\u%04x", *p);
        sb_puts(sb, esc);
        p++;
    }
    sb_putn(sb, "\"", 1);
}

void fork_splice(strbuf *sb, const char *json, size_t len, const fork_cut *cuts, size_t n)
{
    splice sp = {.end = json + len, .cuts = cuts, .n = n, .at = xcalloc(n ? n : 1, sizeof *sp.at)};
    find_cuts(&sp, skip_space(json, sp.end));
    /* In the order they appear (a state's error may come before its output). */
    for (size_t i = 1; i < sp.nat; i++)
        for (size_t j = i; j > 0 && sp.at[j].from < sp.at[j - 1].from; j--) {
            splice_at t = sp.at[j];
            sp.at[j] = sp.at[j - 1];
            sp.at[j - 1] = t;
        }
    const char *from = json;
    for (size_t i = 0; i < sp.nat; i++) {
        sb_putn(sb, from, (size_t)(sp.at[i].from - from));
        put_string(sb, sp.at[i].text);
        from = sp.at[i].to;
    }
    sb_putn(sb, from, (size_t)(sp.end - from));
    free(sp.at);
}

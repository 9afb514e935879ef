/* fork_lex.c — see fork_lex.h.
 *
 * The literals are found by their bytes, as cJSON finds a string's end: from
 * the opening quote, a backslash takes the byte after it, the first other
 * quote closes. A literal is replaced only when cJSON would accept it (a
 * closing quote, each escape one of cJSON's), so where cJSON reads the
 * original it reads "" instead; everything else is copied. Should cJSON
 * still disagree (a value end elsewhere, a tree without the "" expected),
 * the original is parsed as it is. */
#include "fork_lex.h"

#include <stdlib.h>
#include <string.h>

#include "fork_msg.h"

typedef signed char lex_lanes __attribute__((vector_size(16)));

/* The first '"' or '\\' in [p, end), or end: sixteen bytes at a time. */
static const char *find_quote_or_backslash(const char *p, const char *end)
{
    const lex_lanes quote = (lex_lanes){0} + '"', backslash = (lex_lanes){0} + '\\';
    while (end - p >= 16) {
        lex_lanes x;
        memcpy(&x, p, 16);
        lex_lanes hit = (lex_lanes)((x == quote) | (x == backslash));
        unsigned long long half[2];
        memcpy(half, &hit, sizeof half);
        if (half[0] | half[1])
            break;
        p += 16;
    }
    while (p < end && *p != '"' && *p != '\\')
        p++;
    return p;
}

/* Past the literal at q (its '"'), or NULL when it does not close;
 * *escapes: its backslashes; *plain: each is a one-character escape. */
static const char *read_literal(const char *q, const char *end, size_t *escapes, bool *plain)
{
    *escapes = 0;
    *plain = true;
    for (const char *p = q + 1;;) {
        p = find_quote_or_backslash(p, end);
        if (p == end)
            return NULL;
        if (*p == '"')
            return p + 1;
        if (p + 1 == end)
            return NULL;
        (*escapes)++;
        *plain = *plain && memchr("bfnrt\"\\/", p[1], 8);
        p += 2;
    }
}

static bool is_result_key(const char *key, size_t len)
{
    static const char *const names[] = {"output", "error", "content", "text"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == len && memcmp(key, names[i], len) == 0)
            return true;
    return false;
}

/* Notes the literal [q, after) (a result) and copies the message up to it. */
static void take_literal(fork_lexed *lx, const char **copied, const char *q, const char *after, size_t rank,
                         size_t escapes)
{
    if (lx->n == lx->cap) {
        lx->cap = lx->cap ? 2 * lx->cap : 8;
        lx->raw = xrealloc(lx->raw, lx->cap * sizeof *lx->raw);
    }
    size_t raw_len = (size_t)(after - q) - 2;
    fork_count c = fork_count_text(q + 1, raw_len);
    c.ascii -= escapes; /* two ASCII bytes, one ASCII character */
    lx->raw[lx->n++] = (fork_raw){.raw = q + 1,
                                  .raw_len = raw_len,
                                  .value_rank = rank,
                                  .chars = c.ascii + c.lead,
                                  .tokens = fork_count_tokens(c)};
    sb_putn(&lx->text, *copied, (size_t)(q - *copied));
    sb_putn(&lx->text, "\"\"", 2);
    *copied = after;
}

/* Reads the object at msg up to its closing brace, replacing the long
 * results; NULL when it is not one as far as bytes tell (then cJSON reads
 * the original), else its end. */
static const char *lex_message(const char *msg, const char *end, fork_lexed *lx)
{
    size_t depth = 0, rank = 0, key_len = 0;
    const char *p = msg, *copied = msg, *key = NULL;
    if (p == end || *p != '{')
        return NULL;
    while (p < end) {
        if (*p == '"') {
            size_t escapes;
            bool plain;
            const char *after = read_literal(p, end, &escapes, &plain), *next;
            if (!after)
                return NULL;
            next = after;
            while (next < end && (unsigned char)*next <= ' ')
                next++;
            if (next < end && *next == ':') { /* a key: the value may be a result */
                key = p + 1;
                key_len = (size_t)(after - p) - 2;
                p = next + 1;
                continue;
            }
            if (key && plain && (size_t)(after - p) - 2 >= FORK_LEX_LONG && is_result_key(key, key_len))
                take_literal(lx, &copied, p, after, rank, escapes);
            rank++;
            key = NULL;
            p = after;
            continue;
        }
        if ((unsigned char)*p > ' ')
            key = NULL;
        if (*p == '{' || *p == '[')
            depth++;
        else if ((*p == '}' || *p == ']') && (depth == 0 || --depth == 0))
            break;
        p++;
    }
    if (p == end || depth != 0)
        return NULL;
    if (lx->n > 0)
        sb_putn(&lx->text, copied, (size_t)(p + 1 - copied));
    return p + 1;
}

/* Binds lx->raw to the tree's string values, in order; false when the tree
 * does not have "" where expected. */
static bool bind_values(cJSON *item, fork_lexed *lx, size_t *rank, size_t *next)
{
    for (; item; item = item->next) {
        if (cJSON_IsString(item)) {
            if (*next < lx->n && lx->raw[*next].value_rank == *rank) {
                if (item->valuestring[0] != '\0')
                    return false;
                lx->raw[(*next)++].node = item;
            }
            (*rank)++;
        }
        if (item->child && !bind_values(item->child, lx, rank, next))
            return false;
    }
    return true;
}

cJSON *fork_lex_parse(const char *p, const char *end, const char **value_end, fork_lexed *lx)
{
    lx->n = 0;
    lx->text.len = 0;
    const char *msg_end = lex_message(p, end, lx);
    if (msg_end && lx->n > 0) {
        const char *copy_end = NULL;
        cJSON *m = cJSON_ParseWithLengthOpts(lx->text.buf, lx->text.len, &copy_end, false);
        size_t rank = 0, next = 0;
        if (m && copy_end == lx->text.buf + lx->text.len && bind_values(m, lx, &rank, &next) && next == lx->n) {
            *value_end = msg_end;
            return m;
        }
        cJSON_Delete(m);
    }
    lx->n = 0;
    return cJSON_ParseWithLengthOpts(p, (size_t)(end - p), value_end, false);
}

fork_raw *fork_lex_find(const fork_lexed *lx, const cJSON *node)
{
    for (size_t i = 0; i < lx->n; i++)
        if (lx->raw[i].node == node)
            return &lx->raw[i];
    return NULL;
}

static char decoded_escape(char c)
{
    switch (c) {
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    case 'n':
        return '\n';
    case 'r':
        return '\r';
    case 't':
        return '\t';
    default: /* " \ / */
        return c;
    }
}

char *fork_raw_cut(const fork_raw *r, size_t max_chars, size_t *cut_len)
{
    strbuf sb = {0};
    const char *p = r->raw, *end = r->raw + r->raw_len;
    size_t missing = max_chars; /* characters still to keep */
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = (size_t)((bs ? bs : end) - p), keep = fork_char_offset(p, run, missing);
        sb_putn(&sb, p, keep);
        if (keep < run || !bs)
            break;
        missing -= fork_count_chars(p, run);
        if (missing == 0) /* the escape starts the first character cut */
            break;
        char c = decoded_escape(bs[1]);
        sb_putn(&sb, &c, 1);
        missing--;
        p = bs + 2;
    }
    return fork_cut_finish(&sb, r->chars, cut_len);
}

void fork_lex_free(fork_lexed *lx)
{
    sb_free(&lx->text);
    free(lx->raw);
}

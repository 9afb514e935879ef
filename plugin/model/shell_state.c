/* shell_state.c — see shell_state.h. */
#include "model/shell_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/monitor.h"

shell_state *shell_state_new(const char *command, const char *directory, size_t output_cap)
{
    shell_state *s = xcalloc(1, sizeof *s);
    s->command = xstrdup(command);
    s->directory = xstrdup(directory);
    s->out.head_cap = output_cap / 2;
    s->out.tail_cap = output_cap / 2;
    return s;
}

/* Room in the head for `want` bytes (at most head_cap): it grows by
 * doubling, from 4 KiB, so most commands' output is one small chunk. */
static void head_reserve(shell_output *o, size_t want)
{
    if (want <= o->head_size)
        return;
    size_t size = o->head_size ? o->head_size : 4096;
    while (size < want)
        size *= 2;
    if (size > o->head_cap)
        size = o->head_cap;
    o->head = xrealloc(o->head, size);
    o->head_size = size;
}

void shell_output_append(shell_output *o, const char *data, size_t n)
{
    o->total += n;
    size_t room = o->head_cap - o->head_len;
    size_t to_head = n < room ? n : room;
    if (to_head) {
        head_reserve(o, o->head_len + to_head);
        memcpy(o->head + o->head_len, data, to_head);
    }
    o->head_len += to_head;
    data += to_head;
    n -= to_head;
    if (n == 0)
        return;
    if (!o->tail)
        o->tail = xmalloc(o->tail_cap ? o->tail_cap : 1);
    if (n >= o->tail_cap) { /* only the last tail_cap bytes can stay */
        data += n - o->tail_cap;
        n = o->tail_cap;
    }
    for (size_t i = 0; i < n; i++) {
        o->tail[o->tail_pos] = data[i];
        o->tail_pos = (o->tail_pos + 1) % o->tail_cap;
    }
    o->tail_len = o->tail_len + n > o->tail_cap ? o->tail_cap : o->tail_len + n;
}

void shell_output_shrink(shell_output *o)
{
    /* Nothing printed, nothing held (no buffer at all). */
    if (o->head_len) {
        o->head = xrealloc(o->head, o->head_len);
    } else {
        free(o->head);
        o->head = NULL;
    }
    o->head_cap = o->head_size = o->head_len;
    char *tail = o->tail_len ? xmalloc(o->tail_len) : NULL;
    if (o->tail_len) {
        size_t start = (o->tail_pos + o->tail_cap - o->tail_len) % o->tail_cap;
        size_t first = o->tail_len < o->tail_cap - start ? o->tail_len : o->tail_cap - start;
        memcpy(tail, o->tail + start, first); /* up to the ring's end, then from its start */
        memcpy(tail + first, o->tail, o->tail_len - first);
    }
    free(o->tail);
    o->tail = tail;
    o->tail_cap = o->tail_len;
    o->tail_pos = 0;
}

void shell_output_drop(shell_output *o)
{
    free(o->head);
    free(o->tail);
    o->head = o->tail = NULL;
    o->head_len = o->head_cap = o->head_size = o->tail_len = o->tail_pos = o->tail_cap = 0;
    o->total = 0;
    o->stored_only = true;
}

void shell_output_set_text(shell_output *o, char *text)
{
    shell_output_drop(o);
    o->head = text;
    o->head_len = o->head_cap = o->head_size = strlen(text);
    o->total = o->head_len;
    o->stored_only = false;
}

char *shell_output_text(const shell_state *s, size_t max_chars)
{
    const shell_output *o = &s->out;
    strbuf raw = {0};
    sb_putn(&raw, o->head, o->head_len);
    uint64_t dropped = o->total - o->head_len - o->tail_len;
    if (dropped)
        sb_printf(&raw, "\n[... %llu bytes of output left out here ...]\n", (unsigned long long)dropped);
    size_t start = (o->tail_pos + o->tail_cap - o->tail_len) % (o->tail_cap ? o->tail_cap : 1);
    for (size_t i = 0; i < o->tail_len; i++)
        sb_putn(&raw, &o->tail[(start + i) % o->tail_cap], 1);
    /* Commands may print anything: make it valid text. */
    char *text = utf8_sanitize(raw.buf ? raw.buf : "", raw.len);
    sb_free(&raw);
    size_t len = strlen(text), chars = utf8_count(text, len);
    if (chars <= max_chars)
        return text;
    size_t from = utf8_offset(text, len, chars - max_chars);
    char *cut =
        xasprintf("[... output cut: the last %zu of %zu characters follow ...]\n%s", max_chars, chars, text + from);
    free(text);
    return cut;
}

void shell_describe_exit(const shell_state *s, char *buf, size_t size)
{
    if (s->lost)
        snprintf(buf, size, "stopped with its host");
    else if (!s->exited)
        snprintf(buf, size, "running");
    else if (s->term_signal)
        snprintf(buf, size, "killed by signal %d (%s)", s->term_signal, strsignal(s->term_signal));
    else
        snprintf(buf, size, "exit code %d", s->exit_code);
}

void shell_state_free(shell_state *s)
{
    if (!s)
        return;
    free(s->command);
    free(s->directory);
    free(s->out.head);
    free(s->out.tail);
    shell_monitor_free(s->monitor);
    free(s);
}

/* answer.c — see answer.h. */
#include "model/answer.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void start_over(event_answer *a, const char *message_id)
{
    answer_clear(a);
    a->message_id = xstrdup(message_id);
}

void answer_note_message(event_answer *a, const char *message_id, bool turn_end)
{
    if (!message_id)
        return;
    if (!a->message_id || strcmp(a->message_id, message_id) != 0)
        start_over(a, message_id);
    a->turn_end = turn_end;
}

void answer_note_part(event_answer *a, const char *message_id, const char *part_id, const char *text, bool ended)
{
    if (!message_id || !part_id)
        return;
    if (!a->message_id || strcmp(a->message_id, message_id) != 0)
        start_over(a, message_id);
    unsigned i = 0;
    while (i < a->nparts && strcmp(a->parts[i].id, part_id) < 0)
        i++;
    if (i == a->nparts || strcmp(a->parts[i].id, part_id) != 0) {
        if (a->nparts == a->cap) {
            a->cap = a->cap ? a->cap * 2 : 2;
            a->parts = xrealloc(a->parts, a->cap * sizeof *a->parts);
        }
        memmove(a->parts + i + 1, a->parts + i, (a->nparts - i) * sizeof *a->parts);
        a->parts[i] = (answer_part){xstrdup(part_id), NULL, false};
        a->nparts++;
    }
    answer_part *p = &a->parts[i];
    if (p->ended && !ended)
        return; /* a late start after the end changes nothing */
    free(p->text);
    p->text = xstrdup(text ? text : "");
    p->ended = ended;
}

char *answer_take(const event_answer *a, const char *not_message, char **message_id)
{
    *message_id = NULL;
    if (!a->message_id || !a->turn_end || (not_message && strcmp(a->message_id, not_message) == 0))
        return NULL;
    strbuf sb = {0};
    for (unsigned i = 0; i < a->nparts; i++) {
        if (!a->parts[i].ended) {
            sb_free(&sb);
            return NULL;
        }
        if (!*a->parts[i].text)
            continue;
        if (sb.len)
            sb_puts(&sb, "\n");
        sb_puts(&sb, a->parts[i].text);
    }
    if (!sb.len)
        return NULL;
    *message_id = xstrdup(a->message_id);
    return sb_take(&sb);
}

void answer_clear(event_answer *a)
{
    for (unsigned i = 0; i < a->nparts; i++) {
        free(a->parts[i].id);
        free(a->parts[i].text);
    }
    free(a->parts);
    free(a->message_id);
    *a = (event_answer){0};
}

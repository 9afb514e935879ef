/*
 * answer.h — a running agent's answer as its session's events tell it, so
 * that a completion check can take it without reading the session's
 * messages from the host (one round trip less between the sub-agent's last
 * word and the parent's wake).
 *
 * OpenCode sends, for each text part of an assistant message, a
 * message.part.updated when the part starts (empty text) and one when it
 * ends (the whole text, time.end set; what streams in between comes as
 * message.part.delta, which ocbg does not read), then message.updated with
 * the message's finish when the model's step ends. The answer is known from
 * events when the turn-ending message is the newest one seen and every text
 * part of it that started has ended: its texts, non-empty ones joined by
 * newlines in part order (model/outcome.c's rule for a message's text).
 * Anything short of that (an event lost, a part still open, a message with
 * no text, a newer message) gives no answer here: the check reads the
 * messages, as before.
 *
 * All of it belongs to one active task (model/task.h) and runs under the
 * engine lock. Strings are copied in; what is returned is malloc'd.
 */
#ifndef OCBG_ANSWER_H
#define OCBG_ANSWER_H

#include <stdbool.h>

typedef struct answer_part {
    char *id;
    char *text;
    bool ended;
} answer_part;

typedef struct event_answer {
    char *message_id;   /* the newest assistant message seen, or NULL */
    bool turn_end;      /* that message ended the model's turn */
    answer_part *parts; /* its text parts seen, in part-id order */
    unsigned nparts, cap;
} event_answer;

/* A text part of message_id: started (ended false, text may be "") or ended
 * (its final text). A part of another message than the newest starts over
 * with that message. */
void answer_note_part(event_answer *a, const char *message_id, const char *part_id, const char *text, bool ended);

/* message.updated for assistant message_id; turn_end: its finish ends the
 * turn. A newer message than the one kept starts over. */
void answer_note_message(event_answer *a, const char *message_id, bool turn_end);

/* The answer, when the events tell all of it (see above) and its message is
 * not `not_message` (the previous run's answer; may be NULL): the text
 * (malloc'd) and *message_id (malloc'd). NULL otherwise. */
char *answer_take(const event_answer *a, const char *not_message, char **message_id);

void answer_clear(event_answer *a);

#endif

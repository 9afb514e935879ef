/*
 * outcome.h — how did a task's run end? Decided from the task session's
 * messages alone (a pure function, no host, no lock), so that the idle-event
 * path and the poll path agree, and a stale or duplicate idle changes nothing.
 */
#ifndef OCBG_OUTCOME_H
#define OCBG_OUTCOME_H

typedef enum outcome_kind {
    OUTCOME_NONE,      /* no finished answer yet: the run goes on */
    OUTCOME_COMPLETED, /* text = the answer */
    OUTCOME_ERROR,     /* text = what went wrong */
} outcome_kind;

typedef struct outcome {
    outcome_kind kind;
    char *text;       /* malloc'd; NULL for OUTCOME_NONE */
    char *message_id; /* the assistant message it came from; malloc'd or NULL */
} outcome;

/* messages_json: OpenCode's [{info, parts}], oldest first (possibly only the
 * newest few). prev_message_id: the assistant message that ended the previous
 * run (NULL for a new task): it never counts as this run's answer.
 * The run has ended when the newest message is a finished assistant message
 * (time.completed, finish or error set) other than prev_message_id. The answer
 * is its text parts; when it has none, the nearest earlier assistant message of
 * the same turn that has text. Malformed input → OUTCOME_NONE. */
void outcome_from_messages(const char *messages_json, const char *prev_message_id, outcome *out);
void outcome_free(outcome *o);

#endif

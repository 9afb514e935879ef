/*
 * events.h — the host's events decoded: JSON text ({type, properties}) in,
 * a small typed note about one session out (session_note). A pure decoder:
 * it touches no task, takes no lock and calls nothing; entry.c hands what it
 * decodes to the engine (engine_note, engine/notes.c).
 *
 * [event] Runs on the host's event thread, so it is cheap: the most frequent
 * events (streamed text, user messages) are skipped before any parsing.
 */
#ifndef OCBG_EVENTS_H
#define OCBG_EVENTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "hooks/usage.h"

/* What a host event says about one session . */
typedef enum note_kind {
    NOTE_IDLE,               /* the session is idle: its run may have ended */
    NOTE_BUSY,               /* working */
    NOTE_RETRY,              /* working, but the host retries a failed (rate-limited) model call */
    NOTE_ERROR,              /* its run failed: text */
    NOTE_DELETED,            /* the session was deleted */
    NOTE_PART,               /* a message part changed: progress; a tool part has call_id, tool */
    NOTE_PERMISSION_ASKED,   /* request_id; text: what it asks ("bash: rm -rf build") */
    NOTE_PERMISSION_REPLIED, /* request_id */
    NOTE_USAGE,              /* an assistant message's running totals: message_id, usage */
} note_kind;

typedef struct session_note {
    note_kind kind;
    const char *session_id; /* NULL: the note is ignored */
    const char *text;
    const char *call_id, *tool;
    const char *request_id;
    const char *message_id;    /* NOTE_USAGE; NOTE_PART: the part's message */
    const char *part_id;       /* NOTE_PART, a text part: its id (text: its text so far) */
    bool text_ended;           /* NOTE_PART, a text part: ended (time.end set): text is final */
    const struct usage *usage; /* NOTE_USAGE (hooks/usage.h) */
    uint64_t call_hash;        /* NOTE_PART, a tool call with its final input: hash of tool and input; 0: none */
    bool turn_end;             /* NOTE_USAGE: the message is a finished answer that ends the model's turn
                                  (not a tool-call step): the run's end may come before its idle */
    bool summary;              /* NOTE_USAGE: the message is a compaction's summary */
    bool in_progress;          /* NOTE_USAGE: the model's step is writing it (no finish, not completed) */
} session_note;

/* One decoded event: the note, and what its borrowed strings point into. */
typedef struct decoded_event {
    session_note note; /* note.session_id NULL: nothing to apply */
    cJSON *json;       /* the parsed event (the note's strings point into it) */
    char *owned;       /* a string the decoder made (an error's or a question's text) */
    usage usage;       /* note.usage points here */
} decoded_event;

/* Decode one event into *d (always; free it with event_free). Returns
 * whether it says something about a session (unknown, malformed or
 * skipped events: false). */
bool event_decode(const char *event_json, decoded_event *d);
void event_free(decoded_event *d);

/* The event types event_decode reads (ABI 1.3 event_types): a host may
 * skip every other type before serializing it. */
extern const char *const hook_event_types[];
extern const size_t hook_event_type_count;

#endif

/*
 * defer_state.h — what an engine keeps to hold silent notifications while their
 * parent session is busy (the type only, held in struct engine;
 * engine/defer.h has the functions).
 */
#ifndef OCBG_DEFER_STATE_H
#define OCBG_DEFER_STATE_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

#include "base/map.h"

struct notification;

typedef struct defer_state {
    map busy;                  /* session id → its busy record (engine/defer.c), from the host's events */
    struct notification *held; /* silent notifications waiting for their parent to go idle; FIFO */
    struct notification **held_tail;
    bool due;          /* an idle (or a deletion) came while notifications are held */
    int64_t next_at;   /* monotonic ms at which a held notification is due anyway; 0: none */
    uint64_t deferred; /* notifications ever held, for tests */
} defer_state;

#endif

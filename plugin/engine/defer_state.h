/*
 * defer_state.h — what an engine keeps to hold silent notices while their
 * parent session is busy (the type only, held in struct engine;
 * engine/defer.h has the functions).
 */
#ifndef OCBG_DEFER_STATE_H
#define OCBG_DEFER_STATE_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

#include "base/map.h"

struct notice;

typedef struct defer_state {
    map busy;            /* session id → its busy record (engine/defer.c), from the host's events */
    struct notice *held; /* silent notices waiting for their parent to go idle; FIFO */
    struct notice **held_tail;
    bool due;          /* an idle (or a deletion) came while notices are held */
    int64_t next_at;   /* monotonic ms at which a held notice is due anyway; 0: none */
    uint64_t deferred; /* notices ever held, for tests */
} defer_state;

#endif

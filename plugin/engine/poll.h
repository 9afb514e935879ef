/*
 * poll.h — the fallback poll (private to engine/): when the worker asks the
 * host for the status map, and which tasks' answers it then reads. The
 * design is in poll.c's opening comment.
 */
#ifndef OCBG_POLL_H
#define OCBG_POLL_H

#include "base/face_guard.h"
#include <cjson/cJSON.h>

#include "engine/engine.h"

/* The host's map of sessions that are not idle (cJSON_Delete it), or NULL
 * when it could not say. [worker] Called without the lock. */
cJSON *poll_status_map(engine *eng);

/* The worker's tick while agent tasks are active (every poll_interval_ms):
 * ends tasks whose session was deleted alone, reads the status map when
 * needed, and queues the tick's budget of completion checks of tasks whose
 * session the map showed idle or is known idle (none when the map was read
 * only because its gap passed). [worker] [lock held] Released during the
 * status call. */
void poll_tick(engine *eng, int64_t now);

#endif

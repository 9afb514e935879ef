/*
 * defer.h — silent notifications wait while their parent session is busy.
 *
 * A noReply notification that lands while the parent's own turn runs is seen by
 * the host's loop when the step ends (a user message newer than its answer)
 * and costs one more model call. So a silent notification whose parent is busy is
 * held and pushed when the parent goes idle (noReply then adds it without a
 * turn). The parent's state comes from the host's events (session.status
 * busy/retry, idle; session.idle; deletion), for every session, not only
 * those with tasks: a launch's turn was busy before its parent had any. A
 * held notification stays owed (NOTIFICATION_DUE: a restart sends it again); it goes
 * out anyway when its parent's busy state was last confirmed (an event, or
 * the fallback poll's status map) DEFER_CONFIRM_POLLS (12) poll intervals ago:
 * an idle event may be lost. A waking notification for the same parent takes the
 * held ones along, first.
 * No function blocks or calls the host; each says whether it is [lock held]
 * (and asserts it).
 */
#ifndef OCBG_DEFER_H
#define OCBG_DEFER_H

#include "base/face_guard.h"
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

/* [engine_start, lock not held] */
void defer_init(engine *eng);
/* Shutdown: free the busy records and the held notifications. [shutdown, lock not held] */
void defer_free(engine *eng);

/* A host event about a session: busy, retry, idle or deleted update its
 * state; an idle or a deletion lets its held notifications go (the worker is
 * woken). Other notes: nothing. [lock held] */
void defer_note(engine *eng, const session_note *n);

/* The worker is about to push n (formatted, about an existing task): when
 * it is silent and its parent is busy, n is held (owned from now) and true
 * returned; else false (n untouched). [lock held] */
bool defer_hold(engine *eng, notification *n);

/* The worker is about to push waking notification n: when silent notifications for the
 * same parent are held, they and then n are queued before every other job
 * (n owned from now) and true returned; else false (n untouched). [lock held] */
bool defer_flush_before(engine *eng, notification *n);

/* The fallback poll's status map (sessions not idle): a held notification's
 * parent in it is confirmed busy; one not in it is idle. [lock held] */
void defer_poll(engine *eng, const cJSON *status_map);

/* Queue (for the worker, in order) the held notifications whose parent went idle,
 * is gone, or was not confirmed busy for too long. Returns the monotonic ms
 * at which the next held one is due anyway, 0 when none is held. [worker] [lock held] */
int64_t defer_tick(engine *eng, int64_t now);

#endif

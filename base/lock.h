/*
 * lock.h — the plugin's one way to take a lock, so that the lock rule is
 * checked, not just stated: no host call while the calling thread holds any
 * plugin lock (the host may call back into the plugin, block for as long as
 * a user takes to answer, or take its own locks in the other order).
 *
 * Every plugin mutex (the engine lock, the store reader's, the intern
 * table's) is taken and released through lock_acquire / lock_release, and
 * waited on through lock_wait / lock_timedwait; nothing else in plugin/,
 * hooks/ or fork/ calls pthread_mutex_lock or pthread_cond_*wait (make check
 * greps for it: build-aux/lock-check). Each thread keeps the set of plugin
 * mutexes it holds, so that
 *   - every host call wrapper (hostapi/hostapi.h) asserts none is held;
 *   - the engine's [lock held] functions assert that lock is held
 *     (ENGINE_ASSERT_LOCKED, engine/engine.h; lock_held, like SQLite's
 *     sqlite3_mutex_held).
 * The asserts are plain assert(): on in every build unless NDEBUG is defined
 * (the Makefile never defines it).
 *
 * Any thread. A thread holds at most LOCK_MAX_HELD plugin locks at once
 * (today two: the intern table's is taken under the engine lock, by
 * registry_add and launch's register_task); more is a bug and aborts.
 */
#ifndef OCBG_LOCK_H
#define OCBG_LOCK_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#define LOCK_MAX_HELD 4

/* pthread_mutex_lock / unlock, noting the mutex as held by this thread. */
void lock_acquire(pthread_mutex_t *m);
void lock_release(pthread_mutex_t *m);

/* pthread_cond_wait / timedwait on cv with m held (still held on return).
 * timedwait returns 0 or ETIMEDOUT. */
void lock_wait(pthread_cond_t *cv, pthread_mutex_t *m);
int lock_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *deadline);

/* Does this thread hold m? */
bool lock_held(const pthread_mutex_t *m);
/* How many plugin locks this thread holds. */
int locks_held(void);

/* Before any call into the host: this thread holds no plugin lock. */
#define ASSERT_NO_PLUGIN_LOCK() assert(locks_held() == 0 && "a host call while holding a plugin lock")

#endif

/* lock.c — see lock.h. The only file that calls pthread_mutex_lock,
 * pthread_mutex_unlock and pthread_cond_*wait on plugin mutexes. */
#include "base/lock.h"

#include <errno.h>
#include <stdlib.h>

/* This thread's held plugin mutexes (unordered; NULL: a free slot). */
static _Thread_local const pthread_mutex_t *held[LOCK_MAX_HELD];
static _Thread_local int held_count;

static void note_held(const pthread_mutex_t *m)
{
    for (int i = 0; i < LOCK_MAX_HELD; i++)
        if (!held[i]) {
            held[i] = m;
            held_count++;
            return;
        }
    abort(); /* more nested plugin locks than any path takes: a bug */
}

static void note_released(const pthread_mutex_t *m)
{
    for (int i = 0; i < LOCK_MAX_HELD; i++)
        if (held[i] == m) {
            held[i] = NULL;
            held_count--;
            return;
        }
    assert(!"releasing a plugin lock this thread does not hold");
}

void lock_acquire(pthread_mutex_t *m)
{
    assert(!lock_held(m) && "a plugin lock taken twice by one thread");
    pthread_mutex_lock(m);
    note_held(m);
}

void lock_release(pthread_mutex_t *m)
{
    note_released(m);
    pthread_mutex_unlock(m);
}

void lock_wait(pthread_cond_t *cv, pthread_mutex_t *m)
{
    assert(lock_held(m));
    pthread_cond_wait(cv, m);
}

int lock_timedwait(pthread_cond_t *cv, pthread_mutex_t *m, const struct timespec *deadline)
{
    assert(lock_held(m));
    int rc = pthread_cond_timedwait(cv, m, deadline);
    return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

bool lock_held(const pthread_mutex_t *m)
{
    for (int i = 0; i < LOCK_MAX_HELD; i++)
        if (held[i] == m)
            return true;
    return false;
}

int locks_held(void)
{
    return held_count;
}

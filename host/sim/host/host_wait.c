/* host_wait.c — layer 4 (host): waiting on conditions (simhost.h's sim_wait
 * and the common waits built on it): re-checked on every state change and
 * every 20 ms. Uses host_face.c and host_sessions.c. */
#include "sim_host_int.h"

#include <errno.h>

int sim_wait(sim_host *h, int (*pred)(sim_host *h, void *arg), void *arg, int timeout_ms)
{
    int64_t deadline = sim_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        pthread_mutex_lock(&h->core.mu);
        uint64_t seen = h->core.version;
        pthread_mutex_unlock(&h->core.mu);
        /* The predicate runs unlocked: it may call any sim_* function. */
        if (pred(h, arg))
            return 0;
        int64_t now = sim_mono_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        int64_t until = now + 20 < deadline ? now + 20 : deadline;
        pthread_mutex_lock(&h->core.mu);
        /* A change since `seen` means re-check at once. */
        if (h->core.version == seen)
            sim_cond_wait_until(&h->core.state_cv, &h->core.mu, until);
        pthread_mutex_unlock(&h->core.mu);
    }
}

struct calls_arg {
    const char *fn, *sid;
    size_t n;
};

static int pred_calls(sim_host *h, void *arg)
{
    struct calls_arg *a = arg;
    return sim_calls(h, a->fn, a->sid) >= a->n;
}

int sim_wait_calls(sim_host *h, const char *fn, const char *session_id, size_t n, int timeout_ms)
{
    struct calls_arg a = {fn, session_id, n};
    return sim_wait(h, pred_calls, &a, timeout_ms);
}

struct msgs_arg {
    const char *sid;
    int n;
};

static int pred_messages(sim_host *h, void *arg)
{
    struct msgs_arg *a = arg;
    return sim_session_message_count(h, a->sid) >= a->n;
}

int sim_wait_messages(sim_host *h, const char *session_id, int n, int timeout_ms)
{
    struct msgs_arg a = {session_id, n};
    return sim_wait(h, pred_messages, &a, timeout_ms);
}

static int pred_idle(sim_host *h, void *arg)
{
    return !sim_session_busy(h, arg);
}

int sim_wait_idle(sim_host *h, const char *session_id, int timeout_ms)
{
    return sim_wait(h, pred_idle, (void *)session_id, timeout_ms);
}

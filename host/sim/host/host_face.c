/* host_face.c — layer 4 (host): the public functions of simhost.h that are
 * thin wrappers over a lower layer: scripts (agents), events (core), optional
 * host functions, the call record and faults, permissions (API). Uses no
 * other host file. */
#include "sim_host_int.h"

#include <errno.h>
#include <stdlib.h>

int sim_script(sim_host *h, const char *match, const char *script_json, int once)
{
    return sim_agents_script(&h->agents, match, script_json, once);
}

int sim_without(sim_host *h, const char *fn)
{
    return sim_api_without(&h->api, fn);
}

int sim_host_abi(sim_host *h, int minor)
{
    return sim_api_abi(&h->api, minor);
}

void sim_set_data_dir(sim_host *h, const char *dir)
{
    pthread_mutex_lock(&h->core.mu);
    free(h->api.data_dir);
    h->api.data_dir = dir ? sim_strdup(dir) : NULL;
    h->api.table.data_dir = h->api.data_dir;
    pthread_mutex_unlock(&h->core.mu);
}

/* ---- events ------------------------------------------------------------ */

void sim_emit(sim_host *h, const char *event_json)
{
    if (!event_json)
        return;
    pthread_mutex_lock(&h->core.mu);
    sim_emit_text_locked(&h->core, event_json);
    pthread_mutex_unlock(&h->core.mu);
}

void sim_event_faults(sim_host *h, uint32_t seed, double drop, double dup, int delay_ms, const char *only_type)
{
    pthread_mutex_lock(&h->core.mu);
    sim_events_faults_locked(&h->core, seed, drop, dup, delay_ms, only_type);
    pthread_mutex_unlock(&h->core.mu);
}

size_t sim_events_delivered(sim_host *h, const char *type)
{
    pthread_mutex_lock(&h->core.mu);
    size_t n = sim_events_count_locked(&h->core, type);
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

int sim_events_flush(sim_host *h, int timeout_ms)
{
    sim_core *c = &h->core;
    int64_t deadline = sim_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&c->mu);
    uint64_t upto = c->ev.seq;
    int rc = 0;
    while (sim_events_pending_locked(c, upto)) {
        if (sim_mono_ms() >= deadline) {
            rc = -ETIMEDOUT;
            break;
        }
        sim_cond_wait_until(&c->state_cv, &c->mu, deadline);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* ---- host call faults and the call record ------------------------------ */

void sim_fail(sim_host *h, const char *fn, int nth, int count, int err)
{
    sim_api_fail(&h->api, fn, nth, count, err);
}

void sim_status_omit(sim_host *h, int omit)
{
    pthread_mutex_lock(&h->core.mu);
    h->api.status_omit = omit != 0;
    pthread_mutex_unlock(&h->core.mu);
}

void sim_slow(sim_host *h, const char *fn, int ms)
{
    sim_api_slow(&h->api, fn, ms);
}

void sim_on_call(sim_host *h, const char *fn, void (*on_call)(void *arg), void *arg)
{
    sim_api_on_call(&h->api, fn, on_call, arg);
}

size_t sim_calls(sim_host *h, const char *fn, const char *session_id)
{
    return sim_api_calls(&h->api, fn, session_id);
}

size_t sim_calls_started(sim_host *h, const char *fn)
{
    return sim_api_calls_started(&h->api, fn);
}

char *sim_call_body(sim_host *h, const char *fn, const char *session_id, int n)
{
    return sim_api_call_body(&h->api, fn, session_id, n);
}

char *sim_calls_json(sim_host *h)
{
    return sim_api_calls_json(&h->api);
}

/* ---- permissions ------------------------------------------------------- */

int sim_permission_rules(sim_host *h, const char *rules_json)
{
    return sim_api_perm_rules(&h->api, rules_json);
}

void sim_permission_auto(sim_host *h, const char *reply, const char *message)
{
    sim_api_perm_auto(&h->api, reply, message);
}

int sim_permission_reply(sim_host *h, const char *request_id, const char *reply, const char *message)
{
    return sim_api_perm_reply(&h->api, request_id, reply, message);
}

char *sim_permission_open(sim_host *h, const char *session_id)
{
    return sim_api_perm_open(&h->api, session_id);
}

size_t sim_permission_count(sim_host *h)
{
    return sim_api_perm_count(&h->api);
}

char *sim_permission_json(sim_host *h, int n)
{
    return sim_api_perm_json(&h->api, n);
}

/* ---- the clock --------------------------------------------------------- */

int64_t sim_now_ms(sim_host *h)
{
    return sim_wall_ms(&h->core);
}

void sim_advance_ms(sim_host *h, int64_t ms)
{
    sim_clock_advance(&h->core, ms);
}

/* ---- views ------------------------------------------------------------- */

size_t sim_views(sim_host *h, const char *session_id)
{
    return sim_api_views(&h->api, session_id);
}

char *sim_view(sim_host *h, const char *session_id, int n)
{
    return sim_api_view(&h->api, session_id, n);
}

/* ---- folders (ABI 1.5) ------------------------------------------------- */

size_t sim_released_touches(sim_host *h, const char *directory)
{
    return sim_api_released_touches(&h->api, directory);
}

int sim_directory_watched(sim_host *h, const char *directory)
{
    return sim_api_dir_watched(&h->api, directory);
}

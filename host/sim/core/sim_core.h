/*
 * sim_core.h — layer 0 of the simulated host: what every layer above shares.
 *
 *   core.c         the state-change signal, the clock, condvars, allocation
 *   core_events.c  the event queue every layer emits into (with its faults)
 *   core_init.c    setting up and tearing down the lock, condvars and queue
 *
 * The layers, each using only those below it. A lower layer never calls a
 * function of a higher one: where it must reach up, it calls a function
 * pointer the higher one gave it (noted "callback" below). Within a layer, files
 * depend one way too: each layer's header lists its files lowest first, and
 * a file uses (includes, calls) only files listed before it. `make check`
 * runs build-aux/layout-check over host/sim, which fails on any cycle.
 *
 *   0 core    sim_core.h      lock, clock, change signal, event queue
 *   1 store   sim_storage.h     sessions and their messages
 *             callback: release (a session's turn state, to the agents)
 *   2 agents  sim_agent.h     scripts, the scheduler running every turn
 *             callbacks: transform (to the host's plugins), ask and turn_gone
 *             (to the API's permissions)
 *   3 api     sim_api.h       the ocp_host table and its functions, call
 *                             record and faults, permissions, event delivery
 *             callback: deliver (to the host's plugins)
 *   4 host    sim_host_int.h  plugins, tool calls, the public simhost.h
 *
 * A layer with several files has a private header for what they share
 * (sim_agent_int.h, sim_api_int.h). demo.c uses only simhost.h.
 *
 * Locking. `mu` guards the state of every layer except the host's plugin list
 * (its own lock, see sim_host_int.h). The clock offset is atomic. No lock is
 * held while a plugin runs code that may call back into the host.
 *
 * Functions named *_locked must be called with `mu` held; the others take
 * what they need themselves.
 */
#ifndef OCBG_SIM_CORE_H
#define OCBG_SIM_CORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct sim_event sim_event;
typedef struct sim_typecount sim_typecount;

/* A queued event. */
struct sim_event {
    char *json;
    char *type;
    int64_t due_mono; /* monotonic ms before which it is not delivered */
    uint64_t seq;     /* emission order; copies share the original's */
    sim_event *prev, *next;
};

/* The event queue, in order of due time then emission. Faults are decided
 * when an event is emitted, from a seeded random source, so a given seed and
 * event sequence always give the same faults. */
typedef struct sim_evq {
    pthread_cond_t cv; /* signalled when an event is queued */
    sim_event *head, *tail;
    uint64_t seq;      /* last sequence number given */
    uint64_t inflight; /* seq being delivered now (0: none) */
    size_t delivered;
    sim_typecount *types; /* delivered, per type */
    uint64_t rng;
    double drop, dup;
    int delay_ms;
    char *only_type;
} sim_evq;

typedef struct sim_core {
    pthread_mutex_t mu;
    pthread_cond_t state_cv; /* broadcast on every state change (monotonic) */
    uint64_t version;        /* bumped on every state change */
    int stopping;            /* threads exit */
    int64_t advance_ms;      /* atomic: read without mu by the clock */
    sim_evq ev;
    /* Hook (the storage's): does an event reach the plugins at all? OpenCode
     * sends a session's events only to its directory's instance, which the
     * plugin may not follow. Called as the event is emitted, mu held; ev may
     * be NULL (text that is not JSON). NULL: every event does. */
    int (*route)(void *ctx, const cJSON *ev);
    void *route_ctx;
    size_t unrouted; /* events the route callback kept from the plugins */
} sim_core;

/* ---- core_init.c ------------------------------------------------------- */

/* Initialise mu and the condvars. Returns 0 or an errno (nothing to free). */
int sim_core_init(sim_core *c);
/* Free what is left in the event queue, destroy the lock and condvars. No
 * other thread may be using c. */
void sim_core_destroy(sim_core *c);

/* ---- core.c ------------------------------------------------------------ */

/* Monotonic ms (for deadlines and scheduling). Any thread. */
int64_t sim_mono_ms(void);
/* Wall-clock ms plus the test's offset. Any thread, with or without mu. */
int64_t sim_wall_ms(sim_core *c);
/* Move the clock's offset forward (atomic), then signal a change. */
void sim_clock_advance(sim_core *c, int64_t ms);
/* Note a state change: bump the version, wake waiters on state_cv. mu held. */
void sim_changed_locked(sim_core *c);
/* The same, taking mu itself. */
void sim_changed(sim_core *c);
/* Wait on `cv` (a monotonic-clock condvar) with `mu` held, until abs
 * monotonic ms `until_mono` (or forever when < 0). */
void sim_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t until_mono);
/* Initialise a condvar on CLOCK_MONOTONIC. Returns 0 or an errno. */
int sim_cond_init(pthread_cond_t *cv);

/* strdup that tolerates NULL (returns NULL). Aborts on no memory: the sim
 * host is test machinery and an OOM there is not a case under test. */
char *sim_strdup(const char *s);
/* malloc/calloc/realloc that abort on failure (same reason). */
void *sim_xmalloc(size_t n);
void *sim_xcalloc(size_t n, size_t sz);
void *sim_xrealloc(void *p, size_t n);
/* cJSON_PrintUnformatted that aborts on failure; result malloc'd. */
char *sim_print(const cJSON *j);

/* ---- core_events.c ------------------------------------------------------ */

/* Queue an event (takes ownership of ev: {type, properties}), unless the
 * route callback keeps it from the plugins: then it is lost, as in OpenCode (not
 * queued, not counted as delivered, no fault decided). mu held. */
void sim_emit_locked(sim_core *c, cJSON *ev);
/* Queue an event given as text (type read from it, "" when unreadable). mu held. */
void sim_emit_text_locked(sim_core *c, const char *json);
/* {"type":type,"properties":props} with props owned. mu held. */
void sim_emit_props_locked(sim_core *c, const char *type, cJSON *props);
/* Set the event faults (see sim_event_faults in simhost.h). mu held. */
void sim_events_faults_locked(sim_core *c, uint32_t seed, double drop, double dup, int delay_ms, const char *only_type);
/* Take the first event if it is due: returns it (now in flight), or NULL and
 * *wait_until = the monotonic ms to wait until (-1: the queue is empty). mu held. */
sim_event *sim_events_take_locked(sim_core *c, int64_t *wait_until);
/* The taken event was delivered: count it, free it, signal the change. mu held. */
void sim_events_done_locked(sim_core *c, sim_event *e);
/* How many events were delivered (of `type`; NULL = all). mu held. */
size_t sim_events_count_locked(const sim_core *c, const char *type);
/* Is any event numbered <= upto still queued or in flight? mu held. */
int sim_events_pending_locked(const sim_core *c, uint64_t upto);
/* Free every queued event. mu held (or no other thread left). */
void sim_events_clear_locked(sim_core *c);
/* Free the queue, the counts and the fault settings. No other thread left. */
void sim_events_free_locked(sim_core *c);

#endif

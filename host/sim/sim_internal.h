/*
 * sim_internal.h — the simulated host's private state, shared by its files:
 *
 *   host.c      create/destroy, the clock's public face, sim_wait
 *   host_sessions.c  the user's view of the sessions (simhost.h)
 *   host_face.c thin public wrappers (simhost.h) over the lower layers
 *   events.c    the event queue's one delivery thread
 *   calls.c     the record of plugin calls, call faults and slowness
 *   api.c       the ocp_host functions plugins call
 *   plugins.c   dlopen/entry/shutdown/dlclose of plugins
 *   toolcall.c  tool and command calls as the host's worker makes them
 *   permission.c  permission rules, questions and answers, ask_permission
 *
 * Locking. `mu` guards everything except the plugin list: sessions, scripts,
 * the scheduler heap, the event queue, the call record, faults. The clock
 * offset is atomic. `plug_mu` guards the plugin list; it is held while the host calls a
 * plugin's on_event or transform_messages (both may not block or call the
 * host), never while calling tool_call, command_call or shutdown. The two are
 * never held together. No host lock is held while a plugin runs code that may
 * call back into the host, so a plugin thread can always make host calls.
 *
 * Functions named *_locked must be called with `mu` held; the others take
 * what they need themselves.
 */
#ifndef OCBG_SIM_INTERNAL_H
#define OCBG_SIM_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "sim_agent.h"
#include "simhost.h"

typedef struct sim_callrec sim_callrec;
typedef struct sim_fault sim_fault;
typedef struct sim_slowfn sim_slowfn;
typedef struct sim_plugslot sim_plugslot;
typedef struct sim_perm_req sim_perm_req;

/* One recorded plugin call. */
struct sim_callrec {
    char *fn;
    char *session; /* may be NULL */
    char *body;    /* may be NULL */
    int rc;
    int64_t t_ms;
};

struct sim_fault {
    char *fn;
    uint64_t base;  /* calls to fn already made when the fault was set */
    int nth, count, err;
    sim_fault *next;
};

struct sim_slowfn {
    char *fn;
    int ms;
    uint64_t calls; /* calls to fn so far (for fault numbering) */
    sim_slowfn *next;
};

struct sim_plugslot {
    void *handle;
    const ocp_plugin *plugin;
    char *path;
};

struct sim_host {
    ocp_host table;

    sim_core core;           /* mu, the change signal, the clock, the event queue */

    sim_store store;         /* sessions and messages */
    sim_agents agents;       /* scripts and the scheduler */

    /* event delivery */
    pthread_t ev_thread;
    int ev_started;

    /* call record, faults */
    sim_callrec *calls;
    size_t ncalls, calls_cap;
    sim_fault *faults;
    sim_slowfn *fnstats;

    /* permissions (permission.c) */
    cJSON *perm_rules;   /* OpenCode's "permission" config object */
    cJSON *perm_always;  /* {session: [[permission, pattern], …]} approved for good */
    cJSON *perm_log;     /* every question asked, with its outcome */
    char *perm_auto;     /* the automatic answer to an "ask", or NULL (questions stay open) */
    char *perm_auto_msg;
    sim_perm_req *perm_open; /* open (and answered, not yet collected) questions, newest first */

    /* plugins (plug_mu) */
    pthread_mutex_t plug_mu;
    pthread_cond_t plug_cv;
    sim_plugslot *plugins;
    size_t nplugins;
    int plug_inflight;    /* tool/command calls in progress (may block until shutdown) */
    int plug_quick;       /* tool_cancel calls in progress (never block long) */
    int plug_closing;     /* unload in progress: start no new call */
    char load_error[512];
};

/* ---- events.c ---------------------------------------------------------- */

/* Start the event thread. Returns 0 or an errno. */
int sim_events_start(sim_host *h);
/* Stop and join it (h->core.stopping set under mu), free queued events. */
void sim_events_join(sim_host *h);

/* ---- calls.c ----------------------------------------------------------- */

/* Before a plugin call to fn: sleeps for sim_slow (without mu), counts the
 * call and decides an injected fault. Returns 0 to go on, or the negative
 * errno to fail with. Takes mu itself. */
int sim_call_begin(sim_host *h, const char *fn);
/* Record a finished call (body may be NULL; copied). Takes mu itself. */
void sim_call_record(sim_host *h, const char *fn, const char *session, const char *body, int rc,
                     int64_t t_ms);
/* Free the record and the fault tables. mu held. */
void sim_calls_free_locked(sim_host *h);

/* ---- api.c ------------------------------------------------------------- */

/* Fill h->table with the host functions. */
void sim_api_fill(sim_host *h);

/* ---- permission.c ------------------------------------------------------ */

/* The ask_permission host function (api.c records it and injects faults). */
int sim_ask_permission(sim_host *h, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out);
/* The agents' ask hook (ctx: the host): a sub-agent's "ask" step (see
 * sim_agent_hooks.ask). mu held. */
int sim_permission_ask_step_locked(void *ctx, const char *session_id, const char *message_id, const cJSON *ask,
                                   char **request_id);
/* The agents' turn_gone hook (ctx: the host): the turn's open questions are
 * rejected. mu held. */
void sim_permission_turn_gone_locked(void *ctx, const char *session_id);
void sim_permission_free_locked(sim_host *h);

/* ---- plugins.c --------------------------------------------------------- */

/* Call every loaded plugin's on_event with json (under plug_mu; event thread). */
void sim_plugins_deliver(sim_host *h, const char *json);
/* Pass messages_json through every plugin's transform_messages; returns the
 * result (malloc'd) — a copy of the input when no plugin changed it. */
char *sim_plugins_transform(sim_host *h, const char *session_id, const char *messages_json);
/* Begin a call into plugin i (tool_call, command_call, tool_cancel): returns
 * the plugin, or NULL (with *rc set: -ENOENT none loaded, -ECANCELED
 * unloading). Pair with sim_plugin_leave. */
const ocp_plugin *sim_plugin_enter(sim_host *h, size_t i, int *rc);
void sim_plugin_leave(sim_host *h);
/* Begin a short call (tool_cancel) into a plugin known by its table, only if
 * still loaded and not closing. Returns 1 when entered; then no shutdown
 * begins until sim_plugin_leave_quick. */
int sim_plugin_enter_table(sim_host *h, const ocp_plugin *p);
void sim_plugin_leave_quick(sim_host *h);

#endif

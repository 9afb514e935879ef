/*
 * sim_host_int.h — layer 4 of the simulated host, the top: plugins, tool
 * calls and the public API of simhost.h, over the API (sim_api.h), the
 * agents, the storage and the core. Its files only:
 *
 *   host_plugins.c   dlopen/entry/shutdown/dlclose of plugins, calls into them
 *   host_toolcall.c  tool and command calls as the host's worker makes them
 *   host_sessions.c  the user's view of the sessions (simhost.h)
 *   host_face.c      thin public wrappers (simhost.h) over the lower layers
 *   host_wait.c      sim_wait and the waits built on it
 *   host.c           create/destroy, the layers wired together
 *
 * Lowest first: a file uses only those listed before it (and the layers
 * below). demo.c, above them all, uses only simhost.h.
 *
 * Locking. The core's `mu` guards every lower layer's state. `plug_mu`
 * guards the plugin list; it is held while the host calls a plugin's on_event
 * or transform_messages (both may not block or call the host), never while
 * calling tool_call, command_call or shutdown. The two are never held
 * together. No host lock is held while a plugin runs code that may call back
 * into the host, so a plugin thread can always make host calls.
 */
#ifndef OCBG_SIM_HOST_INT_H
#define OCBG_SIM_HOST_INT_H

#include <pthread.h>
#include <stdint.h>

#include "api/sim_api.h"
#include "simhost.h"

typedef struct sim_plugslot sim_plugslot;

/* The plugin's free function type (ocp_plugin.free). */
typedef void (*sim_plugin_free_fn)(void *userdata, char *p);

struct sim_plugslot {
    void *handle;
    const ocp_plugin *plugin; /* valid until its shutdown returns */
    char *path;
    /* Copied from the table at load, as ocp.h asks of a host: shutdown frees
     * the table, and a tool call it released may free its answer afterwards.
     * The function stays valid until dlclose. */
    sim_plugin_free_fn free;
    void *userdata;
};

struct sim_host {
    sim_core core;     /* mu, the change signal, the clock, the event queue */
    sim_storage store; /* sessions and messages */
    sim_agents agents; /* scripts and the scheduler */
    sim_api api;       /* the host table, permissions, call record, event delivery */

    /* plugins (plug_mu) */
    pthread_mutex_t plug_mu;
    pthread_cond_t plug_cv;
    sim_plugslot *plugins;
    size_t nplugins;
    int plug_inflight; /* tool/command calls in progress (may block until shutdown) */
    int plug_quick;    /* tool_cancel calls in progress (never block long) */
    int plug_closing;  /* unload in progress: start no new call */
    char load_error[512];
};

/* ---- host_plugins.c ----------------------------------------------------- */

/* Call every loaded plugin's on_event with json (under plug_mu; event thread). */
void sim_plugins_deliver(sim_host *h, const char *json);
/* Pass messages_json through every plugin's transform_messages; returns the
 * result (malloc'd) — a copy of the input when no plugin changed it. */
char *sim_plugins_transform(sim_host *h, const char *session_id, const char *messages_json);
/* Every plugin's tool_before (ABI 1.5) for session_id's call of `tool`,
 * under plug_mu, as an [event] call: the first refusal (-EACCES, *note =
 * its text) ends it; warnings are joined by a blank line into *note (NULL
 * when none). *note malloc'd. */
int sim_plugins_tool_before(sim_host *h, const char *session_id, const char *tool, const char *args_json, char **note);
/* Begin a call into plugin i (tool_call, command_call): returns the plugin,
 * with the copies of its free and userdata taken at load (*pfree, *ud: use
 * them, not the table, to free the call's answer), or NULL (with *rc set:
 * -ENOENT none loaded, -ECANCELED unloading). Pair with sim_plugin_leave. */
const ocp_plugin *sim_plugin_enter(sim_host *h, size_t i, int *rc, sim_plugin_free_fn *pfree, void **ud);
void sim_plugin_leave(sim_host *h);
/* Begin a short call (tool_cancel) into a plugin known by its table, only if
 * still loaded and not closing. Returns 1 when entered; then no shutdown
 * begins until sim_plugin_leave_quick. */
int sim_plugin_enter_table(sim_host *h, const ocp_plugin *p);
void sim_plugin_leave_quick(sim_host *h);

/* ---- host_toolcall.c ---------------------------------------------------- */

/* The agents' plugin_tool callback (sim_agent.h): the first plugin having
 * `tool` runs it for session_id's model turn (message_id, the part's
 * call_id, the session's folder), on the calling thread with no host lock
 * held. Returns 0 when no plugin has it; else 1 with *rc, *out (malloc'd)
 * and *end_turn (the call failed after the user's plain reject of one of
 * its questions: OpenCode's RejectedError ends the turn). */
int sim_turn_tool(sim_host *h, const char *session_id, const char *message_id, const char *call_id, const char *tool,
                  const char *args_json, int *rc, char **out, int *end_turn);

#endif

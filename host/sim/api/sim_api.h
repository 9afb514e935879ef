/*
 * sim_api.h — layer 3 of the simulated host: what a plugin sees of it. The
 * ocp_host table (include/ocp.h) and its functions, each with injected faults
 * and slowness and a record of the call; OpenCode's permission system behind
 * ask_permission (and behind a sub-agent's "ask" step); the thread that
 * delivers events. Uses the agents, the storage and the core.
 *
 *   api_calls.c       the call record, call faults and slowness
 *   api_frame.c       the frame every host function shares (fault, record)
 *   api_perm_rules.c  permission rules: wildcards, the decision for a request
 *   api_permission.c  permission questions: asked, answered, waited for
 *   api_sessions.c    session_create, _get, _messages, _abort, _status, _fork
 *   api_dirs.c        session_create_in, directory_watch (ABI 1.5: folders)
 *   api_prompt.c      session_prompt: the body checked, stored or run
 *   api_delivery.c    the event thread: the queue to the plugins' on_event
 *   api_table.c       the table (pointing to the host functions above), log,
 *                     free, now_ms, ask_permission's frame; setup, teardown
 *
 * Lowest first: a file uses only those listed before it (and the layers
 * below).
 *
 * Reaching up: event delivery calls the host's plugins through the `deliver`
 * callback the host sets before sim_api_start.
 */
#ifndef OCBG_SIM_API_H
#define OCBG_SIM_API_H

#include "ocp.h"
#include "agent/sim_agent.h"

typedef struct sim_callrec sim_callrec;
typedef struct sim_fault sim_fault;
typedef struct sim_slowfn sim_slowfn;
typedef struct sim_perm_req sim_perm_req;

typedef struct sim_api {
    ocp_host table; /* given to plugins; userdata is this sim_api */
    char *data_dir; /* table.data_dir (sim_set_data_dir) */
    sim_core *core;
    sim_storage *store;
    sim_agents *agents;

    /* call record, faults (api_calls.c) */
    sim_callrec *calls;
    size_t ncalls, calls_cap;
    sim_fault *faults;
    sim_slowfn *fnstats;
    int status_omit; /* sim_status_omit: the status map lists no session */

    /* permissions (api_perm_rules.c, api_permission.c) */
    cJSON *perm_rules;  /* OpenCode's "permission" config object */
    cJSON *perm_always; /* {session: [[permission, pattern], …]} approved for good */
    cJSON *perm_log;    /* every question asked, with its outcome */
    char *perm_auto;    /* the automatic answer to an "ask", or NULL (questions stay open) */
    char *perm_auto_msg;
    sim_perm_req *perm_open; /* open (and answered, not yet collected) questions, newest first */

    /* views the plugins published (api_views.c): [{session, view}], oldest first */
    cJSON *views;

    /* event delivery (api_delivery.c): deliver is called without mu. */
    void (*deliver)(void *ctx, const char *event_json);
    void *deliver_ctx;
    pthread_t ev_thread;
    int ev_started;
} sim_api;

/* ---- api_table.c -------------------------------------------------------- */

/* Set up over the agents (and their store and core): the table filled, the
 * agents' permission callbacks pointed here. */
void sim_api_init(sim_api *a, sim_agents *agents);
/* Free the record, the faults and the permission state. mu held (or no
 * other thread left). */
void sim_api_free_locked(sim_api *a);
/* Make the table lack an optional function ("session_fork", "now_ms",
 * "ask_permission", "notify_user", "publish_view", "session_create_in",
 * "directory_watch"). Returns 0, or -1 for one that is not optional. Takes mu. */
int sim_api_without(sim_api *a, const char *fn);
/* Present the table of ABI 1.minor (0..OCP_ABI_MINOR): abi_minor, and a
 * struct_size that ends with that minor's last field; the later fields are
 * NULL too. Returns 0, or -EINVAL (nothing changed). Takes mu. */
int sim_api_abi(sim_api *a, int minor);

/* ---- api_dirs.c --------------------------------------------------------- */

/* Calls the plugins made about sessions of `directory` (NULL: any folder)
 * after it was released (see simhost.h's sim_released_touches). Takes mu. */
size_t sim_api_released_touches(sim_api *a, const char *directory);
/* 1: directory is watched (or NULL, the host's own); -1: released; 0: never
 * watched. Takes mu. */
int sim_api_dir_watched(sim_api *a, const char *directory);

/* ---- api_views.c -------------------------------------------------------- */

/* The table's publish_view (ABI 1.4): the view recorded, not as a call. */
int sim_api_publish_view(void *ud, const char *session_id, const char *view_json);
/* How many views were published about session_id (NULL = any). Takes mu. */
size_t sim_api_views(sim_api *a, const char *session_id);
/* The nth view about session_id (NULL = any; 0 oldest, -1 newest), malloc'd;
 * NULL when there is none. Takes mu. */
char *sim_api_view(sim_api *a, const char *session_id, int n);
/* Free the views. mu held (or no other thread left). */
void sim_api_views_free_locked(sim_api *a);

/* ---- api_delivery.c ----------------------------------------------------- */

/* Start the event thread (a->deliver set first). Returns 0 or an errno. */
int sim_api_start(sim_api *a);
/* Wake and join it (core->stopping set under mu), drop queued events. */
void sim_api_join(sim_api *a);

/* ---- api_prompt.c ------------------------------------------------------- */

/* A prompt body for session sid, as session_prompt takes it but not
 * recorded (the user typing): validated, then stored (noReply) or run or
 * queued. Returns 0, -EINVAL or -ENOENT with *why = a malloc'd message.
 * Takes mu itself. */
int sim_api_prompt(sim_api *a, const char *sid, const char *body_json, char **why);

/* ---- api_calls.c: the record and the faults (see simhost.h's sim_fail,
 * sim_slow, sim_calls, sim_call_body, sim_calls_json). Each takes mu. ----- */

void sim_api_fail(sim_api *a, const char *fn, int nth, int count, int err);
void sim_api_slow(sim_api *a, const char *fn, int ms);
void sim_api_on_call(sim_api *a, const char *fn, void (*on_call)(void *arg), void *arg);
size_t sim_api_calls(sim_api *a, const char *fn, const char *session_id);
size_t sim_api_calls_started(sim_api *a, const char *fn);
char *sim_api_call_body(sim_api *a, const char *fn, const char *session_id, int n);
char *sim_api_calls_json(sim_api *a);

/* ---- permissions (see simhost.h's sim_permission_*). Each takes mu. ----- */

int sim_api_perm_rules(sim_api *a, const char *rules_json);
void sim_api_perm_auto(sim_api *a, const char *reply, const char *message);
int sim_api_perm_reply(sim_api *a, const char *request_id, const char *reply, const char *message);
char *sim_api_perm_open(sim_api *a, const char *session_id);
size_t sim_api_perm_count(sim_api *a);
char *sim_api_perm_json(sim_api *a, int n);
/* Did the user answer a question of tool call call_id with the plain
 * "reject" (no words: OpenCode's RejectedError, after which the host ends
 * the turn when the call fails)? 1 yes, 0 no. */
int sim_api_perm_user_rejected(sim_api *a, const char *call_id);

#endif

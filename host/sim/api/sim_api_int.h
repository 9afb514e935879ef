/*
 * sim_api_int.h — shared by the API layer's files only (see sim_api.h): the
 * call record's entries, the frame of a host function, the host functions
 * the table points to, and what the permission files use of each other.
 */
#ifndef OCBG_SIM_API_INT_H
#define OCBG_SIM_API_INT_H

#include "sim_api.h"

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
    uint64_t base; /* calls to fn already made when the fault was set */
    int nth, count, err;
    sim_fault *next;
};

struct sim_slowfn {
    char *fn;
    int ms;
    uint64_t calls;             /* calls to fn so far (for fault numbering) */
    uint64_t started;           /* calls that entered the host, before any sim_slow delay */
    void (*on_call)(void *arg); /* sim_on_call: run as a call enters, without mu */
    void *on_call_arg;
    sim_slowfn *next;
};

/* ---- api_calls.c -------------------------------------------------------- */

/* Before a plugin call to fn: sleeps for sim_slow (without mu), counts the
 * call and decides an injected fault. Returns 0 to go on, or the negative
 * errno to fail with. Takes mu itself. */
int sim_api_call_begin(sim_api *a, const char *fn);
/* Record a finished call (body may be NULL; copied); one about a session of
 * a released folder is counted there (sim_released_touches). Takes mu
 * itself. */
void sim_api_call_record(sim_api *a, const char *fn, const char *session, const char *body, int rc, int64_t t_ms);
/* Free the record and the fault tables. mu held. */
void sim_api_calls_free_locked(sim_api *a);

/* ---- api_sessions.c: what session_create and session_create_in share ---- */

/* The call's arguments: parentID and title when given. */
cJSON *sim_api_create_args(const char *parent_id, const char *title);
/* A new session (in folder dir_key, NULL: the host's own); its info as JSON
 * text (malloc'd) with *rc 0, or "Session not found: <parent>" with *rc
 * -ENOENT. Takes mu itself. */
char *sim_api_new_session(sim_api *a, const char *parent_id, const char *title, const char *dir_key, int *rc);

/* ---- api_frame.c: the frame of every host function ---------------------- */

/* *out = s when out is given, else s is freed. */
void sim_api_set_out(char **out, char *s);
/* fmt with one %s (arg NULL: "(null)"), malloc'd. */
char *sim_api_msgf(const char *fmt, const char *arg);
/* The call's arguments as JSON text for the record; takes o. */
char *sim_api_args_text(cJSON *o);
/* The head of a host function: *out cleared, the call's time and the body to
 * record (takes args), and an injected fault. Returns 0 to go on, or the
 * fault's rc, already recorded, with *out = "simulated failure of <fn>". */
int sim_api_begin(sim_api *a, const char *fn, const char *sid, cJSON *args, char **out, int64_t *t, char **body);
/* An injected fault rc: *out = "simulated failure of <fn>", recorded (takes
 * body). Returns rc. */
int sim_api_injected(sim_api *a, const char *fn, const char *sid, char *body, int rc, int64_t t, char **out);
/* The tail: record the call (takes body), return rc. */
int sim_api_finish(sim_api *a, const char *fn, const char *sid, char *body, int rc, int64_t t);

/* ---- the host functions (ud: the sim_api) ------------------------------- */

/* Defined in api_sessions.c, api_prompt.c and api_dirs.c; api_table.c puts
 * them in the table. */
int sim_hf_session_create(void *ud, const char *parent_id, const char *title, char **out); /* api_sessions.c */
int sim_hf_session_get(void *ud, const char *sid, char **out);
int sim_hf_session_messages(void *ud, const char *sid, int limit, char **out);
int sim_hf_session_abort(void *ud, const char *sid, char **out);
int sim_hf_session_status(void *ud, char **out);
int sim_hf_session_fork(void *ud, const char *sid, const char *message_id, char **out);
int sim_hf_session_prompt(void *ud, const char *sid, const char *body_json, char **out); /* api_prompt.c */
int sim_hf_session_create_in(void *ud, const char *parent_id, const char *title, const char *directory,
                             char **out); /* api_dirs.c */
int sim_hf_directory_watch(void *ud, const char *directory, int watch);

/* ---- api_perm_rules.c --------------------------------------------------- */

/* "deny", "ask" or "allow" for a request: any pattern denied → deny; any
 * that asks and was not approved for good in the session → ask. mu held. */
const char *sim_api_perm_decide_locked(sim_api *a, const char *session, const char *perm, const cJSON *patterns);

/* ---- api_permission.c --------------------------------------------------- */

/* ask_permission's work, after its frame (req checked for size). May block
 * until the question is answered or ctx is cancelled. Takes mu itself. */
int sim_api_ask_permission(sim_api *a, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out);
/* The agents' callbacks (ctx: the sim_api; see sim_agent_callbacks). mu held. */
int sim_api_ask_step_locked(void *ctx, const char *session_id, const char *message_id, const cJSON *ask,
                            char **request_id);
void sim_api_turn_gone_locked(void *ctx, const char *session_id);
/* Free the questions and the permission state. mu held. */
void sim_api_perm_free_locked(sim_api *a);

#endif

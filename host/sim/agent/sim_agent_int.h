/*
 * sim_agent_int.h — shared by the agents layer's files only (see sim_agent.h):
 * a session's turn state and the functions one agent file uses from another.
 * Every function here is called with the core's `mu` held, except sim_agent_shell.
 */
#ifndef OCBG_SIM_AGENT_INT_H
#define OCBG_SIM_AGENT_INT_H

#include "sim_agent.h"

typedef struct sim_prompt sim_prompt;

/* A prompt waiting for its turn (the session was busy when it came). */
struct sim_prompt {
    cJSON *body; /* the parsed prompt body, owned */
    sim_prompt *next;
};

/* What an assistant message's model calls used so far (OpenCode's running
 * totals: info.tokens and info.cost). */
typedef struct sim_usage {
    double input, output, reasoning, cache_read, cache_write; /* tokens */
    double cost;                                              /* USD */
} sim_usage;

/* The model turn a busy session is running. */
typedef struct sim_turn {
    cJSON *steps;       /* the script's steps array, owned copy */
    int step;           /* the next step to run */
    int phase;          /* 0: step not started; 1: waiting for the step's time */
    char *msg_id;       /* the assistant message being produced */
    char *agent;        /* the agent named by the prompt (or "build") */
    cJSON *parts;       /* the assistant message's parts so far, owned */
    cJSON *open_part;   /* a tool part still running (inside parts), or NULL */
    int64_t created;    /* wall-clock ms the turn began */
    sim_usage used;     /* the assistant message's totals ("usage" steps) */
    int transformed;    /* transform_messages already ran for this turn */
    uint64_t gen;       /* changes whenever a turn starts or ends */
    char *waiting_perm; /* the permission question the turn waits on, or NULL */
} sim_turn;

/* A session's turn state (s->run): allocated with its first prompt, freed
 * when the storage releases the session. */
typedef struct sim_run {
    sim_turn turn; /* valid while the session is busy */
    sim_prompt *queue_head, *queue_tail;
    /* Scheduler heap position (-1: not scheduled) and wake time/order. */
    long heap_idx;
    int64_t wake_mono;
    uint64_t wake_seq;
} sim_run;

/* A script rule (sim_agents_script). */
struct sim_rule {
    char *match;   /* "" matches everything */
    cJSON *script; /* {"steps":[…]}, owned */
    int once;
    sim_rule *next;
};

/* ---- agent_shell.c ------------------------------------------------------ */

/* Run cmd with /bin/sh -c in dir (NULL: the process's working directory),
 * stdin /dev/null, no other inherited descriptor; *output = its stdout and
 * stderr, the first max bytes, malloc'd (NULL when it could not start).
 * Returns its exit status, 128 + the signal that killed it, or a negative
 * errno when it could not start. Blocks until it ends: called WITHOUT mu. */
int sim_agent_shell(const char *dir, const char *cmd, size_t max, char **output);

/* ---- agent_scripts.c ---------------------------------------------------- */

/* The steps for a prompt's text (a copy, owned by the caller): the first
 * matching rule's (a once rule is removed), else one reply "ok". */
cJSON *sim_agent_choose_steps_locked(sim_agents *ag, const char *text);
/* Free every rule. */
void sim_agent_rules_free_locked(sim_agents *ag);

/* ---- agent_heap.c ------------------------------------------------------- */

/* Wake s's turn at monotonic ms `at` (replacing an earlier wake). */
void sim_agent_schedule_locked(sim_agents *ag, sim_session *s, int64_t at);
/* Take s off the heap (nothing when it is not on it). */
void sim_agent_unschedule_locked(sim_agents *ag, sim_session *s);

/* ---- agent_turn.c ------------------------------------------------------- */

/* message.part.updated / message.updated for s. */
void sim_agent_emit_part_locked(sim_agents *ag, const sim_session *s, const cJSON *part);
void sim_agent_emit_message_locked(sim_agents *ag, const sim_session *s, const cJSON *msg);
/* Journal the turn's assistant message as it stands (in progress: no
 * time.completed, no finish), when a journal is open. */
void sim_agent_journal_turn_locked(sim_agents *ag, const sim_session *s);
/* info.tokens {input, output, reasoning, cache:{read, write}} and info.cost
 * from *u. Needs no lock. */
void sim_agent_add_usage(cJSON *info, const sim_usage *u);
/* The turn's assistant message info as it stands: id, sessionID, role, time
 * (created; completed too when `done`), agent, mode, model, tokens, cost. */
cJSON *sim_agent_answer_info_locked(sim_agents *ag, const sim_session *s, int done);
/* {name, data:{message}}, as OpenCode's errors. Needs no lock. */
cJSON *sim_agent_error_json(const char *name, const char *message);
/* Store the turn's assistant message as it stands (with a copy of `error`
 * when given): message.updated, then it joins the session. */
void sim_agent_store_answer_locked(sim_agents *ag, sim_session *s, const cJSON *error);
/* The turn is over: idle status, session.idle (twice after an error or abort). */
void sim_agent_go_idle_locked(sim_agents *ag, sim_session *s, int twice);
/* Store the answer (with `error`, owned, when given) and end the turn:
 * message.updated, [session.error when emit_session_error], idle. */
void sim_agent_end_turn_locked(sim_agents *ag, sim_session *s, cJSON *error, int emit_session_error);
/* Start the next queued prompt's turn, if s is idle and one is queued. */
void sim_agent_start_next_locked(sim_agents *ag, sim_session *s);
/* The storage's release callback (ctx: the agents): forget s's turn silently and
 * free s->run (the session is being freed). */
void sim_agent_release_locked(void *ctx, sim_session *s);

/* ---- agent_compact.c ---------------------------------------------------- */

/* The "compact" step (opt: its value). Returns 1 when a continue turn follows
 * (the next steps, in a new assistant message) or the compaction waits
 * ("wait_ms" after the answer), 0 when the turn has ended. */
int sim_agent_compact_locked(sim_agents *ag, sim_session *s, const cJSON *opt);

/* ---- agent_steps.c ------------------------------------------------------ */

/* Run s's turn from its current step until it must wait, hang or end. */
void sim_agent_advance_locked(sim_agents *ag, sim_session *s);

#endif

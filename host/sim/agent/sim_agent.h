/*
 * sim_agent.h — layer 2 of the simulated host: simulated sub-agents. A test's
 * script rules say what a session does when prompted; one scheduler thread
 * runs every session's model turn from a time-ordered heap (a thread per
 * session would not scale to thousands of sessions), emitting the events
 * OpenCode emits. Uses the storage and the core only.
 *
 *   agent_shell.c    a "run" step's command, run in the session's folder
 *   agent_scripts.c  the script rules and choosing a prompt's steps
 *   agent_heap.c     the heap of sessions whose turn wakes, soonest first
 *   agent_turn.c     a turn's life: prompt, queue, start, end, abort, release
 *   agent_compact.c  the "compact" step: OpenCode's compaction messages
 *   agent_steps.c    running a turn's steps (tool, wait, reply, ask, usage,
 *                    run, …)
 *   agent_sched.c    the scheduler thread, the transform before a turn; setup
 *
 * Lowest first: a file uses only those listed before it (and the layers
 * below).
 *
 * Two things a turn needs come from layers above, through the callbacks below:
 * the plugins' transform_messages (host) and permission questions (API).
 *
 * Functions named *_locked are called with the core's `mu` held.
 */
#ifndef OCBG_SIM_AGENT_H
#define OCBG_SIM_AGENT_H

#include "storage/sim_storage.h"

typedef struct sim_rule sim_rule;

/* What the agents need from the layers above, set by them before the
 * scheduler starts. Any callback may be NULL (see each). */
typedef struct sim_agent_callbacks {
    /* The history a turn's model sees, after every plugin's
     * transform_messages: malloc'd (a copy of messages_json when nothing
     * changed). Called WITHOUT mu, on the scheduler thread. NULL: unchanged. */
    char *(*transform)(void *ctx, const char *session_id, const char *messages_json);
    void *transform_ctx;
    /* A script's "ask" step ({permission, patterns, always?, metadata?}) in
     * the turn producing message_id. Returns 1: go on (allowed; or denied by
     * a rule, or rejected with the user's words: OpenCode's model then takes
     * another step); 0: rejected, the turn ends; -1: the question is open
     * (*request_id, malloc'd): the turn waits for
     * sim_agent_permission_answered_locked. mu held. NULL: every ask is
     * allowed. */
    int (*ask)(void *ctx, const char *session_id, const char *message_id, const cJSON *ask, char **request_id);
    /* A turn that waited on a question is gone (aborted, deleted): its open
     * questions are moot. mu held. NULL: nothing to do. */
    void (*turn_gone)(void *ctx, const char *session_id);
    void *perm_ctx;
    /* Before a tool that edits files runs (tools "edit", "write",
     * "apply_patch"): every plugin's tool_before (ABI 1.5) for that call.
     * Returns 0 (*note: NULL, or a warning to append to the tool's result)
     * or -EACCES (*note: the refusal; the tool fails and does nothing).
     * *note malloc'd. Called WITHOUT mu, on the scheduler thread. NULL: every
     * edit runs, silently. */
    int (*tool_before)(void *ctx, const char *session_id, const char *tool, const char *args_json, char **note);
    void *tool_before_ctx;
    /* A "tool" step naming a plugin's tool: the plugin's tool_call for the
     * turn's message and the step's part (callID). Returns 0 when no plugin
     * has the tool (the step is scripted), else 1 with *rc, *out (malloc'd
     * or NULL) and *end_turn: 1 when the host ends the turn after the call,
     * as OpenCode does after its RejectedError (the call failed after the
     * user's plain "reject" of one of its questions). Called WITHOUT mu, on
     * the scheduler thread: no turn advances meanwhile, so the call must not
     * wait for one (e.g. a foreground Task). NULL: every tool is scripted. */
    int (*plugin_tool)(void *ctx, const char *session_id, const char *message_id, const char *call_id, const char *tool,
                       const char *args_json, int *rc, char **out, int *end_turn);
    void *plugin_tool_ctx;
} sim_agent_callbacks;

typedef struct sim_agents {
    sim_core *core;
    sim_storage *store;
    sim_rule *rules;    /* script rules, in the order added */
    sim_session **heap; /* sessions whose turn wakes, soonest first */
    size_t heap_len, heap_cap;
    uint64_t sched_seq;
    pthread_cond_t sched_cv; /* the scheduler waits on it */
    pthread_t sched_thread;
    int sched_started;
    sim_agent_callbacks callbacks;
} sim_agents;

/* ---- agent_scripts.c ---------------------------------------------------- */

/* Add a script rule (see sim_script in simhost.h). Returns 0 or -EINVAL.
 * Takes mu itself. */
int sim_agents_script(sim_agents *ag, const char *match, const char *script_json, int once);

/* ---- agent_turn.c ------------------------------------------------------- */

/* A prompt body arrived for s (validated, not noReply): run it now or queue
 * it. Takes ownership of body. */
void sim_agent_prompt_locked(sim_agents *ag, sim_session *s, cJSON *body);
/* Abort s's turn (and queued prompts); nothing when idle. */
void sim_agent_abort_locked(sim_agents *ag, sim_session *s);
/* The question a turn waited on was answered: go_on 1 continues the turn,
 * 0 ends it (the plain reject). */
void sim_agent_permission_answered_locked(sim_agents *ag, const char *session_id, const char *request_id, int go_on);

/* ---- agent_sched.c ------------------------------------------------------ */

/* Set up over storage (and its core); becomes the storage's release callback.
 * Returns 0 or an errno. */
int sim_agents_init(sim_agents *ag, sim_storage *store);
/* Start the scheduler thread. Returns 0 or an errno. */
int sim_agents_start(sim_agents *ag);
/* Wake and join it (core->stopping must already be set under mu). */
void sim_agents_join(sim_agents *ag);
/* Free the rules and the heap. After the storage is freed (its release callback
 * uses the heap); no other thread left. */
void sim_agents_destroy(sim_agents *ag);

#endif

/*
 * guards.h — bounded work: what a task may use before it is stopped.
 *
 *   - usage: the tokens and cost the host reports per assistant message,
 *     summed per task (hooks/usage.h) and per parent session;
 *   - budgets: a task's tokens (max_task_tokens) and cost
 *     (max_task_cost_usd), and the cost of everything a session launched
 *     (max_session_cost_usd, also checked before a launch or a resume);
 *   - runaway: more than max_tool_calls tool calls, or the same call (tool
 *     and input) more than max_repeat_calls times in a row;
 *   - time: a run longer than its timeout or max_runtime_ms; an agent whose
 *     session stays busy with no progress for stale_ms.
 * A task over a bound ends in error with a text that names the bound and
 * the spend (engine_fail_task); its session is aborted by the worker, or its
 * command stopped. Times are monotonic: a wall-clock jump or a suspended
 * machine stops nothing.
 *
 * Each function says whether it is [lock held] (and asserts it); none calls
 * the host (the clock aside).
 */
#ifndef OCBG_GUARDS_H
#define OCBG_GUARDS_H

#include "base/face_guard.h"
#include "base/util.h"
#include "engine/engine.h"
#include "hooks/usage.h"

/* The per-session spend map. [engine_start, lock not held] */
void guards_init(engine *eng);
/* [shutdown, lock not held] */
void guards_free(engine *eng);

/* Message message_id of t's session reports running totals *u: what grew
 * is counted for t and its parent session (whatever t's status: a late
 * report still costs). An active task over a budget is stopped; over the
 * session's budget, every active task of the session is. [event] [lock held] */
void guards_note_usage(engine *eng, task *t, const char *message_id, const usage *u);

/* A task restored from the store (engine/persist.c) brings what it cost back
 * into its session's spend and every ancestor's, so a restart does not reset
 * a session's budget (a cleared task's cost is not in the store). Call once
 * every task is restored. [lock held] */
void guards_restore_spend(engine *eng, const task *t);

/* After task_note_tool counted a tool part of active task t: the tool call
 * limit, and the repeat guard for a call with its final input
 * (n->call_hash), counted once per call id. [event] [lock held] */
void guards_note_tool(engine *eng, task *t, const session_note *n);

/* Each poll tick while tasks are active, after the status map was read:
 * runtime limits, and staleness of agents whose session the map says is
 * busy. [worker] [lock held] */
void guards_tick(engine *eng);

/* The session was deleted: forget what its tasks spent. [lock held] */
void guards_forget_session(engine *eng, const char *session_id);

/* May `session_id` launch a task (resume_id NULL) or resume task resume_id?
 * [tool call, lock not held] 0; or -EDQUOT and why in out (nothing is
 * created or changed): the session's tasks have spent its budget, or the
 * task to resume has used up one of its own. */
int guards_admit(engine *eng, const char *session_id, const char *resume_id, strbuf *out);

/* May `session_id` send a message into a running task (background_send)?
 * Only the session's budget can refuse it (a running task over one of its
 * own is being stopped by its guard). [tool call, lock not held] 0; or
 * -EDQUOT and why in out ("Not sent: …"). */
int guards_admit_send(engine *eng, const char *session_id, strbuf *out);

#endif

/*
 * amend.h — a run whose completion check read its answer before the host
 * compacted the session after it (OpenCode takes the step's snapshot between
 * storing the answer and deciding to compact: ocbg's early check often wins).
 * The task has completed with that answer; the host then summarizes and runs
 * one more turn ("Continue if you have next steps…"). When that turn adds
 * something (model/outcome.h: a tool call, or more than a sign-off), the
 * task's result becomes what a later check would have given: the answer,
 * OUTCOME_CONTINUED_MARK, what it added; and the parent is told, unless the
 * run's notification has not been formatted yet (it then carries it all).
 * The watch lives in memory: a restart of the host forgets it.
 */
#ifndef OCBG_AMEND_H
#define OCBG_AMEND_H

#include "base/face_guard.h"
#include "engine/engine.h"

/* A usage note about t's session, or an idle of a t not active
 * (engine_note): a summary starts the watch (also while t runs: its check
 * may have read the answer already), and, once t has completed, the end of
 * a turn (or an idle) while watching queues a look at the session. [lock
 * held] */
void amend_note(engine *eng, task *t, const session_note *n);

/* The JOB_AMEND job: read the session and amend the result. [worker, lock
 * held; released during the host call] */
void amend_run(engine *eng, const job *j);

#endif

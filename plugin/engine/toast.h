/*
 * toast.h — notices to the human, outside the conversation (ABI 1.3
 * notify_user; OpenCode shows a toast): a task finished, failed (a guard's
 * stop included) or waits for the user's permission; options ignored at the
 * start. Rate-limited: at most one notice per TOAST_INTERVAL_MS; what is
 * noted meanwhile is summed up in the next one ("3 background tasks: 2
 * completed, 1 failed"), so a batch of 20 gives one or two notices, not 20.
 * A finished task's notice that joins the parent silently (a batch still
 * running) is counted, not shown: the notice that wakes the model (the
 * batch's last, or a failure) shows them all ("3 background tasks: 3
 * completed"), so a batch of 20 gives one notice.
 */
#ifndef OCBG_TOAST_H
#define OCBG_TOAST_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

#define TOAST_INTERVAL_MS 3000

typedef enum toast_kind {
    TOAST_COMPLETED,
    TOAST_FAILED,
    TOAST_WAITING
} toast_kind;

/* Note that task_id's notice reached its parent; due: show it (else it only
 * counts in the next one). [lock held] No host call. */
void toast_note(engine *o, const char *task_id, toast_kind kind, bool due);

/* Notice n reached its parent (woke: it woke the model): the user hears of
 * it too, when it woke the model or asks a question. [lock held] */
void toast_note_notice(engine *o, const notice *n, bool woke);

/* The monotonic ms at which a noted notice is due, or 0 when nothing is
 * noted or the host cannot show notices. [lock held] */
int64_t toast_due(const engine *o);

/* Shows what is due, if its time has come (the lock is released around the
 * host call). [worker] [lock held] */
void toast_flush(engine *o);

/* Frees what is noted. [shutdown, after the worker stopped] */
void toast_free(engine *o);

#endif

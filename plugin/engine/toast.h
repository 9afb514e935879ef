/*
 * toast.h — toasts: what the person is told outside the conversation (ABI 1.3
 * notify_user; OpenCode shows a toast): a task finished, failed (a guard's
 * stop included) or waits for the user's permission; options ignored at the
 * start. Rate-limited: at most one toast per TOAST_INTERVAL_MS; what is
 * noted meanwhile is summed up in the next one ("3 background tasks: 2
 * completed, 1 failed"), so a batch of 20 gives one or two toasts, not 20.
 * A finished task's notification that joins the parent silently (a batch still
 * running) is counted, not shown: the toast for the notification that wakes the
 * model (the batch's last, or a failure) shows them all ("3 background tasks: 3
 * completed"), so a batch of 20 gives one toast.
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

/* Note that task_id's notification reached its parent; due: show it (else it only
 * counts in the next one). [lock held] No host call. */
void toast_note(engine *eng, const char *task_id, toast_kind kind, bool due);

/* Notification n reached its parent (woke: it woke the model): the user hears of
 * it too, when it woke the model or asks a question. [lock held] */
void toast_note_notification(engine *eng, const notification *n, bool woke);

/* The monotonic ms at which a noted toast is due, or 0 when nothing is
 * noted or the host cannot show toasts. [lock held] */
int64_t toast_due(const engine *eng);

/* Shows what is due, if its time has come (the lock is released around the
 * host call). [worker] [lock held] */
void toast_flush(engine *eng);

/* Frees what is noted. [shutdown, after the worker stopped] */
void toast_free(engine *eng);

#endif

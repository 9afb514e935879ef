/*
 * persist.h — the engine's side of the durable store (plugin/store/): which
 * file, restoring its tasks at start, and the store thread that writes what
 * changed.
 *
 * Write-behind. A change to a task marks it dirty in the registry (under the
 * engine's lock, no I/O); the store thread wakes, copies every dirty task
 * into a row under the lock, and writes them all in one transaction without
 * it (group commit: one commit however many tasks changed meanwhile). What
 * the model is told must be on disk first: a tool call waits, after its
 * work, until what changed before it returned is committed
 * (persist_sync); a notification is marked "being sent" on disk before it
 * is sent, so a restart can tell (engine/worker.c).
 *
 * A store that cannot be opened, or a write that fails, is logged (ERROR)
 * and the plugin goes on in memory, as with the store off.
 */
#ifndef OCBG_PERSIST_H
#define OCBG_PERSIST_H

#include "base/face_guard.h"
#include <stdbool.h>

struct engine;

/* Open the store the options and the host name (store_path, else ocbg.db in
 * the host's data_dir; neither, or store off: memory), restore this
 * instance's tasks into the registry, queue what they still need (checks
 * with the host, notifications, the queue), start the store thread. Never
 * fails the plugin: a store problem means memory only, logged. Returns 0 or
 * an errno (the thread could not start). [engine_start, before the worker] */
int persist_start(struct engine *eng);

/* Write what is left, stop and join the store thread, close the store (its
 * tasks are left for the next instance). [engine_stop, after the worker] */
void persist_stop(struct engine *eng);

/* Log the lines the start left for the host's log (defer_log: the store's
 * problems), once the worker runs. [lock held] Let go while logging. */
void persist_log_deferred(struct engine *eng);

/* Wait until every change recorded so far is committed (or the store
 * failed). [lock held] Released while waiting: tasks may change or go. */
void persist_sync(struct engine *eng);

/* Is the store on (open and not failed)? [lock held] */
bool persist_on(const struct engine *eng);

/* Texts out of memory. Once a finished task's row is committed, its
 * prompt, result and error, and a command's output, are stored
 * (task.texts_stored: later writes of its row leave them as they are); once
 * its notification is delivered too (or none is owed), they exist only in
 * the store (a command keeps its command line and exit in memory). With the
 * store off, or after a write failed, they stay in memory. */
struct task;

/* t with its texts: those kept only in the store are read back (a copy,
 * attached to the task until persist_drop_copies). The read happens on
 * this thread without the lock: returns the task found again by its id,
 * NULL when it went meanwhile. A text that cannot be read back reads as a
 * sentence saying so (logged). [lock held] Released while reading. */
struct task *persist_texts(struct engine *eng, struct task *t);

/* Free the copies persist_texts attached to t, unless something still
 * needs t's texts in memory, or a write failed (NULL: a no-op). [lock held] */
void persist_drop_copies(struct engine *eng, struct task *t);

#endif

/*
 * store.h — the durable task store: one SQLite database (WAL) that keeps
 * every task of a project across restarts of its host.
 *
 * Owners. Several host processes may run on one project at once (OpenCode's
 * TUI and a `serve`), each with its own plugin instance, sharing the file.
 * Each instance registers itself (a random id, its pid, the pid's start time
 * and the boot id) and owns the tasks it launched: it writes and deletes only
 * rows it owns. store_open adopts the tasks of owners that are gone (clean
 * shutdown, or a process that no longer exists: pid reused is told apart by
 * its start time), in one write transaction, so two instances starting
 * together never adopt the same task.
 *
 * Threads: a store is used by one thread at a time (the engine's store
 * thread, and the instance's entry and shutdown before and after it). It
 * never takes the engine's lock and knows nothing of it: the engine copies
 * tasks into rows under its lock and hands them here without it.
 *
 * Errors: functions return 0 or a negative errno (-EIO for an SQLite
 * failure, -EROFS for a file that cannot be written, -ENOTSUP for a database
 * of a newer schema, -ENOMEM) with *err a sentence (malloc'd) naming the file
 * and what SQLite said. A store whose write failed is still open and may be
 * retried or closed; the engine degrades to memory (engine/persist.c).
 */
#ifndef OCBG_STORE_H
#define OCBG_STORE_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/row.h"

/* The schema this build writes; store_open migrates older files to it. */
#define STORE_SCHEMA_VERSION 3

typedef struct store store;

/* Open (creating it, and its schema) the database file `path`, register this
 * instance, adopt the tasks of owners that are gone. The directory must
 * exist. A file of a newer schema is refused (-ENOTSUP), never changed.
 * [entry] On failure *out is NULL and the file is left as it was. */
int store_open(const char *path, store **out, char **err);

/* Every task this instance owns (the ones it adopted), in launch order: fn
 * is called once per row (the row is borrowed for the call). A row that
 * cannot be read as a task (missing id or parent session, unknown type or
 * status) is skipped and counted in *skipped. [entry] */
int store_load(store *s, void (*fn)(void *arg, const store_row *row), void *arg, unsigned *skipped, char **err);

/* In one transaction: upsert `rows` (owned by this instance from now) and
 * delete the tasks `removed` (ids). A row's texts in row->keep are left as
 * stored. [store thread] */
int store_write(store *s, const store_row *rows, size_t nrows, char *const *removed, size_t nremoved, char **err);

/* This instance's id ("inst_…"), for logs. */
const char *store_instance(const store *s);

/* The database file's name (owned by s, valid until store_close), for a
 * reader (store/reader.h). Any thread. */
const char *store_path(const store *s);

/* Close. clean: this instance is done (its tasks become adoptable by the
 * next instance to open the file); false keeps its registration, as a crash
 * would. NULL is a no-op. [shutdown] */
void store_close(store *s, bool clean);

#endif

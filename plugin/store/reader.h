/*
 * reader.h — reading a task's long texts back from the durable store, on
 * any thread, beside the writer (store.h): its own read-only SQLite
 * connection (WAL: a reader never waits for the writer, and sees every
 * committed write). The engine drops a finished task's texts from memory
 * once they are stored (engine/persist.h) and reads them back here, without
 * its lock, when a tool call shows them.
 *
 * Threads: any thread, concurrently (one read at a time per reader: it has
 * its own mutex). It knows nothing of the engine.
 */
#ifndef OCBG_STORE_READER_H
#define OCBG_STORE_READER_H

#include "base/face_guard.h"
typedef struct store_reader store_reader;

/* A reader of the database file `path` (copied); the file is opened at the
 * first read. Never fails (memory aside). [any thread] */
store_reader *store_reader_new(const char *path);

/* The task `id`'s prompt, result, error and (a command's) output as stored
 * (each malloc'd, NULL when the row has none). A failed read is tried once
 * more on a new connection. Returns 0; -ENOENT when no row has that id;
 * -EIO (or another negative errno), the four left NULL. *err: NULL, or a sentence
 * (malloc'd) naming the file and what SQLite said: why it failed, or the
 * failure a second try got past (to be logged all the same). [any thread] */
int store_reader_texts(store_reader *r, const char *id, char **prompt, char **result, char **error, char **output,
                       char **err);

/* Close. NULL is a no-op. [no read under way] */
void store_reader_free(store_reader *r);

#endif

/*
 * convert.h — a task as a store row and back. Pure data: the engine calls
 * these under its lock (copying a task) or before its threads start
 * (restoring one).
 */
#ifndef OCBG_STORE_CONVERT_H
#define OCBG_STORE_CONVERT_H

#include "base/face_guard.h"
#include "model/task.h"
#include "store/row.h"

/* Copy what the store keeps of t (registered: it has a parent and a batch)
 * into *row (its strings malloc'd: store_row_clear). Its texts kept only in
 * the store (t->texts_stored) are not copied: row->keep says so. */
void store_row_from_task(const task *t, store_row *row);

/* A detached task (no parent, batch or lane: registry_restore links it)
 * from a valid row (store_load checked it). Its runtime state is fresh; a
 * queued command keeps up to shell_output_cap bytes of what it will print
 * (shell_state_new). */
task *store_row_to_task(const store_row *row, size_t shell_output_cap);

#endif

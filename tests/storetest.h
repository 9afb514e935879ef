/*
 * storetest.h — helpers for tests that look inside the plugin's engine (what
 * a task keeps in memory, whether the store was given up): the plugin is
 * the one linked in from libocbg-internal.a (sim_load_entry), so the test
 * can take the engine's lock and read its registry.
 */
#ifndef OCBG_STORETEST_H
#define OCBG_STORETEST_H

#include "engine/engine.h"
#include "simhost.h"

/* A simulated host with the linked-in ocbg loaded with options `opts`;
 * bails out if it does not load. */
sim_host *t_linked_host(const char *opts);

/* The linked-in plugin's engine (its lock guards what tests read). */
engine *t_engine(sim_host *h);

/* Wait (with a deadline, scaled like tap_timeout_ms) until cond(h, arg)
 * holds: 0, or -1 at the deadline. */
int t_wait_until(sim_host *h, int (*cond)(sim_host *h, const char *arg), const char *arg);

/* The engine has given up on the store (a write failed). For t_wait_until. */
int t_store_given_up(sim_host *h, const char *unused);

/* Wait (with a deadline) until a log line of the plugin contains needle. */
int t_wait_log(sim_host *h, const char *needle);

/* Make every later write of the store file `db` that updates a task row
 * to match `when` (SQL on NEW, e.g. "NEW.notice = 3") fail with "the disk
 * refuses", as a full disk would. Returns SQLite's code. */
int t_refuse_updates(const char *db, const char *when);

/* The file's schema version (PRAGMA user_version), or -1. */
int t_user_version(const char *db);

#endif

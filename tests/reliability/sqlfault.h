/*
 * sqlfault.h — SQLite calls made to fail, for the fault sweep only.
 *
 * The fault-sweep binary is linked with -Wl,--wrap=sqlite3_… (and
 * --wrap=store_open/_load/_write/_close) so that every SQLite call the
 * plugin's store makes goes through sqlfault.c, which counts the calls per
 * function and makes the n-th call of one function fail with an SQLite
 * error. The plugin's sources are untouched: the plugin is the one linked in
 * from libocbg-internal.a, loaded with sim_load_entry (a dlopen'ed ocbg.so
 * calls SQLite directly). Unarmed, every call goes through unchanged.
 */
#ifndef OCBG_SQLFAULT_H
#define OCBG_SQLFAULT_H

#include <stddef.h>

/* The functions that can be made to fail (indexes into sqlf_fns). The
 * sqlite3_bind_* functions count as one ("sqlite3_bind"). */
enum {
    SQLF_OPEN,
    SQLF_EXEC,
    SQLF_PREPARE_V2,
    SQLF_PREPARE_V3,
    SQLF_STEP,
    SQLF_BIND,
    SQLF_COUNT
};
extern const char *const sqlf_fns[SQLF_COUNT];

/* The store's operation a call was made in (the store_* function on the
 * calling thread's stack). */
typedef enum sqlf_phase {
    SQLF_NONE,
    SQLF_IN_OPEN,
    SQLF_IN_LOAD,
    SQLF_IN_WRITE,
    SQLF_IN_CLOSE
} sqlf_phase;

/* Make the nth call (1-based) of function fn fail, once; fn < 0 disarms.
 * Resets the counts. */
void sqlf_arm(int fn, long nth);

/* Calls of fn made since the last sqlf_arm. */
long sqlf_calls(int fn);

/* Did the armed failure happen? If so, *phase is the operation it hit and
 * what (size n) the statement's SQL or the function's name. */
int sqlf_hit(sqlf_phase *phase, char *what, size_t n);

/* The phase's name ("open", "load", "write", "close", "none"). */
const char *sqlf_phase_name(sqlf_phase p);

#endif

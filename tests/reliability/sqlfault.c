/* sqlfault.c — see sqlfault.h. The __wrap_ functions the linker puts in
 * place of the plugin's SQLite calls (-Wl,--wrap=…, faults binary only). */
#include "sqlfault.h"

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "store/store.h"

const char *const sqlf_fns[SQLF_COUNT] = {"sqlite3_open_v2",    "sqlite3_exec", "sqlite3_prepare_v2",
                                          "sqlite3_prepare_v3", "sqlite3_step", "sqlite3_bind"};

static atomic_long calls[SQLF_COUNT];
static atomic_int armed_fn = -1;
static atomic_long armed_nth;
static atomic_int hit;
static sqlf_phase hit_phase;
static char hit_what[256];
static _Thread_local sqlf_phase phase;

void sqlf_arm(int fn, long nth)
{
    for (int i = 0; i < SQLF_COUNT; i++)
        atomic_store(&calls[i], 0);
    atomic_store(&hit, 0);
    atomic_store(&armed_nth, nth);
    atomic_store(&armed_fn, fn);
}

long sqlf_calls(int fn)
{
    return fn >= 0 && fn < SQLF_COUNT ? atomic_load(&calls[fn]) : 0;
}

int sqlf_hit(sqlf_phase *p, char *what, size_t n)
{
    if (!atomic_load(&hit))
        return 0;
    if (p)
        *p = hit_phase;
    if (what && n)
        snprintf(what, n, "%s", hit_what);
    return 1;
}

const char *sqlf_phase_name(sqlf_phase p)
{
    static const char *const names[] = {"none", "open", "load", "write", "close"};
    return (unsigned)p < 5 ? names[p] : "?";
}

/* Count a call of fn; true when it is the one to fail (recorded). */
static int failing(int fn, const char *what)
{
    long n = atomic_fetch_add(&calls[fn], 1) + 1;
    if (atomic_load(&armed_fn) != fn || n != atomic_load(&armed_nth))
        return 0;
    hit_phase = phase;
    snprintf(hit_what, sizeof hit_what, "%s: %s", sqlf_fns[fn], what ? what : "");
    atomic_store(&hit, 1);
    return 1;
}

/* ---- SQLite ------------------------------------------------------------- */

int __real_sqlite3_open_v2(const char *path, sqlite3 **db, int flags, const char *vfs);
int __wrap_sqlite3_open_v2(const char *path, sqlite3 **db, int flags, const char *vfs);
int __real_sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *arg,
                        char **errmsg);
int __wrap_sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *arg,
                        char **errmsg);
int __real_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int __wrap_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail);
int __real_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st,
                              const char **tail);
int __wrap_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st,
                              const char **tail);
int __real_sqlite3_step(sqlite3_stmt *st);
int __wrap_sqlite3_step(sqlite3_stmt *st);
int __real_sqlite3_bind_text(sqlite3_stmt *st, int i, const char *v, int n, void (*del)(void *));
int __wrap_sqlite3_bind_text(sqlite3_stmt *st, int i, const char *v, int n, void (*del)(void *));
int __real_sqlite3_bind_int64(sqlite3_stmt *st, int i, sqlite3_int64 v);
int __wrap_sqlite3_bind_int64(sqlite3_stmt *st, int i, sqlite3_int64 v);
int __real_sqlite3_bind_int(sqlite3_stmt *st, int i, int v);
int __wrap_sqlite3_bind_int(sqlite3_stmt *st, int i, int v);
int __real_sqlite3_bind_double(sqlite3_stmt *st, int i, double v);
int __wrap_sqlite3_bind_double(sqlite3_stmt *st, int i, double v);
int __real_sqlite3_bind_null(sqlite3_stmt *st, int i);
int __wrap_sqlite3_bind_null(sqlite3_stmt *st, int i);

/* A failed open still gives a handle (as SQLite's does), which the caller
 * must close. */
int __wrap_sqlite3_open_v2(const char *path, sqlite3 **db, int flags, const char *vfs)
{
    int rc = __real_sqlite3_open_v2(path, db, flags, vfs);
    if (rc == SQLITE_OK && failing(SQLF_OPEN, path))
        return SQLITE_CANTOPEN;
    return rc;
}

int __wrap_sqlite3_exec(sqlite3 *db, const char *sql, int (*cb)(void *, int, char **, char **), void *arg,
                        char **errmsg)
{
    if (failing(SQLF_EXEC, sql))
        return SQLITE_IOERR;
    return __real_sqlite3_exec(db, sql, cb, arg, errmsg);
}

int __wrap_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **st, const char **tail)
{
    if (failing(SQLF_PREPARE_V2, sql)) {
        *st = NULL;
        return SQLITE_IOERR;
    }
    return __real_sqlite3_prepare_v2(db, sql, n, st, tail);
}

int __wrap_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n, unsigned flags, sqlite3_stmt **st, const char **tail)
{
    if (failing(SQLF_PREPARE_V3, sql)) {
        *st = NULL;
        return SQLITE_IOERR;
    }
    return __real_sqlite3_prepare_v3(db, sql, n, flags, st, tail);
}

/* A full disk for a step (it writes); SQLITE_IOERR for one that reads. */
int __wrap_sqlite3_step(sqlite3_stmt *st)
{
    const char *sql = st ? sqlite3_sql(st) : NULL;
    if (failing(SQLF_STEP, sql))
        return sql && strncmp(sql, "SELECT", 6) == 0 ? SQLITE_IOERR : SQLITE_FULL;
    return __real_sqlite3_step(st);
}

static int bind_failing(sqlite3_stmt *st)
{
    return failing(SQLF_BIND, st ? sqlite3_sql(st) : NULL);
}

int __wrap_sqlite3_bind_text(sqlite3_stmt *st, int i, const char *v, int n, void (*del)(void *))
{
    return bind_failing(st) ? SQLITE_NOMEM : __real_sqlite3_bind_text(st, i, v, n, del);
}

int __wrap_sqlite3_bind_int64(sqlite3_stmt *st, int i, sqlite3_int64 v)
{
    return bind_failing(st) ? SQLITE_NOMEM : __real_sqlite3_bind_int64(st, i, v);
}

int __wrap_sqlite3_bind_int(sqlite3_stmt *st, int i, int v)
{
    return bind_failing(st) ? SQLITE_NOMEM : __real_sqlite3_bind_int(st, i, v);
}

int __wrap_sqlite3_bind_double(sqlite3_stmt *st, int i, double v)
{
    return bind_failing(st) ? SQLITE_NOMEM : __real_sqlite3_bind_double(st, i, v);
}

int __wrap_sqlite3_bind_null(sqlite3_stmt *st, int i)
{
    return bind_failing(st) ? SQLITE_NOMEM : __real_sqlite3_bind_null(st, i);
}

/* ---- the store's operations: which one a call is made in ----------------- */

int __real_store_open(const char *path, store **out, char **err);
int __wrap_store_open(const char *path, store **out, char **err);
int __real_store_load(store *s, void (*fn)(void *arg, const store_row *row), void *arg, unsigned *skipped, char **err);
int __wrap_store_load(store *s, void (*fn)(void *arg, const store_row *row), void *arg, unsigned *skipped, char **err);
int __real_store_write(store *s, const store_row *rows, size_t nrows, char *const *removed, size_t nremoved,
                       char **err);
int __wrap_store_write(store *s, const store_row *rows, size_t nrows, char *const *removed, size_t nremoved,
                       char **err);
void __real_store_close(store *s, bool clean);
void __wrap_store_close(store *s, bool clean);

int __wrap_store_open(const char *path, store **out, char **err)
{
    phase = SQLF_IN_OPEN;
    int rc = __real_store_open(path, out, err);
    phase = SQLF_NONE;
    return rc;
}

int __wrap_store_load(store *s, void (*fn)(void *arg, const store_row *row), void *arg, unsigned *skipped, char **err)
{
    phase = SQLF_IN_LOAD;
    int rc = __real_store_load(s, fn, arg, skipped, err);
    phase = SQLF_NONE;
    return rc;
}

int __wrap_store_write(store *s, const store_row *rows, size_t nrows, char *const *removed, size_t nremoved, char **err)
{
    phase = SQLF_IN_WRITE;
    int rc = __real_store_write(s, rows, nrows, removed, nremoved, err);
    phase = SQLF_NONE;
    return rc;
}

void __wrap_store_close(store *s, bool clean)
{
    phase = SQLF_IN_CLOSE;
    __real_store_close(s, clean);
    phase = SQLF_NONE;
}

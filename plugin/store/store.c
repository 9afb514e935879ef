/* store.c — see store.h. The database: its schema and migrations, the
 * owners, reading and writing rows. */
#include "store/store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/proc_id.h"
#include "base/util.h"
#include "store/row.h"

/* The writer's page cache, KiB (SQLite's default: 2,000). */
#define STORE_CACHE_KIB "256"

struct store {
    sqlite3 *db;
    char *path;
    char owner[TASK_ID_SIZE + 8]; /* this instance's id */
    /* upsert[keep]: the upsert that leaves the texts `keep` (TASK_TEXT_*)
     * as stored; prepared when first needed. */
    sqlite3_stmt *upsert[STORE_TEXTS_KEPT + 1], *remove;
};

/* An error sentence for the SQLite failure rc (or the connection's last). */
static int store_fail(store *s, const char *what, int rc, char **err)
{
    /* The connection's message, unless it has none for this failure. */
    const char *why = s->db && sqlite3_errcode(s->db) != SQLITE_OK ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
    if (err)
        *err = xasprintf("the task store %s: %s failed: %s", s->path, what, why);
    int prim = rc & 0xff;
    if (prim == SQLITE_READONLY || prim == SQLITE_PERM)
        return -EROFS;
    if (prim == SQLITE_NOMEM)
        return -ENOMEM;
    if (prim == SQLITE_CANTOPEN)
        return -ENOENT;
    return -EIO;
}

static int exec(store *s, const char *sql, char **err)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : store_fail(s, sql, rc, err);
}

/* ---- schema ----------------------------------------------------------- */

static const char *col_type(col_kind k)
{
    return k == COL_STR || k == COL_ID ? "TEXT" : k == COL_DBL ? "REAL" : "INTEGER";
}

/* Version 1: the owners and the tasks (row.c's columns of version 1). */
static int migrate_to_1(store *s, char **err)
{
    strbuf sql = {0};
    sb_puts(&sql, "CREATE TABLE owner(id TEXT PRIMARY KEY, pid INTEGER NOT NULL, pid_start INTEGER NOT NULL, "
                  "boot TEXT NOT NULL, started_ms INTEGER NOT NULL);"
                  "CREATE TABLE task(id TEXT PRIMARY KEY, owner TEXT NOT NULL");
    for (size_t i = 0; i < store_ncols; i++)
        if (store_cols[i].since == 1)
            sb_printf(&sql, ", %s %s", store_cols[i].name, col_type(store_cols[i].kind));
    /* No index beyond the id's: a load (once per start) sorts the rows it
     * reads; every commit would pay for another b-tree. */
    sb_puts(&sql, ");");
    char *text = sb_take(&sql);
    int rc = exec(s, text, err);
    free(text);
    return rc;
}

/* Version 2 and later: the columns row.c says they added, to every row
 * (existing rows read them as NULL: 0, as before they were kept). */
static int add_columns(store *s, int version, char **err)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < store_ncols; i++)
        if (store_cols[i].since == version) {
            char *sql =
                xasprintf("ALTER TABLE task ADD COLUMN %s %s", store_cols[i].name, col_type(store_cols[i].kind));
            rc = exec(s, sql, err);
            free(sql);
        }
    return rc;
}

/* Version 2: followups_sent (a restart no longer numbers follow-ups from 1
 * again, so an old follow-up's message is never taken for a new one's). */
static int migrate_to_2(store *s, char **err)
{
    return add_columns(s, 2, err);
}

/* Version 3: an isolated task's worktree. */
static int migrate_to_3(store *s, char **err)
{
    return add_columns(s, 3, err);
}

/* migrations[v] takes a version-v file to v+1. */
static int (*const migrations[STORE_SCHEMA_VERSION])(store *s, char **err) = {migrate_to_1, migrate_to_2, migrate_to_3};

static int user_version(store *s, int *v, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *v = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : store_fail(s, "reading the schema version", rc, err);
}

/* Bring the file to STORE_SCHEMA_VERSION, in one transaction. */
static int migrate(store *s, char **err)
{
    int rc = exec(s, "BEGIN IMMEDIATE", err), v = 0;
    if (rc == 0)
        rc = user_version(s, &v, err);
    if (rc == 0 && v > STORE_SCHEMA_VERSION) {
        *err = xasprintf("the task store %s has schema version %d, newer than this ocbg's %d: left as it is", s->path,
                         v, STORE_SCHEMA_VERSION);
        rc = -ENOTSUP;
    }
    for (; rc == 0 && v < STORE_SCHEMA_VERSION; v++)
        rc = migrations[v](s, err);
    if (rc == 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", STORE_SCHEMA_VERSION);
        rc = exec(s, sql, err);
    }
    if (rc == 0)
        return exec(s, "COMMIT", err);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- owners ----------------------------------------------------------- */

/* SQLITE_OK when a statement ran to its end, else what step said. */
static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Delete the owners that are gone: their process ended (or the pid is
 * another process now), or another boot. Returns an SQLite code. */
static int drop_gone_owners(store *s, const char *boot)
{
    sqlite3_stmt *st = NULL, *gone = NULL;
    int rc = sqlite3_prepare_v2(s->db, "SELECT id, pid, pid_start, boot FROM owner", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->db, "DELETE FROM owner WHERE id = ?", -1, &gone, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        const char *b = (const char *)sqlite3_column_text(st, 3);
        if (b && strcmp(b, boot) == 0 && proc_alive(sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)))
            continue;
        rc = sqlite3_bind_text(gone, 1, (const char *)sqlite3_column_text(st, 0), -1, SQLITE_TRANSIENT);
        if (rc == SQLITE_OK)
            rc = step_done(gone);
        sqlite3_reset(gone);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(gone);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* This instance's owner row. Returns an SQLite code. */
static int add_owner(store *s, const char *boot)
{
    int64_t pid = getpid();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "INSERT INTO owner VALUES(?, ?, ?, ?, ?)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 1, s->owner, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, pid);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, proc_start_time(pid));
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 4, boot, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 5, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (rc == SQLITE_OK)
        rc = step_done(st);
    sqlite3_finalize(st);
    return rc;
}

/* Take every task whose owner is not registered. Returns an SQLite code. */
static int adopt_orphans(store *s)
{
    sqlite3_stmt *st = NULL;
    int rc =
        sqlite3_prepare_v2(s->db, "UPDATE task SET owner = ? WHERE owner NOT IN (SELECT id FROM owner)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 1, s->owner, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = step_done(st);
    sqlite3_finalize(st);
    return rc;
}

/* Register this instance and take the tasks of owners that are gone (or
 * closed). One write transaction: an owner is adopted by one instance only.
 * Any failed call fails the whole (nothing half done stays). */
static int register_owner(store *s, char **err)
{
    char boot[64];
    proc_boot_id(boot, sizeof boot);
    random_id(s->owner, sizeof s->owner, "inst_");
    int rc = exec(s, "BEGIN IMMEDIATE", err);
    if (rc != 0)
        return rc;
    int sr = drop_gone_owners(s, boot);
    if (sr == SQLITE_OK)
        sr = add_owner(s, boot);
    if (sr == SQLITE_OK)
        sr = adopt_orphans(s);
    if (sr == SQLITE_OK)
        return exec(s, "COMMIT", err);
    rc = store_fail(s, "registering this instance", sr, err);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- rows --------------------------------------------------------------- */

/* One column of the statement into the row's field (whatever its stored
 * type: SQLite converts, and a text where a number belongs reads as 0). */
static void decode_col(sqlite3_stmt *st, int i, const store_col *c, store_row *row)
{
    void *f = (char *)row + c->offset;
    const char *text = (const char *)sqlite3_column_text(st, i);
    sqlite3_int64 n = sqlite3_column_int64(st, i);
    switch (c->kind) {
    case COL_STR:
        *(char **)f = text ? xstrdup(text) : NULL;
        break;
    case COL_ID:
        if (text && strlen(text) < TASK_ID_SIZE)
            memcpy(f, text, strlen(text) + 1);
        break;
    case COL_I64:
        *(int64_t *)f = n;
        break;
    case COL_U64:
        *(uint64_t *)f = (uint64_t)n;
        break;
    case COL_UINT:
        *(unsigned *)f = n < 0 || n > 0x7fffffff ? 0 : (unsigned)n;
        break;
    case COL_INT:
        *(int *)f = n < -0x7fffffff || n > 0x7fffffff ? -1 : (int)n;
        break;
    case COL_BOOL:
        *(bool *)f = n != 0;
        break;
    case COL_DBL:
        *(double *)f = sqlite3_column_double(st, i);
        break;
    }
}

int store_load(store *s, void (*fn)(void *arg, const store_row *row), void *arg, unsigned *skipped, char **err)
{
    *skipped = 0;
    strbuf sql = {0};
    sb_puts(&sql, "SELECT id");
    for (size_t i = 0; i < store_ncols; i++)
        sb_printf(&sql, ", %s", store_cols[i].name);
    sb_puts(&sql, " FROM task WHERE owner = ? ORDER BY created_ms, seq");
    char *text = sb_take(&sql);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, text, -1, &st, NULL);
    free(text);
    if (rc != SQLITE_OK)
        return store_fail(s, "reading its tasks", rc, err);
    rc = sqlite3_bind_text(st, 1, s->owner, -1, SQLITE_STATIC);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        rc = SQLITE_OK;
        store_row row;
        memset(&row, 0, sizeof row);
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (id && strlen(id) < TASK_ID_SIZE)
            memcpy(row.id, id, strlen(id) + 1);
        for (size_t i = 0; i < store_ncols; i++)
            decode_col(st, (int)i + 1, &store_cols[i], &row);
        if (store_row_valid(&row))
            fn(arg, &row);
        else
            (*skipped)++;
        store_row_clear(&row);
    }
    int r = rc == SQLITE_DONE ? 0 : store_fail(s, "reading its tasks", rc, err);
    sqlite3_finalize(st);
    return r;
}

static int bind_col(sqlite3_stmt *st, int i, const store_col *c, const store_row *row)
{
    const void *f = (const char *)row + c->offset;
    switch (c->kind) {
    case COL_STR:
        return *(char *const *)f ? sqlite3_bind_text(st, i, *(char *const *)f, -1, SQLITE_STATIC)
                                 : sqlite3_bind_null(st, i);
    case COL_ID:
        return sqlite3_bind_text(st, i, f, -1, SQLITE_STATIC);
    case COL_I64:
        return sqlite3_bind_int64(st, i, *(const int64_t *)f);
    case COL_U64:
        return sqlite3_bind_int64(st, i, (sqlite3_int64) * (const uint64_t *)f);
    case COL_UINT:
        return sqlite3_bind_int64(st, i, *(const unsigned *)f);
    case COL_INT:
        return sqlite3_bind_int(st, i, *(const int *)f);
    case COL_BOOL:
        return sqlite3_bind_int(st, i, *(const bool *)f);
    case COL_DBL:
        return sqlite3_bind_double(st, i, *(const double *)f);
    }
    return SQLITE_MISUSE;
}

static int prepare_upsert(store *s, unsigned keep);

static int write_row(store *s, const store_row *row)
{
    unsigned keep = row->keep & STORE_TEXTS_KEPT;
    int rc = s->upsert[keep] ? SQLITE_OK : prepare_upsert(s, keep);
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_stmt *st = s->upsert[keep];
    rc = sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, s->owner, -1, SQLITE_STATIC);
    for (size_t i = 0; rc == SQLITE_OK && i < store_ncols; i++)
        rc = bind_col(st, (int)i + 3, &store_cols[i], row);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int remove_row(store *s, const char *id)
{
    sqlite3_stmt *st = s->remove;
    int rc = sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(st, 2, s->owner, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK)
        rc = step_done(st);
    sqlite3_reset(st);
    return rc;
}

int store_write(store *s, const store_row *rows, size_t nrows, char *const *removed, size_t nremoved, char **err)
{
    if (nrows == 0 && nremoved == 0)
        return 0;
    int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < nrows; i++)
        rc = write_row(s, &rows[i]);
    for (size_t i = 0; rc == SQLITE_OK && i < nremoved; i++)
        rc = remove_row(s, removed[i]);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return 0;
    int r = store_fail(s, "writing tasks", rc, err);
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return r;
}

/* ---- statements ------------------------------------------------------- */

/* Is column `name` one of the texts `keep` (TASK_TEXT_*) leaves as stored? */
static bool kept_col(const char *name, unsigned keep)
{
    return ((keep & TASK_TEXT_PROMPT) && strcmp(name, "prompt") == 0) ||
           ((keep & TASK_TEXT_RESULT) && strcmp(name, "result") == 0) ||
           ((keep & TASK_TEXT_ERROR) && strcmp(name, "error") == 0) ||
           ((keep & TASK_TEXT_OUTPUT) && strcmp(name, "output") == 0);
}

/* The upsert that leaves the texts `keep` as stored (an insert stores them
 * as NULL: a row keeps texts only once stored). Returns an SQLite code. */
static int prepare_upsert(store *s, unsigned keep)
{
    strbuf sql = {0};
    sb_puts(&sql, "INSERT INTO task(id, owner");
    for (size_t i = 0; i < store_ncols; i++)
        sb_printf(&sql, ", %s", store_cols[i].name);
    sb_puts(&sql, ") VALUES(?, ?");
    for (size_t i = 0; i < store_ncols; i++)
        sb_puts(&sql, ", ?");
    sb_puts(&sql, ") ON CONFLICT(id) DO UPDATE SET ");
    const char *sep = "";
    for (size_t i = 0; i < store_ncols; i++) {
        if (kept_col(store_cols[i].name, keep))
            continue;
        sb_printf(&sql, "%s%s = excluded.%s", sep, store_cols[i].name, store_cols[i].name);
        sep = ", ";
    }
    /* Never another active owner's task (an id both happened to draw). */
    sb_puts(&sql, " WHERE task.owner = excluded.owner");
    char *text = sb_take(&sql);
    int rc = sqlite3_prepare_v3(s->db, text, -1, SQLITE_PREPARE_PERSISTENT, &s->upsert[keep], NULL);
    free(text);
    return rc;
}

static int prepare(store *s, char **err)
{
    int rc = prepare_upsert(s, 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(s->db, "DELETE FROM task WHERE id = ? AND owner = ?", -1, SQLITE_PREPARE_PERSISTENT,
                                &s->remove, NULL);
    return rc == SQLITE_OK ? 0 : store_fail(s, "preparing its statements", rc, err);
}

int store_open(const char *path, store **out, char **err)
{
    *out = NULL;
    if (err)
        *err = NULL;
    store *s = xcalloc(1, sizeof *s);
    s->path = xstrdup(path);
    int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    int r = rc == SQLITE_OK ? 0 : store_fail(s, "opening", rc, err);
    if (r == 0)
        sqlite3_busy_timeout(s->db, 5000); /* another instance's write transaction */
    /* WAL: a reader never waits for the writer; NORMAL: a commit survives
     * the process being killed (an OS crash may lose the last ones). */
    if (r == 0)
        r = exec(s, "PRAGMA journal_mode = WAL", err);
    if (r == 0)
        r = exec(s, "PRAGMA synchronous = NORMAL", err);
    /* A small page cache: the store mostly appends and updates rows by id
     * (the tree's inner pages stay cached), and reads only at a start; the
     * default 2 MB would be memory held for nothing. */
    if (r == 0)
        r = exec(s, "PRAGMA cache_size = -" STORE_CACHE_KIB, err);
    if (r == 0)
        r = migrate(s, err);
    if (r == 0)
        r = register_owner(s, err);
    if (r == 0)
        r = prepare(s, err);
    if (r != 0) {
        store_close(s, true);
        return r;
    }
    *out = s;
    return 0;
}

const char *store_instance(const store *s)
{
    return s->owner;
}

const char *store_path(const store *s)
{
    return s->path;
}

void store_close(store *s, bool clean)
{
    if (!s)
        return;
    for (size_t i = 0; i < sizeof s->upsert / sizeof s->upsert[0]; i++)
        sqlite3_finalize(s->upsert[i]);
    sqlite3_finalize(s->remove);
    if (clean && s->owner[0] && s->db) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, "DELETE FROM owner WHERE id = ?", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, s->owner, -1, SQLITE_STATIC);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

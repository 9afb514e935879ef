/* reader.c — see reader.h. */
#include "store/reader.h"
#include "base/lock.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>

#include "base/util.h"

/* The columns read, in the order of store_reader_texts' arguments. */
#define STORE_READER_TEXTS 4

struct store_reader {
    pthread_mutex_t mu; /* one read at a time on the connection */
    char *path;
    sqlite3 *db; /* NULL until the first read (or after a failed open) */
    sqlite3_stmt *texts;
};

store_reader *store_reader_new(const char *path)
{
    store_reader *r = xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    r->path = xstrdup(path);
    return r;
}

/* Open the connection and its statement, unless open. Returns an SQLite code. */
static int reader_open(store_reader *r)
{
    if (r->texts)
        return SQLITE_OK;
    int rc = r->db ? SQLITE_OK : sqlite3_open_v2(r->path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(r->db, 5000); /* a checkpoint or recovery under way */
        rc = sqlite3_prepare_v3(r->db, "SELECT prompt, result, error, output FROM task WHERE id = ?", -1,
                                SQLITE_PREPARE_PERSISTENT, &r->texts, NULL);
    }
    if (rc != SQLITE_OK && !r->texts) { /* the next read tries again */
        sqlite3_close(r->db);
        r->db = NULL;
    }
    return rc;
}

static char *column_copy(sqlite3_stmt *st, int i)
{
    const char *text = (const char *)sqlite3_column_text(st, i);
    return text ? xstrdup(text) : NULL;
}

static void reader_close(store_reader *r)
{
    sqlite3_finalize(r->texts);
    sqlite3_close(r->db);
    r->texts = NULL;
    r->db = NULL;
}

/* One try: 0, -ENOENT, or another negative errno with *why (malloc'd). */
static int read_texts(store_reader *r, const char *id, char **texts[STORE_READER_TEXTS], char **why)
{
    int rc = reader_open(r);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_text(r->texts, 1, id, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(r->texts);
    int out = 0;
    if (rc == SQLITE_ROW) {
        for (int i = 0; i < STORE_READER_TEXTS; i++)
            *texts[i] = column_copy(r->texts, i);
    } else if (rc == SQLITE_DONE) {
        out = -ENOENT;
        *why = xasprintf("the task store %s has no task %s", r->path, id);
    } else {
        out = (rc & 0xff) == SQLITE_NOMEM ? -ENOMEM : -EIO;
        *why = xasprintf("the task store %s: reading task %s failed: %s", r->path, id,
                         r->db && sqlite3_errcode(r->db) != SQLITE_OK ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
    }
    if (r->texts) {
        sqlite3_reset(r->texts); /* ends the read transaction: the writer may checkpoint */
        sqlite3_clear_bindings(r->texts);
    }
    return out;
}

int store_reader_texts(store_reader *r, const char *id, char **prompt, char **result, char **error, char **output,
                       char **err)
{
    char **texts[STORE_READER_TEXTS] = {prompt, result, error, output};
    for (int i = 0; i < STORE_READER_TEXTS; i++)
        *texts[i] = NULL;
    char *why = NULL;
    lock_acquire(&r->mu);
    int out = read_texts(r, id, texts, &why);
    if (out != 0 && out != -ENOENT) {
        /* A failed read may be passing (a lock, an I/O hiccup): once more,
         * on a new connection; the failure is still told. */
        reader_close(r);
        char *again = NULL;
        out = read_texts(r, id, texts, &again);
        if (out != 0) {
            free(why);
            why = again;
        } else {
            char *told = xasprintf("%s (read again: it worked)", why);
            free(why);
            free(again);
            why = told;
        }
    }
    lock_release(&r->mu);
    if (err)
        *err = why;
    else
        free(why);
    return out;
}

void store_reader_free(store_reader *r)
{
    if (!r)
        return;
    reader_close(r);
    pthread_mutex_destroy(&r->mu);
    free(r->path);
    free(r);
}

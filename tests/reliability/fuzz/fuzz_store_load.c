/* fuzz_store_load — the store's load path on a damaged file. The input
 * fills the `task` table of a real store file (made once per process by
 * store_open, so with the real schema): every column of every row, the id
 * too, gets a value of any SQLite type read from the input (NULL, integers
 * small, negative and huge, reals, text that may be invalid UTF-8 or longer
 * than an id buffer, blobs with NULs). Then what a start does: store_load
 * reads them, and each row it accepts is made a task (store_row_to_task)
 * and restored (registry_restore) into a fresh registry, rendered as the
 * faces would show it (report, list line, notification) and copied back as
 * a row, as the next write would.
 *
 * The store stays open between inputs and the rows are written as its own:
 * opening one (SQLite parsing the schema and the statements) costs more
 * than all the rest, and does not depend on the rows. Every REOPEN_EVERY-th
 * input the rows belong to an instance that is not registered and the store
 * is closed and opened again, so store_open adopts them first, as after a
 * restart.
 *
 * Input: one byte for the number of rows (0-7), then per row, per column, a
 * type byte and its value (see put_value). Running out of input gives NULLs. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "model/registry.h"
#include "store/convert.h"
#include "store/store.h"
#include "text/texts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    REOPEN_EVERY = 256
};

static char path[256];
/* The store, open from the first input on. */
static store *opened;
/* The fuzzer's own connection, kept open (a store's close is then not the
 * last one, and does not checkpoint every time), and its INSERT. */
static sqlite3 *db;
static sqlite3_stmt *insert;

typedef struct input {
    const uint8_t *p;
    size_t left;
} input;

static uint8_t byte(input *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static uint64_t u64(input *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | byte(in);
    return v;
}

static void cleanup(void)
{
    store_close(opened, true);
    sqlite3_finalize(insert);
    sqlite3_close(db);
    char f[300];
    const char *ext[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(f, sizeof f, "%s%s", path, ext[i]);
        unlink(f);
    }
    *strrchr(path, '/') = '\0';
    rmdir(path);
}

static void open_store(void)
{
    char *err = NULL;
    if (store_open(path, &opened, &err) != 0) {
        fprintf(stderr, "fuzz_store_load: store_open: %s\n", err);
        abort();
    }
}

/* The file, with the real schema (store_open makes it), the store open on
 * it, and the fuzzer's INSERT (its owner the second parameter). */
static void setup(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, sizeof path, "%s/ocbg-fuzz-store-XXXXXX", base);
    if (!mkdtemp(path))
        abort();
    strcat(path, "/ocbg.db");
    open_store();
    strbuf sql = {0};
    sb_puts(&sql, "INSERT OR IGNORE INTO task(id, owner");
    for (size_t i = 0; i < store_ncols; i++)
        sb_printf(&sql, ", %s", store_cols[i].name);
    sb_puts(&sql, ") VALUES(?, ?");
    for (size_t i = 0; i < store_ncols; i++)
        sb_puts(&sql, ", ?");
    sb_puts(&sql, ")");
    char *text = sb_take(&sql);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, text, -1, &insert, NULL) != SQLITE_OK)
        abort();
    free(text);
    sqlite3_busy_timeout(db, 5000);
    atexit(cleanup);
}

/* A value that makes a row restorable, for column `col` (-1: the id), so
 * that the fuzzer reaches past store_row_valid without guessing. */
static void put_plausible(sqlite3_stmt *st, int i, int col, uint8_t b)
{
    char text[32];
    if (col < 0 || (store_cols[col].kind == COL_ID)) {
        snprintf(text, sizeof text, col < 0 ? "bg_%08x" : "batch_%08x", (unsigned)b % 4);
        sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
    } else if (store_cols[col].kind == COL_STR) {
        snprintf(text, sizeof text, "ses_%u", (unsigned)b % 4);
        sqlite3_bind_text(st, i, text, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_int(st, i, b % 8);
    }
}

/* One column's value: the type byte picks NULL, a small signed integer, a
 * 64-bit integer, a real (any bits), text or a blob (a length byte, then
 * the bytes), or a plausible value. */
static void put_value(sqlite3_stmt *st, int i, int col, input *in)
{
    uint8_t type = byte(in);
    switch (type % 7) {
    case 0:
        sqlite3_bind_null(st, i);
        break;
    case 1:
        sqlite3_bind_int(st, i, (int8_t)byte(in));
        break;
    case 2:
        sqlite3_bind_int64(st, i, (sqlite3_int64)u64(in));
        break;
    case 3: {
        uint64_t bits = u64(in);
        double d;
        memcpy(&d, &bits, sizeof d);
        sqlite3_bind_double(st, i, d);
        break;
    }
    case 4:
    case 5: {
        size_t n = byte(in);
        n = n < in->left ? n : in->left;
        if (type % 7 == 4)
            sqlite3_bind_text(st, i, (const char *)in->p, (int)n, SQLITE_TRANSIENT);
        else
            sqlite3_bind_blob(st, i, in->p, (int)n, SQLITE_TRANSIENT);
        in->p += n;
        in->left -= n;
        break;
    }
    default:
        put_plausible(st, i, col, byte(in));
    }
}

/* Replace the table's rows with the input's, owned by `owner`. */
static void fill(input *in, const char *owner)
{
    sqlite3_exec(db, "BEGIN; DELETE FROM task;", NULL, NULL, NULL);
    int rows = byte(in) % 8;
    for (int r = 0; r < rows; r++) {
        put_value(insert, 1, -1, in);
        sqlite3_bind_text(insert, 2, owner, -1, SQLITE_STATIC);
        for (size_t c = 0; c < store_ncols; c++)
            put_value(insert, (int)c + 3, (int)c, in);
        sqlite3_step(insert); /* a duplicate id is ignored */
        sqlite3_reset(insert);
        sqlite3_clear_bindings(insert);
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        abort();
}

typedef struct loaded {
    registry reg;
    int64_t now;
    unsigned rows;
} loaded;

/* As engine/persist.c's restore_row does. */
static void restore(void *arg, const store_row *row)
{
    loaded *l = arg;
    l->rows++;
    task *t = store_row_to_task(row, 1 << 20);
    if (t->type == TASK_AGENT && !t->session_id && task_status_active(t->status)) {
        t->status = TASK_PENDING;
        t->started_ms = 0;
    }
    if (!registry_restore(&l->reg, t, row->parent_session, row->batch))
        task_free(t);
}

/* What the faces show of a restored task, and the row the store would
 * write back. */
static void show(const char *key, void *value, void *arg)
{
    (void)key;
    const loaded *l = arg;
    const task *t = value;
    strbuf out = {0};
    format_report(&out, t, l->now);
    format_list_line(&out, t, l->now);
    free(sb_take(&out));
    free(format_notification(t, t->batch->done, t->batch->total, l->now, 2000));
    store_row row;
    store_row_from_task(t, &row);
    if (!store_row_valid(&row))
        abort(); /* a restored task must store as a valid row */
    store_row_clear(&row);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned execs;
    if (!opened)
        setup();
    bool restart = ++execs % REOPEN_EVERY == 0;
    input in = {data, size};
    fill(&in, restart ? "inst_gone" : store_instance(opened));
    if (restart) {
        store_close(opened, true);
        open_store();
    }
    /* The clock is sane; what is stored is not. */
    loaded l = {.now = 1764000000000 + (int64_t)(u64(&in) % 100000000000)};
    registry_init(&l.reg);
    char *err = NULL;
    unsigned skipped = 0;
    if (store_load(opened, restore, &l, &skipped, &err) != 0) {
        fprintf(stderr, "fuzz_store_load: store_load: %s\n", err);
        abort();
    }
    map_each(&l.reg.by_id, show, &l);
    registry_free(&l.reg);
    return 0;
}

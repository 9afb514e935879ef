/* sql_int.c — prints the first column of the first row of SQL on the SQLite
 * file DB, read-only, its ?1 bound to ARG when given: 0 when there is no
 * row; exits 1 when the query fails. The tests' t_sql_int runs it: a store
 * file that a dlopened ocbg.so (its own copy of SQLite) has open must not be
 * opened by a second copy in the same process.
 *   usage: sql_int DB SQL [ARG] */
#include <sqlite3.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fputs("usage: sql_int DB SQL [ARG]\n", stderr);
        return 2;
    }
    sqlite3 *d = NULL;
    sqlite3_stmt *st = NULL;
    int rc = 1;
    if (sqlite3_open_v2(argv[1], &d, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(d, argv[2], -1, &st, NULL) == SQLITE_OK &&
        (argc < 4 || sqlite3_bind_text(st, 1, argv[3], -1, SQLITE_STATIC) == SQLITE_OK)) {
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW || step == SQLITE_DONE) {
            printf("%d\n", step == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0);
            rc = 0;
        }
    }
    if (rc)
        fprintf(stderr, "sql_int: %s\n", d ? sqlite3_errmsg(d) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(d);
    return rc;
}

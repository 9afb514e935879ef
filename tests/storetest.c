/* storetest.c — see storetest.h. */
#include "storetest.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "testlib.h"

sim_host *t_linked_host(const char *opts)
{
    sim_host *h = sim_create();
    if (!h || sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        tap_bail_out("loading the linked-in ocbg: %s", h ? sim_load_error(h) : "no host");
    return h;
}

engine *t_engine(sim_host *h)
{
    return sim_plugin(h, 0)->userdata;
}

int t_wait_until(sim_host *h, int (*cond)(sim_host *h, const char *arg), const char *arg)
{
    int64_t deadline = (int64_t)time(NULL) + tap_timeout_ms(5000) / 1000 + 1;
    while (!cond(h, arg)) {
        if ((int64_t)time(NULL) > deadline)
            return -1;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

int t_store_given_up(sim_host *h, const char *unused)
{
    (void)unused;
    engine *eng = t_engine(h);
    engine_lock(eng);
    int off = !eng->reg.track;
    engine_unlock(eng);
    return off;
}

int t_wait_log(sim_host *h, const char *needle)
{
    for (;;) {
        size_t n = sim_calls(h, "log", NULL);
        for (size_t i = 0; i < n; i++) {
            char *body = sim_call_body(h, "log", NULL, (int)i);
            int hit = body && strstr(body, needle);
            free(body);
            if (hit)
                return 0;
        }
        if (sim_wait_calls(h, "log", NULL, n + 1, tap_timeout_ms(3000)) != 0)
            return -1;
    }
}

int t_refuse_updates(const char *db, const char *when)
{
    sqlite3 *d = NULL;
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE TRIGGER refuse BEFORE UPDATE ON task WHEN %s BEGIN SELECT RAISE(ABORT, 'the disk refuses'); END",
             when);
    int rc = sqlite3_open(db, &d);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(d, sql, NULL, NULL, NULL);
    sqlite3_close(d);
    return rc;
}

int t_user_version(const char *db)
{
    return t_sql_int(db, "PRAGMA user_version", NULL);
}

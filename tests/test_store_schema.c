/* The store's schema version 2: follow-ups are numbered on across a
 * restart (a follow-up's marker is how the completion check knows its
 * message reached the task, so a number used before the restart must never
 * come again), and a version-1 file is migrated in place, its tasks kept. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storetest.h"
#include "testlib.h"

static char dir[] = "/tmp/ocbg-schema-XXXXXX";

typedef struct send_try {
    const char *session, *id, *message;
} send_try;

/* sim_wait predicate: background_send is accepted (a task restored from
 * the store refuses it, "starting", until its first check; a refusal
 * sends nothing, so it is tried again). */
static int send_accepted(sim_host *h, void *arg)
{
    const send_try *a = arg;
    free(t_send(h, a->session, a->id, a->message));
    return t_rc == 0;
}

/* The newest prompt into session `child` contains `needle`. */
static void last_prompt_has(sim_host *h, const char *child, const char *needle, const char *what)
{
    char *body = sim_call_body(h, "session_prompt", child, -1);
    like(body, needle, "%s", what);
    free(body);
}

static void followups_numbered_across_restart(void)
{
    char db[300], opts[400];
    snprintf(db, sizeof db, "%s/followups.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(opts));
    char *out = t_launch_gated(h, f.parent, "F", "explore");
    char *id = t_find_id(out, "bg_");
    free(out);
    if (!id)
        bail_out("launch failed");
    is_int(t_wait_gate_open(h, "F", 5000), 0, "the sub-agent is busy (waiting on its question)");
    char *child = t_prompted_session(h, "gated F", 0);
    sim_script(h, "look at one", J("{'steps':[{'reply':'one seen'}]}"), 1);
    sim_script(h, "look at two", J("{'steps':[{'reply':'two seen'}]}"), 1);
    sim_script(h, "look at three", J("{'steps':[{'reply':'three seen'}]}"), 1);
    free(t_send(h, f.parent, id, "look at one"));
    is_int(t_rc, 0, "a first follow-up is sent");
    last_prompt_has(h, child, "[ocbg] Follow-up #1 for background task ", "numbered #1");
    free(t_send(h, f.parent, id, "look at two"));
    last_prompt_has(h, child, "[ocbg] Follow-up #2 for background task ", "the next #2");

    t_reload(h, opts);
    send_try again = {f.parent, id, "look at three"};
    is_int(sim_wait(h, send_accepted, &again, tap_timeout_ms(10000)), 0,
           "after a restart, a follow-up to the same running task is sent (once it is checked)");
    last_prompt_has(h, child, "[ocbg] Follow-up #3 for background task ",
                    "numbered #3: the numbering goes on from the store, #1 is never reused");
    t_release_gated(h, "F");
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, needle, 1, 5000), 0, "the task is notified when it ends");
    char *note = t_message_with(h, f.parent, needle);
    like(note, "three seen", "with the answer to the last follow-up");
    free(note);
    free(child);
    free(id);
    t_close(&f);
}

/* Does the task table have column `name`? */
static int has_column(const char *path, const char *name)
{
    return t_sql_int(path, "SELECT count(*) FROM pragma_table_info('task') WHERE name = ?1", name) > 0;
}

static void version_1_file_migrated(void)
{
    char db[300], opts[400];
    snprintf(db, sizeof db, "%s/v1.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_open(&f, opts);
    const char *id = t_task(&f, "old", J("{'steps':[{'reply':'the old answer'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "[ocbg] Background task completed", 1, tap_timeout_ms(5000)), 0,
           "a task completed and was notified");
    sim_unload_plugins(h);

    /* The file as version 1 left it: no followups_sent column (2), no
     * worktree columns (3). */
    sqlite3 *d = NULL;
    char *err = NULL;
    sqlite3_open(db, &d);
    int rc = sqlite3_exec(d,
                          "ALTER TABLE task DROP COLUMN followups_sent; ALTER TABLE task DROP COLUMN worktree_path; "
                          "ALTER TABLE task DROP COLUMN worktree_branch; ALTER TABLE task DROP COLUMN worktree_base; "
                          "ALTER TABLE task DROP COLUMN worktree_checkout; ALTER TABLE task DROP COLUMN "
                          "worktree_report; ALTER TABLE task DROP COLUMN worktree_report_run; PRAGMA user_version = 1",
                          NULL, NULL, &err);
    is_int(rc, SQLITE_OK, "the file made a version-1 file (%s)", err ? err : "ok");
    sqlite3_free(err);
    sqlite3_close(d);
    ok(t_user_version(db) == 1 && !has_column(db, "followups_sent") && !has_column(db, "worktree_path"),
       "version 1, without the new columns");

    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), opts) != 1)
        bail_out("loading: %s", sim_load_error(h));
    is_int(t_user_version(db), 3, "opened by this ocbg, the file is version 3");
    ok(has_column(db, "followups_sent") && has_column(db, "worktree_path") && has_column(db, "worktree_report_run"),
       "with the new columns");
    t_output_like(h, f.parent, id, "the old answer", "its task is kept, with its result");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    char needle[96];
    snprintf(needle, sizeof needle, "[ocbg] Background task completed: %s", id);
    is_int(t_count_messages_with(h, f.parent, needle), 1, "and it is not notified again");
    t_close(&f);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    followups_numbered_across_restart();
    version_1_file_migrated();
    t_remove_dir(dir);
    return done_testing();
}

/* A finished command's output out of memory (as
 * test_results_store does for an agent's texts): its buffers shrink to what
 * it printed when it ends, and once its row is committed and its
 * notification delivered the output lives only in the durable store;
 * background_output and TaskOutput read it back exactly (also after a
 * restart), and say so when the store cannot be read. With the store off,
 * or after a write failed, it stays in memory. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/persist.h"
#include "shelltest.h"
#include "store/reader.h"
#include "storetest.h"

static char dir[] = "/tmp/ocbg-results-shell-XXXXXX";

/* ---- a command's output ------------------------------------------------- */

/* seq 1 1500 prints 6,393 bytes; a 4,096-byte buffer keeps the first and
 * the last 2,048 of them and counts the 2,297 between. */
#define SHELL_OPTS "{\"store_path\":\"%s\",\"shell_output_cap\":4096%s}"
static char shell_want[8000];

static void make_shell_want(void)
{
    char all[7000];
    size_t n = 0;
    for (int i = 1; i <= 1500; i++)
        n += (size_t)snprintf(all + n, sizeof all - n, "%d\n", i);
    snprintf(shell_want, sizeof shell_want, "%.2048s\n[... %zu bytes of output left out here ...]\n%s", all, n - 4096,
             all + n - 2048);
}

/* Where command id's output is: -1 gone; 1 in memory (its buffers, and
 * its exit); 0 in the store only (no buffers; its exit still in memory). */
static int output_where(sim_host *h, const char *id)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    int r = -1;
    if (t && t->shell && t->shell->exited) {
        const shell_output *out = &t->shell->out;
        if (!out->stored_only)
            r = out->head != NULL;
        else /* 2: marked so, yet not as it should be */
            r = !out->head && !out->tail && (t->texts_stored & TASK_TEXT_OUTPUT) ? 0 : 2;
    }
    engine_unlock(eng);
    return r;
}

static int output_dropped(sim_host *h, const char *id)
{
    return output_where(h, id) == 0;
}

/* Background_output and TaskOutput on command id show its exit and
 * `output` exactly; the copy read back is not kept when `stored`. */
static void shows_output(sim_host *h, const char *psid, const char *id, const char *exit_tag, const char *output,
                         int stored, const char *when)
{
    char *want = NULL, *out = t_output(h, psid, id);
    if (asprintf(&want, "\nOutput:\n%s\n", output) < 0)
        bail_out("asprintf");
    like(out, want, "%s: background_output shows the exact output", when);
    free(out);
    free(want);
    is_int(output_where(h, id), stored ? 0 : 1,
           stored ? "%s: the copy read back is not kept" : "%s: it stays in memory", when);
    out = t_task_output(h, psid, id, 0, 0);
    if (asprintf(&want, "%s<output>\n%s</output>\n", exit_tag, output) < 0)
        bail_out("asprintf");
    like(out, want, "%s: TaskOutput shows its exit and the exact output", when);
    free(out);
    free(want);
}

static void command_output_read_back(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/shell.db", dir);
    snprintf(opts, sizeof opts, SHELL_OPTS, db, "");
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *id = t_bash_bg(h, f.parent, "seq 1 1500", "count", T_LAUNCH_UNCHECKED);
    is_int(t_wait_messages_with(h, f.parent, "[ocbg] Background command completed", 1, tap_timeout_ms(5000)), 0,
           "the command's notification is delivered");
    char *note = t_message_with(h, f.parent, "[ocbg] Background command completed");
    like(note, "1499\n1500\n", "with the end of its output");
    free(note);
    char *failed = t_bash_bg(h, f.parent, "seq 1 1500; exit 3", "count, fail", T_LAUNCH_UNCHECKED);
    is_int(t_wait_messages_with(h, f.parent, "[ocbg] Background command failed", 1, tap_timeout_ms(5000)), 0,
           "the failing command's notification is delivered");
    is_int(t_wait_until(h, output_dropped, id), 0, "a finished, delivered command keeps its output in the store only");
    is_int(t_wait_until(h, output_dropped, failed), 0, "a failed one too");
    shows_output(h, f.parent, id, "<exit_code>0</exit_code>\n", shell_want, 1, "read back");
    shows_output(h, f.parent, failed, "<exit_code>3</exit_code>\n", shell_want, 1, "a failed command, read back");
    char *out = t_task_output(h, f.parent, failed, 0, 0);
    like(out, "<error>The command exited with code 3.</error>", "its error read back too");
    free(out);

    /* The read back fails: a sentence says so, not an empty output. */
    engine *eng = t_engine(h);
    engine_lock(eng);
    store_reader *real = eng->ps.reader;
    eng->ps.reader = store_reader_new("/nonexistent-ocbg-dir/ocbg.db");
    engine_unlock(eng);
    out = t_output(h, f.parent, id);
    like(out, "Exit: exit code 0\n", "the store cannot be read: background_output still gives the exit");
    like(out,
         "\nOutput:\n(kept in the task store, which could not be read: the task store "
         "/nonexistent-ocbg-dir/ocbg.db",
         "and says the output is kept in a store that could not be read");
    free(out);
    out = t_task_output(h, f.parent, id, 0, 0);
    like(out, "<exit_code>0</exit_code>\n<output>\n(kept in the task store, which could not be read: ",
         "TaskOutput says so too");
    free(out);
    engine_lock(eng);
    store_reader_free(eng->ps.reader);
    eng->ps.reader = real;
    engine_unlock(eng);
    is_int(output_where(h, id), 0, "the sentence is not kept as its output");

    /* After a restart: restored with its output in the store only. */
    sim_unload_plugins(h);
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("reloading: %s", sim_load_error(h));
    is_int(output_where(h, id), 0, "restored after a restart, its output is in the store only");
    shows_output(h, f.parent, id, "<exit_code>0</exit_code>\n", shell_want, 1, "after a restart");
    free(failed);
    free(id);
    t_close(&f);
}

static void store_off_keeps_output(void)
{
    char opts[512];
    snprintf(opts, sizeof opts, SHELL_OPTS, "", ",\"store\":false");
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *id = t_bash_bg(h, f.parent, "seq 1 1500", "count", T_LAUNCH_UNCHECKED);
    is_int(t_wait_messages_with(h, f.parent, "[ocbg] Background command completed", 1, tap_timeout_ms(5000)), 0,
           "store off: the command's notification is delivered");
    shows_output(h, f.parent, id, "<exit_code>0</exit_code>\n", shell_want, 0, "store off");
    free(id);
    t_close(&f);
}

/* A write fails (the delivered notification's): the store is given up and
 * the output stays in memory. */
static void failed_write_keeps_output(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/shell-fail.db", dir);
    snprintf(opts, sizeof opts, SHELL_OPTS, db, "");
    t_fixture f;
    sim_host *h = t_linked_host(opts);
    is_int(t_refuse_updates(db, "NEW.notice = 3"), SQLITE_OK,
           "a trigger makes the write of a delivered notification fail");
    t_open_with(&f, h);
    char *id = t_bash_bg(h, f.parent, "seq 1 1500", "count", T_LAUNCH_UNCHECKED);
    is_int(t_wait_until(h, t_store_given_up, NULL), 0, "a failed write: the store is given up");
    shows_output(h, f.parent, id, "<exit_code>0</exit_code>\n", shell_want, 0, "after a failed write");
    free(id);
    t_close(&f);
}

/* A command still queued when the host stopped runs after the restart,
 * and keeps its output as any command does (a restored row holds no output
 * buffers of its own: it is given this start's). */
static void queued_command_restored(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/queued.db", dir);
    snprintf(opts, sizeof opts, SHELL_OPTS, db, ",\"max_running_shells\":1");
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *sleeper = t_bash_bg(h, f.parent, "sleep 30", "sleeper", T_LAUNCH_UNCHECKED);
    char *queued = t_bash_bg(h, f.parent, "seq 1 1500", "queued", T_LAUNCH_UNCHECKED);
    char *out = t_task_output(h, f.parent, queued, 0, 0);
    like(out, "<status>pending</status>", "the second command waits for the one slot");
    free(out);
    sim_unload_plugins(h);
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("reloading: %s", sim_load_error(h));
    out = t_task_output(h, f.parent, queued, 1, tap_timeout_ms(10000));
    char *want = NULL;
    if (asprintf(&want, "<exit_code>0</exit_code>\n<output>\n%s</output>\n", shell_want) < 0)
        bail_out("asprintf");
    like(out, want, "after the restart it runs, and its output is kept under the cap as ever");
    free(want);
    free(out);
    free(sleeper);
    free(queued);
    t_close(&f);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    make_shell_want();
    if (t_shells_work(T_PROBE_SKIP)) {
        command_output_read_back();
        store_off_keeps_output();
        failed_write_keeps_output();
        queued_command_restored();
    }
    t_remove_dir(dir);
    return done_testing();
}

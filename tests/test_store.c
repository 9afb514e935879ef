/* The durable task store: tasks and their notifications outlive
 * the plugin instance that launched them. A restart is played here by
 * unloading and loading the plugin in the same simulated host (the host
 * lives on: sessions keep running), or by a new host on the same store (the
 * old host's sessions are gone); tests/reliability/crash.c kills a host
 * process for real. Also: two instances on one file, and every kind of bad
 * file, which leave the plugin working in memory with a log line. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/proc_id.h"
#include "model/task.h"
#include "storetest.h"
#include "testlib.h"

static char dir[] = "/tmp/ocbg-store-XXXXXX";
static char db[256], opts[512];

/* Notifications naming the task in the session: "[ocbg] Background task
 * completed: <id>" (or failed). */
static int notices_of(sim_host *h, const char *session, const char *id)
{
    char needle[64];
    snprintf(needle, sizeof needle, ": %s", id);
    return t_count_messages_with(h, session, needle);
}

/* The newest log line the plugin wrote that contains needle, or NULL. */
static char *log_with(sim_host *h, const char *needle)
{
    size_t n = sim_calls(h, "log", NULL);
    for (size_t i = n; i-- > 0;) {
        char *body = sim_call_body(h, "log", NULL, (int)i);
        if (body && strstr(body, needle))
            return body;
        free(body);
    }
    return NULL;
}

static int wait_log(sim_host *h, const char *needle)
{
    for (size_t seen = 0;; seen++) {
        char *line = log_with(h, needle);
        free(line);
        if (line)
            return 0;
        if (sim_wait_calls(h, "log", NULL, seen + 1, tap_timeout_ms(3000)) != 0)
            return -ETIMEDOUT;
    }
}

static void finished_tasks_survive(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, opts);
    const char *a = t_task(&f, "alpha", J("{'steps':[{'reply':'answer alpha'}]}"));
    const char *b = t_task(&f, "beta", J("{'steps':[{'reply':'answer beta'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "[ocbg] Background task completed", 2, tap_timeout_ms(5000)), 0,
           "both tasks completed and were notified");
    t_reload(h, opts);
    char *list = t_tool(h, f.parent, "background_list", "{}");
    like(list, a, "after a restart the list still has %s", a);
    like(list, b, "and %s", b);
    unlike(list, "No background tasks found", "the list is not empty");
    char *out = t_output(h, f.parent, a);
    like(out, "answer alpha", "background_output gives the old task's result");
    like(out, "completed", "with its status");
    is_int(t_sync_notifications(h, f.parent), 0, "the restarted plugin's notifications are flushed");
    is_int(notices_of(h, f.parent, a), 1, "%s was notified once over both lives", a);
    is_int(notices_of(h, f.parent, b), 1, "%s was notified once over both lives", b);
    ok(access(db, F_OK) == 0, "the store file is where store_path says");
    free(list);
    free(out);
    t_close(&f);
}

/* The plugin restarts while the host keeps running the task's session: it
 * goes on, and is notified once when it ends. */
static void running_task_goes_on(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(opts));
    char *ans = t_launch_gated(h, f.parent, "g1", "general");
    char *id = t_find_id(ans, "bg_");
    is_int(t_wait_gate_open(h, "g1", tap_timeout_ms(5000)), 0, "the task runs (waits at its gate)");
    /* A slow status read widens the race of a task that ends while the
     * restored instance checks it: it must still complete with its answer. */
    sim_slow(h, "session_status", 300);
    t_reload(h, opts);
    char *out = t_output(h, f.parent, id);
    like(out, "running", "after the restart the task is still running");
    t_release_gated(h, "g1");
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(5000)), 0, "it completes in the new instance");
    sim_slow(h, "session_status", 0);
    free(out);
    out = t_output(h, f.parent, id);
    like(out, "done g1", "with its answer");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(notices_of(h, f.parent, id), 1, "notified once");
    free(out);
    free(ans);
    free(id);
    t_close(&f);
}

/* A new host on the same store: the old sessions are gone. A running task
 * ends in error; a finished one keeps its result; ids still resolve. */
static void new_host_reconciles(void)
{
    sim_host *h = t_host(opts);
    char *psid = sim_session_new(h, NULL, "main");
    char *done = t_launch_script(h, psid, "quick", J("{'steps':[{'reply':'quick answer'}]}"));
    is_int(t_wait_status(h, psid, done, "completed", tap_timeout_ms(5000)), 0, "one task completed");
    char *hang = t_launch_script(h, psid, "slow", J("{'steps':[{'tool':'read','ms':5},{'hang':true}]}"));
    char *child = t_task_session(h, 1);
    ok(sim_wait(h, (int (*)(sim_host *, void *))sim_session_busy, child, tap_timeout_ms(5000)) == 0, "the other runs");
    sim_destroy(h);

    h = t_host(opts);
    is_int(t_wait_status(h, psid, hang, "error", tap_timeout_ms(5000)), 0,
           "in a new host the running task ended in error");
    char *out = t_output(h, psid, hang);
    like(out, "no longer exists", "because its session is gone");
    free(out);
    t_output_like(h, psid, done, "quick answer", "the finished one keeps its result");
    free(done);
    free(hang);
    free(child);
    free(psid);
    sim_destroy(h);
}

/* A notification that could not be sent before the restart is sent after
 * it, once. */
static void undelivered_notice_is_sent(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, opts);
    sim_script(h, "late one", J("{'steps':[{'reply':'late answer'}]}"), 1);
    /* Every prompt after the task's own (call 1) fails: its notification
     * cannot be sent (set before the launch: the sub-agent answers at once). */
    sim_fail(h, "session_prompt", 2, -1, -EIO);
    char *ans =
        t_tool(h, f.parent, "background_task", J("{'description':'late','prompt':'late one','agent':'general'}"));
    char *id = t_find_id(ans, "bg_");
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(5000)), 0, "the task completed");
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 1, tap_timeout_ms(5000)), 0, "its notification was tried");
    is_int(notices_of(h, f.parent, id), 0, "and did not arrive");
    sim_unload_plugins(h);
    sim_fail(h, NULL, 0, 0, 0);
    t_reload(h, opts);
    is_int(t_wait_messages_with(h, f.parent, id, 1, tap_timeout_ms(5000)), 0, "after the restart it arrives");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications flushed");
    is_int(notices_of(h, f.parent, id), 1, "once");
    free(ans);
    free(id);
    t_close(&f);
}

/* Two hosts on one store: each keeps its own tasks while it lives; the
 * tasks of one that stopped are adopted by the next to start. */
static void two_instances(void)
{
    sim_host *a = t_host(opts), *b = t_host(opts);
    char *pa = sim_session_new(a, NULL, "a"), *pb = sim_session_new(b, NULL, "b");
    char *ta = t_launch_script(a, pa, "in a", J("{'steps':[{'reply':'from a'}]}"));
    char *tb = t_launch_script(b, pb, "in b", J("{'steps':[{'reply':'from b'}]}"));
    is_int(t_wait_status(a, pa, ta, "completed", tap_timeout_ms(5000)), 0, "a's task completed in a");
    is_int(t_wait_status(b, pb, tb, "completed", tap_timeout_ms(5000)), 0, "b's task completed in b");
    char *out = t_output(b, pa, ta);
    like(out, "Task not found", "b does not see a's task while a lives");
    free(out);
    sim_destroy(a);
    sim_host *c = t_host(opts);
    t_output_like(c, pa, ta, "from a", "a new host adopts a's task once a has stopped");
    t_output_like(c, pb, tb, "Task not found", "but not b's: b still lives");
    t_output_like(b, pb, tb, "from b", "b's task is intact in b");
    sim_destroy(b);
    sim_destroy(c);
    sim_host *d = t_host(opts);
    t_output_like(d, pb, tb, "from b", "once b has stopped too, its task is adopted");
    t_output_like(d, pa, ta, "from a", "and a's, which c left behind");
    sim_destroy(d);
    free(pa);
    free(pb);
    free(ta);
    free(tb);
}

/* A store that cannot be used: the plugin loads, logs why, and works in
 * memory. */
static void bad_store(const char *what, const char *path, const char *log_needle)
{
    const char *o = J("{'store_path':'%s'}", path);
    t_fixture f;
    sim_host *h = t_open(&f, o);
    const char *id = t_task(&f, "works", J("{'steps':[{'reply':'fine'}]}"));
    is_int(t_wait_status(h, f.parent, id, "completed", tap_timeout_ms(5000)), 0, "%s: tasks still run", what);
    is_int(wait_log(h, log_needle), 0, "%s: the log says why (%s)", what, log_needle);
    char *line = log_with(h, "memory only");
    ok(line != NULL, "%s: and that tasks live in memory only", what);
    free(line);
    t_close(&f);
}

static void bad_stores(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/missing/ocbg.db", dir);
    bad_store("a missing directory", path, "unable to open");

    snprintf(path, sizeof path, "%s/garbage.db", dir);
    FILE *f = fopen(path, "w");
    fputs("this is not a database, it is a text file that happens to be long enough to be read as one", f);
    fclose(f);
    bad_store("a corrupt file", path, "not a database");
    f = fopen(path, "r");
    char buf[16] = {0};
    ok(f && fread(buf, 1, 4, f) == 4 && strcmp(buf, "this") == 0, "the corrupt file was left as it was");
    if (f)
        fclose(f);

    snprintf(path, sizeof path, "%s/newer.db", dir);
    sqlite3 *d = NULL;
    sqlite3_open(path, &d);
    sqlite3_exec(d, "CREATE TABLE future(x); PRAGMA user_version = 99", NULL, NULL, NULL);
    sqlite3_close(d);
    bad_store("a newer schema", path, "newer than this ocbg");
    is_int(t_user_version(path), 99, "the newer file was left as it was");

    snprintf(path, sizeof path, "%s/garbage.db/ocbg.db", dir);
    bad_store("a file where the directory should be", path, "unable to open");
}

/* The host's data directory is the default place; store:false turns it off. */
static void data_dir_and_off(void)
{
    char sub[300], file[320];
    snprintf(sub, sizeof sub, "%s/data", dir);
    mkdir(sub, 0700);
    snprintf(file, sizeof file, "%s/ocbg.db", sub);
    const char *pdir = getenv("OCBG_PLUGIN_DIR");

    sim_host *h = sim_create();
    sim_set_data_dir(h, sub);
    is_int(sim_load_plugins(h, pdir, J("{'store':false}")), 1, "store off: loads");
    char *psid = sim_session_new(h, NULL, "main");
    char *id = t_launch_script(h, psid, "off", J("{'steps':[{'reply':'x'}]}"));
    is_int(t_wait_status(h, psid, id, "completed", tap_timeout_ms(5000)), 0, "store off: tasks run");
    ok(access(file, F_OK) != 0, "store off: no file in the data directory");
    free(id);
    sim_destroy(h);

    h = sim_create();
    sim_set_data_dir(h, sub);
    is_int(sim_load_plugins(h, pdir, NULL), 1, "defaults with a data directory: loads");
    free(psid);
    psid = sim_session_new(h, NULL, "main");
    id = t_launch_script(h, psid, "on", J("{'steps':[{'reply':'kept'}]}"));
    is_int(t_wait_status(h, psid, id, "completed", tap_timeout_ms(5000)), 0, "tasks run");
    ok(access(file, F_OK) == 0, "the store is ocbg.db in the host's data directory");
    sim_destroy(h);
    h = sim_create();
    sim_set_data_dir(h, sub);
    sim_load_plugins(h, pdir, NULL);
    t_output_like(h, psid, id, "kept", "and a new host finds the task there");
    sim_destroy(h);
    free(id);
    free(psid);
}

/* Rows that are not tasks (a damaged file) are left out, logged; the rest
 * load. */
static void damaged_rows(void)
{
    sim_host *h = t_host(opts);
    char *psid = sim_session_new(h, NULL, "main");
    char *id = t_launch_script(h, psid, "good", J("{'steps':[{'reply':'good row'}]}"));
    is_int(t_wait_status(h, psid, id, "completed", tap_timeout_ms(5000)), 0, "a task completed");
    sim_destroy(h);
    sqlite3 *d = NULL;
    sqlite3_open(db, &d);
    int rc = sqlite3_exec(d,
                          "INSERT INTO task(id, owner, parent_session, type, status, run) VALUES"
                          "('bg_bad00001', 'inst_gone', 'ses_x', 7, 1, 1),"
                          "('bg_bad00002', 'inst_gone', NULL, 0, 2, 1),"
                          "('bg_bad00003', 'inst_gone', 'ses_x', 0, 99, 1),"
                          "(NULL, 'inst_gone', 'ses_x', 0, 2, 1)",
                          NULL, NULL, NULL);
    sqlite3_close(d);
    is_int(rc, SQLITE_OK, "four damaged rows written");
    h = t_host(opts);
    is_int(wait_log(h, "4 stored tasks could not be read"), 0, "the log counts the rows left out");
    t_output_like(h, psid, id, "good row", "the good task still loads");
    free(id);
    free(psid);
    sim_destroy(h);
}

/* What a session's tasks cost counts against its budget across a restart. */
static void spend_survives(void)
{
    const char *o = J("{'store_path':'%s','max_session_cost_usd':1}", db);
    t_fixture f;
    sim_host *h = t_open(&f, o);
    const char *a = t_task(&f, "costly",
                           J("{'steps':[{'usage':{'input':100,'output':10,'cost':0.7}},"
                             "{'reply':'spent'}]}"));
    is_int(t_wait_status(h, f.parent, a, "completed", tap_timeout_ms(5000)), 0, "a task that cost $0.70 completed");
    sim_unload_plugins(h);
    is_int(sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), o), 1, "restarted");
    const char *b = t_task(&f, "more",
                           J("{'steps':[{'usage':{'input':100,'output':10,'cost':0.5}},"
                             "{'hang':true}]}"));
    is_int(t_wait_output_with(h, f.parent, b,
                              "Stopped by the session budget: this session's background tasks spent $1.20 "
                              "(max_session_cost_usd is 1).",
                              tap_timeout_ms(5000)),
           0, "the next task's $0.50 goes over the session's budget: the restart did not reset it");
    t_close(&f);
}

/* A command in its own process group, as the shell runner starts one. */
static pid_t spawn_sleeper(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        execlp("sleep", "sleep", "60", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

static void insert_shell_row(const char *id, pid_t pid, int64_t start)
{
    sqlite3 *d = NULL;
    sqlite3_open(db, &d);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO task(id, owner, parent_session, type, status, run, depth, command, description, pid, "
             "pid_start, created_ms, started_ms) VALUES('%s', 'inst_dead', 'ses_shells', %d, %d, 1, 1, "
             "'sleep 60', 'a dev server', %d, %lld, 1000, 1000)",
             id, TASK_SHELL, TASK_RUNNING, (int)pid, (long long)start);
    is_int(sqlite3_exec(d, sql, NULL, NULL, NULL), SQLITE_OK, "a running command %s stored", id);
    sqlite3_close(d);
}

static int reaped_killed(sim_host *h, void *arg)
{
    (void)h;
    int *st = arg;
    pid_t pid = (pid_t)st[0];
    return waitpid(pid, &st[1], WNOHANG) == pid;
}

/* A command left running by a host that died: killed when it is provably
 * the same process (pid and start time), never a process that took its pid. */
static void left_commands(void)
{
    pid_t same = spawn_sleeper(), other = spawn_sleeper();
    int64_t same_start = proc_start_time(same), other_start = proc_start_time(other);
    ok(same_start > 0 && other_start > 0, "two commands run (start times read)");
    insert_shell_row("bg_5e11aa01", same, same_start);
    insert_shell_row("bg_5e11aa02", other, other_start + 1); /* as if its pid had been reused */
    sim_host *h = t_host(opts);
    is_int(t_wait_status(h, "ses_shells", "bg_5e11aa01", "error", tap_timeout_ms(5000)), 0,
           "the restored command ended in error");
    char *out = t_output(h, "ses_shells", "bg_5e11aa01");
    like(out, "stopped: the host restarted", "saying the host restarted");
    free(out);
    int st[2] = {(int)same, 0};
    is_int(sim_wait(h, reaped_killed, st, tap_timeout_ms(5000)), 0, "the same process was killed");
    ok(WIFSIGNALED(st[1]) && WTERMSIG(st[1]) == SIGKILL, "by SIGKILL");
    is_int(t_wait_status(h, "ses_shells", "bg_5e11aa02", "error", tap_timeout_ms(5000)), 0,
           "the other command's task ended in error too");
    is_int(waitpid(other, NULL, WNOHANG), 0, "but a process whose start time differs was left alone");
    kill(other, SIGKILL);
    waitpid(other, NULL, 0);
    sim_destroy(h);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    snprintf(db, sizeof db, "%s/tasks.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    finished_tasks_survive();
    running_task_goes_on();
    new_host_reconciles();
    undelivered_notice_is_sent();
    two_instances();
    damaged_rows();
    left_commands();
    spend_survives();
    bad_stores();
    data_dir_and_off();
    t_remove_dir(dir);
    return tap_done_testing();
}

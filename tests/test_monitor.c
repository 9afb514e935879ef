/* Monitors (background_monitor, Monitor): a command's output lines come to
 * the parent as events, each a waking notification, exactly once; lines
 * close together join one event; a pattern selects lines; the watch expires,
 * stops a flood with advice, stops at its total, and says "stream ended"
 * once; it can follow a running background command; its command is asked
 * for as a background Bash is; a restart ends it and says so once; a cancel
 * stops it. The engine's watch bounds are narrowed in some tests (the
 * defaults need 30 s for a flood). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shelltest.h"
#include "storetest.h"
#include "engine/monitor.h"

static char dir[] = "/tmp/ocbg-monitor-XXXXXX";

/* Prompts into session s holding needle: how many, and how many woke it. */
static int prompts_with(sim_host *h, const char *s, const char *needle, int *waking)
{
    size_t calls = sim_calls(h, "session_prompt", s);
    int n = 0;
    *waking = 0;
    for (size_t i = 0; i < calls; i++) {
        char *body = sim_call_body(h, "session_prompt", s, (int)i);
        if (body && strstr(body, needle)) {
            n++;
            *waking += strstr(body, "\"noReply\":true") == NULL;
        }
        free(body);
    }
    return n;
}

/* background_monitor with args; its answer's task id (malloc'd), or NULL. */
static char *monitor(sim_host *h, const char *s, const char *args, char **answer)
{
    char *out = t_tool(h, s, "background_monitor", args);
    char *id = t_rc == 0 ? t_find_id(out, "bg_") : NULL;
    if (answer)
        *answer = out;
    else
        free(out);
    return id;
}

/* The monitor's text: "[ocbg] Monitor <id> "<desc>"" + rest. */
static const char *mtext(const char *id, const char *desc, const char *rest)
{
    static char buf[4][2048];
    static int at;
    char *b = buf[at++ % 4];
    snprintf(b, sizeof buf[0], "[ocbg] Monitor %s \"%s\"%s", id, desc, rest);
    return b;
}

/* How many pushes into s hold text, and (*waking) how many of them woke it. */
static int pushes_of(sim_host *h, const char *s, const char *text, int *waking)
{
    cJSON *j = cJSON_CreateString(text); /* the call's body is JSON: the text as JSON writes it */
    char *quoted = cJSON_PrintUnformatted(j);
    quoted[strlen(quoted) - 1] = '\0';
    int n = prompts_with(h, s, quoted + 1, waking);
    free(quoted);
    cJSON_Delete(j);
    return n;
}

/* Wait until every notification is out, then: is text the whole of exactly
 * one message in s, pushed once, waking the parent? */
static void told_once(sim_host *h, const char *s, const char *text, const char *what)
{
    is_int(t_wait_messages_with(h, s, text, 1, 10000), 0, "%s: told", what);
    char *got = t_message_with(h, s, text);
    is_str(got, text, "%s: the exact text", what);
    free(got);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    int waking;
    is_int(pushes_of(h, s, text, &waking), 1, "%s: pushed once", what);
    is_int(waking, 1, "%s: it wakes the parent", what);
}

static sim_host *host(void)
{
    return t_linked_host(T_SHELL_SMALL);
}

/* Narrow the bounds of the monitors started from now. */
static void limits(sim_host *h, int64_t quiet, int64_t span, unsigned per_minute, int64_t flood, unsigned max_events)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    watch_limits lim = monitor_limits(eng);
    lim.quiet_ms = quiet;
    lim.span_ms = span;
    lim.per_minute = per_minute;
    lim.flood_ms = flood;
    lim.max_events = max_events;
    monitor_set_limits(eng, &lim);
    engine_unlock(eng);
}

/* ---- coalescing, stream end ------------------------------------------- */

static void lines_apart_and_burst(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    char *answer;
    char *id =
        monitor(h, s, J("{'command':'for i in 1 2 3; do echo line $i; sleep 1; done','description':'three'}"), &answer);
    ok(id != NULL, "a monitor starts");
    char want[2048];
    snprintf(want, sizeof want,
             "Monitor %s started: $ for i in 1 2 3; do echo line $i; sleep 1; done\nIts output lines come to you as "
             "events, one notification per burst (lines within 200 ms, at most 1 s, join one event; at most 12 "
             "events a minute, the rest counted). It expires in 5m 00s (timeout_ms 300000), or when its command "
             "exits. Stop it: background_cancel(task_id=\"%s\").",
             id, id);
    is_str(answer, want, "the answer says what comes and how to stop it");
    free(answer);
    told_once(h, s, mtext(id, "three", ", event 1:\nline 1\n"), "lines a second apart: the first, alone");
    told_once(h, s, mtext(id, "three", ", event 2:\nline 2\n"), "the second");
    told_once(h, s, mtext(id, "three", ", event 3:\nline 3\n"), "the third");
    told_once(h, s,
              mtext(id, "three",
                    ": stream ended (exit code 0), having told 3 events. Nothing more will come "
                    "from it.\n"),
              "the stream's end");
    is_int(t_wait_status(h, s, id, "completed", 5000), 0, "the monitor's command completed");
    is_int(t_count_messages_with(h, s, "[ocbg] Background command"), 0, "no ordinary command notification");
    free(id);

    id = monitor(h, s, J("{'command':'echo a; echo b; echo c; exit 3','description':'burst'}"), NULL);
    told_once(h, s, mtext(id, "burst", ", event 1:\na\nb\nc\n"), "a burst: one event");
    told_once(h, s,
              mtext(id, "burst",
                    ": stream ended (exit code 3), having told 1 event. Nothing more will come "
                    "from it.\n"),
              "stream ended with its exit code");
    is_int(t_count_messages_with(h, s, "stream ended"), 2, "each stream's end told once");
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- pattern and arguments --------------------------------------------- */

static void pattern_and_arguments(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s,
                       J("{'command':'echo ok 1; echo ERROR one; echo ok 2; echo ERROR two','description':'errors',"
                         "'pattern':'^ERROR'}"),
                       NULL);
    told_once(h, s, mtext(id, "errors", ", event 1:\nERROR one\nERROR two\n"), "only the lines the pattern keeps");
    free(id);

    size_t asked = sim_permission_count(h);
    /* Bad arguments: each refused with its text (a prefix where the rest is
     * the C library's words), before anything is asked or made. */
    const struct {
        const char *args, *text, *what;
        bool prefix;
    } bad[] = {
        {J("{'command':'echo x','pattern':'(unclosed'}"),
         "Not started: pattern is not a valid extended regular expression: ", "a bad pattern", true},
        {J("{'command':'echo x','pattern':'((a{255}){255}){255}'}"),
         "Not started: pattern repeats too much (over 256 atoms once its repetitions are expanded).",
         "a pattern that would take the host's memory", false},
        {J("{'command':'echo x','pattern':'^(a|aa)*\\\\1b$'}"),
         "Not started: pattern has a back-reference (\\1 to \\9), which extended expressions do not have.",
         "a back-reference (minutes on one line)", false},
        {J("{'command':'echo x','timeout_ms':999}"),
         "timeout_ms must be between 1000 and 1800000 (30 minutes); the default is 300000 (5 minutes).",
         "a timeout below 1 s", false},
        {J("{'command':'echo x','timeout_ms':1800001}"), NULL, "a timeout above 30 minutes", false},
        {J("{'description':'nothing'}"),
         "Give command (a new command to watch) or task_id (a running background command of this session to "
         "follow).",
         "neither command nor task_id", false},
        {J("{'command':'echo x','task_id':'bg_00000000'}"), NULL, "both command and task_id", false},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out = t_tool(h, s, "background_monitor", bad[i].args);
        is_int(t_rc, -EINVAL, "%s is refused", bad[i].what);
        if (bad[i].text && bad[i].prefix)
            like(out, bad[i].text, "saying why");
        else if (bad[i].text)
            is_str(out, bad[i].text, "saying why");
        free(out);
    }
    is_int((int)sim_permission_count(h), (int)asked, "a refused monitor asks nothing");
    id = monitor(h, s, J("{'command':'printf \\'ok\\\\nERROR last\\'','description':'tail','pattern':'^ERROR'}"), NULL);
    told_once(h, s, mtext(id, "tail", ", event 1:\nERROR last\n"), "an unended last line the pattern keeps");
    free(id);
    char *out = t_tool(h, s, "background_list", "{}");
    like(out, "Total: 4 tasks (4 completed)", "the refusals made no task (two monitors, two syncs of notifications)");
    free(out);
    free(s);
    sim_destroy(h);
}

/* ---- expiry, flood, total ------------------------------------------------ */

static void expires(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s, J("{'command':'sleep 300','description':'sleeper','timeout_ms':1000}"), NULL);
    told_once(h, s,
              mtext(id, "sleeper",
                    " expired after 1.0s (timeout_ms 1000), having told 0 events. Its command was "
                    "stopped. Start a new monitor if you still need one.\n"),
              "expiry");
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "its command was stopped");
    is_int(t_sync_notifications(h, s), 0, "synced");
    is_int(t_count_messages_with(h, s, id), 1, "nothing else is said of it");
    free(id);
    free(s);
    sim_destroy(h);
}

static void flood_stops_with_advice(void)
{
    sim_host *h = host();
    limits(h, 10, 20, 2, 500, 100);
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s, J("{'command':'while :; do echo x; sleep 0.03; done','description':'flood'}"), NULL);
    const char *head = mtext(id, "flood",
                             " stopped: its lines came faster than 2 events a minute for 0.5s, too many "
                             "to tell (2 told, ");
    is_int(t_wait_messages_with(h, s, head, 1, 10000), 0, "a lasting flood stops the watch");
    char *got = t_message_with(h, s, head);
    ok(t_ends_with(got, " suppressed). Its command was stopped. Filter more precisely: a pattern that matches only "
                        "the lines you must react to, or a filter in the command (e.g. `... | grep "
                        "--line-buffered ERROR`), then start a new monitor.\n"),
       "and tells the model to filter more precisely");
    free(got);
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "its command was stopped");
    is_int(t_sync_notifications(h, s), 0, "synced");
    is_int(t_count_messages_with(h, s, ", event "), 2, "the two events the rate allowed were told");
    is_int(t_count_messages_with(h, s, id), 3, "and nothing more");
    free(id);
    free(s);
    sim_destroy(h);
}

static void total_limit(void)
{
    sim_host *h = host();
    limits(h, 10, 20, 12, 30000, 2);
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s,
                       J("{'command':'for i in 1 2 3 4; do echo $i; sleep 0.3; done; sleep 300','description':"
                         "'four'}"),
                       NULL);
    told_once(h, s,
              mtext(id, "four",
                    " stopped: it told 2 events, the most one monitor tells. Its command was stopped. "
                    "Start a new monitor, with a narrower pattern, if you still need one.\n"),
              "the total stops it");
    is_int(t_count_messages_with(h, s, ", event "), 2, "after its two events");
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "its command was stopped");
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- following a running command ---------------------------------------- */

static void follows_a_task(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    char *cmd = t_bash_bg(h, s, "for i in 1 2; do sleep 1; echo tick $i; done", "ticker", T_LAUNCH_UNCHECKED);
    char *answer;
    char *id = monitor(h, s, J("{'task_id':'%s'}", cmd), &answer);
    ok(id && strcmp(id, cmd) == 0, "the monitor is the task it follows");
    char want[1024];
    snprintf(want, sizeof want,
             "Monitor started on task %s: its output lines from now on come to you as events, one notification "
             "per burst (lines within 200 ms, at most 1 s, join one event; at most 12 events a minute, the rest "
             "counted). It expires in 5m 00s (timeout_ms 300000). Stop it: background_cancel(task_id=\"%s\").",
             cmd, cmd);
    is_str(answer, want, "the answer");
    free(answer);
    told_once(h, s, mtext(cmd, "ticker", ", event 1:\ntick 1\n"), "its first line");
    told_once(h, s, mtext(cmd, "ticker", ", event 2:\ntick 2\n"), "its second");
    told_once(h, s,
              mtext(cmd, "ticker",
                    ": stream ended (exit code 0), having told 2 events. Nothing more will "
                    "come from it.\n"),
              "its end");
    is_int(t_wait_messages_with(h, s, "[ocbg] Background command completed", 1, 5000), 0,
           "the followed command's own notification still comes");
    char *out = t_tool(h, s, "background_monitor", J("{'task_id':'%s'}", cmd));
    is_int(t_rc, -EINVAL, "an ended task cannot be followed");
    snprintf(want, sizeof want, "Task %s is completed: only a running command's output can be watched.", cmd);
    is_str(out, want, "saying why");
    free(out);
    out = t_tool(h, s, "background_monitor", J("{'task_id':'bg_nope'}"));
    is_str(out, "Task not found: bg_nope. Use background_list to see available tasks.", "an unknown task");
    free(out);
    free(id);
    free(cmd);
    free(s);
    sim_destroy(h);
}

/* ---- permission ------------------------------------------------------------ */

static void asked_as_bash(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    sim_permission_rules(h, "{\"bash\":\"ask\"}");
    sim_permission_auto(h, "reject", "not that");
    char *out = t_tool(h, s, "Monitor", J("{'command':'tail -f /dev/null','description':'tail'}"));
    is_int(t_rc, -EACCES, "a rejected question: refused");
    like(out, "Permission denied: running `tail -f /dev/null", "as a Bash refusal");
    free(out);
    char *json = sim_permission_json(h, -1);
    like(json, "\"permission\":\"bash\"", "the question is Bash's");
    like(json, "\"patterns\":[\"tail -f /dev/null\"]", "with the command as its pattern");
    free(json);
    out = t_tool(h, s, "background_list", "{}");
    like(out, "No background tasks", "nothing was started");
    free(out);
    sim_permission_rules(h, "{\"bash\":{\"*\":\"allow\",\"tail *\":\"deny\"}}");
    out = t_tool(h, s, "Monitor", J("{'command':'tail -f /dev/null','description':'tail'}"));
    is_int(t_rc, -EACCES, "a deny rule: refused");
    free(out);
    sim_permission_auto(h, "once", NULL);
    sim_permission_rules(h, "{\"bash\":\"ask\"}");
    out = t_tool(h, s, "Monitor", J("{'command':'echo yes','description':'yes'}"));
    is_int(t_rc, 0, "answered once: it starts");
    like(out, "Stop it: TaskStop(task_id=\"bg_", "the Claude face names TaskStop");
    char *id = t_find_id(out, "bg_");
    free(out);
    told_once(h, s, mtext(id, "yes", ", event 1:\nyes\n"), "its event");
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- cancel, the panel, the listings -------------------------------------- */

static void cancel_and_views(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s, J("{'command':'echo first; sleep 300','description':'watch','pattern':'f'}"), NULL);
    told_once(h, s, mtext(id, "watch", ", event 1:\nfirst\n"), "its event");
    char *view = sim_view(h, s, -1);
    char want[512];
    snprintf(want, sizeof want,
             "\"id\":\"%s\",\"kind\":\"monitor\",\"command\":\"echo first; sleep 300\",\"events\":1,"
             "\"expires\":",
             id);
    like(view, want, "the panel's view: kind monitor, its command, events so far, when it expires");
    like(view, "\"pattern\":\"f\"", "and its pattern");
    free(view);
    char *out = t_command(h, s, "tasks");
    snprintf(want, sizeof want, "%-12s  monitor  running", id);
    like(out, want, "/tasks lists it as a monitor");
    free(out);
    out = t_cancel(h, s, id);
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "background_cancel stops it");
    free(out);
    is_int(t_sync_notifications(h, s), 0, "synced");
    is_int(t_count_messages_with(h, s, id), 1, "a cancelled monitor says nothing more");
    free(id);

    id = monitor(h, s, J("{'command':'sleep 300','description':'stopme'}"), NULL);
    out = t_tool(h, s, "TaskStop", t_id_args(id));
    is_int(t_rc, 0, "TaskStop stops a monitor");
    free(out);
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "cancelled");
    free(id);

    id = monitor(h, s, J("{'command':'sleep 300','description':'panel'}"), NULL);
    char req[256];
    snprintf(req, sizeof req, "{\"v\":1,\"id\":\"r1\",\"action\":\"stop\",\"task_id\":\"%s\"}", id);
    char *reply = NULL;
    sim_ui_request(h, 0, req, &reply);
    free(reply);
    is_int(t_wait_status(h, s, id, "cancelled", 5000), 0, "the panel's stop stops it");
    is_int(t_wait_messages_with(h, s, "stopped by the user", 1, 5000), 0, "and the model is told the person did");
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- a restart ------------------------------------------------------------- */

static void restart_ends_it_once(void)
{
    char opts[512];
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s/m.db\",\"shell_kill_grace_ms\":300}", dir);
    sim_host *h = t_linked_host(opts);
    char *s = sim_session_new(h, NULL, "main");
    char *id = monitor(h, s, J("{'command':'echo up; sleep 300','description':'server'}"), NULL);
    told_once(h, s, mtext(id, "server", ", event 1:\nup\n"), "an event before the restart");
    engine *eng = t_engine(h);
    engine_lock(eng);
    pid_t pid = registry_find(&eng->reg, id)->shell->pid;
    engine_unlock(eng);
    sim_unload_plugins(h);
    ok(kill(pid, 0) != 0, "the command died with the host");
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("reloading: %s", sim_load_error(h));
    told_once(h, s,
              mtext(id, "server",
                    " stopped: the host restarted, and its command ($ echo up; sleep 300) ended with "
                    "it. Lines it had not told yet are lost. Start a new monitor if you still need "
                    "one.\n"),
              "after the restart, the model is told once");
    eng = t_engine(h);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    ok(t && task_is_monitor(t), "the restored task is still known as a monitor");
    engine_unlock(eng);
    sim_unload_plugins(h);
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("reloading: %s", sim_load_error(h));
    is_int(t_sync_notifications(h, s), 0, "synced after a second restart");
    is_int(t_count_messages_with(h, s, "the host restarted"), 1, "still told once");
    free(id);
    free(s);
    sim_destroy(h);
}

/* ---- a session's wakes ------------------------------------------------- */

/* The monitors of one session together wake it no more often than one may
 * (per_minute, here 2): a third event within the minute is told without a
 * turn, and nothing is lost. */
static void session_wakes_bounded(void)
{
    sim_host *h = host();
    char *s = sim_session_new(h, NULL, "main");
    limits(h, 50, 100, 2, 600000, 100);
    char *a = monitor(h, s, J("{'command':'echo a1; sleep 0.5; echo a2; sleep 300','description':'A'}"), NULL);
    char *b = monitor(h, s, J("{'command':'sleep 1; echo b1; sleep 300','description':'B'}"), NULL);
    const char *texts[] = {mtext(a, "A", ", event 1:\na1\n"), mtext(a, "A", ", event 2:\na2\n"),
                           mtext(b, "B", ", event 1:\nb1\n")};
    int wakes = 0;
    for (int i = 0; i < 3; i++)
        is_int(t_wait_messages_with(h, s, texts[i], 1, 10000), 0, "event %d told", i + 1);
    is_int(t_sync_notifications(h, s), 0, "notifications synced");
    for (int i = 0; i < 3; i++) {
        int waking;
        is_int(pushes_of(h, s, texts[i], &waking), 1, "event %d pushed once", i + 1);
        wakes += waking;
    }
    is_int(wakes, 2, "two of the three woke the session, the third joins its next turn");
    free(t_tool(h, s, "background_cancel", J("{'task_id':'%s'}", a)));
    free(t_tool(h, s, "background_cancel", J("{'task_id':'%s'}", b)));
    free(a), free(b), free(s);
    sim_destroy(h);
}

int main(void)
{
    t_tmpdir_make("monitor");
    if (!t_shells_work(T_PROBE_SKIP) || !mkdtemp(dir)) {
        t_tmpdir_remove(NULL);
        return done_testing();
    }
    lines_apart_and_burst();
    pattern_and_arguments();
    expires();
    flood_stops_with_advice();
    total_limit();
    follows_a_task();
    asked_as_bash();
    cancel_and_views();
    restart_ends_it_once();
    session_wakes_bounded();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    t_kill_leftovers();
    t_tmpdir_remove(NULL);
    return done_testing();
}

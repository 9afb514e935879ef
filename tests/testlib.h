/*
 * testlib.h — what the plugin's scenario tests share: a simulated host with
 * ocbg.so loaded from $OCBG_PLUGIN_DIR, tool calls that return their text, and
 * waits on what a model would see.
 */
#ifndef OCBG_TESTLIB_H
#define OCBG_TESTLIB_H

#include <cjson/cJSON.h>

#include "simhost.h"
#include "tap.h"

/* A host with ocbg loaded (bails out when it cannot load). */
sim_host *t_host(const char *options_json);

/* Call a tool; returns its answer (malloc'd, never NULL) and sets t_rc. */
extern int t_rc;
char *t_tool(sim_host *h, const char *session, const char *tool, const char *args_json);

/* Launch a background task from `session` and return its id (malloc'd);
 * bails out if the launch fails. */
char *t_launch(sim_host *h, const char *session, const char *description, const char *prompt, const char *agent);

/* The first "bg_xxxxxxxx" / "batch_xxxxxxxx" in a text (malloc'd, or NULL). */
char *t_find_id(const char *text, const char *prefix);

/* Wait until background_output for the task reports `status` (its report's
 * first line "Task <id>…: <status>"). Returns 0 or -ETIMEDOUT. */
int t_wait_status(sim_host *h, const char *session, const char *task_id, const char *status, int timeout_ms);

/* How many messages of the session contain `needle`. */
int t_count_messages_with(sim_host *h, const char *session, const char *needle);

/* Wait until that count reaches n. Returns 0 or -ETIMEDOUT. */
int t_wait_messages_with(sim_host *h, const char *session, const char *needle, int n, int timeout_ms);

/* ---- helpers for the scenario tests ---- */

/* Launch a task whose sub-agent runs `script_json` (a sim_script script, used
 * once); the prompt is a unique text the script is matched on. Returns the
 * task id (malloc'd); bails out if the launch fails. */
char *t_launch_script(sim_host *h, const char *session, const char *description, const char *script_json);

/* The session id (malloc'd) of the n-th task session (0 = first) the plugin
 * prompted, i.e. the n-th session_prompt call that denies tools; NULL if none. */
char *t_task_session(sim_host *h, int n);

/* The session (malloc'd) of the n-th session_prompt call whose body contains
 * needle; NULL if none. */
char *t_prompted_session(sim_host *h, const char *needle, int n);

/* background_output for a task (block false); returns its answer, sets t_rc. */
char *t_output(sim_host *h, const char *session, const char *task_id);

/* Wait until background_output for the task contains `needle`. */
int t_wait_output_with(sim_host *h, const char *session, const char *task_id, const char *needle, int timeout_ms);

/* The text of the session's newest message containing needle (malloc'd), or
 * NULL when none does. */
char *t_message_with(sim_host *h, const char *session, const char *needle);

/* sim_wait predicate: a permission question is open in the session (arg: its
 * id, or NULL for any session). */
int t_question_open(sim_host *h, void *session);

/* How many rows ocbg's store file `db` holds for task id (0 or 1), or -1
 * when it cannot be read. */
int t_task_stored(const char *db, const char *id);

/* The first column of the first row of `sql` (its ?1 bound to arg when not
 * NULL) on the SQLite file db, read-only: 0 when there is no row, -1 when
 * the query fails. Read by another process ($OCBG_BUILD/test-tools/sql_int,
 * tests/tools/sql_int.c): the plugin a test dlopens has
 * its own copy of SQLite (compiled in, hidden), and two copies of SQLite in
 * one process must never open one file: POSIX locks are per process, so the
 * test's close would drop the plugin's locks and its WAL could be reset
 * under it (seen: SIGBUS in walIndexAppend). */
int t_sql_int(const char *db, const char *sql, const char *arg);

/* sim_wait predicate: n calls of fn have entered the host (counted before any
 * sim_slow delay; arg: a t_started). */
typedef struct t_started {
    const char *fn;
    size_t n;
} t_started;
int t_calls_started(sim_host *h, void *arg);

/* A synchronisation point for "nothing more was sent": launch a quick task
 * from `session`, wait for its notification to reach the session (the worker
 * pushes notifications in order, so any notification queued before it has been
 * pushed by then). Returns 0 or -ETIMEDOUT. */
int t_sync_notifications(sim_host *h, const char *session);

/* Gated sub-agents: a gated task asks the user a question first (rules
 * {"bash":"ask"}, no automatic answer) and replies only once the test
 * answers it, so a test decides when each task ends, with no timing. */

/* A host whose sub-agents' bash questions wait for the test. */
sim_host *t_gated_host(const char *options_json);

/* Launch from `parent` a gated task of `agent` named `name` (its prompt
 * "gated <name>", its answer "done <name>"); returns the tool's answer
 * (malloc'd) and sets t_rc. */
char *t_launch_gated(sim_host *h, const char *parent, const char *name, const char *agent);

/* t_launch_gated, returning the task's id (malloc'd) instead of the answer;
 * bails out when the answer has none. */
char *t_gated_id(sim_host *h, const char *parent, const char *name, const char *agent);

/* Wait until gated task <name> has started and asks its question. Returns
 * 0 or -ETIMEDOUT. */
int t_wait_gate_open(sim_host *h, const char *name, int timeout_ms);

/* Let gated task <name> finish: wait for its question, answer it (bails
 * out when it never asks). */
void t_release_gated(sim_host *h, const char *name);

/* Has gated task <name> been prompted (has it started)? */
int t_gated_started(sim_host *h, const char *name);

/* The session (malloc'd) of gated task <name> (prompted "gated <name>");
 * bails out when it has not been prompted. */
char *t_gated_session(sim_host *h, const char *name);

/* How many messages of session contain prefix immediately followed by id
 * (a notification about one task: t_count_notifications(h, s, "completed: ", id)). */
int t_count_notifications(sim_host *h, const char *session, const char *prefix, const char *id);

/* Launch from parent a task whose sub-agent (agent "general") runs
 * script_json, prompted "isolated <description>", with isolation `how`
 * ("worktree", "none", ...). Returns the tool's answer (malloc'd), sets t_rc;
 * bails out when the script is refused. */
char *t_launch_isolated(sim_host *h, const char *parent, const char *description, const char *script_json,
                        const char *how);

/* A host (ocbg with default options) on which every message.part.updated
 * event is lost, so that a task's answer is read by the completion check
 * after its idle rather than taken from the events. */
sim_host *t_host_checking_after(void);

/* unit written times over (malloc'd, "" for 0 times). */
char *t_repeat(const char *unit, size_t times);

/* The whole file at path (malloc'd, NUL-terminated), or NULL when it cannot
 * be read. */
char *t_read_file(const char *path);

/* ---- shell lines, for tests that set up real folders (git, files) ---- */

/* Run a shell line (printf-style) in folder dir with its output dropped;
 * its exit status as system() gives it. */
int t_sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A worktree test's project: top, a new folder /tmp/ocbg-<name>-XXXXXX
 * (T_PROJECT_TOP bytes); repo, top/repo, a git repository on branch main
 * with one commit (shared.txt); data, top/data, the plugin's data folder
 * (each T_PROJECT_PATH bytes). The process's folder becomes repo, and no
 * system git config reaches the tests' git. Bails out when it cannot. */
#define T_PROJECT_TOP 256
#define T_PROJECT_PATH 320
void t_git_project_make(const char *name, char *top, char *repo, char *data);

/* Leave top (for /) and remove it. */
void t_git_project_remove(const char *top);

/* The first line a shell line (printf-style) prints in folder dir, stderr
 * dropped (malloc'd; "" when it prints nothing). */
char *t_sh_line(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Remove the folder dir and all below it (rm -rf); a diag line when that
 * fails. For a test's temporary folder at the end. */
void t_remove_dir(const char *dir);

/* Does path exist (stat succeeds)? */
int t_exists(const char *path);

/* ---- small calls the tests share ---- */

/* background_cancel of id from session; returns its answer (malloc'd), sets t_rc. */
char *t_cancel(sim_host *h, const char *session, const char *id);

/* background_send of message (JSON-safe text) to task id; returns its answer
 * (malloc'd), sets t_rc. */
char *t_send(sim_host *h, const char *session, const char *id, const char *message);

/* Call c is still waiting after ms (not scaled): is_int -ETIMEDOUT under label. */
void t_waits(sim_call *c, int ms, const char *label);

/* background_output of id from session contains needle (like, under label). */
void t_output_like(sim_host *h, const char *session, const char *id, const char *needle, const char *label);

/* Press Esc on call c (cancel it), check it returns within ms (scaled by
 * tap_timeout_ms) under the label ended, and free c. Returns the call's answer
 * (malloc'd, "" when none) and sets t_rc to its status. */
char *t_esc(sim_call *c, int ms, const char *ended);

/* background_list from session shows "<id> (<mark>)" (like, under label). */
void t_list_marks(sim_host *h, const char *session, const char *id, const char *mark, const char *label);

/* background_list from session contains needle (like, under label). */
void t_list_like(sim_host *h, const char *session, const char *needle, const char *label);

/* background_list from session is exactly "No background tasks found" (is_str, under label). */
void t_list_empty(sim_host *h, const char *session, const char *label);

/* Unload ocbg and load it again from $OCBG_PLUGIN_DIR with options_json (a
 * restart on the same host); bails out when it does not load. */
void t_reload(sim_host *h, const char *options_json);

/* is_str(got, <fmt printf-style>, label): an exact text that needs
 * formatting first (an id in it). Returns is_str's result. */
int t_is_strf(const char *got, const char *label, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Does s end with tail? (s NULL: no.) */
int t_ends_with(const char *s, const char *tail);

/* ---- JSON literals and lookups ---- */

/* A JSON text written with single quotes, printf-style: J("{'task_id':'%s'}",
 * id) is {"task_id":"<id>"}. Only the format's quotes turn: the arguments go
 * in as they are (pass JSON-safe text). A literal single quote is JSON's own
 * escape, written "\\u0027" in C; the printf ' flag cannot be used, and a
 * literal % is %%. The text is owned by testlib and kept until the process
 * exits (meant for a test's literals, not for loops of thousands); never
 * NULL (bails out when out of memory). Thread-safe. */
const char *J(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The value at a dotted path below obj: "info.time.completed", "parts.0.text"
 * (a number indexes an array, keys are case-sensitive). Borrowed from obj;
 * NULL when obj is NULL or a step is missing. */
const cJSON *jget(const cJSON *obj, const char *path);

/* The string at path (borrowed), or NULL when missing or not a string. */
const char *jstr(const cJSON *obj, const char *path);

/* The task line with id in a view of the plugin's (sim_view; borrowed from
 * view), or NULL. */
const cJSON *t_view_line(const cJSON *view, const char *id);

/* The number at path, or def when missing or not a number. */
double jnum(const cJSON *obj, const char *path, double def);

/* cJSON_Parse of a malloc'd text, which it frees (text NULL: NULL). The tree
 * is the caller's (cJSON_Delete). */
cJSON *t_parse(char *text);

/* ---- the fixture ---- */

/* One test's world: a host with a plugin loaded, the parent session the test
 * works from (titled "main"), and the strings (ids, texts) the test keeps,
 * all freed by t_close. */
#define T_FIXTURE_KEEP 64
typedef struct t_fixture {
    sim_host *h;
    char *parent;
    char *kept[T_FIXTURE_KEEP];
    int nkept;
} t_fixture;

/* Open f with ocbg from $OCBG_PLUGIN_DIR and options_json (NULL: defaults);
 * bails out when it cannot load. Returns f->h. */
sim_host *t_open(t_fixture *f, const char *options_json);

/* Open f on host h, made by the test (t_gated_host, t_linked_host, a host
 * with faults set): f owns h from now on (t_close destroys it) and makes the
 * parent session "main". Returns h. */
sim_host *t_open_with(t_fixture *f, sim_host *h);

/* Open f with the one plugin in plugin_dir (a test plugin); bails out when
 * it does not load exactly one. */
void t_open_dir(t_fixture *f, const char *plugin_dir, const char *options_json);

/* Hand a malloc'd string to f (freed by t_close); returns it (NULL stays
 * NULL). Bails out when f already keeps T_FIXTURE_KEEP strings. */
char *t_keep(t_fixture *f, char *s);

/* A new top-level session titled title, kept by f. */
const char *t_session(t_fixture *f, const char *title);

/* The first "<prefix>xxxx" id in text, kept by f; bails out when there is
 * none (what names the call, for the message). */
const char *t_id(t_fixture *f, const char *text, const char *prefix, const char *what);

/* Launch from f->parent a task whose sub-agent runs script_json (as
 * t_launch_script); returns its id, kept by f. Bails out if the launch
 * fails. */
const char *t_task(t_fixture *f, const char *description, const char *script_json);

/* Destroy the host, free the parent and every kept string; f is zeroed. */
void t_close(t_fixture *f);

#endif

/*
 * simhost.h — the simulated agent host: an in-memory OpenCode used by the tests
 * and by `make demo`.
 *
 * It implements every function of the ocp host table (include/ocp.h) over an
 * in-memory session store, loads plugins from a directory with dlopen exactly
 * as a real host does, and simulates sub-agents: a test scripts what a session
 * does when prompted, and the host emits the same event sequence OpenCode does,
 * from its own event thread, to every loaded plugin's on_event:
 *
 *   prompt (not noReply) → user message stored (message.updated, role user)
 *   → session.status busy → (plugins' transform_messages over the history)
 *   → per scripted tool: message.part.updated (pending, running,
 *   completed|error) → per scripted usage: message.updated (the assistant
 *   message in progress, its running totals) → assistant message stored
 *   (message.updated) → session.status idle → session.idle.
 *   A session created (by the plugin, the user or a fork) emits
 *   session.created {sessionID, info}.
 *   A scripted error: session.error (APIError) then idle, session.idle twice.
 *   An abort of a busy session: the assistant message gets error
 *   MessageAbortedError, then idle, session.idle twice.
 *   A delete: session.deleted for each child first (recursively), then itself.
 *   As in OpenCode, a busy session's turn is not stopped by its deletion: it
 *   answers -ENOENT to get/messages/prompt/fork but stays busy in the status
 *   map until its turn ends or session_abort ends it.
 *   A noReply prompt: the user message is stored; no model turn, no busy/idle.
 *   A prompt to a busy session is queued and runs after the current turn
 *   (its user message is stored when its turn begins; an abort drops it).
 *   A tool part, as in OpenCode: {id, sessionID, messageID, type:"tool",
 *   callID, tool, state:{status, input, output?|error?}}; the assistant
 *   message is stored when the turn ends (its id is known from the start).
 *   An assistant message's info, as OpenCode 1.18's: {id, sessionID, role,
 *   time:{created, completed}, agent, mode, modelID, providerID, tokens:
 *   {input, output, reasoning, cache:{read, write}}, cost, finish|error};
 *   tokens and cost are what its "usage" steps reported (0 without any).
 *   Folders (ABI 1.5), as OpenCode 1.18's instance per folder: a session
 *   made by session_create_in works in its folder (its "run" steps run
 *   there); every event about it (session.created on) reaches the plugins
 *   only while the plugin watches that folder (directory_watch 1, no watch 0
 *   since), and session_status lists it only then; an event while unwatched
 *   is lost, not queued. A delete's session.deleted events go where the
 *   deleted session's own go (the cascade of a parent of the host's own
 *   folder reaches the plugins). A host call about a session of a folder
 *   the plugin released (watch 0) is counted (sim_released_touches): OpenCode
 *   would make a new instance at a folder that may be gone.
 *
 * Faults: any host call can be made to fail (by function name, from the nth
 * call, for count calls); events can be dropped, duplicated, delayed and
 * reordered with a seeded random source. Every host call is recorded for
 * assertions. Tests wait on conditions with deadlines (sim_wait_*), never sleep.
 *
 * Threads: every function here may be called from any thread unless it says
 * otherwise. Strings returned as `char *` are malloc'd and freed by the caller
 * with free(); `const char *` results are valid until sim_destroy.
 */
#ifndef OCBG_SIMHOST_H
#define OCBG_SIMHOST_H

#include <stddef.h>
#include <stdint.h>

#include "ocp.h"

typedef struct sim_host sim_host;

/* Create a host with no sessions and no plugins. Starts the event thread and
 * the sub-agent scheduler. Returns NULL on allocation failure. */
sim_host *sim_create(void);

/* Shut down every loaded plugin (plugin->shutdown, then dlclose), stop and join
 * the host's threads, free everything. Event delivery stops before the first
 * shutdown; host functions keep working until every shutdown has returned
 * (plugin threads may be inside host calls). */
void sim_destroy(sim_host *h);

/* The host table given to plugins (valid until sim_destroy). Tests that load a
 * plugin by hand may copy it and change struct_size/abi_major. */
const ocp_host *sim_table(sim_host *h);

/* Make the host table lack an optional function ("session_fork", "now_ms",
 * "ask_permission", "notify_user", "publish_view", "session_create_in" or
 * "directory_watch"): NULL in the table given to plugins loaded from now on.
 * Returns 0, or -1 for a function that is not optional. */
int sim_without(sim_host *h, const char *fn);

/* Present the host table of ABI 1.minor (0..OCP_ABI_MINOR), as an older host
 * would: abi_minor = minor, struct_size ending with that minor's last field
 * (OCP_HAS_FIELD is false for the later ones, which are NULL too). The table
 * is filled anew: call sim_without and sim_set_data_dir after it. Call it
 * before loading plugins (they read the table without the host's lock).
 * Returns 0, or -EINVAL for a minor out of range. */
int sim_host_abi(sim_host *h, int minor);

/* Give plugins loaded from now on a data directory (ABI 1.2 data_dir; the
 * caller creates it). NULL: none, the default. The string is copied. */
void sim_set_data_dir(sim_host *h, const char *dir);

/* dlopen every "*.so" in `dir` (sorted by name), call its ocp_plugin_entry
 * with the host table and options_json (may be NULL). Returns the number of
 * plugins loaded (>= 0), or a negative errno; a plugin that refuses to load is
 * skipped, and its reason is kept for sim_load_error. */
int sim_load_plugins(sim_host *h, const char *dir, const char *options_json);

/* Load a plugin linked into the program: call `entry` (its
 * ocp_plugin_entry) as sim_load_plugins calls a file's, with the same checks;
 * `name` (may be NULL) stands for its path in errors. Nothing is unmapped at
 * unload. Returns 1 loaded, 0 refused (reason kept for sim_load_error). */
int sim_load_entry(sim_host *h, ocp_plugin_entry_fn entry, const char *name, const char *options_json);

/* The reason the last refused plugin gave ("" when none refused). */
const char *sim_load_error(sim_host *h);

size_t sim_plugin_count(sim_host *h);
const ocp_plugin *sim_plugin(sim_host *h, size_t i); /* NULL when out of range */

/* Shut down and dlclose every loaded plugin now (sim_destroy does it too). */
void sim_unload_plugins(sim_host *h);

/* ---- sessions ---------------------------------------------------------- */

/* Keep the sessions and messages in a journal at `path`, so that they
 * survive the host's process as OpenCode's database does. From this call on,
 * every change (a session created or deleted, a message stored, an assistant
 * message in progress at each tool or usage update: the last line of a
 * message wins) is appended to path as one JSON line in one write(2): a
 * SIGKILL after a host function returns loses none of it. When path already
 * has lines they are replayed first, as after a host restart: the sessions
 * come back, every one idle with no turn running (a turn that was streaming
 * leaves its partial assistant message, unfinished), with their messages as
 * last written; deleted ones stay gone; ids made from now on differ from,
 * and sort after, every replayed id. A last line cut short (a kill inside a
 * write) is ignored and cut off. Sessions that existed before the call are
 * written to the journal too. Replay emits no event: open the journal before
 * loading plugins. A session's denied tools and queued prompts are not kept.
 * Returns 0, -EINVAL (path NULL), -EBUSY (a journal is already open), or
 * open(2)/read(2)/ftruncate(2)'s negative errno. Any thread. */
int sim_journal_open(sim_host *h, const char *path);

/* Create a session as a user would (recorded separately from plugin calls:
 * not counted by sim_calls). Returns its id ("ses_…"), malloc'd. */
char *sim_session_new(sim_host *h, const char *parent_id, const char *title);

/* Delete a session and, first, its children (recursively); emits
 * session.deleted for each. Returns 0 or -ENOENT. */
int sim_session_delete(sim_host *h, const char *session_id);

/* The user types a prompt into a session (OpenCode's prompt body JSON, as
 * for session_prompt; noReply honoured). Not recorded as a plugin call.
 * Returns 0, -EINVAL (malformed body, nothing stored) or -ENOENT. */
int sim_session_prompt(sim_host *h, const char *session_id, const char *body_json);

/* The user presses Esc on a session: abort its turn and queued prompts (as
 * session_abort; not recorded). Returns 0 or -ENOENT. */
int sim_session_abort(sim_host *h, const char *session_id);

/* Does the session exist? Is it busy? */
int sim_session_exists(sim_host *h, const char *session_id);
int sim_session_busy(sim_host *h, const char *session_id);

/* The session's messages as OpenCode JSON [{info, parts}], malloc'd; NULL when
 * no such session. */
char *sim_session_messages_json(sim_host *h, const char *session_id);

/* How many messages the session holds (-1: no such session). */
int sim_session_message_count(sim_host *h, const char *session_id);

/* The text of the session's n-th message (0 = oldest; negative counts from the
 * newest: -1 = the last), its text parts joined by "\n"; malloc'd, NULL when
 * out of range. */
char *sim_session_message_text(sim_host *h, const char *session_id, int n);

/* The session as OpenCode's Session JSON, malloc'd; NULL when no such session. */
char *sim_session_get_json(sim_host *h, const char *session_id);

/* How many sessions exist. */
size_t sim_session_count(sim_host *h);

/* The folder the session works in (session_create_in's directory, without
 * trailing slashes), malloc'd; NULL for a session of the host's own folder
 * (or no such session). */
char *sim_session_directory(sim_host *h, const char *session_id);

/* Has a prompt body's "tools" denied `tool` to the session ({"tool": false})?
 * 1 yes, 0 no, -1 no such session. */
int sim_session_tool_denied(sim_host *h, const char *session_id, const char *tool);

/* The history ([{info, parts}]) the session's model saw at the start of its
 * last turn, after every plugin's transform_messages; malloc'd; NULL when no
 * turn has started yet (or no such session). */
char *sim_session_model_input(sim_host *h, const char *session_id);

/* ---- sub-agent scripts -------------------------------------------------- */

/* What a session does when a prompt arrives, as JSON:
 *   {"steps":[
 *      {"tool":"read","input":{...},"output":"text","ms":20,"fail":false},
 *          -- the tool runs at the end of its "ms". One that edits files
 *          ("edit", "write", "apply_patch") is first put to every plugin's
 *          tool_before (ABI 1.5): a refusal fails it with that text, a
 *          warning follows its output after a blank line. A "write" with
 *          input {"filePath", "content"} writes that file for real. A
 *          plugin's tool ("Bash", "background_task", …) is that plugin's
 *          tool_call with input as its arguments, for this message and the
 *          part's callID, on the scheduler thread (no turn advances
 *          meanwhile: not a call that waits for one, such as a foreground
 *          Task); the part completes or fails with its answer, and when the
 *          call failed after the user's plain "reject" of one of its
 *          questions the turn ends there, as OpenCode's does after its
 *          RejectedError: the steps after it are not run.
 *      {"wait_ms":50},
 *      {"reply":"the final answer text"},      -- assistant text, ends the turn
 *          (unless a "compact" step follows: then the turn goes on)
 *      {"error":"model overloaded"},           -- session.error, ends the turn
 *      {"hang":true},                           -- stays busy until aborted
 *      {"run":"shell command"}  -- OpenCode's bash tool: a tool part "bash"
 *          {command} (pending, running), then /bin/sh -c runs the command in
 *          the session's folder (the host's working directory for its own
 *          sessions), stdin /dev/null, on the scheduler thread with no host
 *          lock held, to its end (keep it short: other turns wait); then the
 *          part completes with its output (stdout and stderr, at most 16
 *          KiB), or, on a non-zero exit, fails with it and "exit status N".
 *          The script goes on either way (an abort meanwhile ends the turn).
 *      {"ask":{"permission":"bash","patterns":["rm x"]}} -- asks the user (see
 *          permissions below), as a sub-agent's own tool does; as in
 *          OpenCode, the plain "reject" ends the turn; allowed, denied by a
 *          rule or rejected with the user's words → the next step (the model
 *          goes on); open → the turn waits for the answer
 *      {"usage":{"input":N,"output":N,"reasoning":N,"cache_read":N,
 *          "cache_write":N,"cost":X}}           -- a model call's spend (each
 *          optional, default 0; a non-negative number, tokens whole, cost in
 *          USD): added to the turn's assistant message's running totals,
 *          emitted at once in message.updated {info} (no time.completed, no
 *          finish yet), as OpenCode does when a step finishes, and kept in its
 *          info (tokens, cost) when it is stored; a compaction's continue turn
 *          starts a new message from 0
 *      {"compact":true} or {"compact":{"summary":"text","auto":false,"fail":true}}
 *          -- OpenCode 1.18's compaction after the answer, the session busy
 *          throughout: the assistant message so far is stored
 *          (message.updated); with "wait_ms": n, the rest comes n ms later
 *          (OpenCode takes the step's snapshot in between: a completion check
 *          may read the answer before the compaction begins); a user message
 *          whose one part is {type:
 *          "compaction", auto, overflow:false} (message.updated,
 *          message.part.updated); the summary, an assistant message
 *          {parentID: that message, mode and agent "compaction", summary:
 *          true, finish "stop", tokens, cost} with parts step-start, text
 *          (summary, default "Summary of the conversation so far."),
 *          step-finish. fail: true → the summary has error
 *          ContextOverflowError, finish "error", no text, and the turn ends
 *          (no session.error). auto (default true) → a synthetic user
 *          message {text: "Continue if you have next steps, …", synthetic,
 *          metadata:{compaction_continue:true}}; then session.compacted; then
 *          the steps after this one run as a new model turn (transform_messages
 *          again, a new assistant message; no steps: one without text), and
 *          idle comes at its end. auto: false (a manual /summarize) →
 *          session.compacted, and the turn ends; later steps are not run.
 *   ]}
 *   E.g. {"steps":[{"reply":"A"},{"compact":true},{"reply":"B"}]}: A, the
 *   compaction, then B, then idle.
 * A script is chosen by the first rule whose `match` is a substring of the
 * prompt's text (NULL or "" matches every prompt). once=1: the rule is used
 * for one prompt then removed; once=0: it stays. Rules are tried in the order
 * added. With no matching rule a session replies "ok" at once.
 * Returns 0, or -EINVAL for malformed JSON (nothing added). */
int sim_script(sim_host *h, const char *match, const char *script_json, int once);

/* ---- tool calls, as the host's worker would make them ------------------ */

/* Call plugin 0's tool on the calling thread with a context for `session_id`
 * (agent "build", fresh message and call ids, directory = cwd). Returns the
 * plugin's return code; *out = the answer text, malloc'd (copied from the
 * plugin's string, which is freed with plugin->free). */
int sim_tool(sim_host *h, const char *session_id, const char *tool, const char *args_json, char **out);

/* The same for a slash command. */
int sim_command(sim_host *h, const char *session_id, const char *command, const char *arguments, char **out);

/* A tool call on its own thread, so a test can cancel it (Esc) or make
 * several at once. */
typedef struct sim_call sim_call;
sim_call *sim_tool_start(sim_host *h, const char *session_id, const char *tool, const char *args_json);
/* Esc: set ctx->cancelled atomically, then plugin->tool_cancel(ctx). */
void sim_tool_cancel(sim_call *c);
/* Has the call returned? */
int sim_tool_done(sim_call *c);
/* Wait up to timeout_ms for the call to return. Returns 0 and sets *rc and
 * *out (malloc'd), or -ETIMEDOUT (the call is still running; call again). */
int sim_tool_wait(sim_call *c, int timeout_ms, int *rc, char **out);
/* Join the call's thread (waits without limit) and free the handle. Free
 * every call before sim_destroy (its thread uses the host). */
void sim_tool_free(sim_call *c);

/* ---- events ------------------------------------------------------------ */

/* Emit an arbitrary event (JSON text) through the event thread, as if the
 * host produced it. */
void sim_emit(sim_host *h, const char *event_json);

/* Event faults, decided per event by a random source seeded with `seed`.
 * drop, dup: probabilities 0..1; delay_ms: a random extra delay 0..delay_ms
 * that may reorder events. only_type: apply only to events of this type, or
 * of these comma-separated types ("session.idle,session.status"; NULL = all). Replaces the previous setting; all zero
 * turns faults off. */
void sim_event_faults(sim_host *h, uint32_t seed, double drop, double dup, int delay_ms, const char *only_type);

/* How many events were delivered to plugins (after faults), in total and of
 * one type (type NULL = all). An event dispatched while no plugin is loaded
 * counts too. */
size_t sim_events_delivered(sim_host *h, const char *type);

/* Wait until every event emitted so far has been delivered (or dropped).
 * Returns 0 or -ETIMEDOUT. */
int sim_events_flush(sim_host *h, int timeout_ms);

/* ---- host call faults and the call record ------------------------------ */

/* Make calls of host function `fn` (e.g. "session_prompt") fail with `err`
 * (a negative errno; the message says "simulated failure of <fn>"): the
 * calls numbered nth .. nth+count-1 counting from 1 from now on (count -1 =
 * every call from the nth on). fn NULL clears every fault. */
void sim_fail(sim_host *h, const char *fn, int nth, int count, int err);

/* omit 1: the status map (session_status) leaves out every session, busy or
 * not, as a host whose map does not cover the plugin's sessions; 0: it lists
 * the busy ones again (the default). */
void sim_status_omit(sim_host *h, int omit);

/* Make a host function take `ms` longer (a slow HTTP host). */
void sim_slow(sim_host *h, const char *fn, int ms);

/* Run on_call(arg) on the plugin's thread each time a call to `fn` enters the
 * host (before any sim_slow delay), with no host lock held: a test looks at
 * the plugin's state in the middle of its call. on_call NULL: no more. The
 * callback must not call the host. Any thread. */
void sim_on_call(sim_host *h, const char *fn, void (*on_call)(void *arg), void *arg);

/* How many calls the plugins made to `fn` (NULL = any), optionally only those
 * about `session_id` (NULL = any). Failed calls count too. */
size_t sim_calls(sim_host *h, const char *fn, const char *session_id);

/* How many calls to `fn` have entered the host so far, counted before a
 * sim_slow delay (sim_calls counts a call once it returned): a test waits on
 * it to know a plugin thread is inside a slow call. */
size_t sim_calls_started(sim_host *h, const char *fn);

/* The body (prompt JSON; for other calls: the arguments as JSON) of the nth
 * recorded call to `fn` about `session_id` (NULL = any): n = 0 oldest, -1 the
 * newest. malloc'd; NULL when there is none. */
char *sim_call_body(sim_host *h, const char *fn, const char *session_id, int n);

/* Every recorded call as a JSON array [{fn, session, body, rc, t_ms}], malloc'd. */
char *sim_calls_json(sim_host *h);

/* ---- the UI (ABI 1.4: views published, the person's requests) ---------- */

/* How many views the plugins published about session_id (NULL = any). Views
 * are not calls: sim_calls does not count them. */
size_t sim_views(sim_host *h, const char *session_id);
/* The nth view about session_id (NULL = any; 0 oldest, -1 newest), as the
 * plugin published it, malloc'd; NULL when there is none. */
char *sim_view(sim_host *h, const char *session_id, int n);
/* Send the person's request (ocp.h ui_request) to the ith plugin, on this
 * thread: its return value; *out = its answer (malloc'd, copied) or NULL.
 * -ENOSYS when the plugin takes no requests. */
int sim_ui_request(sim_host *h, size_t i, const char *request_json, char **out);

/* ---- waiting on conditions --------------------------------------------- */

/* Wait until pred(h, arg) returns non-zero, re-checking whenever the host's
 * state changes (a call, an event, a session change), and at least every
 * 20 ms for predicates over plugin state the host cannot see change.
 * pred is called without host locks held and may use the functions here.
 * Returns 0, or -ETIMEDOUT after timeout_ms. */
int sim_wait(sim_host *h, int (*pred)(sim_host *h, void *arg), void *arg, int timeout_ms);

/* Common waits built on sim_wait: */
int sim_wait_calls(sim_host *h, const char *fn, const char *session_id, size_t n, int timeout_ms);
int sim_wait_messages(sim_host *h, const char *session_id, int n, int timeout_ms);
int sim_wait_idle(sim_host *h, const char *session_id, int timeout_ms);

/* ---- folders (ABI 1.5) ------------------------------------------------ */

/* How many host calls the plugins made about a session of `directory`
 * (NULL: any folder) after that folder was released (directory_watch 0, and
 * no watch 1 since): every recorded call naming such a session (as
 * sim_calls counts them by session): session_get, _messages, _prompt,
 * _abort, _fork, a session_create[_in] under it, failed ones too;
 * session_status names no session and is not counted. Each is also said on
 * stderr as a TAP comment. A correct plugin keeps it at 0. */
size_t sim_released_touches(sim_host *h, const char *directory);

/* 1: `directory` is watched (NULL, the host's own folder: always); -1:
 * released (watch 0 last); 0: never watched. */
int sim_directory_watched(sim_host *h, const char *directory);

/* ---- permissions (OpenCode's, for ABI 1.1 ask_permission) -------------- */

/* The rules, as OpenCode's "permission" config: {"bash": "ask", "task":
 * {"*": "allow", "secret": "deny"}, …}: per permission an action ("allow",
 * "ask", "deny") or a {pattern: action} map; '*' and '?' are wildcards, a
 * pattern ending in " *" also matches without its tail; the last matching
 * rule wins; nothing matching → allow. Replaces the rules; NULL clears them.
 * Returns 0 or -EINVAL (nothing changed). */
int sim_permission_rules(sim_host *h, const char *rules_json);

/* How the user answers an "ask": "once", "always" (approves the request's
 * "always" patterns in that session for good), "reject" (message: the user's
 * words, may be NULL), or NULL: questions stay open until sim_permission_reply
 * (a tool call waits for it, or for Esc). Every question, open or not, emits
 * permission.asked and, once answered, permission.replied (OpenCode's shapes). */
void sim_permission_auto(sim_host *h, const char *reply, const char *message);

/* Answer an open question by id (as OpenCode's POST /permission/:id/reply).
 * Returns 0, -ENOENT (no such open question) or -EINVAL (bad reply). */
int sim_permission_reply(sim_host *h, const char *request_id, const char *reply, const char *message);

/* The id of the oldest open question of a session (NULL: any session),
 * malloc'd; NULL when none is open. */
char *sim_permission_open(sim_host *h, const char *session_id);

/* How many questions were asked (also those a rule answered), and the nth (0
 * oldest, -1 newest) as JSON: permission.asked's properties plus "outcome":
 * "allow", "deny", "pending", "once", "always", "reject" or "cancelled" (and
 * "message": the user's words with a reject, when any). malloc'd; NULL when
 * out of range. */
size_t sim_permission_count(sim_host *h);
char *sim_permission_json(sim_host *h, int n);

/* ---- the clock --------------------------------------------------------- */

/* The host's now_ms: real time plus an offset a test may advance. */
int64_t sim_now_ms(sim_host *h);
void sim_advance_ms(sim_host *h, int64_t ms);

#endif

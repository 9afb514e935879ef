/*
 * adapter.h — what the files of ocbg_opencode.node share. ocbg_opencode.node
 * runs an ocp plugin (ocbg.so, found beside it) inside OpenCode. OpenCode runs
 * plugins as JavaScript on one Bun event loop; ocbg.js (a few lines) loads this
 * Node-API addon and calls init().
 *
 * Everything here is private to the addon: it is built with
 * -fvisibility=hidden, and only the Node-API module entry points are exported.
 *
 * Files (one concern each):
 *   ui_reply.c   the panel channel's texts: a request picked out of a
 *                command, the reply (pure: ui_reply.h, which it alone
 *                includes, so that the fuzzer links it without Node-API)
 *   util.c       C helpers: strdup/printf to malloc'd text, stderr log
 *   js.c         JS value helpers (strings, properties, JSON, promises)
 *   hostcall.c   a host call crossing to the JS thread (record, thread-safe
 *                function callback, SDK request and its answer, the log:
 *                h_log)
 *   ask.c        ask_permission over the tool's own ctx.ask()
 *   dirs.c       sessions in other directories (ABI 1.5): session_create_in,
 *                directory_watch (ocbg.js follows the event streams), the
 *                watched directories' status maps, session -> directory
 *   hostfns.c    the ocp_host table: session_*, free (log is h_log)
 *   calls.c      calls into the plugin (a tool call, a command, the dispose):
 *                workers, settling promises
 *   tools.c      tool execute() and its AbortSignal (tool_cancel)
 *   hooks.c      event, messages.transform, config, command hooks
 *   schema.c     tool arguments: JSON Schema -> zod
 *   lifecycle.c  init (load the plugin, build the hooks), dispose/shutdown,
 *                the module entry
 * Every .c includes only this header (but ui_reply.c), and calls (or names)
 * functions of lower layers only: the order is build-aux/layers-opencode's,
 * which make check's layout checker enforces (and refuses a cycle). Where a
 * lower file must run code of a higher one, the higher one hands it a
 * function pointer (jsreq.start, call.settled, the hook and TSFN callbacks
 * lifecycle.c registers).
 *
 * Threads (see NOTES.md for the full story), as tagged below:
 *   [js]      OpenCode's event loop. Runs every hook: event (on_event),
 *             messages.transform, tool execute() and command hooks (they only
 *             start a worker and return a Promise), the settling of those
 *             Promises, and every SDK call. It never waits for C.
 *   [worker]  one detached pthread per tool call / command: plugin->tool_call
 *             may block as long as it likes there.
 *   [ui]      one pthread per adapter for the TUI panel's requests (ui.c):
 *             started by the first, served in order from a bounded queue,
 *             joined at shutdown.
 *   [plugin]  the plugin's own threads (poller, notifier, ...).
 *   [shutdown] one pthread started by dispose(): plugin->shutdown may wait for
 *             plugin threads blocked in host calls, which need the JS thread.
 *   [any]     any of these.
 *
 * Two records cross between the threads, in opposite directions:
 *   call   a call into the plugin (tool execute(), a command, the dispose):
 *          made on the JS thread, run on a worker, settled back on the JS
 *          thread;
 *   jsreq  a request to the JS thread (an SDK request, a log line, a
 *          ctx.ask()): made on a worker or plugin thread, run on the JS thread.
 * (The plugin's hc_* wrappers and its engine's jobs are neither.)
 *
 * A host call (session_create, ...) made on a worker or plugin thread becomes a
 * `jsreq` record handed to the JS thread through a Node-API thread-safe
 * function; the JS side calls the SDK `client`, and its promise's then/catch
 * fill the record and signal its condition variable. Only the calling thread
 * waits. A host call on the JS thread itself fails at once (-EIO) rather than
 * deadlocking; the ABI forbids it anyway.
 *
 * ask_permission (ABI 1.1) takes the same road with the tool call's own
 * ToolContext: ctx.ask() on the JS thread, the worker waiting for its promise
 * with no time limit; Esc (the tool's AbortSignal) or shutdown ends the wait.
 *
 * Memory: "malloc'd" results belong to the caller (free()). JS values
 * (napi_value) live in the caller's handle scope.
 */
#ifndef OCBG_OPENCODE_ADAPTER_H
#define OCBG_OPENCODE_ADAPTER_H

#define NAPI_VERSION 8
#include <node_api.h>

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ocp.h"
#include "ui_reply.h"

#define PLUGIN_FILE "ocbg.so"
/* At most this many TUI panel requests wait for the panel's thread (ui.c);
 * one more is refused at once. */
#define UI_QUEUE_MAX 64
/* How long the SDK may take for one request before it is aborted (ms). */
#define HOST_CALL_TIMEOUT_MS 30000
/* A safety margin on the C side: if the JS thread never answers at all. */
#define HOST_CALL_GRACE_MS 15000

typedef struct jsreq jsreq;
typedef struct call call;
typedef struct sess_dir sess_dir; /* dirs.c's, private */

/* One per init() (one plugin instance). Allocated at init and never freed:
 * a late thread-safe-function finalisation or plugin thread may still read it. */
typedef struct adapter {
    napi_env env;
    pthread_t js_thread;
    void *dl;
    const ocp_plugin *plugin; /* valid until plugin->shutdown returns */
    /* copies from the plugin table, which is gone once shutdown returned: a
     * worker released by shutdown frees its result with them afterwards */
    void (*plugin_free)(void *userdata, char *p);
    void *plugin_ud;
    ocp_host host;
    napi_ref client_ref;
    napi_ref zod_ref;                   /* may be NULL: no zod, raw JSON Schema per argument */
    napi_threadsafe_function host_tsfn; /* plugin/worker thread -> JS: SDK calls, logs */
    napi_threadsafe_function done_tsfn; /* worker/shutdown thread -> JS: settle promises */
    pthread_mutex_t mu;                 /* guards the fields below; held around JS-thread calls into the plugin */
    pthread_cond_t cv;
    int closing;        /* shutdown has begun: start no new call into the plugin */
    int workers;        /* worker threads not yet finished */
    int tsfn_gone;      /* the thread-safe functions were released */
    int log_level;      /* minimum level written */
    int js_pending;     /* JS thread only: promises waiting on workers */
    jsreq *asks;        /* permission questions a worker waits on (under mu) */
    int warned_no_ask;  /* JS thread only: "this OpenCode has no ctx.ask" logged */
    char *data_dir;     /* host.data_dir (project_data_dir), or NULL; lives as long as ad */
    char **event_types; /* copies of the plugin's event_types (ABI 1.3), NULL: every event */
    size_t nevent_types;
    int (*wants_messages)(void *userdata, const char *session_id); /* NULL: every history; call under mu */
    size_t ncmd;                                                   /* copies of the plugin's commands (its table */
    char **cmd_name;                                               /* is gone after shutdown) */
    char **cmd_desc;
    /* JS thread only: warnings tool_before (ABI 1.5) gave for tool calls, by
     * call id, until tool.execute.after appends each to its call's output
     * (hooks.c); newest first, at most TOOL_NOTES_MAX. */
    struct tool_note *notes;
    unsigned nnotes;
    /* ABI 1.5 (dirs.c) */
    char *directory;         /* input.directory: this instance's own (never watched, never disposed) */
    napi_ref watcher_ref;    /* ocbg.js's watcher {watch(opts)}, or NULL: directory_watch fails */
    pthread_mutex_t dirs_mu; /* held by directory_watch(0) and by session_status while they send
                              * requests naming a watched directory: no request for a directory
                              * goes out after its watch(0) */
    char **watched;          /* the watched directories (under mu) */
    size_t nwatched;
    sess_dir *sess_dirs; /* session id -> directory, for sessions elsewhere (under mu) */
    /* The TUI panel's requests (ui.c), under mu: a ring of at most
     * UI_QUEUE_MAX (JSON texts, malloc'd), served by ui_thread, which is
     * started at the first request (ui_started) and joined by ui_stop. */
    char *ui_queue[UI_QUEUE_MAX];
    unsigned ui_head, ui_count;
    pthread_cond_t ui_cv; /* the queue got a request, or closing was set */
    pthread_t ui_thread;
    int ui_started;
} adapter;

/* ------------------------------------------------------------------------ */
/* jsreq: one request from a non-JS thread to the JS thread                  */
/* ------------------------------------------------------------------------ */

/* JSREQ_SDK: client[group][method](opts). JSREQ_LOG: fire and forget.
 * JSREQ_ASK: ctx.ask(request) of a tool call's ToolContext (ask_permission). */
enum jsreq_kind {
    JSREQ_SDK,
    JSREQ_LOG,
    JSREQ_ASK
};

struct jsreq {
    enum jsreq_kind kind;
    int refs; /* JSREQ_SDK: the waiting caller + the JS side. JSREQ_ASK: the waiting
               * worker + the queued item + each promise callback (released by
               * its finalizer: a promise may never settle). Guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    const char *group; /* client[group][method](opts); NULL: watcher[method](opts) (dirs.c) */
    const char *method;
    char *opts_json; /* JSREQ_ASK: the ctx.ask argument */
    int want_out;    /* put JSON.stringify(data) into out */
    int rc;
    char *out;
    /* JSREQ_LOG */
    enum ocp_log_level level;
    /* JSREQ_ASK: the asking tool call. Read on the JS thread only while !done:
     * the call lives until its worker has left the wait, and is freed on the
     * JS thread (done_tsfn), so it cannot go away during one JS callback. */
    call *call;
    /* JSREQ_ASK: what host_tsfn_call runs for it on the JS thread: ask.c's
     * ask_start, set by ask.c (hostcall.c calls nothing of ask.c). Keeps no
     * reference of its own beyond what it hands to promise callbacks. */
    void (*start)(napi_env env, adapter *ad, jsreq *rq);
    jsreq *next; /* in adapter.asks while the worker waits (ad->mu) */
};

/* ------------------------------------------------------------------------ */
/* call: one call into the plugin, run on a worker, settled on the JS thread  */
/* ------------------------------------------------------------------------ */

enum call_kind {
    CALL_TOOL,
    CALL_COMMAND,
    CALL_DISPOSE
};

/* Marks a live call, so that ask_permission can check the ocp_call_ctx it is
 * given really is one of ours before stepping back to its call. */
#define CALL_MAGIC 0x6f63626au

struct call {
    uint32_t magic;
    enum call_kind kind;
    adapter *ad;
    napi_deferred deferred;
    char *name; /* tool or command */
    char *args; /* args JSON (tool) or the argument text (command) */
    ocp_call_ctx ctx;
    char *s_session, *s_message, *s_agent, *s_call, *s_dir;
    pthread_mutex_t mu;  /* orders tool_cancel against the end of tool_call */
    int returned;        /* tool_call has returned */
    napi_ref signal_ref; /* the AbortSignal and our listener, to remove it */
    napi_ref listener_ref;
    napi_ref parts_ref; /* command: output.parts, replaced in place */
    napi_ref tctx_ref;  /* tool: the ToolContext execute() got (its ask()) */
    /* [js] run by done_tsfn_call once the call is settled and freed, or NULL.
     * The dispose call's releases the thread-safe functions (lifecycle.c). */
    void (*settled)(adapter *ad);
    int rc;
    char *out;
};

/* ---- util.c -------------------------------------------------------------- */

/* [any] strdup that passes NULL through. NULL also when out of memory. */
char *xstrdup(const char *s);
/* [any] printf into malloc'd text; NULL when out of memory. */
char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* [any] 1 when the caller is OpenCode's event thread (where waiting deadlocks). */
int on_js_thread(adapter *ad);
/* [any] text as it may reach the person's terminal (a toast): every escape
 * sequence (ESC or C1: CSI, OSC, DCS, SOS, PM, APC up to BEL or ST, two-byte
 * escapes) removed whole; CR LF, CR, LF, U+2028 and U+2029 a line break
 * (multiline) or a space; tab a space; any other C0 or C1 control, DEL, and
 * the bidirectional controls (U+061C, U+200E-F, U+202A-E, U+2066-9) U+FFFD.
 * NULL is taken as "". Returns malloc'd text, NULL when out of memory. */
char *screen_text(const char *text, int multiline);
/* [any] "ocbg [level] msg" on stderr: the log of last resort. */
void stderr_log(enum ocp_log_level level, const char *msg);
/* [any] The directory ocbg keeps its store in for OpenCode project
 * `project_id`: <OpenCode's data dir>/ocbg/<project id>, OpenCode's data dir
 * being $XDG_DATA_HOME/opencode, else ~/.local/share/opencode (as OpenCode
 * computes it). Created (mode 0700, parents too) if missing. Returns it
 * (malloc'd), or NULL with *why (malloc'd) when there is no home, the id is
 * not a plain name, or it cannot be created. */
char *project_data_dir(const char *project_id, char **why);

/* ---- js.c: JS values [js] ------------------------------------------------- */

/* Throws a JS Error with msg (unless one is pending); returns NULL, so that a
 * callback can `return throw_msg(...)`. */
napi_value throw_msg(napi_env env, const char *msg);
/* Clears a pending JS exception: its text (malloc'd), or NULL if none. */
char *take_exception(napi_env env);
/* A JS string as malloc'd UTF-8; NULL when v is not a string (or no memory). */
char *js_string(napi_env env, napi_value v);
/* A JS string of s ("" for NULL). */
napi_value js_str(napi_env env, const char *s);
napi_value js_undefined(napi_env env);
/* obj[key]; NULL when obj is no object/function or the value is undefined/null. */
napi_value js_get(napi_env env, napi_value obj, const char *key);
/* 1 when v is non-NULL and of type want. */
int js_is(napi_env env, napi_value v, napi_valuetype want);
/* obj[method](...argv); NULL when it is no function or threw (exception left
 * pending: the caller clears it with take_exception). */
napi_value js_call_method(napi_env env, napi_value obj, const char *method, size_t argc, const napi_value *argv);
/* globalThis[name], or NULL. */
napi_value js_global(napi_env env, const char *name);
/* JSON.stringify(v), malloc'd; NULL for undefined or on error (cleared). */
char *js_stringify(napi_env env, napi_value v);
/* JSON.parse(text); NULL on error (exception cleared). */
napi_value js_parse(napi_env env, const char *text);
/* Replaces the contents of the array arr with those of the array items, in
 * place (OpenCode keeps its own reference to the array it passed a hook).
 * 0, or -1 when either is not an array or arr cannot be truncated. */
int js_array_replace(napi_env env, napi_value arr, napi_value items);
/* A Promise already rejected with Error(msg) / already resolved (undefined). */
napi_value rejected(napi_env env, const char *msg);
napi_value resolved(napi_env env);
/* obj[key] = a function calling cb with data; returns that function. */
napi_value add_fn(napi_env env, napi_value obj, const char *key, napi_callback cb, void *data);

/* ---- hostcall.c ------------------------------------------------------------ */

/* [any] Reference counting of a jsreq; the last unref frees it. */
void jsreq_ref(jsreq *rq);
void jsreq_unref(jsreq *rq);
/* [any] Completes the request once and wakes its waiter; takes ownership of
 * out (freed when it was already complete). Returns 1 if this call completed
 * it, 0 if it was already complete. Drops no reference. */
int jsreq_complete(jsreq *rq, int rc, char *out);
/* [any] 1 once the request is complete. */
int jsreq_is_done(jsreq *rq);
/* [js] host_tsfn's callback: runs a queued jsreq (data) for context (the
 * adapter): JSREQ_SDK here, JSREQ_LOG with log_on_js, JSREQ_ASK with its start. env is
 * NULL when the function is being torn down: what is still queued fails with
 * -ECANCELED. Consumes the queued item's reference. */
void host_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data);
/* [worker, plugin] Sends client[group][method](opts) and blocks until it ends
 * (at most HOST_CALL_TIMEOUT_MS + HOST_CALL_GRACE_MS). Consumes opts. group
 * and method must be static strings. Returns 0 with *out = JSON.stringify(data)
 * when want_out (else NULL), or a negative errno with *out = a readable
 * message or NULL: -ENOENT (not found), -EIO (error, timeout, or called on the
 * JS thread), -ECANCELED (shutting down), -ENOMEM. out may be NULL. */
int host_request(adapter *ad, const char *group, const char *method, cJSON *opts, int want_out, char **out);
/* [js] Sends client[group][method](opts) from the JS thread itself, with the
 * same timeout, and does not wait: its answer and any rejection are dropped.
 * Consumes opts. 0 once sent, -1 when it could not be (no such method, it
 * threw, out of memory). */
int host_send_from_js(napi_env env, adapter *ad, const char *group, const char *method, cJSON *opts);
/* [worker, plugin] As host_request, but ocbg.js's watcher[method](opts)
 * (ad->watcher_ref), which answers as the SDK does ({data} or {error}).
 * -EIO when init() got no watcher. */
int watcher_request(adapter *ad, const char *method, cJSON *opts, char **out);
/* [any] The table's log: below ad->log_level nothing; on the JS thread or
 * after shutdown to stderr; else to OpenCode's log (fire and forget), and
 * warnings and errors to stderr too. Never fails. */
void h_log(void *ud, enum ocp_log_level level, const char *message);

/* ---- ask.c ----------------------------------------------------------------- */

/* [worker] The table's ask_permission (see ocp.h and NOTES.md): 0 allowed,
 * -EACCES refused, -ECANCELED (Esc, shutdown), -EINVAL (bad request or ctx),
 * -EIO (could not ask, or no ToolContext); *out a reason (malloc'd) or NULL. */
int h_ask_permission(void *ud, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out);
/* [any, holding ad->mu] Completes the open questions of call c (every open
 * question when c is NULL) with -ECANCELED and a copy of why. */
void asks_cancel(adapter *ad, const call *c, const char *why);

/* ---- dirs.c: sessions in other directories (ABI 1.5) ----------------------- */

/* [worker, plugin] The table's session_create_in: POST /session?directory=
 * (client.session.create({body, query: {directory}})); *out the Session JSON
 * (malloc'd), remembered as working in `directory`. -EINVAL for a directory
 * that is not an absolute path; else as session_create. */
int h_session_create_in(void *ud, const char *parent_id, const char *title, const char *directory, char **out);
/* [worker, plugin] The table's directory_watch (NOTES.md, "Sessions in
 * other directories"): 1 -> ocbg.js follows /event?directory= and feeds the
 * event hook; returns once its stream sent server.connected. 0 -> stops the
 * stream, then POST /instance/dispose?directory=. This instance's own
 * directory: 0 at once, nothing done. 0 or -EIO (-EINVAL: not absolute). */
int h_directory_watch(void *ud, const char *directory, int watch);
/* [any] 1 when an adapter of this process watched `directory` or created a
 * session in it: the folder of a task of another ocbg copy (init() then
 * starts no plugin there). */
int dirs_is_task_folder(const char *directory);
/* [any] The adapter that last watched `directory` or created a session in
 * it (its owner: the copy loaded there passes it its tool calls), or NULL.
 * Adapters are never freed; the owner may be closing. */
adapter *dirs_owner_of(const char *directory);
/* [any] Remembers the directory of a Session JSON (session_get's answer)
 * when it is not this instance's own. Never fails (out of memory: not kept). */
void dirs_remember_session(adapter *ad, const char *session_json);
/* [any] The directory a session was seen working in (malloc'd), or NULL
 * (this instance's own, or unknown). */
char *dirs_of_session(adapter *ad, const char *session_id);
/* [worker, plugin] Adds GET /session/status?directory= of every watched
 * directory to `map` (the instance's own status map, a JSON object). A
 * directory whose request fails is left out (its sessions look idle: the
 * plugin then checks their messages). */
void dirs_status_merge(adapter *ad, cJSON *map);

/* ---- hostfns.c ------------------------------------------------------------- */

/* [js, init] Fills ad->host: the ocp_host table the plugin receives. */
void host_table_init(adapter *ad);

/* ---- calls.c --------------------------------------------------------------- */

/* [js] A new call of kind for ad (its ctx points nowhere yet); NULL when out of memory. */
call *call_new(adapter *ad, enum call_kind kind);
/* [js] Points c->ctx at the call's copied strings (s_session, ...). */
void call_set_ctx(call *c);
/* [js, or any with env NULL after teardown] Frees c; with env, also removes
 * its abort listener and its references. */
void call_free(napi_env env, call *c);
/* [js] Starts a worker running c (tool_call or command_call) and keeps the
 * loop alive until it is settled. 0, or -1 (shutting down, or no thread) with
 * c untouched: the caller settles and frees it. */
int start_worker(napi_env env, adapter *ad, call *c);
/* [js] Adds d to the promises waiting on workers; the first keeps the loop
 * alive (done_tsfn ref'd), the last lets it go. */
void pending_add(napi_env env, adapter *ad, int d);
/* [js] done_tsfn's callback: settles a call's promise, frees it and runs its
 * settled (env NULL: torn down, only frees). */
void done_tsfn_call(napi_env env, napi_value js_cb, void *context, void *data);

/* ---- tools.c --------------------------------------------------------------- */

/* Data of a tool's execute(): the adapter and a copy of the tool's name (the
 * plugin's table is gone after shutdown). Freed by the function's finalizer. */
typedef struct tool_ref {
    adapter *ad;
    char name[];
} tool_ref;

/* [js] tool.execute(args, ctx), data = a tool_ref: a Promise of the answer
 * text, rejected with Error(text) on failure. */
napi_value tool_execute(napi_env env, napi_callback_info info);

/* ---- hooks.c: OpenCode hooks, data = the adapter [js] ---------------------- */

napi_value hook_event(napi_env env, napi_callback_info info);

/* ---- ui.c: the TUI panel's channel (docs/panel.md) ------------------------ */

/* [js] If ev (of type `type`) is a panel request (tui.command.execute,
 * "ocbg.ui {…}"), its JSON (malloc'd); else NULL. */
char *ui_request_of(napi_env env, napi_value ev, const char *type);
/* [js] Takes request (malloc'd, owned from now) into the panel's queue: its
 * thread runs the plugin's ui_request and publishes the reply. Never blocks.
 * With UI_QUEUE_MAX requests waiting already (or no thread to serve them),
 * it is refused at once: the reply {"ok":false, "error": why} is published
 * from here, without waiting (a request without an id gets none). Shutting
 * down: dropped, unanswered. */
void ui_take(napi_env env, adapter *ad, char *request);
/* [shutdown] After ad->closing was set: the panel's thread ends its request
 * in progress and is joined; what still waited is dropped unanswered. No
 * ui_request runs after it returns. */
void ui_stop(adapter *ad);
/* The host table's publish_view: "ocbg.view {…}" to every TUI. */
int h_publish_view(void *ud, const char *session_id, const char *view_json);
napi_value hook_transform(napi_env env, napi_callback_info info);
napi_value hook_config(napi_env env, napi_callback_info info);
napi_value hook_command(napi_env env, napi_callback_info info);
/* tool.execute.before({tool, sessionID, callID}, {args}): for a tool that
 * edits files (edit, write, apply_patch), the plugin's tool_before, on the
 * JS thread (it is [event]: it never blocks). A refusal is thrown (OpenCode
 * fails the call with its text); a warning is kept by call id. */
napi_value hook_tool_before(napi_env env, napi_callback_info info);
/* tool.execute.after({…, callID}, {title, output, metadata}): the call's
 * kept warning is appended to output.output after a blank line. */
napi_value hook_tool_after(napi_env env, napi_callback_info info);

/* ---- schema.c -------------------------------------------------------------- */

/* [js] A tool's args shape {name: zod type} from its JSON Schema text, with
 * z = tool.schema; z NULL: the raw JSON Schema of each property. */
napi_value tool_args(napi_env env, napi_value z, const char *schema_json);

/* ---- lifecycle.c: init, dispose and the module entry; nothing shared ------- */

#endif

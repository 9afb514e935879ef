/*
 * ocp.h — the ocp plugin ABI: how an agent host (OpenCode, a test host, yours)
 * loads a background-task plugin such as ocbg.so and talks to it.
 *
 * ABI version 1.5. One entry point, two versioned tables:
 *
 *   host:    handle = dlopen(".../ocbg.so"); entry = dlsym(handle, OCP_ENTRY_SYMBOL);
 *            plugin = entry(&host_table, options_json, err, sizeof err);
 *            pfree = plugin->free; pud = plugin->userdata;   (copies: see shutdown)
 *            ... tool_call / tool_cancel / command_call / on_event / transform_messages ...
 *            plugin->shutdown(plugin->userdata);   (frees *plugin)
 *            ... pfree(pud, s) for answers of calls shutdown released ...
 *            dlclose(handle);
 *
 * Versioning. Both tables start with their own size and the ABI major/minor the
 * side was compiled against. Fields are only ever appended; a new minor adds
 * fields at the end, a new major may change anything. A plugin refuses a host of
 * another major, or a host table smaller than OCP_HOST_MIN_SIZE; it reads a
 * field appended after 1.0 only when OCP_HAS_FIELD() says the host's table holds
 * it. A host does the same with the plugin's table.
 *
 * Ownership, stated once:
 *   - A `const char *` argument is borrowed: valid only until the call returns.
 *     Copy it to keep it.
 *   - A `char **out` result belongs to the caller once set, and is freed with
 *     the `free` function of the table whose function produced it:
 *     host results with host->free, plugin results with plugin->free (after
 *     shutdown: with the copy of it the host took before; see shutdown).
 *   - Strings are UTF-8. JSON crosses as text in OpenCode's own shapes (session,
 *     message `[{info, parts}]`, event `{type, properties}`), never as a parsed
 *     object, so that neither side depends on the other's JSON library.
 *
 * Errors: a function returning int returns 0 on success or a negative errno:
 *   -ENOENT  no such session (or tool, or command)
 *   -EINVAL  bad input (the text says which)
 *   -ENOSYS  not supported by this host or plugin
 *   -ECANCELED the call was cancelled, or the plugin is shutting down
 *   -EIO     the host could not do it (transport failure, server error)
 *   -ENOMEM  out of memory
 *   -EACCES  not permitted (the host's permission rules, or the user, said no)
 * On failure `*out` is either NULL or a readable message (owned as above), and
 * nothing else was changed: a failed create creates nothing.
 *
 * Thread tags (on every function below):
 *   [any]    may be called from any thread, concurrently, and may block.
 *   [event]  called on the host's event thread. The callee must not block and
 *            must not call back into the host, now_ms excepted: it records
 *            and hands work to its own threads. (OpenCode runs plugins on one
 *            JavaScript event loop; a host call made from that thread while
 *            the loop waits for the plugin would deadlock.) The same holds for
 *            transform_messages, which a host may call on that thread too.
 *            So from on_event and transform_messages a plugin calls no host
 *            function but now_ms (not log either).
 *   [worker] called on a host thread that may block for as long as the call
 *            takes (a blocking wait), never on the host's event thread.
 * The plugin never calls the host while holding one of its own locks (now_ms
 * again excepted), so a host may take its own locks around calls into the
 * plugin.
 */
#ifndef OCP_H
#define OCP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OCP_ABI_MAJOR 1
#define OCP_ABI_MINOR 5

/* The one symbol a plugin exports (type: ocp_plugin_entry_fn). */
#define OCP_ENTRY_SYMBOL "ocp_plugin_entry"

/* Does a table of size `struct_size` hold `field` of `type`? For fields
 * appended after 1.0. */
#define OCP_HAS_FIELD(type, table, field) ((table)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* How a notice to the user (notify_user, ABI 1.3) looks: OpenCode's toast
 * variants. */
enum ocp_notice_level {
    OCP_NOTICE_INFO = 0,
    OCP_NOTICE_SUCCESS = 1,
    OCP_NOTICE_WARNING = 2,
    OCP_NOTICE_ERROR = 3,
};

enum ocp_log_level {
    OCP_LOG_DEBUG = 0,
    OCP_LOG_INFO = 1,
    OCP_LOG_WARN = 2,
    OCP_LOG_ERROR = 3
};

typedef struct ocp_call_ctx ocp_call_ctx; /* defined with the plugin table */

/* What ask_permission (ABI 1.1) asks the host for: the shape of OpenCode's
 * ToolContext.ask({permission, patterns, always, metadata}). Filled by the
 * plugin; every string is borrowed for the duration of the call. */
typedef struct ocp_permission_request {
    uint32_t struct_size;      /* sizeof(ocp_permission_request) as the plugin was compiled */
    const char *permission;    /* the host's permission name: "bash" (run a command), "task"
                                * (start a sub-agent) */
    const char *patterns_json; /* JSON array of strings the host's rules are matched against:
                                * for "bash" each simple command of the command line
                                * (["git status", "rm -rf build"]), for "task" [agent name] */
    const char *always_json;   /* JSON array of the patterns an "always" answer approves for
                                * the rest of the session (["git status *"]); may be NULL:
                                * the same as patterns_json */
    const char *metadata_json; /* JSON object the host may show with the question
                                * ({"command":…,"description":…}); may be NULL */
} ocp_permission_request;

/* ------------------------------------------------------------------------ */
/* The host table: filled by the host, given to ocp_plugin_entry. The host   */
/* keeps it (and `userdata`) valid until plugin->shutdown has returned.      */
/* Every function receives `userdata` as its first argument.                 */
/* ------------------------------------------------------------------------ */
typedef struct ocp_host {
    uint32_t struct_size;     /* sizeof(ocp_host) as the host was compiled */
    uint16_t abi_major;       /* OCP_ABI_MAJOR the host was compiled against */
    uint16_t abi_minor;       /* OCP_ABI_MINOR the host was compiled against */
    void *userdata;           /* opaque to the plugin */
    const char *host_name;    /* e.g. "opencode"; borrowed for the table's life */
    const char *host_version; /* e.g. "1.18.33"; may be NULL */

    /* [any] Create a session. parent_id: NULL for a top-level session; title:
     * NULL for the host's default. On success *out = the Session JSON
     * ({"id":…,"parentID":…,"title":…}). */
    int (*session_create)(void *userdata, const char *parent_id, const char *title, char **out);

    /* [any] Read one session. *out = Session JSON. -ENOENT when it no longer
     * exists (deleted, expired). */
    int (*session_get)(void *userdata, const char *session_id, char **out);

    /* [any] Read a session's messages, oldest first: *out = [{info, parts}].
     * limit > 0 returns only the newest `limit` messages; 0 returns all. */
    int (*session_messages)(void *userdata, const char *session_id, int limit, char **out);

    /* [any] Send a prompt without waiting for the turn (OpenCode's
     * prompt_async). body_json is OpenCode's prompt body:
     *   {"parts":[{"type":"text","text":…}], "agent"?: name,
     *    "noReply"?: true (store the message, run no model turn, no events),
     *    "tools"?: {"tool_name": false, …} (deny tools to that session)}
     * Returns once the host accepted the prompt (queued while the session is
     * busy). On success *out is left NULL.
     *
     * The session need not show busy (in session_status, or by an event)
     * before this returns. How the plugin learns that a task's turn ended:
     * it checks the session (session_messages, newest 20) when it is told
     * the session is idle (session.idle or session.status idle: at once),
     * and when its poll (session_status every poll_interval_ms, default
     * 1000, while an agent task runs) does not list the session. The run has
     * ended when the newest message is a finished assistant message
     * (time.completed, finish or error set) other than the one that ended
     * the task's previous run. A check that finds none backs off: the poll
     * checks that session again after 2, 4, 8, 16, then every 32 poll
     * intervals, until it is seen busy (listed in the map, or a
     * session.status busy/retry event). So:
     *   - a host must store the turn's answer (visible to session_messages)
     *     before it reports the session idle, by event or by the map;
     *     otherwise the answer is found only by a later poll, up to 32
     *     intervals late;
     *   - it must emit session.idle (or session.status idle) when a turn
     *     ends, or rely on the poll;
     *   - until the new turn shows (busy, or its user message stored), a
     *     poll may see the session idle: that costs one check that finds
     *     nothing, and the backoff above; it is not an error. */
    int (*session_prompt)(void *userdata, const char *session_id, const char *body_json, char **out);

    /* [any] Abort the session's running turn (and its queued prompts). Success
     * also when the session was idle. *out left NULL on success. */
    int (*session_abort)(void *userdata, const char *session_id, char **out);

    /* [any] The status map of every session that is not idle:
     * {"ses_…":{"type":"busy"|"retry"}, …}; "{}" when all are idle. */
    int (*session_status)(void *userdata, char **out);

    /* [any] Fork a session: a new session (no parent) holding the messages
     * before message_id (all of them when message_id is NULL). *out = the new
     * Session JSON. This pointer may be NULL: the host cannot fork. */
    int (*session_fork)(void *userdata, const char *session_id, const char *message_id, char **out);

    /* [any] Write a line to the host's log. Never fails, never blocks for
     * long. Any thread, but never from the plugin's on_event or
     * transform_messages (the [event] rule) and never under the plugin's own
     * locks: ocbg logs only on its worker thread and in tool calls, after a
     * host call failed. So a host may take the lock it holds while delivering
     * events. */
    void (*log)(void *userdata, enum ocp_log_level level, const char *message);

    /* [any] Free a string this table's functions returned in *out. NULL is a no-op. */
    void (*free)(void *userdata, char *p);

    /* ---- end of the fields every 1.0 host has: OCP_HOST_MIN_SIZE ---- */

    /* [any, even from on_event and under plugin locks] Optional (NULL, or
     * absent from an older table): wall-clock time in milliseconds since the
     * Unix epoch, for the timestamps and durations the plugin shows. A test
     * host supplies it to drive time. It is the one host function the plugin
     * calls from on_event and while holding its own lock, so it must return
     * at once, take no lock the host holds while calling the plugin, and
     * never call into the plugin. Without it the plugin reads CLOCK_REALTIME.
     * Timeouts always use the monotonic clock. */
    int64_t (*now_ms)(void *userdata);

    /* ---- ABI 1.1 (read only when OCP_HAS_FIELD says the table holds it) -- */

    /* [worker] Optional (NULL: the host has no permission system, and the
     * plugin acts without asking, as under 1.0). Ask the host, on behalf of
     * the tool call `ctx`, whether an action that needs the user's consent
     * may go ahead: apply the host's rules to req->patterns_json and, where a
     * rule says "ask", ask the user as the host does for its own tools (an
     * "always" answer approves req->always_json for later asks). The plugin
     * calls it only from inside tool_call/command_call, on that call's thread,
     * with that call's ctx, holding none of its locks; it may block until the
     * user answers.
     * Returns:
     *    0          allowed (by a rule or by the user);
     *   -EACCES     denied, by a rule or by the user; *out = the reason or the
     *               user's words when there are any (else NULL);
     *   -ECANCELED  the user cancelled the call (Esc) while the question was
     *               open: once ctx->cancelled is set the host must answer
     *               promptly;
     *   -EINVAL     a malformed request (*out says why);
     *   -EIO        the host could not ask (the plugin then treats the action
     *               as denied: it never acts without an answer).
     * Refused, the plugin does nothing and its tool_call fails; a host whose tools end the turn on the
     * user's reject (OpenCode: a plain "reject") ends it then too. No call into the plugin from here. */
    int (*ask_permission)(void *userdata, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out);

    /* ---- ABI 1.2 -------------------------------------------------------- */

    /* Optional (NULL, or absent from an older table): a directory the plugin
     * may keep files in that outlive the host process, one per project (the
     * same directory whenever the host runs on that project again). The host
     * creates it; the plugin creates files inside it and nothing else.
     * Borrowed for the table's life. ocbg keeps its task store there
     * ("ocbg.db"); without it, and without the store_path option, tasks live
     * in memory only. */
    const char *data_dir;

    /* ---- ABI 1.3 -------------------------------------------------------- */

    /* [worker] Optional (NULL: the plugin only logs). Show the human a short
     * notice outside the conversation (OpenCode: a toast in the TUI): a task
     * finished or failed, a task waits for the user's permission, an option
     * was ignored. title may be NULL. The plugin calls it from its own
     * threads, holding none of its locks, never from on_event or
     * transform_messages, and rate-limits it (ocbg: at most one notice per
     * 3 s; what happens meanwhile is summed up in the next). The host shows
     * it and returns; it must not call into the plugin from here.
     * Returns 0, or a negative errno (-EIO: it could not be shown; the
     * plugin does not retry). */
    int (*notify_user)(void *userdata, enum ocp_notice_level level, const char *title, const char *message);

    /* ---- ABI 1.4 -------------------------------------------------------- */

    /* [worker] Optional (NULL: the host has no place to show it, and the
     * plugin builds no view). Hand the host's UI the plugin's whole view of
     * the tasks that session `session_id` launched, as JSON:
     *   {"v":1, "session": S, "seq": n, "now": ms, "tasks": [task, …]}
     * tasks newest first, at most 50, each {id, kind, status, description,
     * and where they apply: agent | command, queue, waiting, session,
     * created, started, ended, tokens, cost, tools, recent, exit, error,
     * stopped_by_user} (docs/panel.md). A view replaces the previous one
     * of that session; "tasks": [] means it has none left.
     * When: within 250 ms of a task's status change, at most once a second
     * for other changes while a task of the session is live, never when
     * nothing changed; the view of every session with tasks after the
     * plugin starts, and after ui_request "sync". The plugin calls it from
     * its own view thread, holding none of its locks, one call at a time.
     * The host shows or forwards it and returns promptly (OpenCode: it
     * posts it to the TUI without waiting for a reader); it must not call
     * into the plugin from here. Returns 0, or a negative errno (-EIO:
     * dropped; the plugin does not retry that view, the next one replaces
     * it). */
    int (*publish_view)(void *userdata, const char *session_id, const char *view_json);

    /* ---- ABI 1.5 -------------------------------------------------------- */

    /* [any] Optional (NULL: the plugin runs no task in another folder). As
     * session_create, but the new session works in `directory` (an absolute
     * path to an existing folder, such as a git worktree the plugin made):
     * its tools run there. Prompt, abort, messages and get of it then work
     * by its id as for any session. The plugin calls directory_watch first. */
    int (*session_create_in)(void *userdata, const char *parent_id, const char *title, const char *directory,
                             char **out);

    /* [any] Optional with session_create_in, required by it. watch 1: from
     * the return on, deliver the events of sessions working in `directory`
     * to on_event and list them in session_status, as for the host's own
     * sessions, even where the host keeps a context per directory (OpenCode:
     * an instance, with its own event stream and status map); idempotent,
     * and called again after a restart for a task still running there.
     * watch 0: the plugin is done with `directory`, no session of it runs;
     * stop following it and release what the host holds for it (OpenCode:
     * dispose its instance), so that the folder may be removed. Returns 0,
     * or a negative errno (-EIO: watch 1 could not follow it, and the plugin
     * does not start a task there; watch 0 failed, and the plugin keeps the
     * folder). Never from on_event. */
    int (*directory_watch)(void *userdata, const char *directory, int watch);
} ocp_host;

#define OCP_HOST_MIN_SIZE ((uint32_t)offsetof(ocp_host, now_ms))

/* ------------------------------------------------------------------------ */
/* The plugin table: returned by ocp_plugin_entry, owned by the plugin, valid */
/* (with everything it points to) until shutdown returns.                    */
/* ------------------------------------------------------------------------ */

/* A tool the model can call. */
typedef struct ocp_tool {
    const char *name;        /* e.g. "background_task" */
    const char *description; /* shown to the model */
    /* JSON Schema of the arguments: {"type":"object","properties":{name:
     * {"type":…,"description":…}},"required":[…]}. Properties not listed in
     * "required" are optional and the host must keep them optional. */
    const char *parameters_json;
} ocp_tool;

/* A slash command the user can type (e.g. "/tasks"). */
typedef struct ocp_command {
    const char *name; /* without the slash: "tasks" */
    const char *description;
} ocp_command;

/* Who is calling, for tool_call and command_call. Filled and owned by the host;
 * every string is borrowed. The host keeps the context valid until tool_call
 * has returned AND no tool_cancel on it is running. */
struct ocp_call_ctx {
    uint32_t struct_size;   /* sizeof(ocp_call_ctx) as the host was compiled */
    const char *session_id; /* the calling (parent) session */
    const char *message_id; /* the assistant message making the call; may be NULL */
    const char *agent;      /* the calling agent's name; may be NULL */
    const char *call_id;    /* the tool call's id; may be NULL */
    const char *directory;  /* the session's working directory; may be NULL */
    /* Cancellation: 0 until the user cancels the call (Esc). The host sets it
     * to 1 with an atomic store (__atomic_store_n(&c, 1, __ATOMIC_SEQ_CST) or
     * equivalent) and then calls plugin->tool_cancel; the plugin reads it
     * atomically. Cancelling ends a wait; it never stops a background task. */
    int cancelled;
};

typedef struct ocp_plugin {
    uint32_t struct_size; /* sizeof(ocp_plugin) as the plugin was compiled */
    uint16_t abi_major;
    uint16_t abi_minor;
    void *userdata;      /* pass as the first argument of every function below */
    const char *name;    /* "ocbg" */
    const char *version; /* "0.1.0" */

    size_t tool_count;
    const ocp_tool *tools;
    size_t command_count;
    const ocp_command *commands;

    /* [worker] Run a tool. args_json: the arguments object as the model sent
     * it. On success *out = the answer text for the model. On failure a
     * negative errno and *out = the error text for the model (e.g. -EINVAL for
     * bad arguments, -ENOENT for an unknown tool, -ECANCELED when the call was
     * cancelled or the plugin is shutting down). May block (a blocking wait)
     * until the wait ends, ctx->cancelled is set, or shutdown. */
    int (*tool_call)(void *userdata, const char *tool, const char *args_json, ocp_call_ctx *ctx, char **out);

    /* [any] Wake a tool_call blocked on `ctx` after the host set
     * ctx->cancelled. Never blocks for long; safe before tool_call has started
     * waiting (the flag is checked before every wait). */
    void (*tool_cancel)(void *userdata, ocp_call_ctx *ctx);

    /* [worker] Run a slash command; arguments: the text after the command
     * name (may be ""). *out = the text to show the user, or the error. */
    int (*command_call)(void *userdata, const char *command, const char *arguments, ocp_call_ctx *ctx, char **out);

    /* [event] One host event, as OpenCode's event JSON {"type":…,"properties":…}.
     * Never fails; unknown and malformed events are ignored (an event needs a
     * string "type" and an object "properties"). Calls no host function but
     * now_ms; takes the plugin's lock briefly.
     *
     * What ocbg reads; every other event and field is ignored. S is the
     * session the event is about; an event changes something only when S is
     * the session of one of its running tasks (or, for session.deleted, a
     * session that launched tasks). Properties, minimal:
     *
     *   session.idle          {sessionID: S}
     *       the run may have ended: a completion check (see session_prompt).
     *   session.status        {sessionID: S, status: {type: "idle"}}
     *       the same as session.idle;
     *                         {sessionID: S, status: {type: "busy"|"retry"}}
     *       (any type but "idle") the run goes on: the poll's backoff resets.
     *   session.error         {sessionID: S, error: {name, data: {message}}}
     *       the run ends in error "name: message" (either alone if the other
     *       is missing); ignored after an abort the plugin asked for.
     *   session.deleted       {info: {id: S}}, or {sessionID: S}
     *       a running task's session: the plugin aborts it, and the task
     *       ends in error unless the deletion of the session that launched
     *       it follows within 500 ms (hosts delete children first); a
     *       finished task's: it can no longer be resumed; a session that
     *       launched tasks: its tasks are stopped and forgotten.
     *   message.part.updated  {part: {sessionID: S, type: "tool", callID, tool}}
     *       progress: one tool call counted per callID, the tool's name
     *       shown. S may instead be properties.sessionID. Parts of any other
     *       type are skipped unparsed: an event whose text lacks the bytes
     *       "type":"tool" (no blank around the colon) is dropped at once, so
     *       send compact JSON, as OpenCode does.
     *   permission.asked      {sessionID: S, id, permission, patterns: [...]}
     *       the task waits for the user: its status says on what
     *       ("permission: pattern, ..."), and the session that launched it
     *       is told once per id (a prompt), unless the task runs in the
     *       foreground. id is required; permission and patterns only shape
     *       the text.
     *   permission.replied    {sessionID: S, requestID}
     *       the question requestID was answered: the task shows running.
     *
     * An event about any other session costs one JSON parse, the plugin's
     * lock and one hash lookup. */
    void (*on_event)(void *userdata, const char *event_json);

    /* [any] Called before each model call of a session with the history the
     * model is about to see ([{info, parts}]). Calls no host function (the
     * [event] rule), never waits. Returns 0 with *out = NULL to leave it
     * unchanged, or 0 with *out = the history to use instead. On failure
     * (negative errno) the host uses the history unchanged.
     *
     * A plugin changes only the history of sessions it created itself,
     * through this table's session_create or session_fork: a host may skip
     * the call for any other session (ocbg rewrites only a forked task's
     * history: long tool results cut, the oldest messages dropped to fit a
     * token budget; see wants_messages for skipping the cost). */
    int (*transform_messages)(void *userdata, const char *session_id, const char *messages_json, char **out);

    /* [any, once] Stop: release every blocked tool_call (it returns
     * -ECANCELED with a message saying the plugin is shutting down), stop and
     * join every plugin thread, free everything: this table (the ocp_plugin
     * it points to) and `userdata` included. Tool calls may still be in
     * flight on other threads; shutdown returns after each has left the
     * plugin, but such a call's host thread may still hold its answer, to be
     * freed after shutdown returned. So a host copies `free` and `userdata`
     * out of this table BEFORE it calls shutdown (simplest: when it loads the
     * plugin) and frees those answers with the copy: the copied function
     * stays valid until dlclose (it does not use userdata). A host thread
     * that makes a call takes the copies before the call, not after it
     * returns. Once it has called shutdown the host reads nothing more from
     * this table, starts no new call, and must not call on_event
     * concurrently with it. After it returns, and every answer is freed, the
     * host may dlclose the plugin. */
    void (*shutdown)(void *userdata);

    /* [any] Free a string this table's functions returned in *out. NULL is a
     * no-op. The one function a host may still call after shutdown has
     * returned (until dlclose): a tool call that shutdown released returns a
     * string the host frees afterwards. It must not use `userdata`, which
     * shutdown freed. Shutdown frees this table too: call the copy of `free`
     * (and pass the copy of `userdata`) the host took before shutdown. */
    void (*free)(void *userdata, char *p);

    /* ---- ABI 1.3 (a host reads these only when OCP_HAS_FIELD says so) ---- */

    /* The event types on_event reads (the list in its comment), fixed for
     * the table's life: event_type_count strings. A host may skip events of
     * every other type, before serializing them: that is where an event
     * costs the host most. NULL/0: the host delivers every event. */
    const char *const *event_types;
    size_t event_type_count;

    /* [event] Whether transform_messages would change session_id's history
     * if called now: 1 yes, 0 no. A host asks before it serializes a history
     * and skips both the serialization and the call on 0, so a session the
     * plugin does not rewrite costs one call of this per model call, whatever
     * the history's size. The answer may change from one model call to the
     * next (ocbg: 1 only for a forked task's session). Calls no host
     * function; takes the plugin's lock for one hash lookup. NULL: ask
     * transform_messages every time. */
    int (*wants_messages)(void *userdata, const char *session_id);

    /* ---- ABI 1.4 -------------------------------------------------------- */

    /* [worker] A request from the person, through the host's UI (not from
     * the model): request_json = {"action": …, …}:
     *   {"action":"sync"}: publish every session's view soon; *out NULL.
     *   {"action":"stop", "task_id": id}: stop a pending or running task
     *     as the model's cancel does; it ends cancelled, "stopped by the
     *     user", and its launcher is notified as for any ending. *out NULL.
     *     -ENOENT no such task; -EINVAL it has ended (*out says so); -EIO
     *     the host could not abort it (it goes on; *out says why).
     *   {"action":"detail", "task_id": id}: *out = JSON {id, status, and
     *     where they apply: answer, output, exit, error, waiting, recent,
     *     tools, tokens, cost}.
     * Other actions, bad JSON: -EINVAL, *out says why. May block while an
     * abort or a store read runs (not long); never on the host's
     * event thread. NULL: takes none. */
    int (*ui_request)(void *userdata, const char *request_json, char **out);

    /* ---- ABI 1.5 -------------------------------------------------------- */

    /* [event] Optional (NULL: nothing to ask). Called by the host before it
     * runs a tool call of one of its sessions that edits files (OpenCode:
     * tools "edit", "write", "apply_patch"; args_json: the arguments as the
     * model sent them). Calls no host function but now_ms, takes the
     * plugin's lock briefly, never blocks. Returns 0 with *out NULL: run
     * the call; 0 with *out = a warning: run it and append the warning to
     * its result (what the model reads); -EACCES with *out = the refusal:
     * do not run it, fail the call with that text. ocbg warns of, or
     * refuses, an edit of a file another live task of the same launching
     * session edited (docs/abi.md). */
    int (*tool_before)(void *userdata, const char *session_id, const char *tool, const char *args_json, char **out);
} ocp_plugin;

/* The entry point. [any, once per instance]
 * host: the host table (see its lifetime rule above).
 * options_json: the plugin's options as a JSON object (from the host's
 *   configuration), or NULL for defaults. Bad values are refused; unknown
 *   keys are not (ocbg tells the user which it ignored).
 * err, err_size: a buffer for a readable reason when the plugin refuses to
 *   load; may be NULL/0.
 * Returns the plugin table, or NULL (nothing started, nothing to free) when the
 * host's ABI major differs, its table is smaller than OCP_HOST_MIN_SIZE, a
 * required host function is missing, or the options are invalid.
 * A host may create several instances; each has its own state. */
typedef const ocp_plugin *(*ocp_plugin_entry_fn)(const ocp_host *host, const char *options_json, char *err,
                                                 size_t err_size);

/* Defined by the plugin (exported with default visibility); hosts find it with
 * dlsym(handle, OCP_ENTRY_SYMBOL) rather than linking to it. */
const ocp_plugin *ocp_plugin_entry(const ocp_host *host, const char *options_json, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* OCP_H */

/*
 * hostapi.h — the plugin's side of the host table: one wrapper per host
 * function, the only way the plugin calls the host (now_ms aside). Each is
 * called WITHOUT any plugin lock held (they may block, and the host may call
 * back into the plugin) and asserts so (base/lock.h). [any thread]
 *
 * Each returns 0 or a negative errno. On failure, when err is not NULL, *err
 * is a readable message (malloc'd, never NULL). JSON results (`*json`) are
 * the host's strings: free them with hostapi_free.
 */
#ifndef OCBG_HOSTAPI_H
#define OCBG_HOSTAPI_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ocp.h"

/* The host as the plugin calls it. */
typedef struct hostapi {
    ocp_host host;         /* the host's table, copied; fields it lacks are NULL */
    const ocp_tool *tools; /* this plugin's tools, turned off in a sub-agent's session */
    size_t tool_count;
} hostapi;

void hostapi_log(hostapi *a, enum ocp_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void hostapi_free(hostapi *a, char *host_string);
/* Wall-clock ms from the host's clock when it has one (lock-free: callable
 * under the engine lock). */
int64_t hostapi_now(const hostapi *a);

/* Creates a session; *id_out = its id (malloc'd). */
int hostapi_session_create(hostapi *a, const char *parent_id, const char *title, char **id_out, char **err);
/* 0 when the session exists; -ENOENT when it is gone. */
int hostapi_session_get(hostapi *a, const char *session_id, char **err);
int hostapi_session_messages(hostapi *a, const char *session_id, int limit, char **json, char **err);
/* Sends one text part. agent may be NULL. deny_tools: turn this plugin's tools
 * off in that session (a sub-agent must not start background tasks). */
int hostapi_session_prompt(hostapi *a, const char *session_id, const char *text, const char *agent, bool no_reply,
                           bool deny_tools, char **err);
/* Forks a session (messages before message_id; all when NULL); *id_out = the
 * new session's id (malloc'd). -ENOSYS when the host cannot fork. */
int hostapi_session_fork(hostapi *a, const char *session_id, const char *message_id, char **id_out, char **err);
int hostapi_session_abort(hostapi *a, const char *session_id, char **err);
int hostapi_session_status(hostapi *a, char **json, char **err);
/* ABI 1.1 ask_permission: 0 allowed (also when the host has none), else a
 * negative errno; *out: the host's words or NULL (free with hostapi_free). */
int hostapi_ask_permission(hostapi *a, const ocp_call_ctx *ctx, const ocp_permission_request *req, char **out);
/* notify_user, when the host has it (a toast); nothing otherwise. */
void hostapi_notify_user(hostapi *a, enum ocp_notice_level level, const char *message);
/* ABI 1.4 publish_view: 0, the host's negative errno, or -ENOSYS when the
 * host has none. */
int hostapi_publish_view(hostapi *a, const char *session_id, const char *view_json);
/* Whether the host takes views (publish_view): the plugin builds none otherwise. */
bool hostapi_has_views(const hostapi *a);
/* ABI 1.5: a session whose tools run in `directory`; *id_out as
 * hostapi_session_create. -ENOSYS when the host has no session_create_in. */
int hostapi_session_create_in(hostapi *a, const char *parent_id, const char *title, const char *directory,
                              char **id_out, char **err);
/* ABI 1.5 directory_watch: 0, the host's negative errno (*err says which
 * folder and why), or -ENOSYS when the host has none. */
int hostapi_directory_watch(hostapi *a, const char *directory, bool watch, char **err);
/* Whether the host can run a task in another folder (both 1.5 functions). */
bool hostapi_has_directories(const hostapi *a);
/* Whether the host asks the user's permission (ask_permission): without it
 * nothing is asked and the rules alone decide. [any] */
bool hostapi_has_permissions(const hostapi *a);
/* Whether the host shows toasts (notify_user). [any] */
bool hostapi_has_toasts(const hostapi *a);
/* Whether the host forks sessions (session_fork). [any] */
bool hostapi_has_fork(const hostapi *a);
/* The host's data folder (borrowed, lives as long as the plugin), or NULL
 * when it gave none or an empty one. [any] */
const char *hostapi_data_dir(const hostapi *a);

#endif

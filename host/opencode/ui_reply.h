/*
 * ui_reply.h — the texts of the TUI panel's channel (docs/panel.md) that the
 * adapter reads and writes: a request picked out of a command, the reply
 * made from the plugin's answer. Pure (cJSON and libc; no Node-API, no
 * adapter state), so that the fuzzer (tests/reliability/fuzz) links it.
 * Any thread.
 */
#ifndef OCBG_OC_UI_REPLY_H
#define OCBG_OC_UI_REPLY_H

/* The prefix of a panel request's command: "ocbg.ui {…}". */
#define UI_REQUEST_PREFIX "ocbg.ui "

/* A tui.command.execute command's request JSON when it is a panel request:
 * a pointer into `command` just after the prefix; NULL when it is not one
 * (or command is NULL). */
const char *ui_request_json(const char *command);

/* Is a reply due to request_json after the plugin's ui_request returned
 * rc? Not for a sync (the views answer it), nor when the plugin takes no
 * requests (-ENOSYS) or does not know the task (-ENOENT: another copy of
 * ocbg loaded on the same server may own it, and its answer is the one that
 * counts). 1 yes, 0 no. */
int ui_reply_due(const char *request_json, int rc);

/* The reply to request_json, the plugin having returned rc with answer
 * `out` (may be NULL): {"v":1, "id" (the request's, when a string), "ok",
 * and "detail" (out as JSON) or "error" (out, else strerror(-rc))}, as
 * malloc'd JSON text; NULL when out of memory. */
char *ui_reply_json(const char *request_json, int rc, const char *out);

#endif

/* stub_dirs.h — the stub plugin's stub_dir tool (stub_dirs.c): the ABI 1.5
 * host functions for sessions in other directories, driven by the e2e. */
#ifndef OCBG_STUB_DIRS_H
#define OCBG_STUB_DIRS_H

#include <cjson/cJSON.h>

#include "ocp.h"

/* [worker] stub_dir(op, directory?, session?, parent?, title?): runs one host
 * call on a thread of the plugin's own (as ocbg does) and answers
 * {"rc": n, "out": parsed JSON or text or absent}. op: "watch" / "unwatch"
 * (directory_watch 1 / 0), "create_in" (session_create_in: parent, or the
 * caller's session; title; directory), "status" (session_status), "abort"
 * (session_abort of session). *out is malloc'd; returns 0, or -EINVAL for an
 * unknown op or a host without the ABI 1.5 functions. */
int stub_dir(const ocp_host *h, const cJSON *args, const char *caller_session, char **out);

#endif

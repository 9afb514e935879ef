/* stub_ui.h — the stub plugin's ui_request (ABI 1.4, stub_ui.c): requests
 * of the TUI panel's channel, to test the adapter's side of it. */
#ifndef OCBG_STUB_UI_H
#define OCBG_STUB_UI_H

#include "ocp.h"

/* [worker] A panel request: {"action":"sync"} -> 0; {"action":"stop",
 * "task_id"} -> 0; {"action":"detail", "task_id"} -> 0 with *out =
 * {"id": task_id, "status":"running"}; {"action":"toast", "title"?, "text"}
 * -> h->notify_user(info, title, text)'s result (-ENOSYS: a host without
 * it). Else -EINVAL with *out saying why. *out is malloc'd or NULL. */
int stub_ui_request(const ocp_host *h, const char *request_json, char **out);

#endif

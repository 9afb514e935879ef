/* fuzz_ui_request — the TUI panel's channel (docs/panel.md) as the OpenCode
 * adapter and the plugin decode it. The input is the command of a
 * tui.command.execute event, which any client of the server may publish
 * ("ocbg.ui {…}"; $RUN, $DONE, $BATCH, $PARENT name real tasks and the
 * conversation). The adapter's pure half (host/opencode/ui_reply.c) picks
 * the request out, the plugin's ui_request answers it (the simulated
 * host's world, fuzz_common.h), and the adapter makes the reply it would
 * publish, when one is due. Checked per input, as ocp.h and docs/panel.md say:
 *   - ui_request returns 0, -EINVAL, -ENOENT or -EIO, and says why when not 0;
 *   - a detail's answer is a JSON object naming the task and its status; a
 *     stop's and a sync's is none;
 *   - a reply is due unless a sync or -ENOENT, and is {"v":1, "id" (the
 *     request's), "ok", "detail"|"error"}.
 * And, as for every target on the world, the views the plugin published
 * (fuzz_common.h fz_reset). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "host/opencode/ui_reply.h"

/* The plugin's answer to a request it took. */
static void check_answer(const char *request, int rc, const char *out)
{
    fz_require(rc == 0 || rc == -EINVAL || rc == -ENOENT || rc == -EIO, "ui_request returned an undocumented value",
               request);
    fz_require(rc == 0 || (out && *out), "a refusal that does not say why", request);
    cJSON *req = cJSON_Parse(request);
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "task_id"));
    if (rc == 0 && action && strcmp(action, "detail") == 0) {
        cJSON *d = cJSON_Parse(out);
        const char *got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "id"));
        fz_require(cJSON_IsObject(d) && got && id && strcmp(got, id) == 0 &&
                       fz_is_status(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "status"))),
                   "a detail that is not the task's", out);
        cJSON_Delete(d);
    } else if (rc == 0) {
        fz_require(!out, "a stop or sync answered with a text", out);
    }
    cJSON_Delete(req);
}

/* The reply the adapter would publish. */
static void check_reply(const char *request, int rc, const char *out)
{
    char *reply = ui_reply_due(request, rc) ? ui_reply_json(request, rc, out) : NULL;
    cJSON *req = cJSON_Parse(request);
    const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "action"));
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "id"));
    bool due = !(action && strcmp(action, "sync") == 0) && rc != -ENOENT;
    fz_require(due == (reply != NULL), due ? "no reply where one is due" : "a reply where none is due", request);
    if (reply) {
        cJSON *r = cJSON_Parse(reply);
        const char *rid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "id"));
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(r, "ok");
        fz_require(cJSON_IsObject(r) && cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "v")) == 1 &&
                       cJSON_IsBool(ok) && cJSON_IsTrue(ok) == (rc == 0) && (id ? rid && strcmp(rid, id) == 0 : !rid) &&
                       (rc == 0 ? !out || cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "detail"))
                                : fz_is_string(r, "error")),
                   "a reply not of the documented shape", reply);
        cJSON_Delete(r);
    }
    cJSON_Delete(req);
    free(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t execs;
    fz_world *w = fz_world_get();
    char *command = fz_text(w, data, size);
    const char *request = ui_request_json(command);
    if (request) {
        char *out = NULL;
        int rc = w->p->ui_request(w->p->userdata, request, &out);
        check_answer(request, rc, out);
        check_reply(request, rc, out);
        w->p->free(w->p->userdata, out);
    } else {
        fz_require(strncmp(command, UI_REQUEST_PREFIX, strlen(UI_REQUEST_PREFIX)) != 0, "a request not picked out",
                   command);
    }
    free(command);
    /* A stop ends the running task: a new one now and then, and the
     * world anew (views and calls recorded so far) less often. */
    if (++execs % 4096 == 0)
        fz_reset(w);
    else if (execs % 256 == 0)
        fz_refresh(w);
    return 0;
}

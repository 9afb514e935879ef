/* monitor.c — the monitor tools of both faces: background_monitor and
 * Monitor (face/tools.h). Arguments in, op_monitor_start, words out: the
 * face holds no lock and changes nothing itself. */
#include <stdlib.h>

#include "face/tools.h"
#include "ops/monitor.h"

/* The request from a call's arguments (already checked against the table). */
static monitor_req req_of(const cJSON *args)
{
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(args, "timeout_ms");
    return (monitor_req){.command = arg_str(args, "command"),
                         .description = arg_str(args, "description"),
                         .task_id = arg_str(args, "task_id"),
                         .pattern = arg_str(args, "pattern"),
                         .has_timeout = timeout != NULL,
                         .timeout_ms = arg_num(args, "timeout_ms", 0)};
}

/* The answer to a started monitor; stop: the tool that stops it. */
static void put_started(strbuf *out, const monitor_req *req, const monitor_started *res, const char *stop)
{
    char dur[32];
    format_duration(dur, sizeof dur, res->timeout_ms);
    if (res->follows)
        sb_printf(out, "Monitor started on task %s: its output lines from now on", res->id);
    else
        sb_printf(out, "Monitor %s started: $ %s\nIts output lines", res->id, req->command);
    if (req->pattern && req->pattern[0])
        sb_printf(out, " that match /%s/", req->pattern);
    sb_printf(out,
              " come to you as events, one notification per burst (lines within 200 ms, at most 1 s, join "
              "one event; at most 12 events a minute, the rest counted). It expires in %s (timeout_ms %lld)%s. "
              "Stop it: %s(task_id=\"%s\").",
              dur, (long long)res->timeout_ms, res->follows ? "" : ", or when its command exits", stop, res->id);
    if (res->queued.len)
        sb_printf(out, "\n%s", res->queued.buf);
}

static int start(engine *eng, const cJSON *args, ocp_call_ctx *ctx, const char *stop, strbuf *out)
{
    monitor_req req = req_of(args);
    monitor_started res = {0};
    int rc = op_monitor_start(eng, ctx, &req, &res, out);
    if (rc == 0)
        put_started(out, &req, &res, stop);
    sb_free(&res.queued);
    return rc;
}

int tool_background_monitor(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    return start(eng, args, ctx, "background_cancel", out);
}

int tool_claude_monitor(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    return start(eng, args, ctx, "TaskStop", out);
}

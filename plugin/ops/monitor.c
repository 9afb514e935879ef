/* monitor.c — see monitor.h. */
#include "ops/monitor.h"

#include <errno.h>
#include <string.h>

#include "base/util.h"
#include "engine/monitor.h"
#include "ops/internal.h"

/* The arguments before anything is asked or made: 0 with *timeout_ms, or
 * -EINVAL with the error in out. */
static int check_req(const monitor_req *req, int64_t *timeout_ms, strbuf *out)
{
    bool command = req->command && !blank(req->command), follow = req->task_id && !blank(req->task_id);
    if (command == follow) {
        sb_puts(out, command ? "Give either command (a new command to watch) or task_id (a running background "
                               "command of this session to follow), not both."
                             : "Give command (a new command to watch) or task_id (a running background command of "
                               "this session to follow).");
        return -EINVAL;
    }
    *timeout_ms = MONITOR_TIMEOUT_DEFAULT_MS;
    if (req->has_timeout) {
        if (!(req->timeout_ms >= MONITOR_TIMEOUT_MIN_MS && req->timeout_ms <= MONITOR_TIMEOUT_MAX_MS)) {
            sb_printf(out, "timeout_ms must be between %d and %d (30 minutes); the default is %d (5 minutes).",
                      MONITOR_TIMEOUT_MIN_MS, MONITOR_TIMEOUT_MAX_MS, MONITOR_TIMEOUT_DEFAULT_MS);
            return -EINVAL;
        }
        *timeout_ms = (int64_t)req->timeout_ms;
    }
    return 0;
}

/* Why task t cannot be followed (into out), or 0. [lock held] */
static int refuse_follow(engine *eng, const task *t, const char *id, strbuf *out)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!t) {
        sb_printf(out, "Task not found: %.*s. Use background_list to see available tasks.", 64, id);
        return -ENOENT;
    }
    if (t->type != TASK_SHELL || t->foreground) {
        sb_printf(out, "Task %s is not a background command: only a background command's output can be watched.",
                  t->id);
        return -EINVAL;
    }
    if (t->status != TASK_RUNNING) {
        sb_printf(out, "Task %s is %s: only a running command's output can be watched.", t->id,
                  task_status_name(t->status));
        return -EINVAL;
    }
    if (task_monitor(t) || task_is_monitor(t)) {
        sb_printf(out, "Task %s is already watched by a monitor; its events come already.", t->id);
        return -EEXIST;
    }
    return 0;
}

/* Follow task req->task_id: mon (taken) on its output from now. */
static int follow(engine *eng, const ocp_call_ctx *ctx, const monitor_req *req, shell_monitor *mon,
                  monitor_started *res, strbuf *out)
{
    engine_lock(eng);
    task *t = op_find_own(eng, req->task_id, ctx);
    int rc = refuse_follow(eng, t, req->task_id, out);
    if (rc == 0) {
        monitor_attach(eng, t, mon);
        memcpy(res->id, t->id, TASK_ID_SIZE);
        mon = NULL;
    }
    engine_unlock(eng);
    shell_monitor_free(mon);
    return rc;
}

int op_monitor_start(engine *eng, const ocp_call_ctx *ctx, const monitor_req *req, monitor_started *res, strbuf *out)
{
    int64_t timeout_ms;
    int rc = check_req(req, &timeout_ms, out);
    if (rc != 0)
        return rc;
    char why[256];
    bool follows = req->task_id && !blank(req->task_id);
    engine_lock(eng);
    watch_limits lim = monitor_limits(eng);
    engine_unlock(eng);
    shell_monitor *mon = shell_monitor_new(&lim, req->pattern, timeout_ms, follows, why, sizeof why);
    if (!mon) {
        sb_printf(out, "Not started: %s.", why);
        return -EINVAL;
    }
    res->follows = follows;
    res->timeout_ms = timeout_ms;
    if (follows)
        return follow(eng, ctx, req, mon, res, out);
    launched l = {0};
    rc = op_launch_monitor(eng, ctx, req->command, req->description, mon, &l, out);
    if (rc == 0) {
        memcpy(res->id, l.id, TASK_ID_SIZE);
        res->queued = l.queued;
    } else {
        sb_free(&l.queued);
    }
    sb_free(&l.worktree);
    return rc;
}

/* wait.c — see ops.h: finding the caller's own tasks, waiting for them, and noting what a call showed of them. */
#include <string.h>

#include "base/util.h"
#include "ops/internal.h"

task *op_find_own(engine *eng, const char *task_id, const ocp_call_ctx *ctx)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = registry_find(&eng->reg, task_id);
    if (!t || !ctx->session_id || strcmp(t->parent->session_id, ctx->session_id) != 0)
        return NULL;
    return t;
}

parent *op_parent_of(engine *eng, const ocp_call_ctx *ctx)
{
    ENGINE_ASSERT_LOCKED(eng);
    return ctx && ctx->session_id ? registry_parent(&eng->reg, ctx->session_id) : NULL;
}

bool op_task_settled(engine *eng, void *arg)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = registry_find(&eng->reg, arg);
    return !t || !task_status_active(t->status);
}

wait_result op_await(engine *eng, ocp_call_ctx *ctx, const char id[TASK_ID_SIZE], int64_t deadline, bool owner,
                     task **t)
{
    ENGINE_ASSERT_LOCKED(eng);
    char key[TASK_ID_SIZE];
    memcpy(key, id, sizeof key);
    task *before = registry_find(&eng->reg, key);
    if (before && !owner)
        before->result_waiters++;
    wait_result w = engine_wait(eng, ctx, deadline, op_task_settled, key);
    *t = registry_find(&eng->reg, key);
    if (*t && (before || owner))
        (*t)->result_waiters--;
    return w;
}

void op_shown(engine *eng, task *t, int64_t now, bool read, bool delivered)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (read)
        t->retrieved_ms = now;
    if (delivered)
        t->delivered_run = t->run;
    registry_touch(&eng->reg, t);
}

/* send.c — background_send: a message into a running agent task (issue
 * 19). The sub-agent gets it as soon as its current step ends and keeps
 * working; the task keeps its one notification, at its real end. A resume
 * (face/resume.c) is for completed tasks. */
#include <errno.h>
#include <stdio.h>

#include "ops/ops.h"
#include "face/tools.h"

/* A refused message, in words: why, and that nothing was sent. */
static int refused(send_refusal why, const char *id, const send_claim *c, strbuf *out)
{
    switch (why) {
    case SEND_NOT_FOUND:
        return task_not_found(out, id);
    case SEND_SHELL:
        sb_printf(out, "Task %s is a shell command: it takes no messages. Nothing was sent.", id);
        return -EINVAL;
    case SEND_NOT_RUNNING:
        break;
    case SEND_STARTING:
        sb_printf(out,
                  "Task %s is still starting: its sub-agent cannot take messages yet. Nothing was sent; "
                  "try again in a moment.",
                  id);
        return -EAGAIN;
    case SEND_STOPPING:
        sb_printf(out,
                  "Task %s is being stopped (cancelled, stopped by a bound, or its session was deleted). "
                  "Nothing was sent.",
                  id);
        return -EINVAL;
    case SEND_OK:
        return 0;
    }
    if (c->status == TASK_PENDING)
        sb_printf(out,
                  "Task %s has not started yet (pending: waiting for a run slot), so no sub-agent can take "
                  "the message. Nothing was sent; send it once the task is running.",
                  id);
    else if (c->status == TASK_COMPLETED)
        sb_printf(out,
                  "Task %s is not running (status: completed). Nothing was sent. To follow up on a completed "
                  "task: background_resume(task_id=\"%s\", message=...).",
                  id, id);
    else
        sb_printf(out,
                  "Task %s is not running (status: %s). Nothing was sent. Start a new background_task "
                  "instead.",
                  id, task_status_name(c->status));
    return -EINVAL;
}

int tool_background_send(engine *eng, const cJSON *args, ocp_call_ctx *ctx, strbuf *out)
{
    const char *id = arg_str(args, "task_id");
    const char *message = arg_str(args, "message");
    if (blank(message)) {
        sb_puts(out, "background_send: argument 'message' must not be empty. Nothing was sent.");
        return -EINVAL;
    }
    send_claim c;
    send_refusal why;
    int rc = op_send_message(eng, ctx, id, message, &c, &why, out);
    if (why != SEND_OK)
        rc = refused(why, id, &c, out);
    if (rc == 0)
        sb_printf(out,
                  "Message sent to task %s: its sub-agent gets it as soon as its current step ends, and goes on "
                  "with it.\nYou will be notified once, when the task finishes; its result is then its last "
                  "answer.",
                  c.id);
    op_send_claim_free(&c);
    return rc;
}

/* commands.c — the /tasks command (spec 002): every task of the session,
 * shell and agent, with id, type, status, start time, runtime and
 * description. /bashes, its predecessor, says so and shows the same. */
#include <errno.h>
#include <string.h>

#include "text/texts.h"
#include "face/tools.h"
#include "ops/ops.h"

int command_tasks(ocbg *o, const char *command, const char *arguments, ocp_call_ctx *ctx, strbuf *out)
{
    (void)arguments;
    if (strcmp(command, "bashes") == 0)
        sb_puts(out, "/bashes is deprecated: use /tasks, which lists shell commands and agents alike.\n\n");
    pthread_mutex_lock(&o->mu);
    parent *p = op_parent_of(o, ctx);
    if (!p || !p->head) {
        pthread_mutex_unlock(&o->mu);
        sb_puts(out, "No background tasks in this session.");
        return 0;
    }
    int64_t now = ocbg_now(o);
    sb_printf(out, "Background tasks (%u):\n", p->count);
    sb_printf(out, "%-12s  %-5s  %-9s  %-20s  %-8s  %s\n", "Task ID", "Type", "Status", "Start Time", "Runtime",
              "Description");
    for (task *t = p->head; t; t = t->pnext) {
        char start[32], dur[32];
        format_time(start, sizeof start, t->started_ms);
        format_duration(dur, sizeof dur, task_runtime(t, now));
        /* A command without its own description is described by itself. */
        bool show_command = t->type == TASK_SHELL && t->description && strcmp(t->description, t->shell->command) != 0;
        sb_printf(out, "%-12s  %-5s  %-9s  %-20s  %-8s  %s%s%s%s%s%s\n", t->id,
                  t->type == TASK_SHELL ? "shell" : "agent", claude_status(t), start, dur,
                  t->description ? t->description : "", show_command ? " $ " : "",
                  show_command ? t->shell->command : "", t->permission_what ? " [waiting for permission: " : "",
                  t->permission_what ? t->permission_what : "", t->permission_what ? "]" : "");
    }
    pthread_mutex_unlock(&o->mu);
    return 0;
}

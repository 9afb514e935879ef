/* commands.c — the /tasks command: every task of the session,
 * shell and agent, with id, type, status, start time, runtime and
 * description. /bashes, its predecessor, says so and shows the same. */
#include <errno.h>
#include <string.h>

#include "text/texts.h"
#include "face/tools.h"
#include "ops/ops.h"

/* One /tasks row. */
static void tasks_row(strbuf *out, const task_snap *t)
{
    char start[32], dur[32];
    format_time(start, sizeof start, t->started_ms);
    format_duration(dur, sizeof dur, t->runtime_ms);
    /* A command without its own description is described by itself. */
    bool show_command = t->type == TASK_SHELL && t->description && strcmp(t->description, t->command) != 0;
    const char *asking = t->asking;
    sb_printf(out, "%-12s  %-5s  %-9s  %-20s  %-8s  %s%s%s%s%s%s", t->id,
              t->monitor              ? "monitor"
              : t->type == TASK_SHELL ? "shell"
                                      : "agent",
              claude_status(t->status), start, dur, t->description ? t->description : "", show_command ? " $ " : "",
              show_command ? t->command : "", asking ? " [waiting for permission: " : "", asking ? asking : "",
              asking ? "]" : "");
    if (t->has_usage) {
        sb_puts(out, " [Usage: ");
        format_usage(out, &t->use);
        sb_puts(out, "]");
    }
    sb_puts(out, "\n");
}

int command_tasks(engine *eng, const char *command, const char *arguments, ocp_call_ctx *ctx, strbuf *out)
{
    (void)arguments;
    if (strcmp(command, "bashes") == 0)
        sb_puts(out, "/bashes is deprecated: use /tasks, which lists shell commands and agents alike.\n\n");
    task_list l;
    op_list(eng, ctx, NULL, LIST_MAX_LINES, false, &l);
    unsigned n = l.matched;
    if (n == 0) {
        sb_puts(out, "No background tasks in this session.");
    } else {
        sb_printf(out, "Background tasks (%u):\n", n);
        sb_printf(out, "%-12s  %-5s  %-9s  %-20s  %-8s  %s\n", "Task ID", "Type", "Status", "Start Time", "Runtime",
                  "Description");
        for (unsigned i = 0; i < l.shown; i++)
            tasks_row(out, &l.rows[i]);
        if (n > LIST_MAX_LINES)
            sb_printf(out, "… and %u older (background_list narrows by status or batch)\n", n - LIST_MAX_LINES);
        put_usage_total(out, &l.total);
    }
    task_list_free(&l);
    return 0;
}

/* /tasks and /bashes: every task of the
 * session, agent and shell, newest first, with Task ID, Type, Status (in the
 * Claude face's words), Start Time, Runtime and description; /bashes says it
 * is deprecated and shows the same; another session sees none of them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shelltest.h"

static int shells; /* can the plugin run commands here? (not under valgrind 3.19) */

/* ---- /tasks and /bashes ------------------------------------------------ */

/* The row of `id` in a listing, checked field by field. */
static void check_row(const char *listing, const char *id, const char *type, const char *status,
                      const char *description)
{
    const char *row = strstr(listing, id);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%-12s  %-5s  %-9s  ", id, type, status);
    ok(row && strncmp(row, prefix, strlen(prefix)) == 0, "%s: id, type %s, status %s", id, type, status);
    if (!row || strncmp(row, prefix, strlen(prefix)) != 0) {
        diag("row: %.120s", row ? row : "(none)");
        return;
    }
    const char *time = row + strlen(prefix);
    int y, mo, d, hh, mm, ss;
    char z;
    ok(sscanf(time, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &hh, &mm, &ss, &z) == 7 && z == 'Z' && y >= 2024,
       "%s: a start time (%.20s)", id, time);
    const char *runtime = time + 22;
    const char *end = strchr(runtime, ' ');
    ok(end && end[-1] == 's' && end - runtime <= 8, "%s: a runtime (%.8s)", id, runtime);
    char *line = strndup(runtime + 10, strcspn(runtime + 10, "\n"));
    is_str(line, description, "%s: the description", id);
    free(line);
}

static void tasks_listing(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *out = t_command(h, f.parent, "tasks");
    is_int(t_rc, 0, "/tasks succeeds");
    is_str(out, "No background tasks in this session.", "/tasks with no task");
    free(out);
    out = t_command(h, f.parent, "bashes");
    is_str(out,
           "/bashes is deprecated: use /tasks, which lists shell commands and agents alike.\n\n"
           "No background tasks in this session.",
           "/bashes: the notice, then the same");
    free(out);

    const char *agent = t_task(&f, "Agent work", J("{'steps':[{'reply':'done'}]}"));
    out = t_claude_task(h, f.parent, "Broken agent", J("{'steps':[{'error':'model overloaded'}]}"), 1);
    char *broken = t_find_id(out, "bg_");
    free(out);
    char *shell = NULL, *bare = NULL;
    if (shells) {
        out = t_tool(h, f.parent, "Bash", J("{'command':'echo hi','description':'say hi','run_in_background':true}"));
        shell = t_find_id(out, "bg_");
        free(out);
        out = t_tool(h, f.parent, "Bash", J("{'command':'exit 2','run_in_background':true}"));
        bare = t_find_id(out, "bg_");
        free(out);
    }
    const char *hang = t_task(&f, "Stopped agent", J("{'steps':[{'hang':true}]}"));
    const char *ids[] = {agent, broken, shell, bare};
    for (int i = 0; i < 4; i++)
        if (ids[i])
            free(t_task_output(h, f.parent, ids[i], 1, 0));
    free(t_tool(h, f.parent, "TaskStop", t_id_args(hang)));

    out = t_command(h, f.parent, "tasks");
    char head[128];
    snprintf(head, sizeof head,
             "Background tasks (%d):\nTask ID       Type   Status     Start Time            Runtime   Description\n",
             shells ? 5 : 3);
    ok(strncmp(out, head, strlen(head)) == 0, "a count and the column headers");
    check_row(out, agent, "agent", "completed", "Agent work");
    check_row(out, broken, "agent", "failed", "Broken agent");
    if (shells) {
        check_row(out, shell, "shell", "completed", "say hi $ echo hi");
        check_row(out, bare, "shell", "failed", "exit 2");
    } else {
        skip(8, "shell tasks cannot run here");
    }
    check_row(out, hang, "agent", "stopped", "Stopped agent");
    const char *a = strstr(out, agent), *b = strstr(out, broken), *e = strstr(out, hang);
    const char *c = shells ? strstr(out, shell) : e + 1, *d = shells ? strstr(out, bare) : e + 1;
    ok(e && d && c && b && a && e < d && d <= c && c < b && b < a, "newest first");
    char *bashes = t_command(h, f.parent, "bashes");
    const char *notice = "/bashes is deprecated: use /tasks, which lists shell commands and agents alike.\n\n";
    ok(strncmp(bashes, notice, strlen(notice)) == 0, "/bashes starts with the deprecation notice");
    is_str(bashes + strlen(notice), out, "then the /tasks listing");
    free(bashes);
    free(out);

    char *other = sim_session_new(h, NULL, "other");
    out = t_command(h, other, "tasks");
    is_str(out, "No background tasks in this session.", "another session's tasks are not listed");
    free(out);
    free(other);
    free(broken);
    free(shell);
    free(bare);
    t_close(&f);
}

int main(void)
{
    shells = t_shells_work(T_PROBE_DIAG);
    tasks_listing();
    return done_testing();
}

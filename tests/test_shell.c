/* Bash in the foreground, and what any shell task keeps of its output: the
 * output and exit of a command run to completion (stdout and
 * stderr, exit codes, signals, the session's working directory, invalid UTF-8
 * and NUL bytes made valid text), the timeout and Esc (the command is stopped,
 * no process survives), no task left behind, the bounded buffer (head and tail
 * kept, the middle counted) and the 30000-character cap of TaskOutput. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shelltest.h"

/* ---- helpers ---------------------------------------------------------- */

/* ---- foreground ------------------------------------------------------- */

/* Output, stderr, the working directory, exit codes and signals; no task is
 * left afterwards and no notification is sent. */
static void foreground_runs(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *out = t_bash(h, f.parent, "echo hi; echo oops >&2", NULL, 0, 0);
    is_int(t_rc, 0, "foreground Bash succeeds");
    is_str(out, "hi\noops\n(exit code 0)", "stdout and stderr, then the exit code");
    free(out);

    char cwd[4096], want[4200];
    if (!getcwd(cwd, sizeof cwd))
        bail_out("getcwd");
    out = t_bash(h, f.parent, "pwd", NULL, 0, 0);
    snprintf(want, sizeof want, "%s\n(exit code 0)", cwd);
    is_str(out, want, "the command runs in the session's directory");
    free(out);

    out = t_bash(h, f.parent, "printf 'no newline'; exit 3", NULL, 0, 0);
    is_int(t_rc, 0, "a failing command is still an answer");
    is_str(out, "no newline\n(exit code 3)", "exit code 3, after a line break");
    free(out);

    out = t_bash(h, f.parent, "kill -KILL $$", NULL, 0, 0);
    is_str(out, "(killed by signal 9 (Killed))", "a signal is reported by number and name");
    free(out);

    out = t_bash(h, f.parent, "printf 'a\\377b\\n'", NULL, 0, 0);
    is_str(out,
           "a\xEF\xBF\xBD"
           "b\n(exit code 0)",
           "an invalid byte becomes U+FFFD");
    free(out);
    out = t_bash(h, f.parent, "printf 'x\\000y\\n'", NULL, 0, 0);
    is_str(out, "x\xEF\xBF\xBDy\n(exit code 0)", "a NUL byte does not cut the output");
    free(out);

    out = t_bash(h, f.parent, "true", NULL, 0, 0);
    is_str(out, "(exit code 0)", "no output: only the exit code");
    free(out);

    out = t_command(h, f.parent, "tasks");
    is_str(out, "No background tasks in this session.", "foreground commands leave no task behind");
    free(out);
    t_list_empty(h, f.parent, "nor in background_list");
    is_int(t_sync_notifications(h, f.parent), 0, "notifications synced");
    is_int(t_count_messages_with(h, f.parent, "Background command"), 0, "a foreground command sends no notification");
    t_close(&f);
}

/* The timeout stops the command's whole group; Esc does too. */
static void foreground_timeout_and_esc(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    int timeout = tap_timeout_ms(500);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sleep 300 & echo $! > %s; echo before; wait", t_tmp_path("fg_child"));
    char *out = t_bash(h, f.parent, cmd, NULL, 0, timeout);
    is_int(t_rc, -ETIMEDOUT, "a timed-out command: -ETIMEDOUT");
    t_is_strf(out, "its output so far, how it ended, and the timeout",
              "before\n(killed by signal 15 (Terminated))\nCommand timed out after %d ms and was stopped.", timeout);
    free(out);
    pid_t child = t_wait_pid_file(h, t_tmp_path("fg_child"));
    ok(child > 0, "the command started a child");
    is_int(sim_wait(h, t_pid_gone, &child, tap_timeout_ms(3000)), 0, "the child did not survive the timeout");
    out = t_command(h, f.parent, "tasks");
    is_str(out, "No background tasks in this session.", "a timed-out command leaves no task");
    free(out);

    snprintf(cmd, sizeof cmd, "sleep 300 & echo $! > %s; wait", t_tmp_path("esc_child"));
    char *args = t_bash_args(cmd, NULL, 0, 0);
    sim_call *c = sim_tool_start(h, f.parent, "Bash", args);
    free(args);
    child = t_wait_pid_file(h, t_tmp_path("esc_child"));
    ok(child > 0, "the foreground command runs");
    t_waits(c, 20, "the call waits for it");
    out = t_esc(c, 3000, "Esc ends the call");
    is_int(t_rc, -ECANCELED, "with -ECANCELED");
    like(out, "(killed by signal 15 (Terminated))\nCommand stopped: the call was cancelled.", "and says so");
    free(out);
    is_int(sim_wait(h, t_pid_gone, &child, tap_timeout_ms(3000)), 0, "Esc left no process behind");
    out = t_command(h, f.parent, "tasks");
    is_str(out, "No background tasks in this session.", "nor a task");
    free(out);

    out = t_bash(h, f.parent, "true", NULL, 0, -5);
    is_int(t_rc, -EINVAL, "a negative timeout is refused");
    is_str(out, "Bash: argument 'timeout' must be a positive number of milliseconds (at most 600000)", "and explained");
    free(out);
    t_kill_leftovers();
    t_close(&f);
}

/* ---- the bounded buffer ----------------------------------------------- */

/* What `seq 1 n` prints. */
static char *seq_text(int n, size_t *len)
{
    size_t cap = (size_t)n * 8 + 1, used = 0;
    char *s = malloc(cap);
    for (int i = 1; i <= n; i++)
        used += (size_t)snprintf(s + used, cap - used, "%d\n", i);
    *len = used;
    return s;
}

/* Far more than the cap (4096: 2048 head, 2048 tail): the head and the tail are
 * kept, what fell between is counted; exact. */
static void output_over_the_cap(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, T_SHELL_SMALL);
    char *id = t_bash_bg(h, f.parent, "seq 1 20000", NULL, T_LAUNCH_UNCHECKED);
    char *out = t_task_output(h, f.parent, id, 1, tap_timeout_ms(10000));
    is_int(t_rc, 0, "TaskOutput succeeds");
    size_t len;
    char *all = seq_text(20000, &len);
    is_int(len, 108894, "seq 1 20000 prints 108894 bytes");
    char *want = NULL;
    if (asprintf(&want,
                 "<retrieval_status>success</retrieval_status>\n<task_id>%s</task_id>\n<task_type>shell</task_type>\n"
                 "<status>completed</status>\n<description>seq 1 20000</description>\n<exit_code>0</exit_code>\n"
                 "<output>\n%.2048s\n[... %zu bytes of output left out here ...]\n%s</output>\n",
                 id, all, len - 4096, all + len - 2048) < 0)
        bail_out("asprintf");
    is_str(out, want, "head 2048 bytes, the count of what was left out, tail 2048 bytes");
    ok(strlen(out) < 4096 + 400, "the answer stays near the cap (%zu bytes)", strlen(out));
    free(want);
    free(out);

    const char *args = J("{'task_id':'%s'}", id);
    out = t_tool(h, f.parent, "background_output", args);
    like(out, "[... 104798 bytes of output left out here ...]\n", "background_output says the same");
    like(out, "\n19999\n20000\n", "with the tail");
    free(out);
    free(all);
    free(id);
    t_close(&f);
}

/* Within the buffer (default cap, 1 MiB) but over TaskOutput's 30000
 * characters: the tail is kept and the cut said. */
static void taskoutput_cap(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *id = t_bash_bg(h, f.parent, "seq 1 30000", NULL, T_LAUNCH_UNCHECKED);
    char *out = t_task_output(h, f.parent, id, 1, tap_timeout_ms(10000));
    size_t len;
    char *all = seq_text(30000, &len);
    char *want = NULL;
    if (asprintf(&want, "<output>\n[... output cut: the last 30000 of %zu characters follow ...]\n%s</output>\n", len,
                 all + len - 30000) < 0)
        bail_out("asprintf");
    like(out, want, "the last 30000 characters, after a note of the cut");
    unlike(out, "\n1\n2\n", "the head is not in it");
    free(want);
    free(all);
    free(out);

    /* The foreground answer is capped the same way. */
    out = t_bash(h, f.parent, "seq 1 30000", NULL, 0, 0);
    like(out, "[... output cut: the last 30000 of 168894 characters follow ...]\n", "foreground Bash cuts too");
    like(out, "\n29999\n30000\n(exit code 0)", "keeping the tail and the exit code");
    free(out);
    free(id);
    t_close(&f);
}

int main(void)
{
    t_tmpdir_make("shell");
    if (!t_shells_work(T_PROBE_CHECK_REFUSAL)) {
        t_tmpdir_remove(NULL);
        return done_testing();
    }
    foreground_runs();
    foreground_timeout_and_esc();
    output_over_the_cap();
    taskoutput_cap();
    t_kill_leftovers();
    t_tmpdir_remove((const char *const[]){"fg_child", "esc_child", NULL});
    return done_testing();
}

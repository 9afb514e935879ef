/*
 * texts.h — the texts the model reads, shared by both faces: a task's report
 * (background_output), a list line, a notification. Pure functions of a task
 * (and its batch's counters): no registry walks, no host calls. Each is
 * [lock held], as every read of a task (not asserted: a task does not know
 * its lock).
 */
#ifndef OCBG_FORMAT_H
#define OCBG_FORMAT_H

#include "base/util.h"
#include "base/wait_result.h"
#include "hooks/usage.h"
#include "model/task.h"

/* How much of a command's output a report shows (the tail is kept). */
#define SHELL_REPORT_CHARS 30000

/* The status block for one task: status, description, agent, timing, then the
 * result (completed), progress (running) or error. */
void format_report(strbuf *out, const task *t, int64_t now);

/* "Task ID was removed (cleared, or its parent session ended).", or "...
 * removed while waiting (...)" when a wait saw it go: the sentence every
 * verb that reads a task says when the task is gone. */
void format_task_removed(strbuf *out, const char *id, bool while_waiting);

/* The opening words of a wait that was stopped rather than ended: "Wait
 * cancelled" (WAIT_CANCELLED) or "ocbg is shutting down" (WAIT_SHUTDOWN). */
const char *wait_stopped_words(wait_result w);

/* One line for background_list. */
void format_list_line(strbuf *out, const task *t, int64_t now);

/* The notification pushed into the parent when t's run ended, with its
 * batch's progress then (batch_done of batch_total ended); result text cut
 * to max_chars characters (never inside a UTF-8 sequence), saying how to get
 * the rest. */
char *format_notification(const task *t, unsigned batch_done, unsigned batch_total, int64_t now, int max_chars);

/* The notification that t, completed, went on after its session was compacted:
 * `added` (OUTCOME_CONTINUED_MARK and what followed) cut to max_chars
 * characters as a notification's result is. */
char *format_continued_notification(const task *t, const char *added, int max_chars);

/* The waking notification that t's session waits for the user's permission. */
char *format_permission_notification(const task *t);
/* An isolated task's worktree: its folder and branch, and once a run has
 * ended what it did there (task_worktree.report). Nothing for the others. */
void format_worktree(strbuf *out, const task *t);

/* "12,345" */
void format_count(char *out, size_t out_size, uint64_t n);

/* "$0.0123" below a dollar, "$5.02" from one up. */
void format_usd(char *out, size_t out_size, double usd);

/* What t's model calls used (every run), or NULL when the host reported
 * nothing (always for a command). */
const usage *task_usage(const task *t);

/* The one usage phrase every text uses: "12,345 tokens (in 10,000, out
 * 2,000, reasoning 345, cache read 0, write 0), $0.0123". */
void format_usage(strbuf *out, const usage *u);

#endif

/*
 * texts.h — the texts the model reads, shared by both faces: a task's report
 * (background_output), a list line, a notification. Pure functions of a task
 * (and its batch's counters): no registry walks, no host calls. Called with
 * the engine lock held, as every read of a task.
 */
#ifndef OCBG_FORMAT_H
#define OCBG_FORMAT_H

#include "base/util.h"
#include "model/registry.h"

/* How much of a command's output a report shows (the tail is kept). */
#define SHELL_REPORT_CHARS 30000

/* The status block for one task: status, description, agent, timing, then the
 * result (completed), progress (running) or error. */
void format_report(strbuf *out, const task *t, int64_t now);

/* One line for background_list. */
void format_list_line(strbuf *out, const task *t, int64_t now);

/* The notification pushed into the parent when t's run ended; result text cut
 * to max_chars characters (never inside a UTF-8 sequence), saying how to get
 * the rest. */
char *format_notification(const task *t, int64_t now, int max_chars);

/* The waking notice that t's session waits for the user's permission. */
char *format_permission_notice(const task *t);

#endif

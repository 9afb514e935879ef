/*
 * followup.h — messages sent into a running agent task (background_send).
 *
 * A follow-up is a prompt queued into the task's busy session. Until the
 * host has stored it, the session's newest message may still be the answer
 * the sub-agent gave before it, and a completion check would take that for
 * the run's end. So every follow-up is numbered and begins with a marker
 * line; a check made while one is awaited reads the whole session and
 * counts the run as going on until the marker is in it. Once it is, the
 * usual rules apply (model/outcome.h): the follow-up is a real prompt, so
 * the run's answer is the sub-agent's newest answer after it.
 *
 * Pure functions: no threads, no host, no lock.
 */
#ifndef OCBG_FOLLOWUP_H
#define OCBG_FOLLOWUP_H

#include "base/face_guard.h"
#include <stdbool.h>

/* The text sent for follow-up number n of task task_id: the marker line,
 * a blank line, the message. malloc'd. */
char *followup_text(const char *task_id, unsigned n, const char *message);

/* Does messages_json (OpenCode's [{info, parts}]) hold the user message of
 * follow-up n of task task_id? false for malformed input. */
bool followup_seen(const char *messages_json, const char *task_id, unsigned n);

#endif

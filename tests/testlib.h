/*
 * testlib.h — what the plugin's scenario tests share: a simulated host with
 * ocbg.so loaded from $OCBG_PLUGIN_DIR, tool calls that return their text, and
 * waits on what a model would see.
 */
#ifndef OCBG_TESTLIB_H
#define OCBG_TESTLIB_H

#include "simhost.h"
#include "tap.h"

/* A host with ocbg loaded (bails out when it cannot load). */
sim_host *t_host(const char *options_json);

/* Call a tool; returns its answer (malloc'd, never NULL) and sets t_rc. */
extern int t_rc;
char *t_tool(sim_host *h, const char *session, const char *tool, const char *args_json);

/* Launch a background task from `session` and return its id (malloc'd);
 * bails out if the launch fails. */
char *t_launch(sim_host *h, const char *session, const char *description, const char *prompt,
               const char *agent);

/* The first "bg_xxxxxxxx" / "batch_xxxxxxxx" in a text (malloc'd, or NULL). */
char *t_find_id(const char *text, const char *prefix);

/* Wait until background_output for the task reports `status` (its report's
 * first line "Task <id>…: <status>"). Returns 0 or -ETIMEDOUT. */
int t_wait_status(sim_host *h, const char *session, const char *task_id, const char *status, int timeout_ms);

/* How many messages of the session contain `needle`. */
int t_count_messages_with(sim_host *h, const char *session, const char *needle);

/* Wait until that count reaches n. Returns 0 or -ETIMEDOUT. */
int t_wait_messages_with(sim_host *h, const char *session, const char *needle, int n, int timeout_ms);

#endif

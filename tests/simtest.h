/*
 * simtest.h — what the simulated host's own tests share: the recorder test
 * plugin (tests/plugins/recorder.c) loaded alone, host functions called
 * through it (so each is a real plugin call through the ocp table), and the
 * events it saw.
 */
#ifndef OCBG_SIMTEST_H
#define OCBG_SIMTEST_H

#include "testlib.h"

/* The recorder's folder, $OCBG_BUILD/test-plugins/recorder, and its .so
 * there; bails out when $OCBG_BUILD is unset or the recorder is not built. */
const char *rec_dir(void);
const char *rec_so(void);

/* Open f with the recorder alone (t_open_dir; f->parent is a session
 * "main" made by the user, not by the plugin). */
void rec_open(t_fixture *f);

/* Call a host function through the recorder: args_json names it ("fn") and
 * its arguments. Returns {"rc":…,"out":…} (the caller's, cJSON_Delete), or
 * NULL when the recorder's tool call failed (then a diag says why). */
cJSON *hostcall(sim_host *h, const char *args_json);

/* A hostcall answer's rc (-9999 for NULL) and its out (borrowed). */
int rc_of(const cJSON *r);
const cJSON *out_of(const cJSON *r);

/* Prompt session sid through the plugin with one text part (noReply when
 * no_reply). Returns the host's rc. */
int prompt_via_plugin(sim_host *h, const char *sid, const char *text, int no_reply);

/* Call host function fn with only a sessionID (none when sid is NULL).
 * Returns the host's rc; *out_text (may be NULL) gets its out as text
 * (malloc'd, the caller frees it). */
int simple_call(sim_host *h, const char *fn, const char *sid, char **out_text);

/* The events the recorder saw about sid, after a flush, as a compact trace
 * "session.created,user,busy,tool:pending,…" (malloc'd). */
char *trace(sim_host *h, const char *sid);

/* session_create through the plugin (parent and title may be NULL): the new
 * id (malloc'd), or NULL when the call failed. */
char *new_session_via_plugin(sim_host *h, const char *parent, const char *title);

#endif

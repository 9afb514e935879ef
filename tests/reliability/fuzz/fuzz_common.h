/* fuzz_common.h — what the libFuzzer targets share: one simulated host and
 * one plugin instance made by calling ocp_plugin_entry directly (the plugin's
 * objects are linked in, built by clang with coverage), a conversation with a
 * completed task and a running one, and $TOKEN substitution so that a corpus
 * can name them. */
#ifndef OCBG_FUZZ_COMMON_H
#define OCBG_FUZZ_COMMON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simhost.h"

typedef struct fz_world {
    sim_host *h;
    const ocp_plugin *p;
    char *parent;      /* the calling conversation */
    char *done_id;     /* a completed task of it */
    char *run_id;      /* a running task of it */
    char *run_session; /* the running task's session */
    char *batch_id;
} fz_world;

/* The world, made on first use (options: a fast poll). */
fz_world *fz_world_get(void);

/* Clear the conversation and make a completed and a running task again;
 * every 8th time, a new host and plugin instance (a long run stays fast):
 * before, every view the plugin published (ocp.h publish_view) must have
 * docs/panel.md's shape ({v:1, session, seq, now, tasks: at most 50, each
 * with id, kind agent|shell, a status, description}); after,
 * fz_leak_check. */
void fz_reset(fz_world *w);

/* Abort when LeakSanitizer finds memory no longer reachable. The targets
 * that keep a world between inputs run with libFuzzer's -detect_leaks=0
 * (its check after every input that allocates more than it frees would be
 * a whole heap scan after nearly every input): they call this when the
 * world is gone, so a leak is found within a few thousand inputs, and the
 * report names where the memory was allocated. */
void fz_leak_check(void);

/* A fresh running task when the old one is gone (every so often). */
void fz_refresh(fz_world *w);

/* The input as a NUL-terminated string with $DONE, $RUN, $RUNSES, $PARENT,
 * $BATCH replaced by the world's ids (malloc'd). */
char *fz_text(fz_world *w, const uint8_t *data, size_t size);

/* Call a tool as the host would; cancelled=1 makes every wait return at once. */
int fz_tool(fz_world *w, const char *tool, const char *args, int cancelled);

/* Abort, naming what and the text, unless ok. */
void fz_require(bool ok, const char *what, const char *text);

/* Is s a task status name (pending … cancelled)? Has o a string `name`? */
bool fz_is_status(const char *s);
bool fz_is_string(const cJSON *o, const char *name);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif

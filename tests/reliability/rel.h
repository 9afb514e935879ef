/*
 * rel.h — helpers shared by the reliability tests (tests/reliability/):
 * isolated runs in a forked child with a deadline, soft checks that count
 * failures instead of printing TAP lines (a child has no TAP plan of its own),
 * and the scripted scenario the fault sweep and the chaos run replay.
 */
#ifndef OCBG_REL_H
#define OCBG_REL_H

#include <stddef.h>
#include <stdint.h>

#include "simhost.h"

/* ---- soft checks (usable in a forked child) ---------------------------- */

/* Record a failed check: prints "# rel: file:line: message" on stderr.
 * Returns pass. Thread-safe. */
int rel_check_at(const char *file, int line, int pass, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define rel_check(pass, ...) rel_check_at(__FILE__, __LINE__, !!(pass), __VA_ARGS__)
int rel_failures(void);
/* A label put in front of every failure message from now on ("" for none). */
void rel_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the host ---------------------------------------------------------- */

/* A host with ocbg loaded from $OCBG_PLUGIN_DIR; NULL (reason on stderr)
 * when it cannot be loaded. */
sim_host *rel_host(const char *options_json);

/* Call a tool; returns its answer (malloc'd, never NULL), *rc its code. */
char *rel_tool(sim_host *h, const char *session, const char *tool, const char *args_json, int *rc);

/* The status word of background_output's first line "Task <id>…: <status>"
 * (static per-thread buffer; "" when the answer has no such line). */
const char *rel_status_of(const char *output);

/* Is status one of the statuses a task may have? */
int rel_status_valid(const char *status);
int rel_status_terminal(const char *status);

/* Wait until background_output for the task no longer says "running" (or
 * "pending"). Returns the final output (malloc'd) or NULL after timeout_ms. */
char *rel_wait_settled(sim_host *h, const char *session, const char *task_id, int timeout_ms);

/* How many messages of a session contain needle. */
int rel_count_messages_with(sim_host *h, const char *session, const char *needle);

/* ---- isolated runs ------------------------------------------------------ */

/* Run fn(arg) in a forked child (stdout/stderr shared). The child exits with
 * fn's return value through exit(), so LeakSanitizer checks it. Returns the
 * exit status (0..255), 128+signal when killed by a signal, or -ETIMEDOUT
 * when it ran past timeout_ms (it is then killed with SIGABRT, SIGKILL).
 * *elapsed_ms (may be NULL) gets the run's wall time. */
int rel_run_isolated(int (*fn)(void *arg), void *arg, int timeout_ms, int64_t *elapsed_ms);

/* Monotonic milliseconds. */
int64_t rel_now_ms(void);

/* An integer from the environment, or def. */
long rel_env_long(const char *name, long def);

/* ---- the scripted scenario ---------------------------------------------- */

/* Host functions a scenario calls, for the fault sweep. */
extern const char *const rel_host_fns[];
extern const size_t rel_host_fn_count;

typedef struct rel_scenario_cfg {
    int faulty;    /* host calls may fail: relax what must succeed */
    int chaos;     /* events dropped/duplicated/reordered (no call faults) */
    int settle_ms; /* how long a task may take to settle */
} rel_scenario_cfg;

/* Launch several tasks (agent, hanging, forked, shell), resume, wait, block,
 * cancel, list, /tasks, clear, then shutdown (sim_unload_plugins), checking
 * with rel_check that every task ends in a sensible, explained state and no
 * notification is sent twice (with cfg->chaos: exactly once). The host must
 * have ocbg loaded; faults are set by the caller. Returns the number of
 * failed checks. */
int rel_scenario(sim_host *h, const rel_scenario_cfg *cfg);

#endif

/*
 * crash_lives.h — the crash test's lives (crash.c runs them, crash_lives.c
 * holds them and what they use): what a run shares between the parent and
 * its children.
 */
#ifndef OCBG_CRASH_LIVES_H
#define OCBG_CRASH_LIVES_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "simhost.h"

typedef struct crash_run {
    char dir[256];     /* the run's temp dir: the host's data_dir */
    char journal[300]; /* the host's journal */
    char ids[300];     /* every task id a call returned, one a line */
    char parent[300];  /* the parent session's id */
    char tally[300];   /* the last life: "<status> <notifications>" per task */
    char options[512]; /* ocbg's options (store_path in dir) */
    uint32_t seed;
    uint32_t rng; /* the scenario's random source */
    int nops;     /* tool calls the life makes */
    int life;     /* 1, 2, …: which life of the host this is */
} crash_run;

/* xorshift32 step. */
uint32_t crash_rand(uint32_t *s);
/* Fill r's paths for dir and seed. */
void crash_paths(crash_run *r, const char *dir, uint32_t seed);
/* A host with the journal opened, data_dir set and ocbg loaded; NULL (why on
 * stderr) when it cannot be. */
sim_host *crash_host(const crash_run *r);
/* Append line + "\n" to path in one write(2). Returns 0 or a negative errno. */
int crash_append(const char *path, const char *line);
/* The whole lines of a file as a JSON array of strings (empty when none). */
cJSON *crash_lines(const char *path);

/* A life that will be killed (a forked child): the host back from what the
 * lives before left (none for the first), the parent session made or found
 * again, then r->nops calls, a 'k' to report_fd after each; then an 'n' for
 * each notification that reaches the parent session, until killed. Never
 * returns. */
_Noreturn void crash_life(const crash_run *r, int report_fd);
/* The last life (a forked child): restart and check. Returns 0, or 1 when
 * an invariant broke (printed), 3 when the host could not start. */
int crash_last_life(const crash_run *r);

#endif

/*
 * persist_state.h — what an engine keeps for its durable store (the type
 * only, held in struct engine; engine/persist.h has the functions).
 */
#ifndef OCBG_PERSIST_STATE_H
#define OCBG_PERSIST_STATE_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct store;
struct store_reader;

typedef struct persist {
    struct store *st;            /* NULL: memory only (off, or failed) */
    struct store_reader *reader; /* reads texts kept only in the store back (any thread, no lock) */
    pthread_t thread;
    bool started;
    bool stop;
    bool wake_pending;        /* the store thread was signalled and has not slept since */
    bool writing;             /* a thread is writing (the store thread, or one in persist_sync) */
    pthread_cond_t cv;        /* the store thread's wake-up */
    pthread_cond_t synced_cv; /* a write ended (committed or failed) */
    uint64_t committed;       /* registry dirty_gen written so far */
    char *log; /* lines for the host's log from the start, each after its level ('E', 'W'): the worker logs them */
    uint64_t writes, rows_written; /* transactions and rows, for benchmarks */
} persist;

#endif

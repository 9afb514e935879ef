/*
 * view_state.h — what an engine keeps for the views of its tasks (the type
 * only, held in struct engine; engine/view.h has the functions).
 */
#ifndef OCBG_VIEW_STATE_H
#define OCBG_VIEW_STATE_H

#include "base/face_guard.h"
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIEW_MAX_TASKS 50     /* tasks per view, newest first */
#define VIEW_MIN_GAP_MS 100   /* between two rounds of publishing */
#define VIEW_TICK_MS 1000     /* the rebuild of active sessions' views */
#define VIEW_ERROR_CHARS 200  /* of a task's error in its line */
#define VIEW_MAX_QUESTIONS 8  /* open permission questions on one task's line */
#define VIEW_QUESTION_DEPTH 8 /* levels of tasks launched by tasks searched for them */

typedef struct view_state {
    pthread_cond_t cv; /* the thread's wake-up, with the engine lock */
    pthread_t thread;
    bool started;
    bool sync_all; /* publish every session's view, changed or not */
    char **marked; /* sessions whose view changed (parent.view_marked), owned */
    size_t nmarked, cap;
    uint64_t rounds; /* for tests and benchmarks: rounds that published */
    uint64_t published;
} view_state;

#endif

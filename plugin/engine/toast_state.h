/*
 * toast_state.h — what an engine keeps for its toasts to the person (the type
 * only, held in struct engine; engine/toast.h has the functions).
 */
#ifndef OCBG_TOAST_STATE_H
#define OCBG_TOAST_STATE_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct toast_state {
    /* Noted since the last toast shown. */
    unsigned completed, failed, waiting;
    char *first;        /* the first noted task's line ("Background task completed: …"), malloc'd */
    int level;          /* the highest enum ocp_notice_level noted */
    bool due;           /* something noted wants showing (a wake-up, a question) */
    char *warning;      /* a warning from the start (unknown options), shown first; malloc'd */
    int64_t shown_mono; /* when the last toast was shown; 0: never */
    unsigned shown;     /* toasts shown, for tests */
} toast_state;

#endif

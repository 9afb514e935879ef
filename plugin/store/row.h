/*
 * row.h — a stored task: the row (store_row) and its columns, each field
 * with its column name and C type, in the order of the table. Pure data.
 */
#ifndef OCBG_STORE_ROW_H
#define OCBG_STORE_ROW_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "model/task.h"
#include "hooks/usage.h"

/* Where a task's notification stands, for exactly-once delivery across
 * restarts (the run it is for is store_row.notification_run). */
typedef enum notification_state {
    NOTIFICATION_NONE = 0,    /* no notification owed */
    NOTIFICATION_DUE = 1,     /* owed and not yet sent: send it */
    NOTIFICATION_PUSHING = 2, /* a send may have reached the host: look before sending again */
    NOTIFICATION_DONE = 3,    /* delivered (or moot) */
} notification_state;

/* Every text a row can leave as stored: an agent's, and a command's output. */
#define STORE_TEXTS_KEPT (TASK_TEXTS_ALL | TASK_TEXT_OUTPUT)

/* One task as stored. Strings are malloc'd and owned by the row (NULL where
 * the task has none); store_row_clear frees them. */
typedef struct store_row {
    char id[TASK_ID_SIZE];
    char batch[TASK_ID_SIZE];
    uint64_t seq;         /* launch order within the owner's rows */
    char *parent_session; /* never NULL in a valid row */
    task_type type;
    task_status status;
    char *session_id, *parent_message, *parent_agent, *description, *prompt, *agent;
    char *result, *error, *result_message_id;
    unsigned keep; /* TASK_TEXT_* bits (STORE_TEXTS_KEPT): leave these stored texts as they are
                    * (not written; the row's fields are NULL). A row not yet stored keeps nothing. */
    int64_t created_ms, started_ms, completed_ms, last_update_ms, retrieved_ms, timeout_ms;
    unsigned run, delivered_run, resume_count, depth;
    unsigned followups_sent; /* follow-ups numbered so far (model/followup.h): numbers never repeat */
    bool forked;
    usage use;
    notification_state notification;
    unsigned notification_run;
    bool notification_wake;         /* the notification wakes the parent */
    int64_t notification_pushed_ms; /* NOTIFICATION_PUSHING: when the send began (host clock) */
    /* Shell tasks. */
    char *command, *directory;
    char *output;           /* the output kept, once the command ended */
    int64_t pid, pid_start; /* its process (and group), with the pid's start time; 0: none */
    bool exited;
    int exit_code, term_signal;
    /* Isolated tasks (model/task.h task_worktree); NULL path: none. */
    char *wt_path, *wt_branch, *wt_base, *wt_checkout, *wt_report;
    unsigned wt_report_run;
} store_row;

void store_row_clear(store_row *row);

typedef enum col_kind {
    COL_STR,  /* char *, malloc'd, NULL: SQL NULL */
    COL_ID,   /* char[TASK_ID_SIZE] inline */
    COL_I64,  /* int64_t */
    COL_U64,  /* uint64_t (stored as its int64 bits) */
    COL_UINT, /* unsigned */
    COL_INT,  /* int, and enums */
    COL_BOOL, /* bool */
    COL_DBL,  /* double */
} col_kind;

typedef struct store_col {
    const char *name;
    col_kind kind;
    size_t offset; /* in store_row */
    int since;     /* the schema version that added it (store.h STORE_SCHEMA_VERSION) */
} store_col;

extern const store_col store_cols[];
extern const size_t store_ncols;

/* Can the row be restored as a task? (id, parent session, type, status, run;
 * a command for a shell task; every string valid UTF-8.) */
bool store_row_valid(const store_row *row);

#endif

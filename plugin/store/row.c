/* row.c — a stored task's columns: one table row per field of store_row,
 * so that the schema, the upsert and the decoding of a row are one list. */
#include "store/row.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define COL(name, kind, field)                                                                                         \
    {                                                                                                                  \
        name, kind, offsetof(store_row, field), 1                                                                      \
    }
#define COL_SINCE(version, name, kind, field)                                                                          \
    {                                                                                                                  \
        name, kind, offsetof(store_row, field), version                                                                \
    }

/* Column 0 is the id, 1 the owner (bound apart); these follow, in order. */
const store_col store_cols[] = {
    COL("seq", COL_U64, seq),
    COL("batch", COL_ID, batch),
    COL("parent_session", COL_STR, parent_session),
    COL("type", COL_INT, type),
    COL("status", COL_INT, status),
    COL("session_id", COL_STR, session_id),
    COL("parent_message", COL_STR, parent_message),
    COL("parent_agent", COL_STR, parent_agent),
    COL("description", COL_STR, description),
    COL("prompt", COL_STR, prompt),
    COL("agent", COL_STR, agent),
    COL("result", COL_STR, result),
    COL("error", COL_STR, error),
    COL("result_message_id", COL_STR, result_message_id),
    COL("created_ms", COL_I64, created_ms),
    COL("started_ms", COL_I64, started_ms),
    COL("completed_ms", COL_I64, completed_ms),
    COL("last_update_ms", COL_I64, last_update_ms),
    COL("retrieved_ms", COL_I64, retrieved_ms),
    COL("timeout_ms", COL_I64, timeout_ms),
    COL("run", COL_UINT, run),
    COL("delivered_run", COL_UINT, delivered_run),
    COL("resume_count", COL_UINT, resume_count),
    COL("depth", COL_UINT, depth),
    COL("forked", COL_BOOL, forked),
    COL("tokens_input", COL_U64, use.input),
    COL("tokens_output", COL_U64, use.output),
    COL("tokens_reasoning", COL_U64, use.reasoning),
    COL("tokens_cache_read", COL_U64, use.cache_read),
    COL("tokens_cache_write", COL_U64, use.cache_write),
    COL("cost_usd", COL_DBL, use.cost),
    COL("notice", COL_INT, notification),
    COL("notice_run", COL_UINT, notification_run),
    COL("notice_wake", COL_BOOL, notification_wake),
    COL("notice_pushed_ms", COL_I64, notification_pushed_ms),
    COL("command", COL_STR, command),
    COL("directory", COL_STR, directory),
    COL("output", COL_STR, output),
    COL("pid", COL_I64, pid),
    COL("pid_start", COL_I64, pid_start),
    COL("exited", COL_BOOL, exited),
    COL("exit_code", COL_INT, exit_code),
    COL("term_signal", COL_INT, term_signal),
    COL_SINCE(2, "followups_sent", COL_UINT, followups_sent),
    COL_SINCE(3, "worktree_path", COL_STR, wt_path),
    COL_SINCE(3, "worktree_branch", COL_STR, wt_branch),
    COL_SINCE(3, "worktree_base", COL_STR, wt_base),
    COL_SINCE(3, "worktree_checkout", COL_STR, wt_checkout),
    COL_SINCE(3, "worktree_report", COL_STR, wt_report),
    COL_SINCE(3, "worktree_report_run", COL_UINT, wt_report_run),
};
const size_t store_ncols = sizeof store_cols / sizeof store_cols[0];

void store_row_clear(store_row *row)
{
    for (size_t i = 0; i < store_ncols; i++)
        if (store_cols[i].kind == COL_STR) {
            char **p = (char **)((char *)row + store_cols[i].offset);
            free(*p);
            *p = NULL;
        }
}

/* Is the row a task this build can show and resume? Strings are checked
 * for UTF-8 (they reach the model as JSON). */
bool store_row_valid(const store_row *row)
{
    if (!row->id[0] || !utf8_valid(row->id, strlen(row->id)) || !row->parent_session || !row->parent_session[0])
        return false;
    if ((row->type != TASK_AGENT && row->type != TASK_SHELL) || (int)row->status < 0 ||
        row->status >= TASK_STATUS_COUNT || row->run == 0)
        return false;
    if (row->type == TASK_SHELL && !row->command)
        return false;
    for (size_t i = 0; i < store_ncols; i++) {
        if (store_cols[i].kind != COL_STR && store_cols[i].kind != COL_ID)
            continue;
        const char *s = store_cols[i].kind == COL_ID ? (const char *)row + store_cols[i].offset
                                                     : *(char *const *)((const char *)row + store_cols[i].offset);
        if (s && !utf8_valid(s, strlen(s)))
            return false;
    }
    return true;
}

/* task.c — see task.h. */
#include "model/task.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static const char *const status_names[] = {
    [TASK_PENDING] = "pending", [TASK_RUNNING] = "running",     [TASK_COMPLETED] = "completed",
    [TASK_ERROR] = "error",     [TASK_CANCELLED] = "cancelled", [TASK_RESUMED] = "resumed",
};

const char *task_status_name(task_status s)
{
    return (unsigned)s < sizeof status_names / sizeof status_names[0] ? status_names[s] : "unknown";
}

bool task_status_active(task_status s)
{
    return s == TASK_RUNNING || s == TASK_RESUMED || s == TASK_PENDING;
}

bool task_status_terminal(task_status s)
{
    return s == TASK_COMPLETED || s == TASK_ERROR || s == TASK_CANCELLED;
}

int64_t task_runtime(const task *t, int64_t now)
{
    if (!t->started_ms)
        return 0; /* pending: not started yet */
    int64_t end = task_status_active(t->status) || !t->completed_ms ? now : t->completed_ms;
    return end - t->started_ms;
}

/* The short strings' allocation: laid out description, session_id,
 * result_message_id, so the first of them set is its start. */
static char *strings_block(const task *t)
{
    const char *first = t->description ? t->description : t->session_id ? t->session_id : t->result_message_id;
    return (char *)first;
}

/* Copy s (or nothing, when NULL) to *at; returns where it went. */
static const char *put_string(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*at, s, n);
    *at += n;
    return *at - n;
}

void task_set_strings(task *t, const char *description, const char *session_id, const char *result_message_id)
{
    size_t n = (description ? strlen(description) + 1 : 0) + (session_id ? strlen(session_id) + 1 : 0) +
               (result_message_id ? strlen(result_message_id) + 1 : 0);
    char *old = strings_block(t), *block = n ? xmalloc(n) : NULL, *at = block;
    const char *d = put_string(&at, description), *s = put_string(&at, session_id);
    const char *m = put_string(&at, result_message_id);
    free(old);
    t->description = d;
    t->session_id = s;
    t->result_message_id = m;
}

void task_set_description(task *t, const char *description)
{
    task_set_strings(t, description, t->session_id, t->result_message_id);
}

void task_set_session(task *t, const char *session_id)
{
    task_set_strings(t, t->description, session_id, t->result_message_id);
}

void task_set_result_message(task *t, const char *message_id)
{
    task_set_strings(t, t->description, t->session_id, message_id);
}

static void worktree_free(task_worktree *w)
{
    if (!w)
        return;
    free(w->path);
    free(w->branch);
    free(w->base);
    free(w->checkout);
    free(w->report);
    free(w->early);
    free(w->early_msg);
    free(w->text_msg);
    free(w);
}

void task_set_worktree(task *t, const char *path, const char *branch, const char *base, const char *checkout)
{
    worktree_free(t->wt);
    t->wt = xcalloc(1, sizeof *t->wt);
    t->wt->path = path ? xstrdup(path) : NULL;
    t->wt->branch = branch ? xstrdup(branch) : NULL;
    t->wt->base = base ? xstrdup(base) : NULL;
    t->wt->checkout = checkout ? xstrdup(checkout) : NULL;
}

void task_free(task *t)
{
    worktree_free(t->wt);
    free(strings_block(t));
    free(t->parent_message);
    free(t->prompt);
    free(t->result);
    free(t->error);
    shell_state_free(t->shell);
    free(t->usage);
    task_end_run(t);
    free(t);
}

static uint32_t hash32(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h ? h : 1;
}

void task_note_tool(task *t, const char *call_id, const char *tool)
{
    task_active *p = t->active;
    if (!p)
        return; /* a late event of a run that ended */
    if (call_id) {
        uint32_t h = hash32(call_id);
        for (unsigned i = 0; i < RECENT_CALLS; i++)
            if (p->recent_calls[i] == h)
                return; /* an update of a call already counted */
        p->recent_calls[p->recent_calls_next++ % RECENT_CALLS] = h;
    }
    t->tool_calls++;
    if (tool) {
        char *slot = p->recent_tools[p->recent_tools_next++ % RECENT_TOOLS];
        snprintf(slot, TOOL_NAME_SIZE, "%s", tool);
    }
}

void task_check(const task *t)
{
    bool active = task_status_active(t->status);
    assert((t->active != NULL) == active && "live state exactly while active");
    assert((!t->recheck || t->checking) && "a recheck only with a check under way");
    assert((!t->awaiting || t->status == TASK_RUNNING || t->status == TASK_RESUMED) &&
           "awaiting only while running or resumed");
    assert((!t->wake_parked || t->awaiting) && "parked only while awaiting");
    assert((!t->retrying || active) && "retrying only while active");
    /* a queued amend outlives a resume of its task: amend_run finds it moot */
    assert((!t->amend_queued || t->type == TASK_AGENT) && "an amend only of an agent");
    assert((t->type != TASK_SHELL || (!t->session_id && !t->forked && !t->compacted_after)) &&
           "a command has no session, no fork, no amend");
    (void)active;
}

void task_begin_active(task *t)
{
    task_end_run(t);
    t->active = xcalloc(1, sizeof *t->active);
    t->active->followups_before = t->followups_sent;
}

const char *task_permission_request(const task *t)
{
    return t->active ? t->active->permission_request : NULL;
}

const char *task_permission_what(const task *t)
{
    return t->active ? t->active->permission_what : NULL;
}

const char *task_guard_error(const task *t)
{
    return t->active ? t->active->guard_error : NULL;
}

void task_end_run(task *t)
{
    if (t->active) {
        free(t->active->guard_error);
        free(t->active->permission_request);
        free(t->active->permission_what);
        answer_clear(&t->active->answer);
    }
    free(t->active);
    t->active = NULL;
}

unsigned task_recent_tools(const task *t, const char **names, unsigned max)
{
    const task_active *p = t->active;
    unsigned n = !p ? 0 : p->recent_tools_next < RECENT_TOOLS ? p->recent_tools_next : RECENT_TOOLS;
    if (n > max)
        n = max;
    for (unsigned i = 0; i < n; i++)
        names[i] = p->recent_tools[(p->recent_tools_next - 1 - i) % RECENT_TOOLS];
    return n;
}

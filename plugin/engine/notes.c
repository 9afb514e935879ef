/* notes.c — see engine.h (engine_note): what a host event means for a task,
 * applied under the engine lock. Never calls the host; work that needs it
 * (reading the answer, aborting) is queued for the worker. */
#include <stdlib.h>
#include <string.h>

#include "engine/amend.h"
#include "engine/defer.h"
#include "engine/engine.h"
#include "engine/guards.h"
#include "engine/isolate.h"

/* The task whose own session this is, if it is active. */
static task *active_task(engine *eng, const char *session_id)
{
    task *t = session_id ? registry_find_session(&eng->reg, session_id) : NULL;
    return t && task_status_active(t->status) ? t : NULL;
}

/* Idle: the run may have ended. Duplicates are harmless: one check is
 * queued at a time and it only acts on a finished answer it has not seen. */
static void on_idle(engine *eng, task *t)
{
    t->last_update_ms = engine_now(eng);
    lanes_set_retrying(&eng->reg.lanes, t, false);
    engine_request_check(eng, t);
}

/* Busy again, or retrying: a retry holds back the task's lane (the
 * scheduler admits no more of its agent) until the host gets through. */
static void on_busy(engine *eng, task *t, bool retrying)
{
    /* Woken by someone else than its tasks' notification (the user typed into its
     * session): it works, so it holds a slot again. */
    registry_set_awaiting(&eng->reg, t, false);
    lanes_set_retrying(&eng->reg.lanes, t, retrying);
    t->woken = false;
    t->last_update_ms = engine_now(eng);
    task_active *p = t->active; /* notes reach active tasks only: active */
    p->idle_checks = 0;
    p->next_check_mono = 0;
    p->map_idle = false;
    p->said = false;
    p->progress_mono = mono_ms();
}

/* The session's deletion: its task (if any) and the tasks it launched. */
static void on_deleted(engine *eng, const char *session_id)
{
    task *t = registry_find_session(&eng->reg, session_id);
    if (t)
        engine_session_deleted(eng, t);
    parent *p = registry_parent(&eng->reg, session_id);
    if (p)
        engine_drop_parent(eng, p);
    guards_forget_session(eng, session_id);
}

/* A note about an active task's session. */
static void on_task_note(engine *eng, task *t, const session_note *n)
{
    switch (n->kind) {
    case NOTE_IDLE:
        on_idle(eng, t);
        break;
    case NOTE_BUSY:
    case NOTE_RETRY:
        on_busy(eng, t, n->kind == NOTE_RETRY);
        break;
    case NOTE_ERROR:
        /* the idles that follow find it finished; an abort we asked for is no error */
        if (!t->cancelling)
            engine_finish(eng, t, TASK_ERROR, n->text, NULL);
        break;
    case NOTE_PART:
        t->last_update_ms = engine_now(eng);
        if (t->active) {
            t->active->progress_mono = mono_ms();
            /* An ended text with no tool call after it may be the answer (engine/poll.c) */
            t->active->said = n->tool ? false : n->part_id ? n->text_ended : t->active->said;
        }
        if (n->part_id && t->active)
            answer_note_part(&t->active->answer, n->message_id, n->part_id, n->text, n->text_ended);
        if (n->tool && t->wt)
            t->wt->tool_gen++; /* what it read early no longer holds */
        else if (n->part_id && n->message_id)
            isolate_early_ask(eng, t, n->message_id); /* text, not a tool: maybe the answer */
        if (n->tool) {
            task_note_tool(t, n->call_id, n->tool);
            guards_note_tool(eng, t, n);
        }
        break;
    case NOTE_PERMISSION_ASKED:
        engine_permission_asked(eng, t, n->request_id, n->text);
        break;
    case NOTE_PERMISSION_REPLIED:
        engine_permission_replied(eng, t, n->request_id);
        break;
    case NOTE_DELETED:
    case NOTE_USAGE:
        break;
    }
}

void engine_note(engine *eng, const session_note *n)
{
    if (!n->session_id)
        return;
    engine_lock(eng);
    if (eng->stopping) {
        /* nothing: shutdown owns the state now */
    } else if (n->kind == NOTE_DELETED) {
        on_deleted(eng, n->session_id);
        defer_note(eng, n);
    } else if (n->kind == NOTE_USAGE) {
        /* counted whatever the task's status: a late report still cost */
        task *t = registry_find_session(&eng->reg, n->session_id);
        if (t && n->usage && n->message_id)
            guards_note_usage(eng, t, n->message_id, n->usage);
        if (t)
            amend_note(eng, t, n); /* a compaction after a completed run */
        /* The answer that ends the turn is stored: check now, not at the
         * idle that follows once the host is done with its housekeeping (an
         * early check is one more idle: it acts only on a finished answer). */
        t = active_task(eng, n->session_id);
        if (t && t->active && n->message_id)
            answer_note_message(&t->active->answer, n->message_id, n->turn_end);
        /* A step's message begins once the step before it has ended, its
         * tool calls too: it may be the answer, so read the report from now
         * (before its first text; engine/isolate.h). */
        if (t && t->wt && n->message_id && n->in_progress && !n->summary)
            isolate_early_ask(eng, t, n->message_id);
        if (t && n->turn_end)
            engine_request_check(eng, t);
    } else {
        defer_note(eng, n); /* any session's busy state: it may be a parent */
        task *t = active_task(eng, n->session_id);
        if (t)
            on_task_note(eng, t, n);
        else if (n->kind == NOTE_IDLE && (t = registry_find_session(&eng->reg, n->session_id)) != NULL)
            amend_note(eng, t, n);
    }
    engine_unlock(eng);
}

/* amend.c — see amend.h. */
#include "engine/amend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/outcome.h"
#include "text/texts.h"

/* How many newest messages the first read takes. */
#define AMEND_FIRST_READ 20

void amend_note(engine *eng, task *t, const session_note *n)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (t->type != TASK_AGENT)
        return;
    if (n->kind == NOTE_USAGE && n->summary) {
        /* also while it runs: its check may have read the answer already */
        t->compacted_after = true;
        return;
    }
    if (t->status != TASK_COMPLETED || !t->result_message_id)
        return;
    bool ended = (n->kind == NOTE_USAGE && n->turn_end) || n->kind == NOTE_IDLE;
    if (!ended || !t->compacted_after || t->amend_queued)
        return;
    t->amend_queued = true;
    jobs_push(&eng->q, job_for_task(JOB_AMEND, t));
}

/* Is t still the completed run j watches? */
static task *watched(engine *eng, const job *j)
{
    task *t = registry_find(&eng->reg, j->task_id);
    return t && t->run == j->run && t->status == TASK_COMPLETED && t->compacted_after ? t : NULL;
}

/* out, the run's result now, adds to t's: it becomes t's result; the
 * parent is told what was added (a notification not yet formatted will
 * carry it anyway). */
static void amend(engine *eng, task *t, const outcome *out)
{
    const char *added = strstr(out->text, "\n\n" OUTCOME_CONTINUED_MARK);
    if (!added)
        return; /* the turn after added nothing: the answer stands alone */
    free(t->result);
    t->result = xstrdup(out->text);
    task_set_result_message(t, out->message_id);
    t->texts_stored &= (unsigned char)~TASK_TEXT_RESULT;
    registry_touch(&eng->reg, t);
    engine_wake_waiters(eng);
    if (t->notifications_unformatted > 0)
        return;
    notification *n = xcalloc(1, sizeof *n);
    memcpy(n->task_id, t->id, sizeof n->task_id);
    n->run = t->run;
    n->parent_session = xstrdup(t->parent->session_id);
    n->agent = xstrdup(t->parent_agent);
    n->wake = true;
    n->extra = true;
    n->text = format_continued_notification(t, added + 2, eng->opt.notify_max_chars);
    engine_push_notification(eng, n);
}

void amend_run(engine *eng, const job *j)
{
    task *t = watched(eng, j);
    if (!t) {
        t = registry_find(&eng->reg, j->task_id);
        if (t)
            t->amend_queued = false;
        return;
    }
    char *session = xstrdup(t->session_id), *answer = xstrdup(t->result_message_id), *json = NULL;
    engine_unlock(eng);
    /* The newest few first: when the answer is among them with no
     * compaction after it (a run whose check came after the continue turn),
     * that settles it; else all of them, back to the run's prompt. */
    outcome out = {0};
    int rc = hostapi_session_messages(&eng->api, session, AMEND_FIRST_READ, &json, NULL);
    int found = rc == 0 ? outcome_after_compaction(json, answer, &out) : -1;
    hostapi_free(&eng->api, json);
    json = NULL;
    if (rc == 0 && found != 0) {
        outcome_free(&out);
        rc = hostapi_session_messages(&eng->api, session, 0, &json, NULL);
        found = rc == 0 ? outcome_after_compaction(json, answer, &out) : -1;
        hostapi_free(&eng->api, json);
    }
    bool watching = rc == 0 ? found == 1 : rc != -ENOENT;
    engine_lock(eng);
    t = watched(eng, j);
    if (t) {
        t->amend_queued = false;
        /* decided (or nothing to wait for): the watch ends */
        t->compacted_after = watching && out.kind == OUTCOME_NONE;
        if (watching && out.kind == OUTCOME_COMPLETED)
            amend(eng, t, &out);
    } else if ((t = registry_find(&eng->reg, j->task_id)) != NULL) {
        t->amend_queued = false;
    }
    outcome_free(&out);
    free(session);
    free(answer);
}

/*
 * outcome.h — how did a task's run end? Decided from the task session's
 * messages alone (a pure function, no host, no lock), so that the idle-event
 * path and the poll path agree, and a stale or duplicate idle changes nothing.
 */
#ifndef OCBG_OUTCOME_H
#define OCBG_OUTCOME_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stdint.h>

/* The synthetic user message OpenCode adds after an automatic compaction. */
#define OUTCOME_CONTINUE_TEXT                                                                                          \
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."

/* Between a run's answer and what the turn after a compaction added to it
 * (see outcome_from_messages). */
#define OUTCOME_CONTINUED_MARK "[The sub-agent's context was compacted after this answer; then it continued:]"
/* The longest text that can be a mere sign-off ("Done."). */
#define OUTCOME_SIGN_OFF_MAX 200

/* How every notification ocbg pushes into a session begins (plugin/text/texts.c;
 * not the fork preamble, which is a prompt). */
#define OUTCOME_NOTIFICATION_PREFIX "[ocbg] Background "

typedef enum outcome_kind {
    OUTCOME_NONE,      /* no finished answer yet: the run goes on */
    OUTCOME_COMPLETED, /* text = the answer */
    OUTCOME_ERROR,     /* text = what went wrong */
} outcome_kind;

typedef struct outcome {
    outcome_kind kind;
    char *text;       /* malloc'd; NULL for OUTCOME_NONE */
    char *message_id; /* the message that ended the run; malloc'd or NULL */
} outcome;

/* messages_json: OpenCode's [{info, parts}], oldest first (possibly only the
 * newest few). prev_message_id: the message that ended the previous run (NULL
 * for a new task): it never ends this run.
 *
 * Compaction. OpenCode may compact a session after an answer: a user message
 * with a "compaction" part, then the summary (an assistant message with
 * summary:true, mode and agent "compaction"), then, when it was automatic and
 * succeeded, a synthetic "continue" user message (OUTCOME_CONTINUE_TEXT,
 * metadata.compaction_continue) and one more model turn, the session busy all
 * along. None of these three is a prompt or an answer: they neither bound the
 * run nor give its result.
 *
 * The run has ended when the newest message is a finished (time.completed,
 * finish or error set) real assistant message, or a finished summary after
 * which OpenCode goes no further (a manual compaction, or a failed summary);
 * and that message is not prev_message_id, and, when prev_message_id is
 * among the messages, a prompt came after it (else what ended since, such as
 * the turn after a compaction of the previous run, is not this run's). A
 * newest compaction or continue
 * message, or a successful automatic summary, means the run goes on. An
 * error on a real assistant message ends the run in error; a summary's error
 * does not (the answer before it stands). The answer is the text of the
 * newest real assistant message that has text, back to the run's prompt (the
 * newest real user message); "(the sub-agent finished without a text reply)"
 * when none has. Malformed input → OUTCOME_NONE.
 *
 * A continue message after a turn-ending answer (finish not "tool-calls" or
 * "unknown") starts a new turn: the answer is the newest text before it, and
 * the turn after it is appended, "\n\n" OUTCOME_CONTINUED_MARK "\n" and its
 * newest text (or "(no text reply; it called: bash, read)"), when it called a
 * tool or its text is more than a sign-off: empty, or one paragraph of at
 * most OUTCOME_SIGN_OFF_MAX bytes with "done", "complete", "finished",
 * "nothing", "no further", "no next", "no more", "all set", "that's all",
 * "no additional" or "stop" in it (any case). A compaction in the middle of
 * the run's work (after a tool-call step) splits nothing.
 *
 * Notifications. A task that launched tasks of its own (max_depth > 1) gets
 * ocbg's notifications in its session: user messages that begin with
 * OUTCOME_NOTIFICATION_PREFIX. A quiet one (noReply) can land after its answer,
 * and says nothing of its run: with skip_notifications, notifications at the end are
 * stepped over. Without it (a waking notification was just pushed, its turn not
 * yet begun), a newest notification means the run goes on. Notifications are never
 * the boundary of the answer: a woken task's newer answer comes first. */
void outcome_from_messages(const char *messages_json, const char *prev_message_id, bool skip_notifications,
                           outcome *out);
void outcome_free(outcome *o);
/* A run that ended with answer_id (its check read that answer before the
 * host compacted the session after it): is the session, since then, an
 * automatic compaction and the turn after it, in the same run (no new
 * prompt)? -1: answer_id is not among the messages; 0: no (nothing to wait
 * for); 1: yes, and *out is as outcome_from_messages gives it now with
 * answer_id as prev_message_id (OUTCOME_NONE while that turn goes on; else
 * the run's result, the answer with what the turn added after
 * OUTCOME_CONTINUED_MARK, which needs messages back to the run's prompt). */
int outcome_after_compaction(const char *messages_json, const char *answer_id, outcome *out);

/* A run cut short (its host restarted mid-turn): the text it had written so
 * far, the newest real assistant text back to its prompt, finished or not;
 * NULL when none (or malformed input). malloc'd. */
char *outcome_partial(const char *messages_json);

/* Does the session hold a notification of ocbg's for task `task_id` created at or
 * after since_ms (host clock)? A user message that begins with
 * OUTCOME_NOTIFICATION_PREFIX and whose first line names the task. How a notification
 * whose send a restart interrupted is told from one never sent. */
bool outcome_has_notification(const char *messages_json, const char *task_id, int64_t since_ms);

#endif

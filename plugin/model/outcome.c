/* outcome.c — see outcome.h. */
#include "model/outcome.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* What a message is to a task's run. */
typedef enum msg_kind {
    MSG_PROMPT,       /* a real user message: where the run begins */
    MSG_ANSWER,       /* a real assistant message */
    MSG_SUMMARY,      /* a compaction's summary */
    MSG_COMPACTION,   /* the user message that asks for a compaction */
    MSG_CONTINUE,     /* the synthetic message after an automatic compaction */
    MSG_NOTIFICATION, /* one of ocbg's notifications (a user message) */
    MSG_OTHER,        /* no known role: treated as a boundary, as a prompt is */
} msg_kind;

static const char *str_at(const cJSON *obj, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, key));
}

static bool str_is(const cJSON *obj, const char *key, const char *want)
{
    const char *s = str_at(obj, key);
    return s && strcmp(s, want) == 0;
}

static const cJSON *info_of(const cJSON *msg)
{
    return cJSON_GetObjectItemCaseSensitive(msg, "info");
}

/* The continue message's text part. The metadata flag is what OpenCode sets;
 * the exact synthetic text is accepted too (a user cannot make a part
 * synthetic, so a prompt typed with the same words stays a prompt). */
static bool is_continue_part(const cJSON *part)
{
    if (!str_is(part, "type", "text"))
        return false;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(part, "metadata"),
                                                      "compaction_continue")))
        return true;
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(part, "synthetic")) &&
           str_is(part, "text", OUTCOME_CONTINUE_TEXT);
}

static msg_kind kind_of(const cJSON *msg)
{
    const cJSON *info = info_of(msg);
    if (str_is(info, "role", "assistant")) {
        /* A user message's "summary" is an object (its diffs): only an
         * assistant's summary:true marks a compaction. */
        bool summary = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "summary")) ||
                       str_is(info, "mode", "compaction") || str_is(info, "agent", "compaction");
        return summary ? MSG_SUMMARY : MSG_ANSWER;
    }
    if (!str_is(info, "role", "user"))
        return MSG_OTHER;
    const cJSON *part;
    bool first_text = true;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        if (str_is(part, "type", "compaction"))
            return MSG_COMPACTION;
        if (is_continue_part(part))
            return MSG_CONTINUE;
        const char *text = str_is(part, "type", "text") ? str_at(part, "text") : NULL;
        if (text && first_text && strncmp(text, OUTCOME_NOTIFICATION_PREFIX, strlen(OUTCOME_NOTIFICATION_PREFIX)) == 0)
            return MSG_NOTIFICATION;
        first_text = first_text && !text;
    }
    return MSG_PROMPT;
}

static bool is_finished(const cJSON *info)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info, "time"), "completed") ||
           str_at(info, "finish") || cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(info, "error"));
}

/* Does OpenCode stop after the summary msgs[i]? Not after a successful
 * automatic one: a continue message (or the replayed prompt) and a new model
 * turn follow. The compaction it answers is the one its parentID names, else
 * the nearest before it (nothing runs between the two); when that is out of
 * sight, it counts as stopping, so a task never waits for a turn that may not
 * come. */
static bool summary_ends_run(const cJSON *const *msgs, int i)
{
    const cJSON *info = info_of(msgs[i]);
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(info, "error")))
        return true;
    const char *parent = str_at(info, "parentID");
    const cJSON *request = NULL;
    for (int k = i - 1; k >= 0; k--) {
        if (kind_of(msgs[k]) != MSG_COMPACTION)
            continue;
        if (!request)
            request = msgs[k];
        if (parent && str_is(info_of(msgs[k]), "id", parent)) {
            request = msgs[k];
            break;
        }
    }
    if (!request)
        return true;
    const cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(request, "parts")) {
        if (str_is(part, "type", "compaction"))
            return !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(part, "auto"));
    }
    return true;
}

/* The text parts of one message joined by newlines, or NULL when none. */
static char *message_text(const cJSON *msg)
{
    strbuf sb = {0};
    const cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        const char *text = str_at(part, "text");
        if (!str_is(part, "type", "text") || !text || !*text)
            continue;
        if (sb.len)
            sb_puts(&sb, "\n");
        sb_puts(&sb, text);
    }
    return sb.len ? sb_take(&sb) : NULL;
}

/* The newest real assistant text in msgs[from, to), or NULL. */
static char *newest_text(const cJSON *const *msgs, int from, int to)
{
    for (int i = to - 1; i >= from; i--) {
        char *text = kind_of(msgs[i]) == MSG_ANSWER ? message_text(msgs[i]) : NULL;
        if (text)
            return text;
    }
    return NULL;
}

/* The run's answer: the newest real assistant text back to its prompt,
 * stepping over compaction messages (a summary is never the answer). */
static char *run_answer(const cJSON *const *msgs, int n)
{
    int from = n;
    while (from > 0 && kind_of(msgs[from - 1]) != MSG_PROMPT && kind_of(msgs[from - 1]) != MSG_OTHER)
        from--;
    return newest_text(msgs, from, n);
}

/* Does the continue message msgs[i] follow an answer that ended its turn
 * (finish not "tool-calls"/"unknown")? Then what comes after it is a new
 * turn after the run's answer; else the compaction cut into the run's own
 * work (its overflow mid-task), which simply goes on. */
static bool continues_after_answer(const cJSON *const *msgs, int i, int from)
{
    for (int k = i - 1; k >= from; k--) {
        if (kind_of(msgs[k]) != MSG_ANSWER)
            continue;
        const char *finish = str_at(info_of(msgs[k]), "finish");
        return finish && strcmp(finish, "tool-calls") != 0 && strcmp(finish, "unknown") != 0;
    }
    return false;
}

/* Is text no more than a sign-off ("Done.", "Nothing more to do.")? Empty,
 * or one short paragraph with one of the words a model signs off with. */
static bool is_sign_off(const char *text)
{
    static const char *const words[] = {"done",    "complete", "finished",   "nothing",       "no further", "no next",
                                        "no more", "all set",  "that's all", "no additional", "stop"};
    while (*text == ' ' || *text == '\n' || *text == '\t')
        text++;
    size_t len = strlen(text);
    if (len == 0)
        return true;
    if (len > OUTCOME_SIGN_OFF_MAX || strstr(text, "\n\n"))
        return false;
    char low[OUTCOME_SIGN_OFF_MAX + 1];
    for (size_t i = 0; i <= len; i++)
        low[i] = (char)(text[i] >= 'A' && text[i] <= 'Z' ? text[i] - 'A' + 'a' : text[i]);
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        if (strstr(low, words[w]))
            return true;
    }
    return false;
}

/* The tools the real assistant messages of msgs[from, to) called, in the
 * order of first use ("bash, read"); NULL when none. */
static char *tools_called(const cJSON *const *msgs, int from, int to)
{
    strbuf sb = {0};
    for (int i = from; i < to; i++) {
        const cJSON *part;
        const cJSON *parts = kind_of(msgs[i]) == MSG_ANSWER ? cJSON_GetObjectItemCaseSensitive(msgs[i], "parts") : NULL;
        cJSON_ArrayForEach (part, parts) {
            const char *tool = str_is(part, "type", "tool") ? str_at(part, "tool") : NULL;
            if (!tool)
                continue;
            size_t tl = strlen(tool);
            bool seen = false;
            for (const char *p = sb.buf; p && (p = strstr(p, tool)); p += tl)
                seen = seen || ((p == sb.buf || p[-1] == ' ') && (p[tl] == ',' || p[tl] == '\0'));
            if (!seen)
                sb_printf(&sb, "%s%s", sb.len ? ", " : "", tool);
        }
    }
    return sb.len ? sb_take(&sb) : NULL;
}

/* What the turn msgs[from, to) after a compaction added to the answer:
 * its newest text, or the tools it called; NULL when it made no tool call
 * and its text is no more than a sign-off. */
static char *continuation(const cJSON *const *msgs, int from, int to)
{
    char *tools = tools_called(msgs, from, to);
    char *text = newest_text(msgs, from, to);
    char *added = NULL;
    if (text && (tools || !is_sign_off(text))) {
        added = text;
        text = NULL;
    } else if (tools) {
        added = xasprintf("(no text reply; it called: %s)", tools);
    }
    free(text);
    free(tools);
    return added;
}

/* The run's result: its answer; when OpenCode compacted the session after
 * that answer and the turn that followed added something, that too, after
 * OUTCOME_CONTINUED_MARK (once for each such turn). */
static char *run_result(const cJSON *const *msgs, int n)
{
    int from = n;
    while (from > 0 && kind_of(msgs[from - 1]) != MSG_PROMPT && kind_of(msgs[from - 1]) != MSG_OTHER)
        from--;
    strbuf sb = {0};
    bool answered = false;
    int seg = from; /* where the current turn's messages begin */
    for (int i = from; i <= n; i++) {
        if (i < n && !(kind_of(msgs[i]) == MSG_CONTINUE && continues_after_answer(msgs, i, seg)))
            continue;
        char *part = !answered ? newest_text(msgs, seg, i) : continuation(msgs, seg, i);
        if (answered && part)
            sb_printf(&sb, "\n\n%s\n%s", OUTCOME_CONTINUED_MARK, part);
        else if (part)
            sb_puts(&sb, part);
        answered = answered || part;
        free(part);
        seg = i + 1;
    }
    return sb.len ? sb_take(&sb) : NULL;
}

/* "APIError: model overloaded" from {name, data:{message}}. */
static char *error_text(const cJSON *err)
{
    const char *name = str_at(err, "name");
    const char *msg = str_at(cJSON_GetObjectItemCaseSensitive(err, "data"), "message");
    if (!msg)
        msg = str_at(err, "message");
    if (name && msg)
        return xasprintf("%s: %s", name, msg);
    return xstrdup(msg ? msg : name ? name : "unknown error");
}

/* When the previous run's end is among msgs, has a prompt (or a waking
 * notification) come after it?
 * If not, what ended since is no run of its own (the turn after a
 * compaction of the previous run, say) and this run has not begun. */
static bool prompted_since(const cJSON *const *msgs, int n, const char *prev_message_id)
{
    int prev = -1;
    for (int i = 0; prev_message_id && i < n; i++)
        if (str_is(info_of(msgs[i]), "id", prev_message_id))
            prev = i;
    if (prev < 0)
        return true;
    for (int i = prev + 1; i < n; i++)
        if (kind_of(msgs[i]) == MSG_PROMPT || kind_of(msgs[i]) == MSG_NOTIFICATION)
            return true; /* a notification wakes a task that waited for its own tasks */
    return false;
}

static void decide(const cJSON *const *msgs, int n, const char *prev_message_id, bool skip_notifications, bool new_run,
                   outcome *out)
{
    while (skip_notifications && n > 1 && kind_of(msgs[n - 1]) == MSG_NOTIFICATION)
        n--;
    const cJSON *info = info_of(msgs[n - 1]);
    msg_kind k = kind_of(msgs[n - 1]);
    if ((k != MSG_ANSWER && k != MSG_SUMMARY) || !is_finished(info))
        return;
    if (k == MSG_SUMMARY && !summary_ends_run(msgs, n - 1))
        return;
    const char *id = str_at(info, "id");
    if (id && prev_message_id && strcmp(id, prev_message_id) == 0)
        return;
    if (new_run && !prompted_since(msgs, n, prev_message_id))
        return;
    out->message_id = xstrdup(id);
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(info, "error");
    if (k == MSG_ANSWER && cJSON_IsObject(error)) {
        out->kind = OUTCOME_ERROR;
        out->text = error_text(error);
        return;
    }
    out->kind = OUTCOME_COMPLETED;
    out->text = run_result(msgs, n);
    if (!out->text)
        out->text = xstrdup("(the sub-agent finished without a text reply)");
}

static const cJSON **index_messages(const cJSON *root, int *n);

void outcome_from_messages(const char *messages_json, const char *prev_message_id, bool skip_notifications,
                           outcome *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(messages_json ? messages_json : "");
    int n;
    /* Indexed, for the walks back (cJSON arrays are linked lists). */
    const cJSON **msgs = index_messages(root, &n);
    if (n > 0)
        decide(msgs, n, prev_message_id, skip_notifications, true, out);
    free(msgs);
    cJSON_Delete(root);
}

int outcome_after_compaction(const char *messages_json, const char *answer_id, outcome *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_Parse(messages_json ? messages_json : "");
    int n;
    const cJSON **msgs = index_messages(root, &n);
    int a = n;
    while (answer_id && a > 0 && !str_is(info_of(msgs[a - 1]), "id", answer_id))
        a--;
    bool continued = false, same_run = a > 0;
    for (int i = a; i < n && same_run; i++) {
        msg_kind k = kind_of(msgs[i]);
        same_run = k != MSG_PROMPT && k != MSG_OTHER;
        continued = continued || (k == MSG_CONTINUE && continues_after_answer(msgs, i, a - 1));
    }
    if (continued && same_run)
        decide(msgs, n, answer_id, true, false, out);
    free(msgs);
    cJSON_Delete(root);
    return a == 0 ? -1 : continued && same_run;
}

void outcome_free(outcome *o)
{
    free(o->text);
    free(o->message_id);
    memset(o, 0, sizeof *o);
}

/* The messages of messages_json, indexed; *n = 0 (and NULL) when none. */
static const cJSON **index_messages(const cJSON *root, int *n)
{
    *n = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : 0;
    if (*n == 0)
        return NULL;
    const cJSON **msgs = xcalloc((size_t)*n, sizeof *msgs);
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach (m, root)
        msgs[i++] = m;
    return msgs;
}

char *outcome_partial(const char *messages_json)
{
    cJSON *root = cJSON_Parse(messages_json ? messages_json : "");
    int n;
    const cJSON **msgs = index_messages(root, &n);
    char *text = n > 0 ? run_answer(msgs, n) : NULL;
    free(msgs);
    cJSON_Delete(root);
    return text;
}

bool outcome_has_notification(const char *messages_json, const char *task_id, int64_t since_ms)
{
    cJSON *root = cJSON_Parse(messages_json ? messages_json : "");
    bool found = false;
    size_t idlen = strlen(task_id);
    const cJSON *m;
    const cJSON *all = cJSON_IsArray(root) ? root : NULL;
    cJSON_ArrayForEach (m, all) {
        if (found || kind_of(m) != MSG_NOTIFICATION)
            continue;
        const cJSON *created =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info_of(m), "time"), "created");
        if (cJSON_IsNumber(created) && created->valuedouble < (double)since_ms)
            continue;
        char *text = message_text(m);
        const char *eol = text ? strchr(text, '\n') : NULL;
        size_t line = text ? (eol ? (size_t)(eol - text) : strlen(text)) : 0;
        for (const char *p = text; p && (p = strstr(p, task_id)) && (size_t)(p - text) + idlen <= line; p++) {
            char after = p[idlen];
            if (!(after >= '0' && after <= '9') && !(after >= 'a' && after <= 'f'))
                found = true; /* the whole id, not a longer one's prefix */
        }
        free(text);
    }
    cJSON_Delete(root);
    return found;
}

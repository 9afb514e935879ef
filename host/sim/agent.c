/* agent.c — simulated sub-agents: script rules, and one scheduler thread that
 * runs every session's model turn from a time-ordered heap (a thread per
 * session would not scale to thousands of sessions). */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scripts ------------------------------------------------------------ */

int sim_script(sim_host *h, const char *match, const char *script_json, int once)
{
    cJSON *j = script_json ? cJSON_Parse(script_json) : NULL;
    if (!j || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "steps"))) {
        cJSON_Delete(j);
        return -EINVAL;
    }
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(j, "steps"))
    {
        if (!cJSON_IsObject(st)) {
            cJSON_Delete(j);
            return -EINVAL;
        }
    }
    sim_rule *r = sim_xcalloc(1, sizeof *r);
    r->match = sim_strdup(match ? match : "");
    r->script = j;
    r->once = once;
    pthread_mutex_lock(&h->core.mu);
    sim_rule **pp = &h->rules;
    while (*pp)
        pp = &(*pp)->next;
    *pp = r;
    pthread_mutex_unlock(&h->core.mu);
    return 0;
}

static void rule_free(sim_rule *r)
{
    free(r->match);
    cJSON_Delete(r->script);
    free(r);
}

void sim_rules_free_locked(sim_host *h)
{
    while (h->rules) {
        sim_rule *r = h->rules;
        h->rules = r->next;
        rule_free(r);
    }
}

/* The steps for a prompt's text (a copy, owned by the caller). */
static cJSON *choose_steps_locked(sim_host *h, const char *text)
{
    for (sim_rule **pp = &h->rules; *pp; pp = &(*pp)->next) {
        sim_rule *r = *pp;
        if (*r->match && !strstr(text, r->match))
            continue;
        cJSON *steps = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(r->script, "steps"), 1);
        if (r->once) {
            *pp = r->next;
            rule_free(r);
        }
        return steps;
    }
    cJSON *steps = cJSON_CreateArray();
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddStringToObject(reply, "reply", "ok");
    cJSON_AddItemToArray(steps, reply);
    return steps;
}

/* ---- the heap of waking sessions --------------------------------------- */

static int heap_less(const sim_session *a, const sim_session *b)
{
    if (a->run->wake_mono != b->run->wake_mono)
        return a->run->wake_mono < b->run->wake_mono;
    return a->run->wake_seq < b->run->wake_seq;
}

static void heap_set(sim_host *h, size_t i, sim_session *s)
{
    h->heap[i] = s;
    s->run->heap_idx = (long)i;
}

static void heap_up(sim_host *h, size_t i)
{
    sim_session *s = h->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(s, h->heap[p]))
            break;
        heap_set(h, i, h->heap[p]);
        i = p;
    }
    heap_set(h, i, s);
}

static void heap_down(sim_host *h, size_t i)
{
    sim_session *s = h->heap[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const sim_session *best = s;
        if (l < h->heap_len && heap_less(h->heap[l], best)) {
            m = l;
            best = h->heap[l];
        }
        if (l + 1 < h->heap_len && heap_less(h->heap[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        heap_set(h, i, h->heap[m]);
        i = m;
    }
    heap_set(h, i, s);
}

static void unschedule_locked(sim_host *h, sim_session *s)
{
    if (s->run->heap_idx < 0)
        return;
    size_t i = (size_t)s->run->heap_idx;
    s->run->heap_idx = -1;
    h->heap_len--;
    if (i == h->heap_len)
        return;
    heap_set(h, i, h->heap[h->heap_len]);
    heap_up(h, i);
    heap_down(h, (size_t)h->heap[i]->run->heap_idx);
}

/* Wake s's turn at monotonic ms `at` (replacing an earlier wake). */
static void schedule_locked(sim_host *h, sim_session *s, int64_t at)
{
    unschedule_locked(h, s);
    if (h->heap_len == h->heap_cap) {
        h->heap_cap = h->heap_cap ? h->heap_cap * 2 : 64;
        h->heap = sim_xrealloc(h->heap, h->heap_cap * sizeof *h->heap);
    }
    s->run->wake_mono = at;
    s->run->wake_seq = ++h->sched_seq;
    h->heap_len++;
    heap_set(h, h->heap_len - 1, s);
    heap_up(h, h->heap_len - 1);
    pthread_cond_signal(&h->sched_cv);
}

/* ---- events of a turn -------------------------------------------------- */

static void emit_status_locked(sim_host *h, const sim_session *s, const char *type)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "status"), "type", type);
    sim_emit_props_locked(&h->core, "session.status", props);
}

static void emit_idle_locked(sim_host *h, const sim_session *s)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    sim_emit_props_locked(&h->core, "session.idle", props);
}

static void emit_part_locked(sim_host *h, const sim_session *s, const cJSON *part)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "part", cJSON_Duplicate(part, 1));
    sim_emit_props_locked(&h->core, "message.part.updated", props);
}

static void emit_message_locked(sim_host *h, const sim_session *s, const cJSON *msg)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "info",
                          cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "info"), 1));
    sim_emit_props_locked(&h->core, "message.updated", props);
}

static cJSON *error_json(const char *name, const char *message)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "message", message);
    return e;
}

/* ---- turns --------------------------------------------------------------- */

static void start_next_locked(sim_host *h, sim_session *s);

static void turn_clear(sim_turn *t)
{
    cJSON_Delete(t->steps);
    cJSON_Delete(t->parts);
    free(t->msg_id);
    free(t->agent);
    free(t->waiting_perm);
    uint64_t gen = t->gen;
    memset(t, 0, sizeof *t);
    t->gen = gen + 1;
}

static void drop_queue_locked(sim_session *s)
{
    if (!s->run)
        return;
    while (s->run->queue_head) {
        sim_prompt *p = s->run->queue_head;
        s->run->queue_head = p->next;
        cJSON_Delete(p->body);
        free(p);
    }
    s->run->queue_tail = NULL;
}

/* Store the turn's assistant message as it stands (with a copy of `error`
 * when given): message.updated, then it joins the session. */
static void store_answer_locked(sim_host *h, sim_session *s, const cJSON *error)
{
    sim_turn *t = &s->run->turn;
    cJSON *msg = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(msg, "info");
    cJSON_AddStringToObject(info, "id", t->msg_id);
    cJSON_AddStringToObject(info, "sessionID", s->id);
    cJSON_AddStringToObject(info, "role", "assistant");
    cJSON *tm = cJSON_AddObjectToObject(info, "time");
    cJSON_AddNumberToObject(tm, "created", (double)t->created);
    cJSON_AddNumberToObject(tm, "completed", (double)sim_wall_ms(&h->core));
    cJSON_AddStringToObject(info, "agent", t->agent);
    cJSON_AddStringToObject(info, "mode", t->agent);
    cJSON_AddStringToObject(info, "modelID", "sim-model");
    cJSON_AddStringToObject(info, "providerID", "sim");
    if (error)
        cJSON_AddItemToObject(info, "error", cJSON_Duplicate(error, 1));
    else
        cJSON_AddStringToObject(info, "finish", "stop");
    cJSON_AddItemToObject(msg, "parts", t->parts ? t->parts : cJSON_CreateArray());
    t->parts = NULL;
    t->open_part = NULL;
    emit_message_locked(h, s, msg);
    sim_session_append_locked(&h->store, s, msg);
}

/* The turn is over: idle status, session.idle (twice after an error or
 * abort, as OpenCode does). */
static void go_idle_locked(sim_host *h, sim_session *s, int twice)
{
    sim_turn *t = &s->run->turn;
    unschedule_locked(h, s);
    if (t->waiting_perm)
        sim_permission_session_ended_locked(h, s->id);
    turn_clear(t);
    s->busy = 0;
    emit_status_locked(h, s, "idle");
    emit_idle_locked(h, s);
    if (twice)
        emit_idle_locked(h, s);
    sim_changed_locked(&h->core);
}

/* Store the turn's assistant message (with `error` when given, owned) and
 * end the turn: message.updated, [session.error], idle. */
static void end_turn_locked(sim_host *h, sim_session *s, cJSON *error, int emit_session_error)
{
    store_answer_locked(h, s, error);
    if (error && emit_session_error) {
        cJSON *props = cJSON_CreateObject();
        cJSON_AddStringToObject(props, "sessionID", s->id);
        cJSON_AddItemToObject(props, "error", cJSON_Duplicate(error, 1));
        sim_emit_props_locked(&h->core, "session.error", props);
    }
    go_idle_locked(h, s, error != NULL);
    cJSON_Delete(error);
}

/* ---- compaction (the "compact" step) ------------------------------------ */

#define CONTINUE_TEXT \
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."

/* A user message as OpenCode writes one itself: the turn's agent and model. */
static cJSON *host_user_message_locked(sim_host *h, const sim_session *s)
{
    cJSON *msg = sim_message_new_locked(&h->store, s, "user");
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    cJSON_AddStringToObject(info, "agent", s->run->turn.agent);
    cJSON *model = cJSON_AddObjectToObject(info, "model");
    cJSON_AddStringToObject(model, "providerID", "sim");
    cJSON_AddStringToObject(model, "modelID", "sim-model");
    return msg;
}

/* Emit message.updated (and, with_parts, message.part.updated for each
 * part), then store msg. Returns msg's id (valid while the session is). */
static const char *add_message_locked(sim_host *h, sim_session *s, cJSON *msg, int with_parts)
{
    emit_message_locked(h, s, msg);
    const cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        if (with_parts)
            emit_part_locked(h, s, part);
    }
    sim_session_append_locked(&h->store, s, msg);
    return cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "info"), "id"));
}

/* The summary answering compaction request `parent`: OpenCode's shape, with
 * ContextOverflowError and finish "error" when it failed. */
static void add_summary_locked(sim_host *h, sim_session *s, const char *parent, const char *text, int failed)
{
    cJSON *msg = sim_message_new_locked(&h->store, s, "assistant");
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    cJSON_AddStringToObject(info, "parentID", parent);
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(info, "time"), "completed", (double)sim_wall_ms(&h->core));
    cJSON_AddStringToObject(info, "mode", "compaction");
    cJSON_AddStringToObject(info, "agent", "compaction");
    cJSON_AddBoolToObject(info, "summary", 1);
    cJSON_AddStringToObject(info, "modelID", "sim-model");
    cJSON_AddStringToObject(info, "providerID", "sim");
    cJSON *tokens = cJSON_AddObjectToObject(info, "tokens");
    cJSON_AddNumberToObject(tokens, "input", 0);
    cJSON_AddNumberToObject(tokens, "output", 0);
    cJSON_AddNumberToObject(tokens, "reasoning", 0);
    cJSON *cache = cJSON_AddObjectToObject(tokens, "cache");
    cJSON_AddNumberToObject(cache, "read", 0);
    cJSON_AddNumberToObject(cache, "write", 0);
    cJSON_AddNumberToObject(info, "cost", 0);
    sim_part_new_locked(&h->store, msg, "step-start");
    if (failed) {
        cJSON_AddItemToObject(info, "error", error_json("ContextOverflowError", "Session too large to compact"));
        cJSON_AddStringToObject(info, "finish", "error");
    } else {
        cJSON_AddStringToObject(sim_part_new_locked(&h->store, msg, "text"), "text", text);
        sim_part_new_locked(&h->store, msg, "step-finish");
        cJSON_AddStringToObject(info, "finish", "stop");
    }
    add_message_locked(h, s, msg, 0);
}

/* The "compact" step: the turn's answer so far is stored, then OpenCode's
 * compaction follows (request, summary, continue message, session.compacted)
 * with the session busy. Returns 1 when a continue turn follows (the next
 * steps, in a new assistant message), 0 when the turn has ended. */
static int compact_locked(sim_host *h, sim_session *s, const cJSON *opt)
{
    sim_turn *t = &s->run->turn;
    int is_auto = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(opt, "auto"));
    int failed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opt, "fail"));
    const char *summary = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(opt, "summary"));
    store_answer_locked(h, s, NULL);
    cJSON *req = host_user_message_locked(h, s);
    cJSON *part = sim_part_new_locked(&h->store, req, "compaction");
    cJSON_AddBoolToObject(part, "auto", is_auto);
    cJSON_AddBoolToObject(part, "overflow", 0);
    char *req_id = sim_strdup(add_message_locked(h, s, req, 1));
    add_summary_locked(h, s, req_id, summary ? summary : "Summary of the conversation so far.", failed);
    free(req_id);
    if (failed) {
        go_idle_locked(h, s, 0);
        return 0;
    }
    if (is_auto) {
        cJSON *cont = host_user_message_locked(h, s);
        part = sim_part_new_locked(&h->store, cont, "text");
        cJSON_AddStringToObject(part, "text", CONTINUE_TEXT);
        cJSON_AddBoolToObject(part, "synthetic", 1);
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(part, "metadata"), "compaction_continue", 1);
        add_message_locked(h, s, cont, 1);
    }
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    sim_emit_props_locked(&h->core, "session.compacted", props);
    if (!is_auto) {
        go_idle_locked(h, s, 0);
        return 0;
    }
    /* The continue turn: a new model call, so the plugins transform the
     * history again before it. */
    free(t->msg_id);
    t->msg_id = sim_new_id_locked(&h->store, "msg");
    t->parts = cJSON_CreateArray();
    t->created = sim_wall_ms(&h->core);
    t->transformed = 0;
    t->step++;
    schedule_locked(h, s, sim_mono_ms());
    return 1;
}

/* Begin a turn for body (owned): store the user message, go busy, pick the
 * script, wake the scheduler. */
static void start_turn_locked(sim_host *h, sim_session *s, cJSON *body)
{
    cJSON *user = sim_user_message_locked(&h->store, s, body);
    emit_message_locked(h, s, user);
    sim_session_append_locked(&h->store, s, user);
    char *text = sim_prompt_text(body);
    sim_turn *t = &s->run->turn;
    t->steps = choose_steps_locked(h, text);
    free(text);
    const char *agent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "agent"));
    t->agent = sim_strdup(agent ? agent : "build");
    t->msg_id = sim_new_id_locked(&h->store, "msg");
    t->parts = cJSON_CreateArray();
    t->created = sim_wall_ms(&h->core);
    t->gen++;
    cJSON_Delete(body);
    s->busy = 1;
    emit_status_locked(h, s, "busy");
    schedule_locked(h, s, sim_mono_ms());
    sim_changed_locked(&h->core);
}

static void start_next_locked(sim_host *h, sim_session *s)
{
    if (s->busy || !s->run->queue_head)
        return;
    sim_prompt *p = s->run->queue_head;
    s->run->queue_head = p->next;
    if (!s->run->queue_head)
        s->run->queue_tail = NULL;
    cJSON *body = p->body;
    free(p);
    start_turn_locked(h, s, body);
}

void sim_agent_prompt_locked(sim_host *h, sim_session *s, cJSON *body)
{
    if (!s->run) {
        s->run = sim_xcalloc(1, sizeof *s->run);
        s->run->heap_idx = -1;
    }
    /* tools: {name: false} denies those tools to the session for good. */
    const cJSON *tool;
    cJSON_ArrayForEach(tool, cJSON_GetObjectItemCaseSensitive(body, "tools"))
    {
        if (!tool->string)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(s->denied, tool->string);
        cJSON_AddItemToObject(s->denied, tool->string, cJSON_CreateBool(cJSON_IsTrue(tool)));
    }
    if (!s->busy) {
        start_turn_locked(h, s, body);
        return;
    }
    /* Busy: the prompt waits for the current turn (its message is stored when
     * its own turn begins). */
    sim_prompt *p = sim_xcalloc(1, sizeof *p);
    p->body = body;
    if (s->run->queue_tail)
        s->run->queue_tail->next = p;
    else
        s->run->queue_head = p;
    s->run->queue_tail = p;
}

void sim_agent_abort_locked(sim_host *h, sim_session *s)
{
    drop_queue_locked(s);
    if (!s->busy)
        return;
    sim_turn *t = &s->run->turn;
    if (t->open_part) {
        cJSON *state = cJSON_GetObjectItemCaseSensitive(t->open_part, "state");
        cJSON_ReplaceItemInObjectCaseSensitive(state, "status", cJSON_CreateString("error"));
        cJSON_DeleteItemFromObjectCaseSensitive(state, "error");
        cJSON_AddStringToObject(state, "error", "Tool execution aborted");
        emit_part_locked(h, s, t->open_part);
    }
    end_turn_locked(h, s, error_json("MessageAbortedError", "Aborted"), 0);
}

void sim_agent_release_locked(void *ctx, sim_session *s)
{
    sim_host *h = ctx;
    if (!s->run)
        return; /* never prompted: nothing queued, scheduled or running */
    drop_queue_locked(s);
    unschedule_locked(h, s);
    if (s->busy && s->run->turn.waiting_perm)
        sim_permission_session_ended_locked(h, s->id);
    turn_clear(&s->run->turn);
    s->busy = 0;
    free(s->run);
    s->run = NULL;
}

void sim_agent_permission_answered_locked(sim_host *h, const char *session_id, const char *request_id,
                                          int go_on)
{
    sim_session *s = sim_find_locked(&h->store, session_id);
    if (!s || !s->busy || !s->run->turn.waiting_perm || strcmp(s->run->turn.waiting_perm, request_id) != 0)
        return;
    free(s->run->turn.waiting_perm);
    s->run->turn.waiting_perm = NULL;
    if (!go_on) {
        end_turn_locked(h, s, NULL, 0);
        start_next_locked(h, s);
        return;
    }
    s->run->turn.step++;
    s->run->turn.phase = 0;
    schedule_locked(h, s, sim_mono_ms());
}

/* What a step handler tells the loop in advance_locked: run the turn's
 * current step (the same one again, or the next) now, or stop: the turn waits
 * (scheduled), hangs, or has ended. */
enum step_result { STEP_GO_ON, STEP_STOP };

/* End the turn as it stands (no error) and start a queued prompt. */
static enum step_result end_and_next_locked(sim_host *h, sim_session *s)
{
    end_turn_locked(h, s, NULL, 0);
    start_next_locked(h, s);
    return STEP_STOP;
}

/* A tool step, first half: the tool part appears (pending, then running);
 * with "ms" the turn waits that long before the second half. */
static enum step_result tool_begin_locked(sim_host *h, sim_session *s, const cJSON *st, const char *tool)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = cJSON_CreateObject();
    char *pid = sim_new_id_locked(&h->store, "prt");
    char *cid = sim_new_id_locked(&h->store, "call");
    cJSON_AddStringToObject(part, "id", pid);
    cJSON_AddStringToObject(part, "sessionID", s->id);
    cJSON_AddStringToObject(part, "messageID", t->msg_id);
    cJSON_AddStringToObject(part, "type", "tool");
    cJSON_AddStringToObject(part, "callID", cid);
    cJSON_AddStringToObject(part, "tool", tool);
    free(pid);
    free(cid);
    cJSON *state = cJSON_AddObjectToObject(part, "state");
    cJSON_AddStringToObject(state, "status", "pending");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(st, "input");
    cJSON_AddItemToObject(state, "input", input ? cJSON_Duplicate(input, 1) : cJSON_CreateObject());
    cJSON_AddItemToArray(t->parts, part);
    t->open_part = part;
    emit_part_locked(h, s, part);
    cJSON_ReplaceItemInObjectCaseSensitive(state, "status", cJSON_CreateString("running"));
    emit_part_locked(h, s, part);
    t->phase = 1;
    double msv = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "ms")); /* NaN if absent */
    int ms = msv > 0 && msv < 1e9 ? (int)msv : 0;
    if (ms > 0) {
        schedule_locked(h, s, sim_mono_ms() + ms);
        return STEP_STOP;
    }
    return STEP_GO_ON;
}

/* A tool step, second half: the part completes (or fails: "fail", or a tool
 * a prompt's "tools" denied to the session). */
static enum step_result tool_end_locked(sim_host *h, sim_session *s, const cJSON *st, const char *tool)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = t->open_part;
    cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
    const char *output = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "output"));
    int denied = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->denied, tool));
    int fail = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "fail")) || denied;
    cJSON_ReplaceItemInObjectCaseSensitive(state, "status", cJSON_CreateString(fail ? "error" : "completed"));
    if (denied) {
        char msg[300];
        snprintf(msg, sizeof msg, "Model tried to call unavailable tool '%s'", tool);
        cJSON_AddStringToObject(state, "error", msg);
    } else {
        cJSON_AddStringToObject(state, fail ? "error" : "output", output ? output : "");
    }
    t->open_part = NULL;
    t->phase = 0;
    t->step++;
    emit_part_locked(h, s, part);
    sim_changed_locked(&h->core);
    return STEP_GO_ON;
}

/* {"wait_ms":n}: the turn waits n ms, then goes on. */
static enum step_result wait_step_locked(sim_host *h, sim_session *s, const cJSON *wait)
{
    sim_turn *t = &s->run->turn;
    if (t->phase == 0 && cJSON_GetNumberValue(wait) > 0) {
        t->phase = 1;
        schedule_locked(h, s, sim_mono_ms() + (int64_t)cJSON_GetNumberValue(wait));
        return STEP_STOP;
    }
    t->phase = 0;
    t->step++;
    return STEP_GO_ON;
}

/* {"reply":text}: the answer's text part; the turn ends, unless a "compact"
 * step follows (the compaction stores this answer, the turn goes on). */
static enum step_result reply_step_locked(sim_host *h, sim_session *s, const cJSON *reply)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = cJSON_CreateObject();
    char *pid = sim_new_id_locked(&h->store, "prt");
    cJSON_AddStringToObject(part, "id", pid);
    free(pid);
    cJSON_AddStringToObject(part, "sessionID", s->id);
    cJSON_AddStringToObject(part, "messageID", t->msg_id);
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", cJSON_IsString(reply) ? reply->valuestring : "");
    cJSON_AddItemToArray(t->parts, part);
    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(t->steps, t->step + 1), "compact")) {
        t->step++;
        return STEP_GO_ON;
    }
    return end_and_next_locked(h, s);
}

/* {"ask":{…}}: a permission question; the turn goes on, ends, or waits for
 * the answer (sim_agent_permission_answered_locked). */
static enum step_result ask_step_locked(sim_host *h, sim_session *s, const cJSON *ask)
{
    sim_turn *t = &s->run->turn;
    int go = sim_permission_step_locked(h, s, ask, &t->waiting_perm);
    if (go < 0)
        return STEP_STOP;
    if (go == 0)
        return end_and_next_locked(h, s);
    t->step++;
    return STEP_GO_ON;
}

/* Run one step. The kinds are tried in this order; an unknown step is
 * skipped. */
static enum step_result run_step_locked(sim_host *h, sim_session *s, const cJSON *st)
{
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "tool"));
    const cJSON *wait = cJSON_GetObjectItemCaseSensitive(st, "wait_ms");
    const cJSON *reply = cJSON_GetObjectItemCaseSensitive(st, "reply");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(st, "error");
    const cJSON *compact = cJSON_GetObjectItemCaseSensitive(st, "compact");
    const cJSON *ask = cJSON_GetObjectItemCaseSensitive(st, "ask");
    if (tool)
        return s->run->turn.phase == 0 ? tool_begin_locked(h, s, st, tool) : tool_end_locked(h, s, st, tool);
    if (wait)
        return wait_step_locked(h, s, wait);
    if (reply)
        return reply_step_locked(h, s, reply);
    if (err) {
        end_turn_locked(h, s, error_json("APIError", cJSON_IsString(err) ? err->valuestring : "error"), 1);
        start_next_locked(h, s);
        return STEP_STOP;
    }
    if (compact && !cJSON_IsFalse(compact)) {
        if (!compact_locked(h, s, compact))
            start_next_locked(h, s);
        return STEP_STOP;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "hang")))
        return STEP_STOP; /* busy until aborted: nothing scheduled */
    if (ask)
        return ask_step_locked(h, s, ask);
    s->run->turn.step++;
    return STEP_GO_ON;
}

/* Run s's turn from its current step until it must wait, hang or end. */
static void advance_locked(sim_host *h, sim_session *s)
{
    for (;;) {
        cJSON *st = cJSON_GetArrayItem(s->run->turn.steps, s->run->turn.step);
        if (!st) {
            /* Steps ran out: the turn ends with whatever parts it made. */
            end_and_next_locked(h, s);
            return;
        }
        if (run_step_locked(h, s, st) == STEP_STOP)
            return;
    }
}

/* Before a turn's first step, the host (like OpenCode before each model call)
 * passes the history through the plugins' transform_messages. That calls into
 * plugins, so it runs with mu released; the turn may be aborted or the
 * session deleted meanwhile, which `gen` and a fresh lookup detect. */
static void transform_unlocked(sim_host *h, sim_session *s)
{
    char *id = sim_strdup(s->id);
    uint64_t gen = s->run->turn.gen;
    cJSON *hist = sim_session_messages_locked(s, 0);
    char *in = sim_print(hist);
    cJSON_Delete(hist);
    pthread_mutex_unlock(&h->core.mu);
    char *seen = sim_plugins_transform(h, id, in);
    free(in);
    pthread_mutex_lock(&h->core.mu);
    sim_session *now = sim_find_locked(&h->store, id);
    if (now && now->busy && now->run->turn.gen == gen) {
        free(now->model_input);
        now->model_input = seen;
        now->run->turn.transformed = 1;
        sim_changed_locked(&h->core);
    } else {
        free(seen);
    }
    free(id);
}

static void *sched_main(void *arg)
{
    sim_host *h = arg;
    pthread_mutex_lock(&h->core.mu);
    while (!h->core.stopping) {
        if (h->heap_len == 0) {
            sim_cond_wait_until(&h->sched_cv, &h->core.mu, -1);
            continue;
        }
        sim_session *s = h->heap[0];
        int64_t now = sim_mono_ms();
        if (s->run->wake_mono > now) {
            sim_cond_wait_until(&h->sched_cv, &h->core.mu, s->run->wake_mono);
            continue;
        }
        unschedule_locked(h, s);
        if (!s->busy)
            continue;
        if (!s->run->turn.transformed) {
            /* Only this thread advances turns, so the turn cannot move on
             * while mu is released; an abort or delete changes gen. */
            uint64_t gen = s->run->turn.gen;
            char *id = sim_strdup(s->id);
            transform_unlocked(h, s);
            s = sim_find_locked(&h->store, id);
            free(id);
            if (!s || !s->busy || s->run->turn.gen != gen)
                continue;
        }
        advance_locked(h, s);
    }
    pthread_mutex_unlock(&h->core.mu);
    return NULL;
}

int sim_agent_start(sim_host *h)
{
    int rc = pthread_create(&h->sched_thread, NULL, sched_main, h);
    if (rc == 0)
        h->sched_started = 1;
    return rc;
}

void sim_agent_join(sim_host *h)
{
    if (h->sched_started)
        pthread_join(h->sched_thread, NULL);
    h->sched_started = 0;
}

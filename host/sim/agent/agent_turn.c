/* agent_turn.c — layer 2 (agents): a session's turn from prompt to idle:
 * prompts run or queue, a turn starts (user message, busy), ends (answer
 * stored, idle), is aborted, or is released with its session; the events of
 * each. Uses agent_heap.c, agent_scripts.c, the storage and the core. */
#include "sim_agent_int.h"

#include <stdlib.h>
#include <string.h>

static void emit_status_locked(sim_agents *ag, const sim_session *s, const char *type)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(props, "status"), "type", type);
    sim_emit_props_locked(ag->core, "session.status", props);
}

static void emit_idle_locked(sim_agents *ag, const sim_session *s)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    sim_emit_props_locked(ag->core, "session.idle", props);
}

void sim_agent_emit_part_locked(sim_agents *ag, const sim_session *s, const cJSON *part)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "part", cJSON_Duplicate(part, 1));
    sim_emit_props_locked(ag->core, "message.part.updated", props);
}

void sim_agent_emit_message_locked(sim_agents *ag, const sim_session *s, const cJSON *msg)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "info", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "info"), 1));
    sim_emit_props_locked(ag->core, "message.updated", props);
}

void sim_agent_journal_turn_locked(sim_agents *ag, const sim_session *s)
{
    if (!sim_journal_on_locked(ag->store))
        return;
    const sim_turn *t = &s->run->turn;
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddItemToObject(msg, "info", sim_agent_answer_info_locked(ag, s, 0));
    cJSON_AddItemToObject(msg, "parts", t->parts ? cJSON_Duplicate(t->parts, 1) : cJSON_CreateArray());
    sim_journal_message_locked(ag->store, s, msg);
    cJSON_Delete(msg);
}

cJSON *sim_agent_error_json(const char *name, const char *message)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "data"), "message", message);
    return e;
}

/* Tell the permissions a turn that waited on a question is gone. */
static void turn_gone_locked(sim_agents *ag, const sim_session *s)
{
    if (ag->callbacks.turn_gone)
        ag->callbacks.turn_gone(ag->callbacks.perm_ctx, s->id);
}

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

void sim_agent_add_usage(cJSON *info, const sim_usage *u)
{
    cJSON *tokens = cJSON_AddObjectToObject(info, "tokens");
    cJSON_AddNumberToObject(tokens, "input", u->input);
    cJSON_AddNumberToObject(tokens, "output", u->output);
    cJSON_AddNumberToObject(tokens, "reasoning", u->reasoning);
    cJSON *cache = cJSON_AddObjectToObject(tokens, "cache");
    cJSON_AddNumberToObject(cache, "read", u->cache_read);
    cJSON_AddNumberToObject(cache, "write", u->cache_write);
    cJSON_AddNumberToObject(info, "cost", u->cost);
}

cJSON *sim_agent_answer_info_locked(sim_agents *ag, const sim_session *s, int done)
{
    const sim_turn *t = &s->run->turn;
    cJSON *info = cJSON_CreateObject();
    cJSON_AddStringToObject(info, "id", t->msg_id);
    cJSON_AddStringToObject(info, "sessionID", s->id);
    cJSON_AddStringToObject(info, "role", "assistant");
    cJSON *tm = cJSON_AddObjectToObject(info, "time");
    cJSON_AddNumberToObject(tm, "created", (double)t->created);
    if (done)
        cJSON_AddNumberToObject(tm, "completed", (double)sim_wall_ms(ag->core));
    cJSON_AddStringToObject(info, "agent", t->agent);
    cJSON_AddStringToObject(info, "mode", t->agent);
    cJSON_AddStringToObject(info, "modelID", "sim-model");
    cJSON_AddStringToObject(info, "providerID", "sim");
    sim_agent_add_usage(info, &t->used);
    return info;
}

/* Store the turn's assistant message as it stands (with a copy of `error`
 * when given): message.updated, then it joins the session. */
void sim_agent_store_answer_locked(sim_agents *ag, sim_session *s, const cJSON *error)
{
    sim_turn *t = &s->run->turn;
    cJSON *msg = cJSON_CreateObject();
    cJSON *info = sim_agent_answer_info_locked(ag, s, 1);
    cJSON_AddItemToObject(msg, "info", info);
    if (error)
        cJSON_AddItemToObject(info, "error", cJSON_Duplicate(error, 1));
    else
        cJSON_AddStringToObject(info, "finish", "stop");
    cJSON_AddItemToObject(msg, "parts", t->parts ? t->parts : cJSON_CreateArray());
    t->parts = NULL;
    t->open_part = NULL;
    sim_agent_emit_message_locked(ag, s, msg);
    sim_session_append_locked(ag->store, s, msg);
}

/* The turn is over: idle status, session.idle (twice after an error or
 * abort, as OpenCode does). */
void sim_agent_go_idle_locked(sim_agents *ag, sim_session *s, int twice)
{
    sim_turn *t = &s->run->turn;
    sim_agent_unschedule_locked(ag, s);
    if (t->waiting_perm)
        turn_gone_locked(ag, s);
    turn_clear(t);
    s->busy = 0;
    emit_status_locked(ag, s, "idle");
    emit_idle_locked(ag, s);
    if (twice)
        emit_idle_locked(ag, s);
    sim_changed_locked(ag->core);
}

/* Store the turn's assistant message (with `error` when given, owned) and
 * end the turn: message.updated, [session.error], idle. */
void sim_agent_end_turn_locked(sim_agents *ag, sim_session *s, cJSON *error, int emit_session_error)
{
    sim_agent_store_answer_locked(ag, s, error);
    if (error && emit_session_error) {
        cJSON *props = cJSON_CreateObject();
        cJSON_AddStringToObject(props, "sessionID", s->id);
        cJSON_AddItemToObject(props, "error", cJSON_Duplicate(error, 1));
        sim_emit_props_locked(ag->core, "session.error", props);
    }
    sim_agent_go_idle_locked(ag, s, error != NULL);
    cJSON_Delete(error);
}

/* Begin a turn for body (owned): store the user message, go busy, pick the
 * script, wake the scheduler. */
static void start_turn_locked(sim_agents *ag, sim_session *s, cJSON *body)
{
    cJSON *user = sim_user_message_locked(ag->store, s, body);
    sim_agent_emit_message_locked(ag, s, user);
    sim_session_append_locked(ag->store, s, user);
    char *text = sim_prompt_text(body);
    sim_turn *t = &s->run->turn;
    t->steps = sim_agent_choose_steps_locked(ag, text);
    free(text);
    const char *agent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "agent"));
    t->agent = sim_strdup(agent ? agent : "build");
    t->msg_id = sim_new_id_locked(ag->store, "msg");
    t->parts = cJSON_CreateArray();
    t->created = sim_wall_ms(ag->core);
    t->gen++;
    cJSON_Delete(body);
    s->busy = 1;
    emit_status_locked(ag, s, "busy");
    sim_agent_schedule_locked(ag, s, sim_mono_ms());
    sim_changed_locked(ag->core);
}

void sim_agent_start_next_locked(sim_agents *ag, sim_session *s)
{
    if (s->busy || !s->run->queue_head)
        return;
    sim_prompt *p = s->run->queue_head;
    s->run->queue_head = p->next;
    if (!s->run->queue_head)
        s->run->queue_tail = NULL;
    cJSON *body = p->body;
    free(p);
    start_turn_locked(ag, s, body);
}

void sim_agent_prompt_locked(sim_agents *ag, sim_session *s, cJSON *body)
{
    if (!s->run) {
        s->run = sim_xcalloc(1, sizeof *s->run);
        s->run->heap_idx = -1;
    }
    /* tools: {name: false} denies those tools to the session for good. */
    const cJSON *tool;
    cJSON_ArrayForEach (tool, cJSON_GetObjectItemCaseSensitive(body, "tools")) {
        if (!tool->string)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(s->denied, tool->string);
        cJSON_AddItemToObject(s->denied, tool->string, cJSON_CreateBool(cJSON_IsTrue(tool)));
    }
    if (!s->busy) {
        start_turn_locked(ag, s, body);
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

void sim_agent_abort_locked(sim_agents *ag, sim_session *s)
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
        sim_agent_emit_part_locked(ag, s, t->open_part);
    }
    sim_agent_end_turn_locked(ag, s, sim_agent_error_json("MessageAbortedError", "Aborted"), 0);
}

void sim_agent_release_locked(void *ctx, sim_session *s)
{
    sim_agents *ag = ctx;
    if (!s->run)
        return; /* never prompted: nothing queued, scheduled or running */
    drop_queue_locked(s);
    sim_agent_unschedule_locked(ag, s);
    if (s->busy && s->run->turn.waiting_perm)
        turn_gone_locked(ag, s);
    turn_clear(&s->run->turn);
    s->busy = 0;
    free(s->run);
    s->run = NULL;
}

void sim_agent_permission_answered_locked(sim_agents *ag, const char *session_id, const char *request_id, int go_on)
{
    sim_session *s = sim_find_locked(ag->store, session_id);
    if (!s || !s->busy || !s->run->turn.waiting_perm || strcmp(s->run->turn.waiting_perm, request_id) != 0)
        return;
    free(s->run->turn.waiting_perm);
    s->run->turn.waiting_perm = NULL;
    if (!go_on) {
        sim_agent_end_turn_locked(ag, s, NULL, 0);
        sim_agent_start_next_locked(ag, s);
        return;
    }
    s->run->turn.step++;
    s->run->turn.phase = 0;
    sim_agent_schedule_locked(ag, s, sim_mono_ms());
}

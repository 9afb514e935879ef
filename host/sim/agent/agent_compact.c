/* agent_compact.c — layer 2 (agents): the "compact" step: OpenCode 1.18's
 * compaction after an answer (request, summary, continue message,
 * session.compacted), the session busy throughout. Uses agent_turn.c,
 * agent_heap.c, the storage and the core. */
#include "sim_agent_int.h"

#include <stdlib.h>

#define CONTINUE_TEXT                                                                                                  \
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."

/* A user message as OpenCode writes one itself: the turn's agent and model. */
static cJSON *host_user_message_locked(sim_agents *ag, const sim_session *s)
{
    cJSON *msg = sim_message_new_locked(ag->store, s, "user");
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    cJSON_AddStringToObject(info, "agent", s->run->turn.agent);
    cJSON *model = cJSON_AddObjectToObject(info, "model");
    cJSON_AddStringToObject(model, "providerID", "sim");
    cJSON_AddStringToObject(model, "modelID", "sim-model");
    return msg;
}

/* Emit message.updated (and, with_parts, message.part.updated for each
 * part), then store msg. Returns msg's id (valid while the session is). */
static const char *add_message_locked(sim_agents *ag, sim_session *s, cJSON *msg, int with_parts)
{
    sim_agent_emit_message_locked(ag, s, msg);
    const cJSON *part;
    cJSON_ArrayForEach (part, cJSON_GetObjectItemCaseSensitive(msg, "parts")) {
        if (with_parts)
            sim_agent_emit_part_locked(ag, s, part);
    }
    sim_session_append_locked(ag->store, s, msg);
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(msg, "info"), "id"));
}

/* The summary answering compaction request `parent`: OpenCode's shape, with
 * ContextOverflowError and finish "error" when it failed. */
static void add_summary_locked(sim_agents *ag, sim_session *s, const char *parent, const char *text, int failed)
{
    cJSON *msg = sim_message_new_locked(ag->store, s, "assistant");
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    cJSON_AddStringToObject(info, "parentID", parent);
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(info, "time"), "completed", (double)sim_wall_ms(ag->core));
    cJSON_AddStringToObject(info, "mode", "compaction");
    cJSON_AddStringToObject(info, "agent", "compaction");
    cJSON_AddBoolToObject(info, "summary", 1);
    cJSON_AddStringToObject(info, "modelID", "sim-model");
    cJSON_AddStringToObject(info, "providerID", "sim");
    sim_agent_add_usage(info, &(sim_usage){0});
    sim_part_new_locked(ag->store, msg, "step-start");
    if (failed) {
        cJSON_AddItemToObject(info, "error",
                              sim_agent_error_json("ContextOverflowError", "Session too large to compact"));
        cJSON_AddStringToObject(info, "finish", "error");
    } else {
        cJSON_AddStringToObject(sim_part_new_locked(ag->store, msg, "text"), "text", text);
        sim_part_new_locked(ag->store, msg, "step-finish");
        cJSON_AddStringToObject(info, "finish", "stop");
    }
    add_message_locked(ag, s, msg, 0);
}

/* The "compact" step: the turn's answer so far is stored, then OpenCode's
 * compaction follows (request, summary, continue message, session.compacted)
 * with the session busy; with "wait_ms", that long after the answer (OpenCode
 * takes the step's snapshot in between). Returns 1 when a continue turn
 * follows (the next steps, in a new assistant message) or the compaction
 * waits, 0 when the turn has ended. */
int sim_agent_compact_locked(sim_agents *ag, sim_session *s, const cJSON *opt)
{
    sim_turn *t = &s->run->turn;
    int is_auto = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(opt, "auto"));
    int failed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(opt, "fail"));
    const char *summary = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(opt, "summary"));
    double wait = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(opt, "wait_ms")); /* NaN if absent */
    if (t->phase == 0)
        sim_agent_store_answer_locked(ag, s, NULL);
    if (t->phase == 0 && wait > 0 && wait < 1e9) {
        t->phase = 1;
        sim_agent_schedule_locked(ag, s, sim_mono_ms() + (int64_t)wait);
        return 1;
    }
    t->phase = 0;
    cJSON *req = host_user_message_locked(ag, s);
    cJSON *part = sim_part_new_locked(ag->store, req, "compaction");
    cJSON_AddBoolToObject(part, "auto", is_auto);
    cJSON_AddBoolToObject(part, "overflow", 0);
    char *req_id = sim_strdup(add_message_locked(ag, s, req, 1));
    add_summary_locked(ag, s, req_id, summary ? summary : "Summary of the conversation so far.", failed);
    free(req_id);
    if (failed) {
        sim_agent_go_idle_locked(ag, s, 0);
        return 0;
    }
    if (is_auto) {
        cJSON *cont = host_user_message_locked(ag, s);
        part = sim_part_new_locked(ag->store, cont, "text");
        cJSON_AddStringToObject(part, "text", CONTINUE_TEXT);
        cJSON_AddBoolToObject(part, "synthetic", 1);
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(part, "metadata"), "compaction_continue", 1);
        add_message_locked(ag, s, cont, 1);
    }
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    sim_emit_props_locked(ag->core, "session.compacted", props);
    if (!is_auto) {
        sim_agent_go_idle_locked(ag, s, 0);
        return 0;
    }
    /* The continue turn: a new model call, so the plugins transform the
     * history again before it. */
    free(t->msg_id);
    t->msg_id = sim_new_id_locked(ag->store, "msg");
    t->parts = cJSON_CreateArray();
    t->created = sim_wall_ms(ag->core);
    t->used = (sim_usage){0};
    t->transformed = 0;
    t->step++;
    sim_agent_schedule_locked(ag, s, sim_mono_ms());
    return 1;
}

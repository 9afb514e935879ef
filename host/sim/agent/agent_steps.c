/* agent_steps.c — layer 2 (agents): running a turn's script: one handler per
 * step kind (tool, wait, reply, error, compact, hang, ask, usage, run), and
 * the loop that runs steps until the turn must wait, hangs or ends. Uses
 * agent_compact.c, agent_turn.c, agent_heap.c, agent_shell.c, the storage and
 * the core. */
#include "sim_agent_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a step handler tells the loop in sim_agent_advance_locked: run the
 * turn's current step (the same one again, or the next) now, or stop: the
 * turn waits (scheduled), hangs, or has ended. */
enum step_result {
    STEP_GO_ON,
    STEP_STOP
};

/* End the turn as it stands (no error) and start a queued prompt. */
static enum step_result end_and_next_locked(sim_agents *ag, sim_session *s)
{
    sim_agent_end_turn_locked(ag, s, NULL, 0);
    sim_agent_start_next_locked(ag, s);
    return STEP_STOP;
}

/* A tool part appears in the turn's message (pending, then running) with a
 * copy of input (NULL: {}); it is the turn's open part. */
static cJSON *tool_open_locked(sim_agents *ag, sim_session *s, const char *tool, const cJSON *input)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = cJSON_CreateObject();
    char *pid = sim_new_id_locked(ag->store, "prt");
    char *cid = sim_new_id_locked(ag->store, "call");
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
    cJSON_AddItemToObject(state, "input", input ? cJSON_Duplicate(input, 1) : cJSON_CreateObject());
    cJSON_AddItemToArray(t->parts, part);
    t->open_part = part;
    sim_agent_emit_part_locked(ag, s, part);
    cJSON_ReplaceItemInObjectCaseSensitive(state, "status", cJSON_CreateString("running"));
    sim_agent_emit_part_locked(ag, s, part);
    sim_agent_journal_turn_locked(ag, s);
    return part;
}

/* A tool step, first half: the tool part appears (pending, then running);
 * with "ms" the turn waits that long before the second half. */
static enum step_result tool_begin_locked(sim_agents *ag, sim_session *s, const cJSON *st, const char *tool)
{
    sim_turn *t = &s->run->turn;
    tool_open_locked(ag, s, tool, cJSON_GetObjectItemCaseSensitive(st, "input"));
    t->phase = 1;
    double msv = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "ms")); /* NaN if absent */
    int ms = msv > 0 && msv < 1e9 ? (int)msv : 0;
    if (ms > 0) {
        sim_agent_schedule_locked(ag, s, sim_mono_ms() + ms);
        return STEP_STOP;
    }
    return STEP_GO_ON;
}

/* The open tool part ends: completed with output, or failed with it as its
 * error; the turn's next step follows. */
static void tool_close_locked(sim_agents *ag, sim_session *s, int fail, const char *text)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = t->open_part;
    cJSON *state = cJSON_GetObjectItemCaseSensitive(part, "state");
    cJSON_ReplaceItemInObjectCaseSensitive(state, "status", cJSON_CreateString(fail ? "error" : "completed"));
    cJSON_AddStringToObject(state, fail ? "error" : "output", text ? text : "");
    t->open_part = NULL;
    t->phase = 0;
    t->step++;
    sim_agent_emit_part_locked(ag, s, part);
    sim_agent_journal_turn_locked(ag, s);
    sim_changed_locked(ag->core);
}

/* The tools OpenCode's tool.execute.before hooks see that edit files: the
 * ones the plugins' tool_before is asked about. */
static int edits_files(const char *tool)
{
    return strcmp(tool, "edit") == 0 || strcmp(tool, "write") == 0 || strcmp(tool, "apply_patch") == 0;
}

/* Before an editing tool runs: the plugins' tool_before (a hook), with mu
 * released since it calls into plugins. Only this thread advances turns, so
 * the step cannot move meanwhile; an abort or a deletion changes gen.
 * Returns 1 with *rc and *note (malloc'd or NULL) and *s found again, or 0
 * when the turn is gone (*s is then stale: the caller stops). */
static int tool_check_unlocked(sim_agents *ag, sim_session **s, const char *tool, const cJSON *input, int *rc,
                               char **note)
{
    char *id = sim_strdup((*s)->id), *name = sim_strdup(tool);
    char *args = input ? sim_print(input) : sim_strdup("{}");
    uint64_t gen = (*s)->run->turn.gen;
    *note = NULL;
    pthread_mutex_unlock(&ag->core->mu);
    *rc = ag->callbacks.tool_before(ag->callbacks.tool_before_ctx, id, name, args, note);
    pthread_mutex_lock(&ag->core->mu);
    sim_session *now = sim_find_locked(ag->store, id);
    int alive = now && now->busy && now->run->turn.gen == gen;
    free(id);
    free(name);
    free(args);
    if (!alive) {
        free(*note);
        *note = NULL;
        return 0;
    }
    *s = now;
    return 1;
}

/* OpenCode's write, done for real: input {"filePath", "content"} (both
 * strings; otherwise nothing is written) goes to that file, so a test sees
 * what an edit did, or that a refused one did nothing. NULL, or why it
 * failed (malloc'd). */
static char *write_for_real(const cJSON *input)
{
    const char *path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(input, "filePath"));
    const char *content = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(input, "content"));
    if (!path || !content)
        return NULL;
    FILE *f = fopen(path, "wb");
    size_t n = strlen(content);
    int ok = f && fwrite(content, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok)
        return NULL;
    char msg[300];
    snprintf(msg, sizeof msg, "cannot write %.200s", path);
    return sim_strdup(msg);
}

/* text, then a blank line and note, as the OpenCode adapter appends a
 * warning (malloc'd). */
static char *with_note(const char *text, const char *note)
{
    size_t n = strlen(text) + strlen(note) + 3;
    char *joined = sim_xmalloc(n);
    snprintf(joined, n, "%s%s%s", text, *text ? "\n\n" : "", note);
    return joined;
}

/* A tool step naming a plugin's tool (the plugin_tool hook), with mu
 * released as in tool_check_unlocked: its part completes or fails with the
 * call's answer, and the turn ends there when the host says so (the user's
 * reject). Returns a step_result, or -1 when no plugin has the tool (the
 * step is scripted; s is still valid). */
static int plugin_step_unlocked(sim_agents *ag, sim_session *s, const char *tool, const cJSON *input)
{
    const char *call = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->run->turn.open_part, "callID"));
    char *id = sim_strdup(s->id), *msg = sim_strdup(s->run->turn.msg_id), *call_id = sim_strdup(call);
    char *args = input ? sim_print(input) : sim_strdup("{}"), *out = NULL;
    char *name = sim_strdup(tool); /* the step's: an abort meanwhile frees it */
    uint64_t gen = s->run->turn.gen;
    int rc = 0, end = 0;
    pthread_mutex_unlock(&ag->core->mu);
    int has = ag->callbacks.plugin_tool(ag->callbacks.plugin_tool_ctx, id, msg, call_id, name, args, &rc, &out, &end);
    pthread_mutex_lock(&ag->core->mu);
    sim_session *now = sim_find_locked(ag->store, id);
    int alive = now && now->busy && now->run->turn.gen == gen;
    free(id);
    free(msg);
    free(call_id);
    free(args);
    free(name);
    if (!alive) {
        free(out);
        return STEP_STOP; /* aborted or deleted meanwhile: s is stale */
    }
    if (!has)
        return -1;
    tool_close_locked(ag, now, rc != 0, out);
    free(out);
    return end ? end_and_next_locked(ag, now) : STEP_GO_ON;
}

/* A tool step, second half, when the tool runs: a plugin's tool is called
 * (plugin_step_unlocked); an editing tool is checked first
 * (tool_check_unlocked: a refusal fails it, a warning follows its output
 * after a blank line), a "write" writes; the part completes (or fails:
 * "fail", a refusal, or a tool a prompt's "tools" denied to the session). */
static enum step_result tool_end_locked(sim_agents *ag, sim_session *s, const cJSON *st, const char *tool)
{
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(st, "input");
    int denied = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->denied, tool));
    int called = !denied && ag->callbacks.plugin_tool ? plugin_step_unlocked(ag, s, tool, input) : -1;
    if (called >= 0)
        return (enum step_result)called;
    char *note = NULL, *err = NULL;
    int rc = 0;
    if (!denied && ag->callbacks.tool_before && edits_files(tool) &&
        !tool_check_unlocked(ag, &s, tool, input, &rc, &note))
        return STEP_STOP;
    if (rc < 0) {
        err = note ? note : sim_strdup("refused");
        note = NULL;
    } else if (!denied && strcmp(tool, "write") == 0) {
        err = write_for_real(input);
    }
    const char *output = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "output"));
    int fail = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "fail")) || denied || err;
    char msg[300];
    if (denied)
        snprintf(msg, sizeof msg, "Model tried to call unavailable tool '%s'", tool);
    const char *text = denied ? msg : err ? err : output ? output : "";
    char *joined = note ? with_note(text, note) : NULL;
    tool_close_locked(ag, s, fail, joined ? joined : text);
    free(joined);
    free(note);
    free(err);
    return STEP_GO_ON;
}

/* {"run":command}: a bash tool part, and the command run in the session's
 * folder. It runs with mu released (it may take a while, and the plugin's
 * threads must keep calling the host); only this thread advances turns, so
 * the turn cannot move on meanwhile, but an abort or a delete may end it,
 * which `gen` and a fresh lookup detect: then the result is dropped and s
 * must not be touched (it may be freed). */
static enum step_result run_step_locked(sim_agents *ag, sim_session *s, const char *cmd)
{
    cJSON *input = cJSON_CreateObject();
    cJSON_AddStringToObject(input, "command", cmd);
    cJSON_AddStringToObject(input, "description", "run");
    tool_open_locked(ag, s, "bash", input);
    cJSON_Delete(input);
    if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->denied, "bash"))) {
        /* A prompt denied the tool: as for a "tool" step, it fails unrun. */
        tool_close_locked(ag, s, 1, "Model tried to call unavailable tool 'bash'");
        return STEP_GO_ON;
    }
    char *id = sim_strdup(s->id), *dir = sim_strdup(s->directory), *command = sim_strdup(cmd);
    uint64_t gen = s->run->turn.gen;
    pthread_mutex_unlock(&ag->core->mu);
    char *out = NULL;
    int rc = sim_agent_shell(dir, command, 16384, &out);
    pthread_mutex_lock(&ag->core->mu);
    free(dir);
    free(command);
    s = sim_find_locked(ag->store, id);
    free(id);
    if (!s || !s->busy || s->run->turn.gen != gen || !s->run->turn.open_part) {
        free(out);
        return STEP_STOP;
    }
    if (rc != 0) {
        char tail[64];
        snprintf(tail, sizeof tail, rc < 0 ? "could not start (errno %d)" : "exit status %d", rc < 0 ? -rc : rc);
        size_t len = out ? strlen(out) : 0;
        while (len > 0 && out[len - 1] == '\n')
            len--;
        size_t n = len + sizeof tail + 2;
        char *msg = sim_xmalloc(n);
        snprintf(msg, n, "%.*s%s%s", (int)len, out ? out : "", len ? "\n" : "", tail);
        free(out);
        out = msg;
    }
    tool_close_locked(ag, s, rc != 0, out);
    free(out);
    return STEP_GO_ON;
}

/* {"wait_ms":n}: the turn waits n ms, then goes on. */
static enum step_result wait_step_locked(sim_agents *ag, sim_session *s, const cJSON *wait)
{
    sim_turn *t = &s->run->turn;
    if (t->phase == 0 && cJSON_GetNumberValue(wait) > 0) {
        t->phase = 1;
        sim_agent_schedule_locked(ag, s, sim_mono_ms() + (int64_t)cJSON_GetNumberValue(wait));
        return STEP_STOP;
    }
    t->phase = 0;
    t->step++;
    return STEP_GO_ON;
}

/* {"reply":text}: the answer's text part, with OpenCode's two events for it
 * (message.part.updated at its start, empty, and at its end, whole, with
 * time.end; OpenCode streams what comes between as message.part.delta); the
 * turn ends, unless a "compact" step follows (the compaction stores this
 * answer, the turn goes on). */
static enum step_result reply_step_locked(sim_agents *ag, sim_session *s, const cJSON *reply)
{
    sim_turn *t = &s->run->turn;
    cJSON *part = cJSON_CreateObject();
    char *pid = sim_new_id_locked(ag->store, "prt");
    cJSON_AddStringToObject(part, "id", pid);
    free(pid);
    cJSON_AddStringToObject(part, "sessionID", s->id);
    cJSON_AddStringToObject(part, "messageID", t->msg_id);
    cJSON_AddStringToObject(part, "type", "text");
    cJSON_AddStringToObject(part, "text", "");
    double now = (double)sim_wall_ms(ag->core);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(part, "time"), "start", now);
    sim_agent_emit_part_locked(ag, s, part);
    cJSON_ReplaceItemInObjectCaseSensitive(part, "text",
                                           cJSON_CreateString(cJSON_IsString(reply) ? reply->valuestring : ""));
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(part, "time"), "end", now);
    sim_agent_emit_part_locked(ag, s, part);
    cJSON_AddItemToArray(t->parts, part);
    if (cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(t->steps, t->step + 1), "compact")) {
        t->step++;
        return STEP_GO_ON;
    }
    return end_and_next_locked(ag, s);
}

/* {"ask":{…}}: a permission question; the turn goes on, ends, or waits for
 * the answer (sim_agent_permission_answered_locked). */
static enum step_result ask_step_locked(sim_agents *ag, sim_session *s, const cJSON *ask)
{
    sim_turn *t = &s->run->turn;
    int go = ag->callbacks.ask ? ag->callbacks.ask(ag->callbacks.perm_ctx, s->id, t->msg_id, ask, &t->waiting_perm) : 1;
    if (go < 0)
        return STEP_STOP;
    if (go == 0)
        return end_and_next_locked(ag, s);
    t->step++;
    return STEP_GO_ON;
}

/* A "usage" amount: a non-negative number (tokens: whole), else 0. */
static double amount_at(const cJSON *u, const char *key, int whole)
{
    double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(u, key)); /* NaN if absent */
    if (!(v >= 0 && v < 1e15))
        return 0;
    return whole ? (double)(int64_t)v : v;
}

/* {"usage":{input, output, reasoning, cache_read, cache_write, cost}}: a
 * model call's spend joins the assistant message's running totals, and
 * message.updated carries them (the message still in progress: no
 * time.completed, no finish), as OpenCode emits when a step finishes. */
static enum step_result usage_step_locked(sim_agents *ag, sim_session *s, const cJSON *u)
{
    sim_turn *t = &s->run->turn;
    t->used.input += amount_at(u, "input", 1);
    t->used.output += amount_at(u, "output", 1);
    t->used.reasoning += amount_at(u, "reasoning", 1);
    t->used.cache_read += amount_at(u, "cache_read", 1);
    t->used.cache_write += amount_at(u, "cache_write", 1);
    t->used.cost += amount_at(u, "cost", 0);
    cJSON *msg = cJSON_CreateObject();
    cJSON_AddItemToObject(msg, "info", sim_agent_answer_info_locked(ag, s, 0));
    sim_agent_emit_message_locked(ag, s, msg);
    cJSON_Delete(msg);
    sim_agent_journal_turn_locked(ag, s);
    t->step++;
    return STEP_GO_ON;
}

/* Run one step. The kinds are tried in this order; an unknown step is
 * skipped. */
static enum step_result step_locked(sim_agents *ag, sim_session *s, const cJSON *st)
{
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "tool"));
    const cJSON *wait = cJSON_GetObjectItemCaseSensitive(st, "wait_ms");
    const cJSON *reply = cJSON_GetObjectItemCaseSensitive(st, "reply");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(st, "error");
    const cJSON *compact = cJSON_GetObjectItemCaseSensitive(st, "compact");
    const cJSON *ask = cJSON_GetObjectItemCaseSensitive(st, "ask");
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(st, "usage");
    const char *run = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "run"));
    if (tool)
        return s->run->turn.phase == 0 ? tool_begin_locked(ag, s, st, tool) : tool_end_locked(ag, s, st, tool);
    if (wait)
        return wait_step_locked(ag, s, wait);
    if (reply)
        return reply_step_locked(ag, s, reply);
    if (err) {
        const char *text = cJSON_IsString(err) ? err->valuestring : "error";
        sim_agent_end_turn_locked(ag, s, sim_agent_error_json("APIError", text), 1);
        sim_agent_start_next_locked(ag, s);
        return STEP_STOP;
    }
    if (compact && !cJSON_IsFalse(compact)) {
        if (!sim_agent_compact_locked(ag, s, compact))
            sim_agent_start_next_locked(ag, s);
        return STEP_STOP;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "hang")))
        return STEP_STOP; /* busy until aborted: nothing scheduled */
    if (ask)
        return ask_step_locked(ag, s, ask);
    if (usage)
        return usage_step_locked(ag, s, usage);
    if (run)
        return run_step_locked(ag, s, run);
    s->run->turn.step++;
    return STEP_GO_ON;
}

/* Run s's turn from its current step until it must wait, hang or end. */
void sim_agent_advance_locked(sim_agents *ag, sim_session *s)
{
    for (;;) {
        cJSON *st = cJSON_GetArrayItem(s->run->turn.steps, s->run->turn.step);
        if (!st) {
            /* Steps ran out: the turn ends with whatever parts it made. */
            end_and_next_locked(ag, s);
            return;
        }
        if (step_locked(ag, s, st) == STEP_STOP)
            return;
    }
}

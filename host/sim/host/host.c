/* host.c — layer 4 (host), its top file: the simulated host's life cycle:
 * the layers created, wired together (the callbacks through which they reach the
 * plugins), and destroyed. Uses host_plugins.c and every layer below. */
#include "sim_host_int.h"

#include <stdlib.h>

/* The agents' transform callback: every plugin's transform_messages. */
static char *transform_hook(void *ctx, const char *session_id, const char *messages_json)
{
    return sim_plugins_transform(ctx, session_id, messages_json);
}

/* The agents' tool_before callback: every plugin's tool_before. */
static int tool_before_hook(void *ctx, const char *session_id, const char *tool, const char *args_json, char **note)
{
    return sim_plugins_tool_before(ctx, session_id, tool, args_json, note);
}

/* The agents' plugin_tool callback: a turn's call of a plugin's tool. */
static int plugin_tool_hook(void *ctx, const char *session_id, const char *message_id, const char *call_id,
                            const char *tool, const char *args_json, int *rc, char **out, int *end_turn)
{
    return sim_turn_tool(ctx, session_id, message_id, call_id, tool, args_json, rc, out, end_turn);
}

/* The API's deliver callback: every plugin's on_event. */
static void deliver_hook(void *ctx, const char *event_json)
{
    sim_plugins_deliver(ctx, event_json);
}

sim_host *sim_create(void)
{
    sim_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    if (sim_core_init(&h->core) != 0) {
        free(h);
        return NULL;
    }
    pthread_mutex_init(&h->plug_mu, NULL);
    if (sim_cond_init(&h->plug_cv)) {
        free(h);
        return NULL;
    }
    sim_storage_init(&h->store, &h->core);
    if (sim_agents_init(&h->agents, &h->store) != 0) {
        free(h);
        return NULL;
    }
    sim_api_init(&h->api, &h->agents);
    /* The lower layers reach the plugins only through these callbacks. */
    h->agents.callbacks.transform = transform_hook;
    h->agents.callbacks.transform_ctx = h;
    h->agents.callbacks.tool_before = tool_before_hook;
    h->agents.callbacks.tool_before_ctx = h;
    h->agents.callbacks.plugin_tool = plugin_tool_hook;
    h->agents.callbacks.plugin_tool_ctx = h;
    h->api.deliver = deliver_hook;
    h->api.deliver_ctx = h;
    if (sim_api_start(&h->api) != 0) {
        free(h->store.buckets);
        free(h);
        return NULL;
    }
    if (sim_agents_start(&h->agents) != 0) {
        pthread_mutex_lock(&h->core.mu);
        h->core.stopping = 1;
        pthread_mutex_unlock(&h->core.mu);
        sim_api_join(&h->api);
        free(h->store.buckets);
        free(h);
        return NULL;
    }
    return h;
}

void sim_destroy(sim_host *h)
{
    if (!h)
        return;
    /* Plugins first: their shutdown may wait for their threads, which may be
     * in host calls that need the scheduler and the storage alive. */
    sim_unload_plugins(h);
    pthread_mutex_lock(&h->core.mu);
    h->core.stopping = 1;
    sim_changed_locked(&h->core);
    pthread_mutex_unlock(&h->core.mu);
    sim_agents_join(&h->agents);
    sim_api_join(&h->api);

    pthread_mutex_lock(&h->core.mu);
    sim_storage_free_locked(&h->store);
    sim_api_free_locked(&h->api);
    pthread_mutex_unlock(&h->core.mu);
    sim_agents_destroy(&h->agents);
    free(h->plugins);
    pthread_cond_destroy(&h->plug_cv);
    pthread_mutex_destroy(&h->plug_mu);
    sim_core_destroy(&h->core);
    free(h);
}

const ocp_host *sim_table(sim_host *h)
{
    return &h->api.table;
}

/* host_toolcall.c — layer 4 (host): tool and command calls as the host's
 * worker makes them: a context per call, on the caller's thread or on a
 * thread of its own so a test can cancel it (Esc). Uses host_plugins.c. */
#include "sim_host_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sim_call {
    sim_host *h;
    ocp_call_ctx ctx; /* lives until sim_tool_free: past tool_call and every tool_cancel */
    char *session_id, *message_id, *call_id, *directory;
    char *name, *args;
    int is_command;
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const ocp_plugin *plugin; /* set once the call entered the plugin (mu) */
    int done;                 /* mu */
    int rc;                   /* mu */
    char *out;                /* mu; handed over by sim_tool_wait */
};

static sim_call *call_new(sim_host *h, const char *session_id, const char *name, const char *args, int is_command)
{
    sim_call *c = sim_xcalloc(1, sizeof *c);
    c->h = h;
    c->session_id = sim_strdup(session_id);
    c->name = sim_strdup(name ? name : "");
    c->args = sim_strdup(args ? args : (is_command ? "" : "{}"));
    c->is_command = is_command;
    pthread_mutex_lock(&h->core.mu);
    c->message_id = sim_new_id_locked(&h->store, "msg");
    c->call_id = is_command ? NULL : sim_new_id_locked(&h->store, "call");
    pthread_mutex_unlock(&h->core.mu);
    char *cwd = getcwd(NULL, 0);
    c->directory = sim_strdup(cwd ? cwd : ".");
    free(cwd);
    c->ctx.struct_size = sizeof c->ctx;
    c->ctx.session_id = c->session_id;
    c->ctx.message_id = c->message_id;
    c->ctx.agent = "build";
    c->ctx.call_id = c->call_id;
    c->ctx.directory = c->directory;
    c->ctx.cancelled = 0;
    pthread_mutex_init(&c->mu, NULL);
    sim_cond_init(&c->cv);
    return c;
}

static void call_free(sim_call *c)
{
    free(c->session_id);
    free(c->message_id);
    free(c->call_id);
    free(c->directory);
    free(c->name);
    free(c->args);
    free(c->out);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

/* Make the call into plugin 0 (on the calling thread) and publish the result. */
static void call_run(sim_call *c)
{
    int rc = 0;
    char *text = NULL;
    /* The plugin's free and userdata as copied at load: once tool_call has
     * returned, an unload's shutdown may have freed the table (it does not
     * wait for us), and the answer is freed after that (ocp.h). */
    sim_plugin_free_fn pfree = NULL;
    void *ud = NULL;
    const ocp_plugin *p = sim_plugin_enter(c->h, 0, &rc, &pfree, &ud);
    if (!p) {
        text = sim_strdup(rc == -ECANCELED ? "the plugin is shutting down" : "no plugin loaded");
    } else {
        pthread_mutex_lock(&c->mu);
        c->plugin = p;
        pthread_mutex_unlock(&c->mu);
        char *out = NULL;
        if (c->is_command)
            rc = p->command_call ? p->command_call(ud, c->name, c->args, &c->ctx, &out) : -ENOSYS;
        else
            rc = p->tool_call ? p->tool_call(ud, c->name, c->args, &c->ctx, &out) : -ENOSYS;
        /* Copy, then give the plugin's string back to its own allocator (its
         * code stays mapped until we leave: the unload waits for that). */
        text = sim_strdup(out);
        if (out)
            pfree(ud, out);
        sim_plugin_leave(c->h);
    }
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    c->out = text;
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    sim_changed(&c->h->core);
}

static int call_sync(sim_host *h, const char *sid, const char *name, const char *args, int is_cmd, char **out)
{
    sim_call *c = call_new(h, sid, name, args, is_cmd);
    call_run(c);
    int rc = c->rc;
    if (out) {
        *out = c->out;
        c->out = NULL;
    }
    call_free(c);
    return rc;
}

int sim_tool(sim_host *h, const char *session_id, const char *tool, const char *args_json, char **out)
{
    return call_sync(h, session_id, tool, args_json, 0, out);
}

int sim_command(sim_host *h, const char *session_id, const char *command, const char *arguments, char **out)
{
    return call_sync(h, session_id, command, arguments, 1, out);
}

/* Does p have a tool named name? */
static int has_tool(const ocp_plugin *p, const char *name)
{
    for (size_t i = 0; i < p->tool_count; i++)
        if (strcmp(p->tools[i].name, name) == 0)
            return 1;
    return 0;
}

/* c's ids and folder become those of a model turn's call: its message, its
 * tool part's callID, the session's folder (the host's own: cwd). */
static void call_in_turn(sim_call *c, const char *message_id, const char *call_id)
{
    free(c->message_id);
    free(c->call_id);
    c->message_id = sim_strdup(message_id);
    c->call_id = sim_strdup(call_id);
    pthread_mutex_lock(&c->h->core.mu);
    const sim_session *s = sim_find_locked(&c->h->store, c->session_id);
    char *dir = s && s->directory ? sim_strdup(s->directory) : NULL;
    pthread_mutex_unlock(&c->h->core.mu);
    if (dir) {
        free(c->directory);
        c->directory = dir;
    }
    c->ctx.message_id = c->message_id;
    c->ctx.call_id = c->call_id;
    c->ctx.directory = c->directory;
}

int sim_turn_tool(sim_host *h, const char *session_id, const char *message_id, const char *call_id, const char *tool,
                  const char *args_json, int *rc, char **out, int *end_turn)
{
    *rc = 0;
    *out = NULL;
    *end_turn = 0;
    sim_plugin_free_fn pfree = NULL;
    void *ud = NULL;
    const ocp_plugin *p = NULL;
    int erc = 0;
    for (size_t i = 0; !p && (p = sim_plugin_enter(h, i, &erc, &pfree, &ud)) != NULL; i++)
        if (!p->tool_call || !has_tool(p, tool)) {
            sim_plugin_leave(h);
            p = NULL;
        }
    if (!p)
        return 0;
    sim_call *c = call_new(h, session_id, tool, args_json, 0);
    call_in_turn(c, message_id, call_id);
    char *text = NULL;
    *rc = p->tool_call(ud, tool, c->args, &c->ctx, &text);
    *out = sim_strdup(text);
    if (text)
        pfree(ud, text);
    sim_plugin_leave(h);
    /* OpenCode ends the turn when a tool fails with its RejectedError. */
    *end_turn = *rc != 0 && sim_api_perm_user_rejected(&h->api, c->call_id);
    call_free(c);
    sim_changed(&h->core);
    return 1;
}

static void *call_main(void *arg)
{
    call_run(arg);
    return NULL;
}

sim_call *sim_tool_start(sim_host *h, const char *session_id, const char *tool, const char *args_json)
{
    sim_call *c = call_new(h, session_id, tool, args_json, 0);
    if (pthread_create(&c->thread, NULL, call_main, c) != 0) {
        call_free(c);
        return NULL;
    }
    c->started = 1;
    return c;
}

void sim_tool_cancel(sim_call *c)
{
    if (!c)
        return;
    __atomic_store_n(&c->ctx.cancelled, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&c->mu);
    const ocp_plugin *p = c->done ? NULL : c->plugin;
    pthread_mutex_unlock(&c->mu);
    /* Not yet in the plugin: it reads the flag before it waits. Done: nothing
     * to wake. Otherwise wake it, unless the plugin is being unloaded (its
     * shutdown releases the call anyway). */
    if (p && sim_plugin_enter_table(c->h, p)) {
        /* No shutdown can begin until we leave (see sim_unload_plugins). */
        if (p->tool_cancel)
            p->tool_cancel(p->userdata, &c->ctx);
        sim_plugin_leave_quick(c->h);
    }
}

int sim_tool_done(sim_call *c)
{
    pthread_mutex_lock(&c->mu);
    int d = c->done;
    pthread_mutex_unlock(&c->mu);
    return d;
}

int sim_tool_wait(sim_call *c, int timeout_ms, int *rc, char **out)
{
    int64_t deadline = sim_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    pthread_mutex_lock(&c->mu);
    while (!c->done && sim_mono_ms() < deadline)
        sim_cond_wait_until(&c->cv, &c->mu, deadline);
    int done = c->done;
    if (done) {
        if (rc)
            *rc = c->rc;
        if (out) {
            *out = c->out;
            c->out = NULL;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return done ? 0 : -ETIMEDOUT;
}

void sim_tool_free(sim_call *c)
{
    if (!c)
        return;
    if (c->started)
        pthread_join(c->thread, NULL);
    call_free(c);
}

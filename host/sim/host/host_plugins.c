/* host_plugins.c — layer 4 (host), its lowest file: loading plugins as a real
 * host does (dlopen, the entry point, version checks), calling into them, and
 * unloading them in a safe order. Uses the layers below only. */
#include "sim_host_int.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void set_error(sim_host *h, const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&h->plug_mu);
    snprintf(h->load_error, sizeof h->load_error, fmt, a ? a : "", b ? b : "");
    pthread_mutex_unlock(&h->plug_mu);
}

/* The smallest plugin table this host can use: every 1.0 field. */
#define PLUGIN_MIN_SIZE (offsetof(ocp_plugin, free) + sizeof(((ocp_plugin *)0)->free))

/* Drop a plugin's code: nothing for one linked into the program. */
static void unmap(void *handle)
{
    if (handle)
        dlclose(handle);
}

/* Call a plugin's entry and keep it (handle: its dlopen handle, or NULL for
 * a plugin linked in). Returns 1 loaded, 0 refused (reason kept). */
static int start_one(sim_host *h, void *handle, const char *path, ocp_plugin_entry_fn entry, const char *options_json)
{
    char err[512] = "";
    const ocp_plugin *p = entry(&h->api.table, options_json, err, sizeof err);
    if (!p) {
        set_error(h, "%s%s", err[0] ? err : "plugin refused to load: ", err[0] ? "" : path);
        unmap(handle);
        return 0;
    }
    if (p->abi_major != OCP_ABI_MAJOR) {
        char buf[64];
        snprintf(buf, sizeof buf, "%u, host speaks %d", (unsigned)p->abi_major, OCP_ABI_MAJOR);
        set_error(h, "%s: plugin ABI major %s", path, buf);
        /* Its table's layout is unknown, so its shutdown cannot be called;
         * without that, unloading its code could pull it from under its own
         * threads. Leave it mapped. */
        return 0;
    }
    if (p->struct_size < PLUGIN_MIN_SIZE) {
        set_error(h, "%s: plugin table too small%s", path, "");
        if (p->struct_size >= offsetof(ocp_plugin, shutdown) + sizeof p->shutdown && p->shutdown)
            p->shutdown(p->userdata);
        else
            return 0; /* cannot stop it: leave it mapped */
        unmap(handle);
        return 0;
    }
    pthread_mutex_lock(&h->plug_mu);
    h->plugins = sim_xrealloc(h->plugins, (h->nplugins + 1) * sizeof *h->plugins);
    h->plugins[h->nplugins].handle = handle;
    h->plugins[h->nplugins].plugin = p;
    h->plugins[h->nplugins].path = sim_strdup(path);
    h->plugins[h->nplugins].free = p->free;
    h->plugins[h->nplugins].userdata = p->userdata;
    h->nplugins++;
    pthread_mutex_unlock(&h->plug_mu);
    return 1;
}

/* Load one file. Returns 1 loaded, 0 refused/failed (reason kept). */
static int load_one(sim_host *h, const char *path, const char *options_json)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *e = dlerror();
        set_error(h, "%s%s", e ? e : "dlopen failed: ", e ? "" : path);
        return 0;
    }
    dlerror();
    void *sym = dlsym(handle, OCP_ENTRY_SYMBOL);
    if (!sym) {
        set_error(h, "%s: no symbol %s", path, OCP_ENTRY_SYMBOL);
        dlclose(handle);
        return 0;
    }
    ocp_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer, as dlsym requires */
    return start_one(h, handle, path, entry, options_json);
}

int sim_load_entry(sim_host *h, ocp_plugin_entry_fn entry, const char *name, const char *options_json)
{
    return start_one(h, NULL, name ? name : "(linked in)", entry, options_json);
}

int sim_load_plugins(sim_host *h, const char *dir, const char *options_json)
{
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 3, ".so") != 0)
            continue;
        names = sim_xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = sim_strdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    int loaded = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = sim_xmalloc(len);
        snprintf(path, len, "%s/%s", dir, names[i]);
        loaded += load_one(h, path, options_json);
        free(path);
        free(names[i]);
    }
    free(names);
    return loaded;
}

const char *sim_load_error(sim_host *h)
{
    /* The buffer lives as long as the host; a later refusal overwrites it. */
    return h->load_error;
}

size_t sim_plugin_count(sim_host *h)
{
    pthread_mutex_lock(&h->plug_mu);
    size_t n = h->nplugins;
    pthread_mutex_unlock(&h->plug_mu);
    return n;
}

const ocp_plugin *sim_plugin(sim_host *h, size_t i)
{
    pthread_mutex_lock(&h->plug_mu);
    const ocp_plugin *p = i < h->nplugins ? h->plugins[i].plugin : NULL;
    pthread_mutex_unlock(&h->plug_mu);
    return p;
}

void sim_unload_plugins(sim_host *h)
{
    pthread_mutex_lock(&h->plug_mu);
    while (h->plug_closing) /* another unload is running: let it finish */
        sim_cond_wait_until(&h->plug_cv, &h->plug_mu, -1);
    /* Emptying the list under plug_mu waits out an on_event in progress and
     * stops every further delivery before any shutdown begins. */
    sim_plugslot *slots = h->plugins;
    size_t n = h->nplugins;
    h->plugins = NULL;
    h->nplugins = 0;
    h->plug_closing = 1;
    /* A tool_cancel already running finishes before shutdown begins, so
     * shutdown never frees what a cancel is using. */
    while (h->plug_quick > 0)
        sim_cond_wait_until(&h->plug_cv, &h->plug_mu, -1);
    pthread_mutex_unlock(&h->plug_mu);

    /* No host lock held: shutdown joins plugin threads that may be inside
     * host calls, which must keep working until it returns. */
    for (size_t i = 0; i < n; i++)
        slots[i].plugin->shutdown(slots[i].plugin->userdata);

    /* A tool call released by shutdown may still be freeing its answer with
     * the copy of plugin->free it was given (the table is gone now); the code
     * must stay mapped until it is done. */
    pthread_mutex_lock(&h->plug_mu);
    while (h->plug_inflight > 0)
        sim_cond_wait_until(&h->plug_cv, &h->plug_mu, -1);
    h->plug_closing = 0;
    pthread_cond_broadcast(&h->plug_cv);
    pthread_mutex_unlock(&h->plug_mu);

    for (size_t i = 0; i < n; i++) {
        unmap(slots[i].handle);
        free(slots[i].path);
    }
    free(slots);
}

/* Whether p reads events of `type` (ABI 1.3 event_types): the sim skips
 * the others, as OpenCode's adapter does, so a type missing from a plugin's
 * list shows in the tests. */
static int reads_event(const ocp_plugin *p, const char *type)
{
    if (!OCP_HAS_FIELD(ocp_plugin, p, event_type_count) || !p->event_types || !type)
        return 1;
    for (size_t i = 0; i < p->event_type_count; i++)
        if (strcmp(p->event_types[i], type) == 0)
            return 1;
    return 0;
}

void sim_plugins_deliver(sim_host *h, const char *json)
{
    cJSON *ev = cJSON_Parse(json);
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "type"));
    pthread_mutex_lock(&h->plug_mu);
    for (size_t i = 0; i < h->nplugins; i++) {
        const ocp_plugin *p = h->plugins[i].plugin;
        if (p->on_event && reads_event(p, type))
            p->on_event(p->userdata, json);
    }
    pthread_mutex_unlock(&h->plug_mu);
    cJSON_Delete(ev);
}

char *sim_plugins_transform(sim_host *h, const char *session_id, const char *messages_json)
{
    char *cur = sim_strdup(messages_json);
    pthread_mutex_lock(&h->plug_mu);
    for (size_t i = 0; i < h->nplugins; i++) {
        const ocp_plugin *p = h->plugins[i].plugin;
        if (!p->transform_messages)
            continue;
        if (OCP_HAS_FIELD(ocp_plugin, p, wants_messages) && p->wants_messages &&
            !p->wants_messages(p->userdata, session_id))
            continue; /* as a 1.3 host: nothing serialized for it */
        char *out = NULL;
        int rc = p->transform_messages(p->userdata, session_id, cur, &out);
        if (rc == 0 && out) {
            free(cur);
            cur = sim_strdup(out);
        }
        if (out)
            h->plugins[i].free(h->plugins[i].userdata, out);
    }
    pthread_mutex_unlock(&h->plug_mu);
    return cur;
}

const ocp_plugin *sim_plugin_enter(sim_host *h, size_t i, int *rc, sim_plugin_free_fn *pfree, void **ud)
{
    const ocp_plugin *p = NULL;
    pthread_mutex_lock(&h->plug_mu);
    if (h->plug_closing) {
        *rc = -ECANCELED;
    } else if (i >= h->nplugins) {
        *rc = -ENOENT;
    } else {
        p = h->plugins[i].plugin;
        *pfree = h->plugins[i].free;
        *ud = h->plugins[i].userdata;
        h->plug_inflight++;
        *rc = 0;
    }
    pthread_mutex_unlock(&h->plug_mu);
    return p;
}

int sim_plugin_enter_table(sim_host *h, const ocp_plugin *p)
{
    int ok = 0;
    pthread_mutex_lock(&h->plug_mu);
    for (size_t i = 0; !h->plug_closing && i < h->nplugins && !ok; i++)
        ok = h->plugins[i].plugin == p;
    if (ok)
        h->plug_quick++;
    pthread_mutex_unlock(&h->plug_mu);
    return ok;
}

void sim_plugin_leave_quick(sim_host *h)
{
    pthread_mutex_lock(&h->plug_mu);
    if (--h->plug_quick == 0)
        pthread_cond_broadcast(&h->plug_cv);
    pthread_mutex_unlock(&h->plug_mu);
}

void sim_plugin_leave(sim_host *h)
{
    pthread_mutex_lock(&h->plug_mu);
    if (--h->plug_inflight == 0)
        pthread_cond_broadcast(&h->plug_cv);
    pthread_mutex_unlock(&h->plug_mu);
}

int sim_ui_request(sim_host *h, size_t i, const char *request_json, char **out)
{
    *out = NULL;
    int rc;
    sim_plugin_free_fn pfree;
    void *ud;
    const ocp_plugin *p = sim_plugin_enter(h, i, &rc, &pfree, &ud);
    if (!p)
        return rc;
    if (!OCP_HAS_FIELD(ocp_plugin, p, ui_request) || !p->ui_request) {
        sim_plugin_leave(h);
        return -ENOSYS;
    }
    char *answer = NULL;
    rc = p->ui_request(ud, request_json, &answer);
    if (answer) {
        *out = sim_strdup(answer);
        pfree(ud, answer);
    }
    sim_plugin_leave(h);
    return rc;
}

/* Add the plugin's answer `text` (freed here with its own free) to *note,
 * after a blank line when *note already holds a warning. */
static void join_note(sim_plugslot *slot, char **note, char *text)
{
    if (!text)
        return;
    size_t had = *note ? strlen(*note) : 0, n = had + strlen(text) + 3;
    char *joined = sim_xmalloc(n);
    snprintf(joined, n, "%s%s%s", *note ? *note : "", had ? "\n\n" : "", text);
    free(*note);
    *note = joined;
    slot->free(slot->userdata, text);
}

int sim_plugins_tool_before(sim_host *h, const char *session_id, const char *tool, const char *args_json, char **note)
{
    *note = NULL;
    int rc = 0;
    pthread_mutex_lock(&h->plug_mu);
    for (size_t i = 0; i < h->nplugins && rc == 0; i++) {
        const ocp_plugin *p = h->plugins[i].plugin;
        if (!OCP_HAS_FIELD(ocp_plugin, p, tool_before) || !p->tool_before)
            continue;
        char *text = NULL;
        int r = p->tool_before(p->userdata, session_id, tool, args_json, &text);
        if (r == -EACCES) { /* the refusal alone is what the tool fails with */
            free(*note);
            *note = NULL;
            rc = r;
        }
        if (r == 0 || r == -EACCES)
            join_note(&h->plugins[i], note, text);
        else if (text)
            h->plugins[i].free(h->plugins[i].userdata, text);
    }
    pthread_mutex_unlock(&h->plug_mu);
    return rc;
}

/* storage_sessions.c — layer 1 (storage), its top file: the session table:
 * lookup, create, delete, fork, and the journal's restore and forget (see
 * sim_storage.h). Uses storage_ids.c, storage_journal.c, storage_messages.c, and the
 * core. */
#include "sim_storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t hash_str(const char *s)
{
    size_t x = 1469598103934665603ull;
    for (; *s; s++)
        x = (x ^ (unsigned char)*s) * 1099511628211ull;
    return x;
}

sim_session *sim_find_locked(sim_storage *st, const char *id)
{
    if (!id)
        return NULL;
    for (sim_session *s = st->buckets[hash_str(id) % st->nbuckets]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

sim_session *sim_find_live_locked(sim_storage *st, const char *id)
{
    sim_session *s = sim_find_locked(st, id);
    return s && !s->deleted ? s : NULL;
}

/* The core's route callback (ctx: the storage): an event about a session working
 * in another folder reaches the plugins only while that folder is watched;
 * during a delete, every event goes where the deleted session's would. */
static int route_locked(void *ctx, const cJSON *ev)
{
    sim_storage *st = ctx;
    const sim_session *s = st->cascade_root;
    if (!s) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(ev, "properties");
        const char *sid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "sessionID"));
        if (!sid) /* OpenCode's message and part events name it inside */
            sid = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "info"), "sessionID"));
        if (!sid)
            sid = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "part"), "sessionID"));
        s = sim_find_locked(st, sid);
    }
    return !s || sim_dir_visible_locked(st, s->directory);
}

void sim_storage_init(sim_storage *st, sim_core *core)
{
    memset(st, 0, sizeof *st);
    st->core = core;
    st->journal_fd = -1;
    sim_storage_ids_init(st);
    st->nbuckets = 1024;
    st->buckets = sim_xcalloc(st->nbuckets, sizeof *st->buckets);
    core->route = route_locked;
    core->route_ctx = st;
}

static void rehash(sim_storage *st)
{
    size_t nb = st->nbuckets * 2;
    sim_session **b = sim_xcalloc(nb, sizeof *b);
    for (sim_session *s = st->first; s; s = s->next) {
        size_t i = hash_str(s->id) % nb;
        s->hnext = b[i];
        b[i] = s;
    }
    free(st->buckets);
    st->buckets = b;
    st->nbuckets = nb;
}

cJSON *sim_session_info_locked(const sim_session *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", s->id);
    if (s->parent_id)
        cJSON_AddStringToObject(o, "parentID", s->parent_id);
    cJSON_AddStringToObject(o, "title", s->title);
    cJSON_AddStringToObject(o, "directory", s->directory ? s->directory : ".");
    cJSON *t = cJSON_AddObjectToObject(o, "time");
    cJSON_AddNumberToObject(t, "created", (double)s->created);
    cJSON_AddNumberToObject(t, "updated", (double)s->updated);
    return o;
}

/* A new session (id: the given one, or a new one when NULL), linked in;
 * working in directory (NULL: the host's own), noted in its folder. */
static sim_session *session_alloc_locked(sim_storage *st, const char *id, const char *parent_id, const char *title,
                                         const char *directory)
{
    sim_session *s = sim_xcalloc(1, sizeof *s);
    s->id = id ? sim_strdup(id) : sim_new_id_locked(st, "ses");
    s->parent_id = sim_strdup(parent_id);
    if (directory) {
        s->directory = sim_strdup(directory);
        cJSON_AddItemToArray(sim_dir_get_locked(st, directory)->sessions, cJSON_CreateString(s->id));
    }
    if (title && *title) {
        s->title = sim_strdup(title);
    } else {
        /* OpenCode's default titles. */
        char buf[64];
        snprintf(buf, sizeof buf, "%s session - %lld", parent_id ? "Child" : "New", (long long)sim_wall_ms(st->core));
        s->title = sim_strdup(buf);
    }
    s->created = s->updated = sim_wall_ms(st->core);
    s->messages = cJSON_CreateArray();
    s->denied = cJSON_CreateObject();
    if (st->nsessions + 1 > st->nbuckets)
        rehash(st);
    size_t i = hash_str(s->id) % st->nbuckets;
    s->hnext = st->buckets[i];
    st->buckets[i] = s;
    s->prev = st->last;
    if (st->last)
        st->last->next = s;
    else
        st->first = s;
    st->last = s;
    st->nsessions++;
    return s;
}

static void emit_session_event_locked(sim_storage *st, const char *type, const sim_session *s)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "info", sim_session_info_locked(s));
    sim_emit_props_locked(st->core, type, props);
}

sim_session *sim_session_create_locked(sim_storage *st, const char *parent_id, const char *title)
{
    return sim_session_create_in_locked(st, parent_id, title, NULL);
}

sim_session *sim_session_create_in_locked(sim_storage *st, const char *parent_id, const char *title,
                                          const char *directory)
{
    if (parent_id && !sim_find_live_locked(st, parent_id))
        return NULL;
    sim_session *s = session_alloc_locked(st, NULL, parent_id, title, directory);
    sim_journal_session_locked(st, s);
    emit_session_event_locked(st, "session.created", s);
    sim_changed_locked(st->core);
    return s;
}

static void session_free(sim_session *s)
{
    free(s->id);
    free(s->parent_id);
    free(s->title);
    free(s->directory);
    cJSON_Delete(s->messages);
    cJSON_Delete(s->denied);
    free(s->model_input);
    free(s);
}

static void unlink_locked(sim_storage *st, sim_session *s)
{
    sim_session **pp = &st->buckets[hash_str(s->id) % st->nbuckets];
    while (*pp != s)
        pp = &(*pp)->hnext;
    *pp = s->hnext;
    if (s->prev)
        s->prev->next = s->next;
    else
        st->first = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        st->last = s->prev;
    st->nsessions--;
}

/* Release the layer above's state, unlink and free. */
static void discard_locked(sim_storage *st, sim_session *s)
{
    if (st->release)
        st->release(st->release_ctx, s);
    unlink_locked(st, s);
    session_free(s);
}

void sim_session_delete_locked(sim_storage *st, sim_session *s)
{
    int root = !st->cascade_root;
    if (root)
        st->cascade_root = s;
    /* Children first, each with its own event, as OpenCode does. Restart the
     * scan after each recursive delete: it may have removed later entries. */
    for (;;) {
        sim_session *c = st->first;
        while (c && (c->deleted || !(c->parent_id && strcmp(c->parent_id, s->id) == 0)))
            c = c->next;
        if (!c)
            break;
        sim_session_delete_locked(st, c);
    }
    emit_session_event_locked(st, "session.deleted", s);
    if (root)
        st->cascade_root = NULL;
    sim_journal_deleted_locked(st, s);
    if (s->busy) {
        /* As OpenCode: deleting a session does not stop its running turn. It
         * is gone for every lookup but still busy in the status map, and an
         * abort still ends it. Freed with the host. */
        s->deleted = 1;
        st->ndeleted++;
        sim_changed_locked(st->core);
        return;
    }
    discard_locked(st, s);
    sim_changed_locked(st->core);
}

void sim_storage_free_locked(sim_storage *st)
{
    while (st->first)
        discard_locked(st, st->first);
    free(st->buckets);
    st->buckets = NULL;
    sim_dirs_free_locked(st);
    if (st->journal_fd >= 0)
        close(st->journal_fd);
    st->journal_fd = -1;
}

/* OpenCode names forks "<title> (fork #1)", counting up when forking a fork. */
static char *fork_title(const char *title)
{
    const char *p = strstr(title, " (fork #");
    const char *last = NULL;
    while (p) {
        last = p;
        p = strstr(p + 1, " (fork #");
    }
    int n = 0;
    size_t keep = strlen(title);
    if (last) {
        char close = 0;
        int consumed = 0;
        if (sscanf(last, " (fork #%d%c%n", &n, &close, &consumed) == 2 && close == ')' && last[consumed] == 0)
            keep = (size_t)(last - title);
        else
            n = 0;
    }
    size_t len = keep + 32;
    char *t = sim_xmalloc(len);
    snprintf(t, len, "%.*s (fork #%d)", (int)keep, title, n + 1);
    return t;
}

sim_session *sim_session_fork_locked(sim_storage *st, sim_session *s, const char *message_id)
{
    char *title = fork_title(s->title);
    sim_session *f = session_alloc_locked(st, NULL, NULL, title, NULL);
    free(title);
    sim_journal_session_locked(st, f);
    cJSON *m;
    cJSON_ArrayForEach (m, s->messages) {
        cJSON *info = cJSON_GetObjectItemCaseSensitive(m, "info");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id"));
        if (message_id && id && strcmp(id, message_id) == 0)
            break;
        cJSON *c = cJSON_Duplicate(m, 1);
        sim_message_rebase_locked(st, f, c);
        cJSON_AddItemToArray(f->messages, c);
        sim_journal_message_locked(st, f, c);
    }
    emit_session_event_locked(st, "session.created", f);
    sim_changed_locked(st->core);
    return f;
}

sim_session *sim_session_restore_locked(sim_storage *st, const char *id, const char *parent_id, const char *title,
                                        const char *directory, int64_t created, int64_t updated)
{
    if (!id || sim_find_locked(st, id))
        return NULL;
    sim_session *s = session_alloc_locked(st, id, parent_id, title, directory);
    s->created = created;
    s->updated = updated > created ? updated : created;
    return s;
}

void sim_session_forget_locked(sim_storage *st, sim_session *s)
{
    if (s->deleted)
        st->ndeleted--;
    discard_locked(st, s);
}

/* store.c — sessions and their messages, in OpenCode's JSON shapes. */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: ids only need to look random and differ. */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

char *sim_new_id_locked(sim_host *h, const char *prefix)
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    /* Like OpenCode: a time-based part that increases (so ids sort by
     * creation), then random characters. */
    uint64_t t = (uint64_t)sim_wall_ms(&h->core) << 12;
    if (t <= h->id_last)
        t = h->id_last + 1;
    h->id_last = t;
    char rnd[11];
    for (int i = 0; i < 10; i++)
        rnd[i] = b62[rng_next(&h->id_rng) % 62];
    rnd[10] = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s_%012llx%s", prefix, (unsigned long long)(t & 0xffffffffffffull), rnd);
    return sim_strdup(buf);
}

static size_t hash_str(const char *s)
{
    size_t x = 1469598103934665603ull;
    for (; *s; s++)
        x = (x ^ (unsigned char)*s) * 1099511628211ull;
    return x;
}

sim_session *sim_find_locked(sim_host *h, const char *id)
{
    if (!id)
        return NULL;
    for (sim_session *s = h->buckets[hash_str(id) % h->nbuckets]; s; s = s->hnext)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

sim_session *sim_find_live_locked(sim_host *h, const char *id)
{
    sim_session *s = sim_find_locked(h, id);
    return s && !s->deleted ? s : NULL;
}

static void rehash(sim_host *h)
{
    size_t nb = h->nbuckets * 2;
    sim_session **b = sim_xcalloc(nb, sizeof *b);
    for (sim_session *s = h->s_first; s; s = s->next) {
        size_t i = hash_str(s->id) % nb;
        s->hnext = b[i];
        b[i] = s;
    }
    free(h->buckets);
    h->buckets = b;
    h->nbuckets = nb;
}

cJSON *sim_session_info_locked(const sim_session *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", s->id);
    if (s->parent_id)
        cJSON_AddStringToObject(o, "parentID", s->parent_id);
    cJSON_AddStringToObject(o, "title", s->title);
    cJSON_AddStringToObject(o, "directory", ".");
    cJSON *t = cJSON_AddObjectToObject(o, "time");
    cJSON_AddNumberToObject(t, "created", (double)s->created);
    cJSON_AddNumberToObject(t, "updated", (double)s->updated);
    return o;
}

static sim_session *session_alloc_locked(sim_host *h, const char *parent_id, const char *title)
{
    sim_session *s = sim_xcalloc(1, sizeof *s);
    s->id = sim_new_id_locked(h, "ses");
    s->parent_id = sim_strdup(parent_id);
    if (title && *title) {
        s->title = sim_strdup(title);
    } else {
        /* OpenCode's default titles. */
        char buf[64];
        snprintf(buf, sizeof buf, "%s session - %lld", parent_id ? "Child" : "New",
                 (long long)sim_wall_ms(&h->core));
        s->title = sim_strdup(buf);
    }
    s->created = s->updated = sim_wall_ms(&h->core);
    s->messages = cJSON_CreateArray();
    s->denied = cJSON_CreateObject();
    s->heap_idx = -1;
    if (h->nsessions + 1 > h->nbuckets)
        rehash(h);
    size_t i = hash_str(s->id) % h->nbuckets;
    s->hnext = h->buckets[i];
    h->buckets[i] = s;
    s->prev = h->s_last;
    if (h->s_last)
        h->s_last->next = s;
    else
        h->s_first = s;
    h->s_last = s;
    h->nsessions++;
    return s;
}

static void emit_session_event_locked(sim_host *h, const char *type, const sim_session *s)
{
    cJSON *props = cJSON_CreateObject();
    cJSON_AddStringToObject(props, "sessionID", s->id);
    cJSON_AddItemToObject(props, "info", sim_session_info_locked(s));
    sim_emit_props_locked(&h->core, type, props);
}

sim_session *sim_session_create_locked(sim_host *h, const char *parent_id, const char *title)
{
    if (parent_id && !sim_find_live_locked(h, parent_id))
        return NULL;
    sim_session *s = session_alloc_locked(h, parent_id, title);
    emit_session_event_locked(h, "session.created", s);
    sim_changed_locked(&h->core);
    return s;
}

static void session_free(sim_session *s)
{
    free(s->id);
    free(s->parent_id);
    free(s->title);
    cJSON_Delete(s->messages);
    cJSON_Delete(s->denied);
    free(s->model_input);
    free(s);
}

static void unlink_locked(sim_host *h, sim_session *s)
{
    sim_session **pp = &h->buckets[hash_str(s->id) % h->nbuckets];
    while (*pp != s)
        pp = &(*pp)->hnext;
    *pp = s->hnext;
    if (s->prev)
        s->prev->next = s->next;
    else
        h->s_first = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        h->s_last = s->prev;
    h->nsessions--;
}

void sim_session_delete_locked(sim_host *h, sim_session *s)
{
    /* Children first, each with its own event, as OpenCode does. Restart the
     * scan after each recursive delete: it may have removed later entries. */
    for (;;) {
        sim_session *c = h->s_first;
        while (c && (c->deleted || !(c->parent_id && strcmp(c->parent_id, s->id) == 0)))
            c = c->next;
        if (!c)
            break;
        sim_session_delete_locked(h, c);
    }
    emit_session_event_locked(h, "session.deleted", s);
    if (s->busy) {
        /* As OpenCode: deleting a session does not stop its running turn. It
         * is gone for every lookup but still busy in the status map, and an
         * abort still ends it. Freed with the host. */
        s->deleted = 1;
        h->ndeleted++;
        sim_changed_locked(&h->core);
        return;
    }
    sim_agent_forget_locked(h, s);
    unlink_locked(h, s);
    session_free(s);
    sim_changed_locked(&h->core);
}

void sim_sessions_free_locked(sim_host *h)
{
    while (h->s_first) {
        sim_session *s = h->s_first;
        sim_agent_forget_locked(h, s);
        unlink_locked(h, s);
        session_free(s);
    }
}

/* Give a copied message (and its parts) new ids in session s. */
static void rebase_message_locked(sim_host *h, sim_session *s, cJSON *msg)
{
    cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    char *mid = sim_new_id_locked(h, "msg");
    cJSON_ReplaceItemInObjectCaseSensitive(info, "id", cJSON_CreateString(mid));
    cJSON_ReplaceItemInObjectCaseSensitive(info, "sessionID", cJSON_CreateString(s->id));
    cJSON *part;
    cJSON_ArrayForEach(part, cJSON_GetObjectItemCaseSensitive(msg, "parts"))
    {
        char *pid = sim_new_id_locked(h, "prt");
        cJSON_ReplaceItemInObjectCaseSensitive(part, "id", cJSON_CreateString(pid));
        cJSON_ReplaceItemInObjectCaseSensitive(part, "sessionID", cJSON_CreateString(s->id));
        cJSON_ReplaceItemInObjectCaseSensitive(part, "messageID", cJSON_CreateString(mid));
        free(pid);
    }
    free(mid);
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
        if (sscanf(last, " (fork #%d%c%n", &n, &close, &consumed) == 2 && close == ')' &&
            last[consumed] == 0)
            keep = (size_t)(last - title);
        else
            n = 0;
    }
    size_t len = keep + 32;
    char *t = sim_xmalloc(len);
    snprintf(t, len, "%.*s (fork #%d)", (int)keep, title, n + 1);
    return t;
}

sim_session *sim_session_fork_locked(sim_host *h, sim_session *s, const char *message_id)
{
    char *title = fork_title(s->title);
    sim_session *f = session_alloc_locked(h, NULL, title);
    free(title);
    cJSON *m;
    cJSON_ArrayForEach(m, s->messages)
    {
        cJSON *info = cJSON_GetObjectItemCaseSensitive(m, "info");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "id"));
        if (message_id && id && strcmp(id, message_id) == 0)
            break;
        cJSON *c = cJSON_Duplicate(m, 1);
        rebase_message_locked(h, f, c);
        cJSON_AddItemToArray(f->messages, c);
    }
    emit_session_event_locked(h, "session.created", f);
    sim_changed_locked(&h->core);
    return f;
}

void sim_session_append_locked(sim_host *h, sim_session *s, cJSON *msg)
{
    cJSON_AddItemToArray(s->messages, msg);
    s->updated = sim_wall_ms(&h->core);
    sim_changed_locked(&h->core);
}

cJSON *sim_session_messages_locked(const sim_session *s, int limit)
{
    int n = cJSON_GetArraySize(s->messages);
    int skip = (limit > 0 && limit < n) ? n - limit : 0;
    cJSON *out = cJSON_CreateArray();
    int i = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, s->messages)
    {
        if (i++ >= skip)
            cJSON_AddItemToArray(out, cJSON_Duplicate(m, 1));
    }
    return out;
}

char *sim_prompt_text(const cJSON *body)
{
    size_t len = 0, cap = 64;
    char *t = sim_xmalloc(cap);
    t[0] = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(body, "parts"))
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "text"));
        if (!type || strcmp(type, "text") != 0 || !text)
            continue;
        size_t n = strlen(text);
        if (len + n + 2 > cap) {
            cap = (len + n + 2) * 2;
            t = sim_xrealloc(t, cap);
        }
        if (len)
            t[len++] = '\n';
        memcpy(t + len, text, n + 1);
        len += n;
    }
    return t;
}

cJSON *sim_user_message_locked(sim_host *h, sim_session *s, const cJSON *body)
{
    char *mid = sim_new_id_locked(h, "msg");
    cJSON *msg = cJSON_CreateObject();
    cJSON *info = cJSON_AddObjectToObject(msg, "info");
    cJSON_AddStringToObject(info, "id", mid);
    cJSON_AddStringToObject(info, "sessionID", s->id);
    cJSON_AddStringToObject(info, "role", "user");
    cJSON *t = cJSON_AddObjectToObject(info, "time");
    cJSON_AddNumberToObject(t, "created", (double)sim_wall_ms(&h->core));
    const char *agent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "agent"));
    cJSON_AddStringToObject(info, "agent", agent ? agent : "build");
    cJSON *parts = cJSON_AddArrayToObject(msg, "parts");
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(body, "parts"))
    {
        cJSON *c = cJSON_Duplicate(p, 1);
        char *pid = sim_new_id_locked(h, "prt");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "id");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "sessionID");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "messageID");
        cJSON_AddStringToObject(c, "id", pid);
        cJSON_AddStringToObject(c, "sessionID", s->id);
        cJSON_AddStringToObject(c, "messageID", mid);
        cJSON_AddItemToArray(parts, c);
        free(pid);
    }
    free(mid);
    return msg;
}

/* ---- the user's view (simhost.h) ---------------------------------------- */

char *sim_session_new(sim_host *h, const char *parent_id, const char *title)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_session_create_locked(h, parent_id, title);
    char *id = s ? sim_strdup(s->id) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return id;
}

int sim_session_delete(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(h, session_id);
    if (s)
        sim_session_delete_locked(h, s);
    pthread_mutex_unlock(&h->core.mu);
    return s ? 0 : -ENOENT;
}

int sim_session_exists(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    int r = sim_find_live_locked(h, session_id) != NULL;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

int sim_session_busy(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    int r = s && s->busy;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

char *sim_session_messages_json(sim_host *h, const char *session_id)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    if (s) {
        cJSON *m = sim_session_messages_locked(s, 0);
        out = sim_print(m);
        cJSON_Delete(m);
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

int sim_session_message_count(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    int n = s ? cJSON_GetArraySize(s->messages) : -1;
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

char *sim_session_message_text(sim_host *h, const char *session_id, int n)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    if (s) {
        int count = cJSON_GetArraySize(s->messages);
        int i = n < 0 ? count + n : n;
        if (i >= 0 && i < count)
            out = sim_prompt_text(cJSON_GetArrayItem(s->messages, i));
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

char *sim_session_get_json(sim_host *h, const char *session_id)
{
    char *out = NULL;
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_live_locked(h, session_id);
    if (s) {
        cJSON *j = sim_session_info_locked(s);
        out = sim_print(j);
        cJSON_Delete(j);
    }
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

size_t sim_session_count(sim_host *h)
{
    pthread_mutex_lock(&h->core.mu);
    size_t n = h->nsessions - h->ndeleted;
    pthread_mutex_unlock(&h->core.mu);
    return n;
}

int sim_session_tool_denied(sim_host *h, const char *session_id, const char *tool)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    int r = -1;
    if (s)
        r = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->denied, tool)) ? 1 : 0;
    pthread_mutex_unlock(&h->core.mu);
    return r;
}

char *sim_session_model_input(sim_host *h, const char *session_id)
{
    pthread_mutex_lock(&h->core.mu);
    sim_session *s = sim_find_locked(h, session_id);
    char *out = s ? sim_strdup(s->model_input) : NULL;
    pthread_mutex_unlock(&h->core.mu);
    return out;
}

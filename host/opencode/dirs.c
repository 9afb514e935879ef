/*
 * dirs.c — sessions working in another directory (ABI 1.5). OpenCode keeps
 * an instance per directory: its own event stream, status map and plugin
 * copies. A session created with ?directory=<dir> lives in <dir>'s instance,
 * so this instance's event hook and status map never show it. Here:
 * session_create_in, directory_watch (ocbg.js's watcher follows the
 * directory's /event stream and feeds this instance's event hook), the
 * watched directories' status maps (merged into session_status), and which
 * session works where (session_abort names the directory: once the parent
 * is deleted the child's row is gone, and an abort by id alone reaches the
 * wrong instance).
 */
#include "adapter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The directories any adapter of this process watched (or created a session
 * in): the folders of tasks, each with the adapter that claimed it last (its
 * owner). OpenCode loads the plugins again for each directory's instance,
 * so watching one starts another copy of ocbg there (init() with that
 * directory); that copy starts no plugin and passes its tool calls to the
 * owner (dirs_owner_of). Kept for the life of the process, as adapters are:
 * an instance made there later (a request naming an ended task's session)
 * is a task's folder still. */
typedef struct claimed_dir {
    char *dir;
    adapter *owner;
} claimed_dir;
static pthread_mutex_t claimed_mu = PTHREAD_MUTEX_INITIALIZER;
static claimed_dir *claimed;
static size_t nclaimed;

static void claim(adapter *ad, const char *dir)
{
    pthread_mutex_lock(&claimed_mu);
    size_t i = 0;
    while (i < nclaimed && strcmp(claimed[i].dir, dir) != 0)
        i++;
    claimed_dir *grown;
    if (i < nclaimed) {
        claimed[i].owner = ad; /* the newest owner: an older one may be disposed */
    } else if ((grown = realloc(claimed, (nclaimed + 1) * sizeof *grown)) != NULL) {
        claimed = grown;
        if ((claimed[nclaimed].dir = xstrdup(dir)) != NULL)
            claimed[nclaimed++].owner = ad;
    }
    pthread_mutex_unlock(&claimed_mu);
}

adapter *dirs_owner_of(const char *directory)
{
    adapter *owner = NULL;
    pthread_mutex_lock(&claimed_mu);
    for (size_t i = 0; directory && !owner && i < nclaimed; i++)
        if (strcmp(claimed[i].dir, directory) == 0)
            owner = claimed[i].owner;
    pthread_mutex_unlock(&claimed_mu);
    return owner;
}

int dirs_is_task_folder(const char *directory)
{
    return dirs_owner_of(directory) != NULL;
}

struct sess_dir {
    char *session;
    char *directory;
    sess_dir *next;
};

/* Whether dir names this instance's own directory (its events come by the hook). */
static int is_own(const adapter *ad, const char *dir)
{
    return ad->directory && strcmp(ad->directory, dir) == 0;
}

/* Index of dir among the watched ones, or -1. Under ad->mu. */
static long watched_index(const adapter *ad, const char *dir)
{
    for (size_t i = 0; i < ad->nwatched; i++)
        if (strcmp(ad->watched[i], dir) == 0)
            return (long)i;
    return -1;
}

/* Records that session works in dir (replacing what was known). */
static void remember(adapter *ad, const char *session, const char *dir)
{
    if (!session || !dir || is_own(ad, dir))
        return;
    pthread_mutex_lock(&ad->mu);
    sess_dir *e = ad->sess_dirs;
    while (e && strcmp(e->session, session) != 0)
        e = e->next;
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e && (e->session = xstrdup(session)) != NULL && (e->directory = xstrdup(dir)) != NULL) {
            e->next = ad->sess_dirs;
            ad->sess_dirs = e;
        } else if (e) {
            free(e->session);
            free(e);
        }
    } else if (strcmp(e->directory, dir) != 0) {
        char *d = xstrdup(dir);
        if (d) {
            free(e->directory);
            e->directory = d;
        }
    }
    pthread_mutex_unlock(&ad->mu);
}

void dirs_remember_session(adapter *ad, const char *session_json)
{
    cJSON *s = session_json ? cJSON_Parse(session_json) : NULL;
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(s, "id"));
    const char *dir = cJSON_GetStringValue(cJSON_GetObjectItem(s, "directory"));
    if (id && dir && dir[0] == '/')
        remember(ad, id, dir);
    cJSON_Delete(s);
}

char *dirs_of_session(adapter *ad, const char *session_id)
{
    char *dir = NULL;
    pthread_mutex_lock(&ad->mu);
    for (sess_dir *e = ad->sess_dirs; e && session_id; e = e->next)
        if (strcmp(e->session, session_id) == 0) {
            dir = xstrdup(e->directory);
            break;
        }
    pthread_mutex_unlock(&ad->mu);
    return dir;
}

int h_session_create_in(void *ud, const char *parent_id, const char *title, const char *directory, char **out)
{
    adapter *ad = ud;
    *out = NULL;
    if (!directory || directory[0] != '/') {
        *out = xstrdup("session_create_in: the directory must be an absolute path");
        return -EINVAL;
    }
    cJSON *o = cJSON_CreateObject(), *b = cJSON_AddObjectToObject(o, "body");
    if (parent_id)
        cJSON_AddStringToObject(b, "parentID", parent_id);
    if (title)
        cJSON_AddStringToObject(b, "title", title);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "query"), "directory", directory);
    if (!is_own(ad, directory))
        claim(ad, directory); /* before the request: it may create the instance */
    int rc = host_request(ad, "session", "create", o, 1, out);
    if (rc == 0) {
        cJSON *s = cJSON_Parse(*out);
        remember(ad, cJSON_GetStringValue(cJSON_GetObjectItem(s, "id")), directory);
        cJSON_Delete(s);
    }
    return rc;
}

/* watch(1): the watcher follows dir's stream; then dir is listed (once).
 * Not under dirs_mu: the stream may take seconds to connect (OpenCode boots
 * the instance first), and the polls' status requests must not wait for it;
 * they name only listed directories. */
static int watch_on(adapter *ad, const char *dir)
{
    pthread_mutex_lock(&ad->mu);
    long i = watched_index(ad, dir);
    pthread_mutex_unlock(&ad->mu);
    if (i >= 0)
        return 0;   /* idempotent (the stream reconnects by itself) */
    claim(ad, dir); /* before the stream's request, which creates the instance */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "directory", dir);
    cJSON_AddTrueToObject(o, "watch");
    char *msg = NULL;
    int rc = watcher_request(ad, "watch", o, &msg);
    if (rc != 0) {
        char *line = xprintf("ocbg: cannot follow the events of %s: %s", dir, msg ? msg : "failed");
        h_log(ad, OCP_LOG_WARN, line ? line : "ocbg: cannot follow a directory's events");
        free(line);
        free(msg);
        return -EIO;
    }
    free(msg);
    char *copy = xstrdup(dir), **grown = NULL;
    pthread_mutex_lock(&ad->mu);
    if (watched_index(ad, dir) >= 0) { /* a concurrent watch(1) listed it */
        grown = ad->watched;
    } else if (copy && (grown = realloc(ad->watched, (ad->nwatched + 1) * sizeof *grown)) != NULL) {
        ad->watched = grown;
        ad->watched[ad->nwatched++] = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&ad->mu);
    free(copy);
    if (grown)
        return 0;
    o = cJSON_CreateObject(); /* out of memory: not listed, so not followed either */
    cJSON_AddStringToObject(o, "directory", dir);
    cJSON_AddFalseToObject(o, "watch");
    watcher_request(ad, "watch", o, NULL);
    return -ENOMEM;
}

/* watch(0): unlisted, the stream stopped, then the instance disposed. Under dirs_mu. */
static int watch_off(adapter *ad, const char *dir)
{
    pthread_mutex_lock(&ad->mu);
    long i = watched_index(ad, dir);
    if (i >= 0) {
        free(ad->watched[i]);
        ad->watched[i] = ad->watched[--ad->nwatched];
    }
    pthread_mutex_unlock(&ad->mu);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "directory", dir);
    cJSON_AddFalseToObject(o, "watch");
    char *msg = NULL;
    int rc = watcher_request(ad, "watch", o, &msg);
    free(msg);
    msg = NULL;
    if (rc != 0 && i >= 0)
        return -EIO; /* the stream may still run: do not dispose under it */
    /* a folder already gone: a request naming it would create an instance there */
    struct stat st;
    if (stat(dir, &st) != 0)
        return 0;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "query"), "directory", dir);
    rc = host_request(ad, "instance", "dispose", o, 0, &msg);
    if (rc != 0) {
        char *line = xprintf("ocbg: cannot release the OpenCode instance of %s: %s", dir, msg ? msg : "failed");
        h_log(ad, OCP_LOG_WARN, line ? line : "ocbg: cannot release an OpenCode instance");
        free(line);
    }
    free(msg);
    return rc == 0 ? 0 : -EIO;
}

int h_directory_watch(void *ud, const char *directory, int watch)
{
    adapter *ad = ud;
    if (!directory || directory[0] != '/')
        return -EINVAL;
    if (is_own(ad, directory))
        return 0; /* the event hook and the status map have it already */
    if (on_js_thread(ad))
        return -EIO;
    if (watch)
        return watch_on(ad, directory);
    pthread_mutex_lock(&ad->dirs_mu);
    int rc = watch_off(ad, directory);
    pthread_mutex_unlock(&ad->dirs_mu);
    return rc;
}

/* Adds the entries of one directory's status map to map. */
static void merge_one(adapter *ad, cJSON *map, const char *dir)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "query"), "directory", dir);
    char *out = NULL;
    if (host_request(ad, "session", "status", o, 1, &out) == 0) {
        cJSON *m = cJSON_Parse(out), *e;
        cJSON_ArrayForEach (e, m) {
            if (e->string && !cJSON_HasObjectItem(map, e->string))
                cJSON_AddItemToObject(map, e->string, cJSON_Duplicate(e, 1));
        }
        cJSON_Delete(m);
    }
    free(out);
}

void dirs_status_merge(adapter *ad, cJSON *map)
{
    if (!cJSON_IsObject(map))
        return;
    pthread_mutex_lock(&ad->dirs_mu); /* no watch(0) while a request names a directory */
    pthread_mutex_lock(&ad->mu);
    size_t n = ad->nwatched;
    char **dirs = n ? calloc(n, sizeof *dirs) : NULL;
    for (size_t i = 0; dirs && i < n; i++)
        dirs[i] = xstrdup(ad->watched[i]);
    pthread_mutex_unlock(&ad->mu);
    for (size_t i = 0; dirs && i < n; i++) {
        if (dirs[i])
            merge_one(ad, map, dirs[i]);
        free(dirs[i]);
    }
    free(dirs);
    pthread_mutex_unlock(&ad->dirs_mu);
}

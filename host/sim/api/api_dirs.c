/* api_dirs.c — layer 3 (API): the host functions of ABI 1.5, a session
 * working in another folder: session_create_in and directory_watch, each in
 * the frame of api_frame.c (fault, record); and what tests read of the
 * folders. OpenCode 1.18 keeps an instance per folder: the storage routes a
 * folder's events and status by whether it is watched (storage_dirs.c). Uses
 * api_frame.c, api_calls.c, the storage and the core. */
#include "sim_api_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir without its trailing slashes ("/" stays), malloc'd: one folder, one
 * key, however the plugin spells its end. */
static char *dir_key(const char *dir)
{
    char *k = sim_strdup(dir);
    size_t n = strlen(k);
    while (n > 1 && k[n - 1] == '/')
        k[--n] = 0;
    return k;
}

/* Is dir the host's own folder (the process's working directory)? Then a
 * session created in it is one of the host's own, as in OpenCode, where
 * both are served by the same instance. */
static int is_own_dir(const char *dir)
{
    char cwd[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || !realpath(cwd, a) || !realpath(dir, b))
        return 0;
    return strcmp(a, b) == 0;
}

/* 0 when dir is an absolute path to an existing folder; else -EINVAL (not
 * absolute) or -ENOENT (missing), with *why (malloc'd). */
static int check_dir(const char *dir, char **why)
{
    struct stat st;
    if (!dir || dir[0] != '/') {
        *why = sim_api_msgf("directory must be an absolute path: %s", dir);
        return -EINVAL;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        *why = sim_api_msgf("No such directory: %s", dir);
        return -ENOENT;
    }
    return 0;
}

int sim_hf_session_create_in(void *ud, const char *parent_id, const char *title, const char *directory, char **out)
{
    sim_api *a = ud;
    cJSON *args = sim_api_create_args(parent_id, title);
    cJSON_AddStringToObject(args, "directory", directory ? directory : "");
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "session_create_in", parent_id, args, out, &t, &body);
    if (rc)
        return rc;
    char *res = NULL;
    rc = check_dir(directory, &res);
    if (rc == 0) {
        char *key = is_own_dir(directory) ? NULL : dir_key(directory);
        res = sim_api_new_session(a, parent_id, title, key, &rc);
        free(key);
    }
    sim_api_set_out(out, res);
    /* Recorded against the parent, as session_create. */
    return sim_api_finish(a, "session_create_in", parent_id, body, rc, t);
}

int sim_hf_directory_watch(void *ud, const char *directory, int watch)
{
    sim_api *a = ud;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "directory", directory ? directory : "");
    cJSON_AddNumberToObject(args, "watch", watch);
    int64_t t;
    char *body;
    int rc = sim_api_begin(a, "directory_watch", NULL, args, NULL, &t, &body);
    if (rc)
        return rc;
    char *why = NULL;
    if (watch != 0 && watch != 1) {
        rc = -EINVAL;
    } else if (watch == 1) {
        rc = check_dir(directory, &why);
    } else if (!directory || directory[0] != '/') {
        /* watch 0 of a folder already removed is fine: only its path counts. */
        rc = -EINVAL;
    }
    free(why);
    if (rc == 0) {
        char *key = dir_key(directory);
        pthread_mutex_lock(&a->core->mu);
        sim_dir_watch_locked(a->store, key, watch);
        sim_changed_locked(a->core);
        pthread_mutex_unlock(&a->core->mu);
        free(key);
    }
    return sim_api_finish(a, "directory_watch", NULL, body, rc, t);
}

size_t sim_api_released_touches(sim_api *a, const char *directory)
{
    char *key = directory ? dir_key(directory) : NULL;
    size_t n = 0;
    pthread_mutex_lock(&a->core->mu);
    for (const sim_dir *d = a->store->dirs; d; d = d->next)
        if (!key || strcmp(d->path, key) == 0)
            n += d->touches;
    pthread_mutex_unlock(&a->core->mu);
    free(key);
    return n;
}

int sim_api_dir_watched(sim_api *a, const char *directory)
{
    if (!directory)
        return 1;
    char *key = dir_key(directory);
    pthread_mutex_lock(&a->core->mu);
    const sim_dir *d = sim_dir_find_locked(a->store, key);
    int r = !d ? 0 : d->watched ? 1 : d->released ? -1 : 0;
    pthread_mutex_unlock(&a->core->mu);
    free(key);
    return r;
}

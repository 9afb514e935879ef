/* storage_dirs.c — layer 1 (storage): the folders sessions work in besides the
 * host's own (session_create_in), and whether the plugin follows each one
 * (directory_watch), as OpenCode's per-folder instances (see sim_storage.h).
 * Few folders, few sessions each: lists are searched in order. Uses the
 * core only. */
#include "sim_storage.h"

#include <stdlib.h>
#include <string.h>

sim_dir *sim_dir_find_locked(const sim_storage *st, const char *path)
{
    if (!path)
        return NULL;
    for (sim_dir *d = st->dirs; d; d = d->next)
        if (strcmp(d->path, path) == 0)
            return d;
    return NULL;
}

sim_dir *sim_dir_get_locked(sim_storage *st, const char *path)
{
    sim_dir *d = sim_dir_find_locked(st, path);
    if (d)
        return d;
    d = sim_xcalloc(1, sizeof *d);
    d->path = sim_strdup(path);
    d->sessions = cJSON_CreateArray();
    d->next = st->dirs;
    st->dirs = d;
    return d;
}

void sim_dir_watch_locked(sim_storage *st, const char *path, int watch)
{
    sim_dir *d = sim_dir_get_locked(st, path);
    d->watched = watch ? 1 : 0;
    /* Any watch 0 releases, also one of a folder this host never followed
     * (a plugin cleaning up after a restart): OpenCode disposes the instance
     * either way, and a later request would make it again. */
    d->released = watch ? 0 : 1;
}

int sim_dir_visible_locked(const sim_storage *st, const char *path)
{
    if (!path)
        return 1;
    const sim_dir *d = sim_dir_find_locked(st, path);
    return d && d->watched;
}

sim_dir *sim_dir_of_session_locked(const sim_storage *st, const char *id)
{
    if (!id)
        return NULL;
    for (sim_dir *d = st->dirs; d; d = d->next) {
        const cJSON *e;
        cJSON_ArrayForEach (e, d->sessions)
            if (cJSON_IsString(e) && strcmp(e->valuestring, id) == 0)
                return d;
    }
    return NULL;
}

void sim_dirs_free_locked(sim_storage *st)
{
    while (st->dirs) {
        sim_dir *d = st->dirs;
        st->dirs = d->next;
        free(d->path);
        cJSON_Delete(d->sessions);
        free(d);
    }
}

/*
 * map.h — a string-keyed hash map (open addressing, grows at load 3/4) whose
 * slots hold only the value: each value owns its key, and the function given
 * at map_init reads it (a task's id, a lane's name). A registry of many
 * tasks pays 8 bytes a slot, not the 16 of a {key, value} pair.
 * Ownership: the map holds values, never frees them; a value must keep its
 * key alive and unchanged while it is in the map (to change a key: map_del
 * under the old key, change it, map_put again). Not thread-safe: the
 * engine's lock (or the user's own) guards it.
 */
#ifndef OCBG_MAP_H
#define OCBG_MAP_H

#include <stddef.h>

/* The key value owns (never NULL for a value in the map). Pure: called on
 * every probe that meets value, and when the table grows or shifts. */
typedef const char *(*map_key_fn)(const void *value);

typedef struct map {
    void **buckets; /* nbuckets slots, a power of two; NULL: empty */
    size_t nbuckets;
    size_t count;
    map_key_fn key_of;
} map;

/* An empty map whose values' keys key_of reads. Aborts when out of memory
 * (as xmalloc). */
void map_init(map *m, map_key_fn key_of);
void map_free(map *m);                        /* frees the table, not the values */
void *map_get(const map *m, const char *key); /* NULL when absent (or key NULL) */
/* Adds value (not NULL) under key_of(value), replacing the value there with
 * an equal key. Aborts when out of memory (as xmalloc). */
void map_put(map *m, void *value);
void *map_del(map *m, const char *key); /* the removed value, or NULL */

/* Calls fn(key_of(value), value, arg) for every value; fn must not change
 * the map, but may free the value (its key is not read again). */
void map_each(const map *m, void (*fn)(const char *key, void *value, void *arg), void *arg);

#endif

/*
 * map.h — a string-keyed hash map (open addressing, grows at load 3/4).
 * Keys are borrowed: the caller keeps each key alive while it is in the map
 * (the registry keys entries by strings the entries own). Not thread-safe: the
 * engine's lock guards it.
 */
#ifndef OCBG_MAP_H
#define OCBG_MAP_H

#include <stddef.h>

typedef struct map_entry map_entry;
typedef struct map {
    map_entry *buckets; /* nbuckets slots, a power of two */
    size_t nbuckets;
    size_t count;
} map;

void map_init(map *m);
void map_free(map *m);                            /* frees the map, not the values */
void *map_get(const map *m, const char *key);     /* NULL when absent */
void map_put(map *m, const char *key, void *value); /* replaces an existing value */
void *map_del(map *m, const char *key);           /* the removed value, or NULL */

/* Calls fn for every entry; fn must not change the map. */
void map_each(const map *m, void (*fn)(const char *key, void *value, void *arg), void *arg);

#endif

/* map.c — see map.h. FNV-1a hashing; chains are short at load <= 1. */
#include "base/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

struct map_entry {
    const char *key;
    void *value;
    uint64_t hash;
    map_entry *next;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void map_init(map *m)
{
    m->nbuckets = 16;
    m->count = 0;
    m->buckets = xcalloc(m->nbuckets, sizeof *m->buckets);
}

void map_free(map *m)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        map_entry *e = m->buckets[i];
        while (e) {
            map_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
}

static map_entry **find_slot(const map *m, const char *key, uint64_t h)
{
    map_entry **slot = &m->buckets[h & (m->nbuckets - 1)];
    while (*slot && !((*slot)->hash == h && strcmp((*slot)->key, key) == 0))
        slot = &(*slot)->next;
    return slot;
}

void *map_get(const map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    map_entry *e = *find_slot(m, key, hash_str(key));
    return e ? e->value : NULL;
}

static void grow(map *m)
{
    size_t n = m->nbuckets * 2;
    map_entry **b = xcalloc(n, sizeof *b);
    for (size_t i = 0; i < m->nbuckets; i++) {
        map_entry *e = m->buckets[i];
        while (e) {
            map_entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

void map_put(map *m, const char *key, void *value)
{
    uint64_t h = hash_str(key);
    map_entry **slot = find_slot(m, key, h);
    if (*slot) {
        (*slot)->key = key;
        (*slot)->value = value;
        return;
    }
    map_entry *e = xmalloc(sizeof *e);
    e->key = key;
    e->value = value;
    e->hash = h;
    e->next = NULL;
    *slot = e;
    if (++m->count > m->nbuckets)
        grow(m);
}

void *map_del(map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    map_entry **slot = find_slot(m, key, hash_str(key));
    map_entry *e = *slot;
    if (!e)
        return NULL;
    void *v = e->value;
    *slot = e->next;
    free(e);
    m->count--;
    return v;
}

void map_each(const map *m, void (*fn)(const char *key, void *value, void *arg), void *arg)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        for (map_entry *e = m->buckets[i]; e; e = e->next)
            fn(e->key, e->value, arg);
}

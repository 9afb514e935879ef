/* map.c — see map.h. FNV-1a hashing, open addressing with linear probing:
 * no allocation per entry (a registry of many tasks pays 16 bytes a slot). */
#include "base/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* One slot of the open-addressed table: key NULL when empty. */
struct map_entry {
    const char *key;
    void *value;
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
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
}

static size_t home_of(const map *m, const char *key)
{
    /* FNV's low bits alone cluster for keys that differ in their last
     * characters (ids in sequence): the high bits are folded in. */
    uint64_t h = hash_str(key);
    h ^= h >> 32;
    h *= 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 32) & (m->nbuckets - 1);
}

/* key's slot, or the empty slot where it would go (linear probing; the
 * table is never full). */
static map_entry *find_slot(const map *m, const char *key)
{
    size_t mask = m->nbuckets - 1;
    for (size_t i = home_of(m, key);; i = (i + 1) & mask) {
        map_entry *e = &m->buckets[i];
        if (!e->key || strcmp(e->key, key) == 0)
            return e;
    }
}

void *map_get(const map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    map_entry *e = find_slot(m, key);
    return e->key ? e->value : NULL;
}

static void grow(map *m)
{
    map_entry *old = m->buckets;
    size_t n = m->nbuckets;
    m->nbuckets = n * 2;
    m->buckets = xcalloc(m->nbuckets, sizeof *m->buckets);
    for (size_t i = 0; i < n; i++)
        if (old[i].key)
            *find_slot(m, old[i].key) = old[i];
    free(old);
}

void map_put(map *m, const char *key, void *value)
{
    map_entry *e = find_slot(m, key);
    if (!e->key) {
        /* Grown at 3/4 full: probes stay short, the table is never full. */
        if ((m->count + 1) * 4 > m->nbuckets * 3) {
            grow(m);
            e = find_slot(m, key);
        }
        m->count++;
    }
    e->key = key;
    e->value = value;
}

void *map_del(map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    map_entry *e = find_slot(m, key);
    if (!e->key)
        return NULL;
    void *v = e->value;
    /* Backward-shift deletion: each later entry of the run that could sit
     * in the hole moves into it, so lookups never need tombstones. */
    size_t mask = m->nbuckets - 1, hole = (size_t)(e - m->buckets);
    for (size_t i = (hole + 1) & mask; m->buckets[i].key; i = (i + 1) & mask) {
        size_t home = home_of(m, m->buckets[i].key);
        /* Movable when its home is not in (hole, i], cyclically. */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->buckets[hole] = m->buckets[i];
            hole = i;
        }
    }
    m->buckets[hole].key = NULL;
    m->buckets[hole].value = NULL;
    m->count--;
    return v;
}

void map_each(const map *m, void (*fn)(const char *key, void *value, void *arg), void *arg)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        if (m->buckets[i].key)
            fn(m->buckets[i].key, m->buckets[i].value, arg);
}

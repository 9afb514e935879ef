/* map.c — see map.h. FNV-1a hashing, open addressing with linear probing:
 * no allocation per entry, and a slot is the value alone (8 bytes): its key
 * is read through the value (m->key_of), one pointer hop per probe. */
#include "base/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void map_init(map *m, map_key_fn key_of)
{
    m->nbuckets = 16;
    m->count = 0;
    m->key_of = key_of;
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
static void **find_slot(const map *m, const char *key)
{
    size_t mask = m->nbuckets - 1;
    for (size_t i = home_of(m, key);; i = (i + 1) & mask) {
        void **slot = &m->buckets[i];
        if (!*slot || strcmp(m->key_of(*slot), key) == 0)
            return slot;
    }
}

void *map_get(const map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    return *find_slot(m, key);
}

static void grow(map *m)
{
    void **old = m->buckets;
    size_t n = m->nbuckets;
    m->nbuckets = n * 2;
    m->buckets = xcalloc(m->nbuckets, sizeof *m->buckets);
    for (size_t i = 0; i < n; i++)
        if (old[i])
            *find_slot(m, m->key_of(old[i])) = old[i];
    free(old);
}

void map_put(map *m, void *value)
{
    const char *key = m->key_of(value);
    void **slot = find_slot(m, key);
    if (!*slot) {
        /* Grown at 3/4 full: probes stay short, the table is never full. */
        if ((m->count + 1) * 4 > m->nbuckets * 3) {
            grow(m);
            slot = find_slot(m, key);
        }
        m->count++;
    }
    *slot = value;
}

void *map_del(map *m, const char *key)
{
    if (!key || !m->buckets)
        return NULL;
    void **slot = find_slot(m, key);
    void *v = *slot;
    if (!v)
        return NULL;
    /* Backward-shift deletion: each later entry of the run that could sit
     * in the hole moves into it, so lookups never need tombstones. */
    size_t mask = m->nbuckets - 1, hole = (size_t)(slot - m->buckets);
    for (size_t i = (hole + 1) & mask; m->buckets[i]; i = (i + 1) & mask) {
        size_t home = home_of(m, m->key_of(m->buckets[i]));
        /* Movable when its home is not in (hole, i], cyclically. */
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->buckets[hole] = m->buckets[i];
            hole = i;
        }
    }
    m->buckets[hole] = NULL;
    m->count--;
    return v;
}

void map_each(const map *m, void (*fn)(const char *key, void *value, void *arg), void *arg)
{
    for (size_t i = 0; i < m->nbuckets; i++)
        if (m->buckets[i])
            fn(m->key_of(m->buckets[i]), m->buckets[i], arg);
}

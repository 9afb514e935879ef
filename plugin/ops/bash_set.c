/* bash_set.c — see bash_set.h. */
#include "ops/bash_set.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/util.h"

static uint64_t hash_seed;
static pthread_once_t hash_seed_once = PTHREAD_ONCE_INIT;

static void make_hash_seed(void)
{
    if (getrandom(&hash_seed, sizeof hash_seed, GRND_NONBLOCK) != (ssize_t)sizeof hash_seed)
        hash_seed = (uint64_t)wall_ms() ^ (uint64_t)(uintptr_t)&hash_seed;
}

static uint64_t hash_of(const char *s, size_t len)
{
    uint64_t h = fnv64(FNV64_SEED ^ hash_seed, s, len);
    h ^= h >> 33; /* murmur3's finalizer: every bit of h reaches the slot's */
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

void bash_set_init(bash_set *set)
{
    pthread_once(&hash_seed_once, make_hash_seed);
    set->count = 0;
    set->cap = 64;
    set->slots = xcalloc(set->cap, sizeof *set->slots);
}

void bash_set_free(bash_set *set)
{
    free(set->slots);
    set->slots = NULL;
    set->count = set->cap = 0;
}

/* s's slot, or the empty slot where it would go (the table is never full). */
static bash_set_entry *slot_of(bash_set_entry *slots, size_t cap, const char *s, size_t len, uint64_t hash)
{
    for (size_t i = hash & (cap - 1);; i = (i + 1) & (cap - 1)) {
        bash_set_entry *e = &slots[i];
        if (!e->s || (e->hash == hash && e->len == len && memcmp(e->s, s, len) == 0))
            return e;
    }
}

static bool add_hashed(bash_set *set, const char *s, size_t len, uint64_t hash)
{
    bash_set_entry *e = slot_of(set->slots, set->cap, s, len, hash);
    if (e->s)
        return false;
    *e = (bash_set_entry){s, len, hash};
    if (++set->count * 4 > set->cap * 3) {
        bash_set_entry *old = set->slots;
        size_t old_cap = set->cap;
        set->cap *= 2;
        set->slots = xcalloc(set->cap, sizeof *set->slots);
        for (size_t i = 0; i < old_cap; i++)
            if (old[i].s)
                *slot_of(set->slots, set->cap, old[i].s, old[i].len, old[i].hash) = old[i];
        free(old);
    }
    return true;
}

bool bash_set_add(bash_set *set, const char *s, size_t len)
{
    return add_hashed(set, s, len, hash_of(s, len));
}

void bash_set_append(cJSON *arr, bash_set *seen, const char *s, size_t len)
{
    uint64_t hash = hash_of(s, len);
    if (slot_of(seen->slots, seen->cap, s, len, hash)->s)
        return;
    char *copy = xstrndup(s, len);
    cJSON *item = cJSON_CreateString(copy);
    free(copy);
    if (!item)
        abort(); /* out of memory, as xmalloc: an entry dropped would ask less */
    add_hashed(seen, item->valuestring, len, hash);
    cJSON_AddItemToArray(arr, item);
}

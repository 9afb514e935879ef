/* storage_ids.c — layer 1 (storage), its lowest file: the ids of sessions,
 * messages, parts and calls, as OpenCode makes them (see sim_storage.h). Uses
 * the core only. */
#include "sim_storage.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

void sim_storage_ids_init(sim_storage *st)
{
    /* Ids need only be unique within a host; a seed from time and pid keeps
     * two hosts in one process from sharing suffixes. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    st->id_rng =
        ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)st;
    if (!st->id_rng)
        st->id_rng = 0x9e3779b97f4a7c15ull;
}

char *sim_new_id_locked(sim_storage *st, const char *prefix)
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    /* Like OpenCode: a time-based part that increases (so ids sort by
     * creation), then random characters. */
    uint64_t t = (uint64_t)sim_wall_ms(st->core) << 12;
    if (t <= st->id_last)
        t = st->id_last + 1;
    st->id_last = t;
    char rnd[11];
    for (int i = 0; i < 10; i++)
        rnd[i] = b62[rng_next(&st->id_rng) % 62];
    rnd[10] = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s_%012llx%s", prefix, (unsigned long long)(t & 0xffffffffffffull), rnd);
    return sim_strdup(buf);
}

void sim_storage_ids_seen_locked(sim_storage *st, const char *id)
{
    /* "<prefix>_<12 hex>…": the hex is the low 48 bits of the id's time part
     * (see sim_new_id_locked). Put the high bits back from the time part
     * now (one step lower when that would put it more than half the range
     * in the future: a clock advanced by a test stays ahead), so that
     * id_last orders it with the ids made from now on. */
    const char *us = id ? strchr(id, '_') : NULL;
    if (!us || us == id || strlen(us + 1) < 12)
        return;
    uint64_t low = 0;
    for (int i = 1; i <= 12; i++) {
        int c = (unsigned char)us[i];
        int v = isdigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (v < 0)
            return;
        low = (low << 4) | (uint64_t)v;
    }
    const uint64_t mask = 0xffffffffffffull;
    uint64_t now = (uint64_t)sim_wall_ms(st->core) << 12;
    uint64_t t = (now & ~mask) | low;
    if (t > now && t - now > (mask >> 1) && t > mask)
        t -= mask + 1;
    if (t > st->id_last)
        st->id_last = t;
}

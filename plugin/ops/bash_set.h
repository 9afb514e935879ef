/*
 * bash_set.h — a set of strings, for ops/bash_asks.c: an answer keeps the
 * first of equal entries, and a command line may hold tens of thousands of
 * them, so each is looked up in a hash table rather than compared with
 * every other. Open addressing, grown at 3/4 full. The hash is seeded at
 * random once per process: a command line is the model's text, and with a
 * fixed hash one could be written whose entries all share one chain.
 *
 * The set does not own its strings: each must stay alive and unchanged
 * while the set lives. Not thread-safe (one set per call); any thread.
 * Allocation failure aborts, as xmalloc.
 */
#ifndef OCBG_BASH_SET_H
#define OCBG_BASH_SET_H

#include "base/face_guard.h"
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bash_set_entry {
    const char *s; /* NULL: an empty slot */
    size_t len;
    uint64_t hash;
} bash_set_entry;

typedef struct bash_set {
    bash_set_entry *slots;
    size_t count, cap; /* cap: a power of two */
} bash_set;

void bash_set_init(bash_set *set);
void bash_set_free(bash_set *set); /* the table, not the strings */

/* Adds s[0..len) unless an equal string is in the set: true when added. */
bool bash_set_add(bash_set *set, const char *s, size_t len);

/* A copy of s[0..len) appended to the cJSON array arr, whose strings the
 * set `seen` holds (the copy is added to it), unless an equal one is there. */
void bash_set_append(cJSON *arr, bash_set *seen, const char *s, size_t len);

#endif

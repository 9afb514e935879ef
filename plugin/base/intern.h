/*
 * intern.h — one shared copy of each distinct short name (agent names: a
 * host has a handful), so that thousands of tasks do not each allocate
 * their own. The copies live until the process exits (they are never
 * freed: a name's set is small and bounded by the host's agents).
 */
#ifndef OCBG_INTERN_H
#define OCBG_INTERN_H

/* The shared copy of s (equal strings give the same pointer), or NULL for
 * NULL. Never fails (aborts when out of memory, as xmalloc). Any thread:
 * it takes a lock of its own. The caller must not free it. */
const char *intern(const char *s);

#endif

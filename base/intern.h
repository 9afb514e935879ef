/*
 * intern.h — one shared copy of each distinct short name (agent names: a
 * host has a handful), so that thousands of tasks do not each allocate
 * their own. The copies last while any user holds the table
 * (intern_retain/intern_release: each registry does): a plugin unloaded by
 * its host leaves nothing behind.
 */
#ifndef OCBG_INTERN_H
#define OCBG_INTERN_H

/* The shared copy of s (equal strings give the same pointer), or NULL for
 * NULL. Never fails (aborts when out of memory, as xmalloc). Any thread:
 * it takes a lock of its own. The caller must not free it. */
const char *intern(const char *s);

/* A user of the shared copies begins / ends: the last release frees every
 * copy (no one may use them after). Any thread. */
void intern_retain(void);
void intern_release(void);

#endif

/* intern.c — see intern.h. */
#include "base/intern.h"
#include "base/lock.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/map.h"
#include "base/util.h"

static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static map names; /* the shared copies, each its own key */
static unsigned users;

static const char *name_of(const void *copy)
{
    return copy;
}

static void free_name(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    free(value);
}

void intern_retain(void)
{
    lock_acquire(&intern_mu);
    users++;
    lock_release(&intern_mu);
}

void intern_release(void)
{
    lock_acquire(&intern_mu);
    if (users > 0 && --users == 0 && names.buckets) {
        map_each(&names, free_name, NULL);
        map_free(&names);
    }
    lock_release(&intern_mu);
}

const char *intern(const char *s)
{
    if (!s)
        return NULL;
    lock_acquire(&intern_mu);
    if (!names.buckets)
        map_init(&names, name_of);
    char *copy = map_get(&names, s);
    if (!copy) {
        copy = xstrdup(s);
        map_put(&names, copy);
    }
    lock_release(&intern_mu);
    return copy;
}

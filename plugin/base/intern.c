/* intern.c — see intern.h. */
#include "base/intern.h"

#include <pthread.h>

#include "base/map.h"
#include "base/util.h"

static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;
static map names; /* key and value: the shared copy */

const char *intern(const char *s)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&intern_mu);
    if (!names.buckets)
        map_init(&names);
    char *copy = map_get(&names, s);
    if (!copy) {
        copy = xstrdup(s);
        map_put(&names, copy, copy);
    }
    pthread_mutex_unlock(&intern_mu);
    return copy;
}

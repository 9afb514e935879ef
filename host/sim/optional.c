/* optional.c — a host that lacks an optional host function (a host that
 * cannot fork, or has no clock), for the plugin's fallbacks to be tested. */
#include <string.h>

#include "sim_internal.h"

int sim_without(sim_host *h, const char *fn)
{
    int rc = 0;
    pthread_mutex_lock(&h->core.mu);
    if (strcmp(fn, "session_fork") == 0)
        h->table.session_fork = NULL;
    else if (strcmp(fn, "now_ms") == 0)
        h->table.now_ms = NULL;
    else if (strcmp(fn, "ask_permission") == 0)
        h->table.ask_permission = NULL;
    else
        rc = -1;
    pthread_mutex_unlock(&h->core.mu);
    return rc;
}

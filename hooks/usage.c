/* usage.c — see usage.h. */
#include "hooks/usage.h"

#include <string.h>

#include "base/util.h"

uint64_t usage_tokens(const usage *u)
{
    return u->input + u->output + u->reasoning;
}

bool usage_is_zero(const usage *u)
{
    return usage_tokens(u) == 0 && u->cache_read == 0 && u->cache_write == 0 && !(u->cost > 0);
}

void usage_add(usage *acc, const usage *d)
{
    acc->input += d->input;
    acc->output += d->output;
    acc->reasoning += d->reasoning;
    acc->cache_read += d->cache_read;
    acc->cache_write += d->cache_write;
    acc->cost += d->cost;
}

/* How much *now grew over *seen; *seen becomes the larger of the two. */
static uint64_t grew(uint64_t *seen, uint64_t now)
{
    uint64_t d = now > *seen ? now - *seen : 0;
    if (now > *seen)
        *seen = now;
    return d;
}

static double grew_cost(double *seen, double now)
{
    double d = now > *seen ? now - *seen : 0;
    if (now > *seen)
        *seen = now;
    return d;
}

usage usage_tracker_note(usage_tracker *tr, const char *message_id, const usage *u)
{
    uint64_t id = fnv64(FNV64_SEED, message_id, strlen(message_id));
    if (id == 0)
        id = 1;
    unsigned slot = USAGE_RECENT_MESSAGES;
    for (unsigned i = 0; i < USAGE_RECENT_MESSAGES; i++)
        if (tr->recent[i].id == id)
            slot = i;
    if (slot == USAGE_RECENT_MESSAGES) {
        /* a new message: it takes the oldest slot */
        slot = tr->next;
        tr->next = (tr->next + 1) % USAGE_RECENT_MESSAGES;
        memset(&tr->recent[slot], 0, sizeof tr->recent[slot]);
        tr->recent[slot].id = id;
    }
    usage *seen = &tr->recent[slot].seen, d;
    d.input = grew(&seen->input, u->input);
    d.output = grew(&seen->output, u->output);
    d.reasoning = grew(&seen->reasoning, u->reasoning);
    d.cache_read = grew(&seen->cache_read, u->cache_read);
    d.cache_write = grew(&seen->cache_write, u->cache_write);
    d.cost = grew_cost(&seen->cost, u->cost);
    usage_add(&tr->total, &d);
    return d;
}

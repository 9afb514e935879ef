/*
 * usage.h — what a task's model calls used: tokens (input, output,
 * reasoning, cache read, cache write) and cost in US dollars, as the host
 * reports them per assistant message.
 *
 * A host reports a message's running totals, several times per message (and
 * an event may come twice or late). The tracker keeps the totals last seen
 * for the task's few newest messages and adds only what grew, so a repeat or
 * an older update never counts twice.
 * Pure data: no threads, no host calls. The engine's lock guards a task's
 * tracker like the rest of the task.
 */
#ifndef OCBG_USAGE_H
#define OCBG_USAGE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct usage {
    uint64_t input, output, reasoning, cache_read, cache_write;
    double cost; /* USD */
} usage;

/* Messages whose last-seen totals a tracker keeps: a task's messages come one
 * after another, so an update of an older one than these does not come. */
#define USAGE_RECENT_MESSAGES 4

typedef struct usage_tracker {
    usage total;
    struct {
        uint64_t id; /* hash of the message id; 0 = empty slot */
        usage seen;
    } recent[USAGE_RECENT_MESSAGES];
    unsigned next; /* the slot to reuse next */
} usage_tracker;

/* The tokens a budget counts and a report totals: input + output +
 * reasoning (cache reads and writes are shown apart; their price is in the
 * cost). */
uint64_t usage_tokens(const usage *u);

/* Nothing reported (every count and the cost zero)? */
bool usage_is_zero(const usage *u);

/* acc += d */
void usage_add(usage *acc, const usage *d);

/* Message `message_id` now reports running totals *u: what grew since the
 * totals last seen for it (each field on its own; nothing for a repeat or an
 * older update) is added to tr->total and returned. */
usage usage_tracker_note(usage_tracker *tr, const char *message_id, const usage *u);

#endif

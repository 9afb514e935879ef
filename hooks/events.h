/*
 * events.h — the plugin's event hook: host events in, small typed notes
 * (engine.h: session_note) out, handed to the engine. This file only decodes:
 * it touches no task and takes no lock itself.
 *
 * [event] Runs on the host's event thread: never blocks beyond the engine lock
 * (held only briefly by anyone), never calls the host (except the lock-free
 * clock). Work that needs the host (reading the answer, aborting) is queued
 * for the plugin's worker thread.
 */
#ifndef OCBG_EVENTS_H
#define OCBG_EVENTS_H

#include "engine/engine.h"

/* Handle one event (JSON text {type, properties}); unknown or malformed
 * events are ignored. */
void hooks_on_event(ocbg *o, const char *event_json);

/* The event types hooks_on_event reads (ABI 1.3 event_types): a host may
 * skip every other type before serializing it. */
extern const char *const hook_event_types[];
extern const size_t hook_event_type_count;

#endif

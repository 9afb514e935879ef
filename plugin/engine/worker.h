/*
 * worker.h — the engine's worker thread (private to engine/): it runs the
 * queued jobs (completion checks, pushes, aborts) without the lock while it
 * calls the host, retries failed pushes, and runs the fallback poll. It
 * sleeps with no timeout while there is nothing to do.
 */
#ifndef OCBG_WORKER_H
#define OCBG_WORKER_H

#include "base/face_guard.h"
#include "engine/engine.h"

/* Start the thread. Returns 0 or an errno. [engine_start] */
int worker_start(engine *eng);
/* Join it; eng->stopping is set and the worker woken already. [engine_stop] */
void worker_join(engine *eng);

#endif

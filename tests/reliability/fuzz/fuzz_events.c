/* fuzz_events — host events as the plugin's on_event gets them (the fuzzer
 * is the host's event thread). $RUNSES / $PARENT name the running task's
 * session and the conversation, so that events reach real tasks. */
#include <stdlib.h>

#include "fuzz_common.h"

static uint64_t execs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_world *w = fz_world_get();
    char *text = fz_text(w, data, size);
    w->p->on_event(w->p->userdata, text);
    free(text);
    if (++execs % 4096 == 0)
        fz_reset(w); /* events may have ended or removed the tasks */
    else if (execs % 256 == 0)
        fz_refresh(w);
    return 0;
}

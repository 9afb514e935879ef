/* host_face.c — the public functions of simhost.h that are thin wrappers
 * over a lower layer: scripts (agents). */
#include "sim_internal.h"

int sim_script(sim_host *h, const char *match, const char *script_json, int once)
{
    return sim_agents_script(&h->agents, match, script_json, once);
}

/* api_frame.c — layer 3 (API), low: the frame every host function shares:
 * an injected fault and slowness first (api_calls.c), the call recorded last,
 * and small helpers for the answer text. Uses api_calls.c and the core. */
#include "sim_api_int.h"

#include <stdio.h>
#include <stdlib.h>

void sim_api_set_out(char **out, char *s)
{
    if (out)
        *out = s;
    else
        free(s);
}

char *sim_api_msgf(const char *fmt, const char *arg)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, arg ? arg : "(null)");
    return sim_strdup(buf);
}

char *sim_api_args_text(cJSON *o)
{
    char *s = sim_print(o);
    cJSON_Delete(o);
    return s;
}

int sim_api_finish(sim_api *a, const char *fn, const char *sid, char *body, int rc, int64_t t)
{
    sim_api_call_record(a, fn, sid, body, rc, t);
    free(body);
    return rc;
}

int sim_api_injected(sim_api *a, const char *fn, const char *sid, char *body, int rc, int64_t t, char **out)
{
    sim_api_set_out(out, sim_api_msgf("simulated failure of %s", fn));
    return sim_api_finish(a, fn, sid, body, rc, t);
}

int sim_api_begin(sim_api *a, const char *fn, const char *sid, cJSON *args, char **out, int64_t *t, char **body)
{
    if (out)
        *out = NULL;
    *t = sim_wall_ms(a->core);
    *body = sim_api_args_text(args);
    int rc = sim_api_call_begin(a, fn);
    return rc ? sim_api_injected(a, fn, sid, *body, rc, *t, out) : 0;
}

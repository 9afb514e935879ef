/* fuzz_options — plugin options: options_parse on the text, and for a text it
 * accepts, a whole plugin instance made and shut down with it. The host is
 * kept for HOST_INPUTS inputs (it records every call), then destroyed and
 * the heap checked for leaks (the target runs with -detect_leaks=0:
 * fuzz_common.h). */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocp.h"
#include "base/options.h"
#include "fuzz_common.h"
#include "simhost.h"

enum { HOST_INPUTS = 4096 };

static sim_host *host;
static unsigned execs;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    options o;
    char err[512];
    err[0] = '\0';
    int rc = options_parse(&o, text, err, sizeof err);
    if (rc != 0 && !err[0])
        abort(); /* a refusal always says why */
    if (rc == 0) {
        if (!host)
            host = sim_create();
        char why[512] = "";
        const ocp_plugin *p = ocp_plugin_entry(sim_table(host), text, why, sizeof why);
        if (!p) {
            fprintf(stderr, "options accepted by options_parse refused by the entry: %s\n", why);
            abort();
        }
        p->shutdown(p->userdata);
    }
    free(text);
    if (++execs % HOST_INPUTS == 0 && host) {
        sim_destroy(host);
        host = NULL;
        fz_leak_check();
    }
    return 0;
}

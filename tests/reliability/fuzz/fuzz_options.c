/* fuzz_options — plugin options: options_parse on the text, and for a text it
 * accepts, a whole plugin instance made and shut down with it. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocp.h"
#include "base/options.h"
#include "simhost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sim_host *host;

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
    return 0;
}

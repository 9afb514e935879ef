/* fuzz_fork — message histories for fork: fork_process with small limits
 * (so cutting and dropping happen), its rendering, and the preamble. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    fork_limits lim = {100, 1000};
    if (size > 0)
        lim.max_tool_chars = 1 + data[0] % 200;
    char *out = NULL;
    fork_stats st;
    if (fork_process(text, &lim, &out, &st) == 0 && out) {
        char *r = fork_render(out);
        free(r);
        /* Processing is idempotent in shape: its output is a valid input. */
        char *again = NULL;
        if (fork_process(out, &lim, &again, NULL) != 0)
            abort();
        free(again);
    }
    free(out);
    free(text);
    return 0;
}

/* fuzz_tool_args — tool arguments, per tool. Input: "<tool name>\n<args
 * JSON>" ($DONE, $RUN, $BATCH name real tasks). Every call is made with the
 * context already cancelled, so a blocking wait returns at once. Bash only
 * has its arguments checked: a fuzzed command must never run. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "face/tools.h"

static uint64_t execs;

static const tool_spec *spec_of(const char *name)
{
    for (size_t i = 0; i < background_tool_count; i++)
        if (strcmp(background_tools[i].name, name) == 0)
            return &background_tools[i];
    for (size_t i = 0; i < claude_tool_count; i++)
        if (strcmp(claude_tools[i].name, name) == 0)
            return &claude_tools[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_world *w = fz_world_get();
    char *text = fz_text(w, data, size);
    char *nl = strchr(text, '\n');
    const char *tool = text, *args = "";
    if (nl) {
        *nl = '\0';
        args = nl + 1;
    }
    const tool_spec *spec = spec_of(tool);
    if (spec && strcmp(spec->name, "Bash") == 0) {
        cJSON *parsed = NULL;
        char *err = NULL;
        tool_args_check(spec, args, &parsed, &err);
        cJSON_Delete(parsed);
        free(err);
    } else {
        fz_tool(w, tool, args, 1);
    }
    free(text);
    /* Keep the world small: clear now and then, and have a running task. */
    if (++execs % 1024 == 0)
        fz_reset(w);
    return 0;
}

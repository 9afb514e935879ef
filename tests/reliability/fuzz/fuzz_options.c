/* fuzz_options — plugin options: options_parse on the text, and for a text it
 * accepts, a whole plugin instance made and shut down with it. The host is
 * kept for HOST_INPUTS inputs (it records every call), then destroyed and
 * the heap checked for leaks (the target runs with -detect_leaks=0:
 * fuzz_common.h).
 *
 * A store_path is a file the instance creates: the instance gets it inside
 * this process's own folder (the fuzzed absolute path below it, or that
 * folder's ocbg.db when the path has a ".." part or would be too long), and
 * what it made there is removed after the instance's shutdown. Unmoved, a
 * run made a database file at "/" of every name the fuzzer tried. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ocp.h"
#include "base/options.h"
#include "fuzz_common.h"
#include "simhost.h"

enum {
    HOST_INPUTS = 4096
};

static sim_host *host;
static unsigned execs;
static char sandbox[64];

static void remove_sandbox(void)
{
    rmdir(sandbox);
}

/* Where the instance keeps its store instead of `path` (absolute). */
static void moved(const char *path, char *out, size_t size)
{
    if (!sandbox[0]) {
        snprintf(sandbox, sizeof sandbox, "%s/ocbg-fuzz-options-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(sandbox))
            abort();
        atexit(remove_sandbox);
    }
    size_t n = strlen(path);
    bool up = strstr(path, "/../") || (n >= 3 && strcmp(path + n - 3, "/..") == 0);
    if (up || (size_t)snprintf(out, size, "%s%s", sandbox, path) >= OPTIONS_PATH_MAX)
        snprintf(out, size, "%s/ocbg.db", sandbox);
}

/* The text with its store_path moved (malloc'd), or NULL when it has none
 * (o: what options_parse read from it). */
static char *with_moved_store(const char *text, const options *o, char *path, size_t size)
{
    if (!o->store_path[0])
        return NULL;
    moved(o->store_path, path, size);
    cJSON *j = cJSON_Parse(text);
    cJSON_ReplaceItemInObjectCaseSensitive(j, "store_path", cJSON_CreateString(path));
    char *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return out;
}

/* Remove what the instance left in the folder: the store's files, under
 * the names SQLite made of the path (it drops a trailing "/", for one). */
static void empty_sandbox(void)
{
    DIR *d = opendir(sandbox);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
}

/* An instance made with the options (and shut down): they were accepted,
 * so the entry must take them. */
static void instance_of(const char *text)
{
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
        char path[OPTIONS_PATH_MAX + 64];
        char *safe = with_moved_store(text, &o, path, sizeof path);
        options again;
        /* The moved text must read back with the moved path (else: none). */
        if (!safe)
            instance_of(text);
        else if (options_parse(&again, safe, err, sizeof err) == 0 && strcmp(again.store_path, path) == 0)
            instance_of(safe);
        if (safe)
            empty_sandbox();
        free(safe);
    }
    free(text);
    if (++execs % HOST_INPUTS == 0 && host) {
        sim_destroy(host);
        host = NULL;
        fz_leak_check();
    }
    return 0;
}

/* stub_dirs.c — the stub plugin's stub_dir tool: session_create_in,
 * directory_watch, session_status, session_abort and session_prompt from a
 * plugin-owned thread, so that the e2e can drive them in real OpenCode. */
#include "stub_dirs.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct dir_job {
    const ocp_host *h;
    const char *op, *directory, *session, *parent, *title;
    int rc;
    char *out;
};

static void *dir_job_main(void *arg) {
    struct dir_job *j = arg;
    const ocp_host *h = j->h;
    void *ud = h->userdata;
    if (!strcmp(j->op, "watch") || !strcmp(j->op, "unwatch"))
        j->rc = h->directory_watch(ud, j->directory, !strcmp(j->op, "watch"));
    else if (!strcmp(j->op, "create_in"))
        j->rc = h->session_create_in(ud, j->parent, j->title, j->directory, &j->out);
    else if (!strcmp(j->op, "status"))
        j->rc = h->session_status(ud, &j->out);
    else if (!strcmp(j->op, "abort"))
        j->rc = h->session_abort(ud, j->session, &j->out);
    else if (!strcmp(j->op, "prompt")) /* title: the prompt's body (JSON) */
        j->rc = h->session_prompt(ud, j->session, j->title, &j->out);
    else
        j->rc = -EINVAL;
    return NULL;
}

static const char *str_arg(const cJSON *args, const char *key) {
    return cJSON_GetStringValue(cJSON_GetObjectItem(args, key));
}

int stub_dir(const ocp_host *h, const cJSON *args, const char *caller_session, char **out) {
    *out = NULL;
    if (h->struct_size < offsetof(ocp_host, directory_watch) + sizeof h->directory_watch || !h->directory_watch ||
        !h->session_create_in) {
        *out = strdup("stub_dir: the host has no ABI 1.5 functions");
        return -EINVAL;
    }
    const char *parent = str_arg(args, "parent");
    struct dir_job j = {h, str_arg(args, "op"), str_arg(args, "directory"), str_arg(args, "session"),
                        parent ? parent : caller_session, str_arg(args, "title"), 0, NULL};
    if (!j.op) {
        *out = strdup("stub_dir: op is required");
        return -EINVAL;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, dir_job_main, &j) != 0) {
        *out = strdup("stub_dir: pthread_create failed");
        return -ENOMEM;
    }
    pthread_join(t, NULL);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "rc", j.rc);
    cJSON *parsed = j.out ? cJSON_Parse(j.out) : NULL;
    if (parsed)
        cJSON_AddItemToObject(r, "out", parsed);
    else if (j.out)
        cJSON_AddStringToObject(r, "out", j.out);
    h->free(h->userdata, j.out);
    *out = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return 0;
}

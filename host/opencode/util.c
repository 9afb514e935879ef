/* util.c — C helpers the other files share (no JS here). */
#include "adapter.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

int on_js_thread(adapter *ad)
{
    return pthread_equal(pthread_self(), ad->js_thread);
}

void stderr_log(enum ocp_log_level level, const char *msg)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    fprintf(stderr, "ocbg [%s] %s\n", names[level <= OCP_LOG_ERROR ? level : OCP_LOG_ERROR], msg);
}

/* mkdir -p, each new level 0700. 0 once `path` is a directory (new or not),
 * or an errno (ENOTDIR: a level exists and is not a directory). */
static int make_dirs(char *path)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        struct stat st;
        int rc = mkdir(path, 0700) == 0 ? 0
                 : errno != EEXIST      ? errno
                 : stat(path, &st) != 0 ? errno
                 : S_ISDIR(st.st_mode)  ? 0
                                        : ENOTDIR;
        *p = c;
        if (rc != 0 || c == '\0')
            return rc;
    }
}

char *project_data_dir(const char *project_id, char **why)
{
    *why = NULL;
    if (!project_id || !*project_id ||
        strspn(project_id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789._-") != strlen(project_id) ||
        project_id[0] == '.') {
        *why = project_id && *project_id ? xprintf("the project id %s is not a plain name", project_id)
                                         : xstrdup("the plugin input has no project id");
        return NULL;
    }
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    char *dir = xdg && *xdg == '/'     ? xprintf("%s/opencode/ocbg/%s", xdg, project_id)
                : home && *home == '/' ? xprintf("%s/.local/share/opencode/ocbg/%s", home, project_id)
                                       : NULL;
    if (!dir) {
        *why = xprintf("neither XDG_DATA_HOME nor HOME is an absolute path");
        return NULL;
    }
    int rc = make_dirs(dir);
    if (rc != 0) {
        *why = xprintf("cannot create %s: %s", dir, strerror(rc));
        free(dir);
        return NULL;
    }
    return dir;
}

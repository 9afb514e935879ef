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

/* ---- text for the person's screen ---------------------------------------- */

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* The end of a control string (OSC, DCS, SOS, PM, APC) whose payload starts
 * at s + i: after its BEL, ESC \ or ST (U+009C), or the end of s. */
static size_t string_end(const unsigned char *s, size_t i)
{
    for (; s[i]; i++) {
        if (s[i] == 0x07)
            return i + 1;
        if ((s[i] == 0x1b && s[i + 1] == '\\') || (s[i] == 0xc2 && s[i + 1] == 0x9c))
            return i + 2;
    }
    return i;
}

/* The end of a CSI whose parameters start at s + i. */
static size_t csi_end(const unsigned char *s, size_t i)
{
    while (s[i] >= 0x20 && s[i] <= 0x3f)
        i++;
    return s[i] >= 0x40 && s[i] <= 0x7e ? i + 1 : i;
}

/* The bytes of the escape sequence at s (ESC, or a C1 introducer in UTF-8),
 * or 0 when none starts there. */
static size_t sequence_len(const unsigned char *s)
{
    if (s[0] == 0x1b) {
        if (s[1] && strchr("]PX^_", s[1]))
            return string_end(s, 2);
        if (s[1] == '[')
            return csi_end(s, 2);
        size_t i = 1;
        while (s[i] >= 0x20 && s[i] <= 0x2f)
            i++;
        return s[i] >= 0x30 && s[i] <= 0x7e ? i + 1 : 0;
    }
    if (s[0] == 0xc2 && s[1] == 0x9b)
        return csi_end(s, 2);
    if (s[0] == 0xc2 && (s[1] == 0x90 || s[1] == 0x98 || s[1] == 0x9d || s[1] == 0x9e || s[1] == 0x9f))
        return string_end(s, 2);
    return 0;
}

/* The bytes of a control character at s shown as U+FFFD (C0 but line
 * breaks and tab, DEL, C1, bidirectional marks, embeddings, overrides and
 * isolates), or 0. */
static size_t control_len(const unsigned char *s)
{
    if ((s[0] < 0x20 && s[0] != '\n' && s[0] != '\r' && s[0] != '\t') || s[0] == 0x7f)
        return 1;
    if ((s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) || (s[0] == 0xd8 && s[1] == 0x9c))
        return 2;
    if (s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0x8e || s[2] == 0x8f || (s[2] >= 0xaa && s[2] <= 0xae)))
        return 3;
    if (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
        return 3;
    return 0;
}

char *screen_text(const char *text, int multiline)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    char *out = malloc(strlen((const char *)s) * 3 + 1), *o = out; /* a byte becomes at most U+FFFD */
    if (!out)
        return NULL;
    while (*s) {
        size_t n = sequence_len(s);
        if (n) { /* formatting, a title, a cursor move: gone whole */
            s += n;
        } else if ((n = control_len(s))) {
            memcpy(o, REPLACEMENT, 3);
            o += 3;
            s += n;
        } else if (*s == '\r' || *s == '\n' || (s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9))) {
            s += *s == '\r' && s[1] == '\n' ? 2 : *s < 0x80 ? 1 : 3; /* CR LF, CR, LF, U+2028, U+2029 */
            *o++ = multiline ? '\n' : ' ';
        } else {
            *o++ = *s == '\t' ? ' ' : (char)*s;
            s++;
        }
    }
    *o = '\0';
    return out;
}

/* util.c — C helpers the other files share (no JS here). */
#include "adapter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *xstrdup(const char *s) {
    return s ? strdup(s) : NULL;
}

char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

int on_js_thread(adapter *ad) {
    return pthread_equal(pthread_self(), ad->js_thread);
}

void stderr_log(enum ocp_log_level level, const char *msg) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    fprintf(stderr, "ocbg [%s] %s\n", names[level <= OCP_LOG_ERROR ? level : OCP_LOG_ERROR], msg);
}

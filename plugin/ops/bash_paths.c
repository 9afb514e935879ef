/* bash_paths.c — see bash_paths.h. */
#include "ops/bash_paths.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"

char *bash_path_normalize(const char *path)
{
    char *copy = xstrdup(path), *save = NULL;
    strbuf sb = {0};
    size_t *ends = xmalloc(sizeof *ends * (strlen(path) / 2 + 2)), depth = 0;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            if (depth > 0)
                sb.len = ends[--depth];
            continue;
        }
        ends[depth++] = sb.len;
        sb_putn(&sb, "/", 1);
        sb_puts(&sb, c);
    }
    if (sb.len == 0)
        sb_puts(&sb, "/");
    else
        sb.buf[sb.len] = '\0';
    free(ends);
    free(copy);
    return sb_take(&sb);
}

/* path.resolve(base, p): p made absolute from base, normalized. */
static char *resolve(const char *base, const char *p)
{
    char *joined = p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", base, p);
    char *r = bash_path_normalize(joined);
    free(joined);
    return r;
}

static char *parent_dir(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash == p ? xstrdup("/") : xstrndup(p, (size_t)(slash - p));
}

/* !path.relative(dir, p).startsWith(".."): p is dir, or under it by a
 * relative path not starting with ".." (a name like "..x" counts as out). */
static bool inside(const char *dir, const char *p)
{
    size_t n = strlen(dir);
    if (strcmp(dir, "/") == 0)
        return strncmp(p + 1, "..", 2) != 0;
    if (strncmp(p, dir, n) != 0 || (p[n] != '\0' && p[n] != '/'))
        return false;
    return p[n] == '\0' || strncmp(p + n + 1, "..", 2) != 0;
}

char *bash_path_outside(const char *arg, size_t n, const char *project)
{
    char *a = n >= 2 && (arg[0] == '"' || arg[0] == '\'') && arg[n - 1] == arg[0] ? xstrndup(arg + 1, n - 2)
                                                                                  : xstrndup(arg, n);
    const char *home = getenv("HOME");
    if (home && (strcmp(a, "~") == 0 || strncmp(a, "~/", 2) == 0 || strncmp(a, "~\\", 2) == 0)) {
        char *joined = a[1] ? xasprintf("%s/%s", home, a + 2) : xstrdup(home);
        free(a);
        a = joined[0] == '/' ? bash_path_normalize(joined) : xstrdup(joined);
        free(joined);
    }
    a[strcspn(a, "?*[")] = '\0';
    char *dir = NULL;
    if (a[0] && a[0] != '(' && strncmp(a, "@(", 2) != 0 && !strpbrk(a, "$`")) {
        char *p = resolve(project, a);
        struct stat st;
        if (!inside(project, p))
            dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? xstrdup(p) : parent_dir(p);
        free(p);
    }
    free(a);
    return dir;
}

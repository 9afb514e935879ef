/*
 * bash_paths.h — the paths a command's arguments name, as OpenCode's bash
 * tool reads them (node's path module on POSIX paths): lexical only, no
 * symlink followed. Used by ops/bash_asks.c. Pure apart from stat() of a
 * resolved path and reading $HOME; any thread; every string returned is
 * malloc'd, the caller's to free (allocation failure aborts, as xmalloc).
 */
#ifndef OCBG_BASH_PATHS_H
#define OCBG_BASH_PATHS_H

#include "base/face_guard.h"
#include <stdbool.h>
#include <stddef.h>

/* `path` (absolute) with ".", ".." and repeated or trailing slashes resolved. */
char *bash_path_normalize(const char *path);

/* The directory OpenCode asks "external_directory" for when a command's
 * argument arg[0..len) names a path outside `project` (absolute,
 * normalized): quotes stripped, ~ expanded, cut before a glob, skipped
 * when it expands ($, backtick), resolved from the project; the path
 * itself when it is a directory, else its parent. NULL when it is inside
 * or skipped. */
char *bash_path_outside(const char *arg, size_t len, const char *project);

#endif

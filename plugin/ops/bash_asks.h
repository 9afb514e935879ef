/*
 * bash_asks.h — the permission questions OpenCode's own bash tool asks for a
 * command line, computed the way it computes them, so that ocbg's Bash asks
 * for exactly as much (never less).
 *
 * The command line is parsed with tree-sitter and its bash grammar, the
 * versions OpenCode 1.18.33 embeds (runtime 0.25.10's C sources, grammar
 * tree-sitter-bash 0.25.0; build-aux/fetch-tree-sitter). Then, for every
 * `command` node of the tree, wherever it is nested (lists, pipelines,
 * groups, if/for/while/case bodies, functions, $(…), backticks, <(…),
 * here-doc bodies), in document order:
 *  - its words are its children of types command_name, word, string,
 *    raw_string and concatenation (an expansion, a number, a redirection is
 *    not a word);
 *  - "bash" pattern: the command's text, or its redirected statement's
 *    ("make > log"), trimmed; "always" pattern: the words' prefix by
 *    OpenCode's arity table ("git status *", "npm run build *", "ls *"). A
 *    command whose first word is cd, chdir, pushd or popd (or PowerShell's
 *    location verbs) has none;
 *  - for cd/chdir/pushd/popd/rm/cp/mv/mkdir/touch/chmod/chown/cat (and the
 *    PowerShell file verbs), each argument that is not an option names a
 *    path: quotes stripped, ~ expanded, cut at the first glob character,
 *    skipped when it holds a $ or backtick, resolved lexically (no symlinks
 *    followed) from the project; one outside the project asks
 *    "external_directory" for the directory (the path itself when it is a
 *    directory, else its parent), with the pattern "<dir>/" + "*".
 * Each list keeps the first of equal entries, in order.
 *
 * Stricter than OpenCode in one place: OpenCode also counts the project's
 * git worktree root as inside; ocbg knows only the session's directory, so a
 * path in the worktree but outside that directory asks external_directory.
 *
 * Pure apart from stat() of resolved paths (is it a directory?) and reading
 * $HOME; any thread; no lock needed.
 */
#ifndef OCBG_BASH_ASKS_H
#define OCBG_BASH_ASKS_H

#include <cjson/cJSON.h>

typedef struct bash_asks {
    cJSON *dirs;     /* directories outside the project (bare paths), strings */
    cJSON *patterns; /* "bash" patterns, strings */
    cJSON *always;   /* "always" patterns, strings */
} bash_asks;

/* Fills *out (owned by the caller, freed with bash_asks_free) for `command`
 * run in `project` (an absolute directory; NULL or relative: no path is
 * outside it). Returns 0, or -ENOMEM when the parser could not be made; on
 * failure *out holds three empty arrays, and the caller must not run the
 * command (nothing was checked). */
int bash_asks_of(const char *command, const char *project, bash_asks *out);

void bash_asks_free(bash_asks *a);

/* The external_directory patterns of `dirs`: each directory followed by a
 * slash and a star ("/" alone gives one slash). */
cJSON *bash_dir_patterns(const cJSON *dirs);

#endif

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
 * Bounded, since the line is the model's text and the parse runs inside
 * the host: a line longer than BASH_ASKS_MAX_BYTES is refused unread; the
 * parse stops after BASH_ASKS_PARSE_CPU_MS of the thread's CPU time; the
 * walk is linear in the line, and the texts the answer copies are capped
 * by BASH_ASKS_MAX_TEXT (a command nested in n others is in n+1 patterns:
 * a line of deep $(…) would otherwise ask gigabytes). A refused line asks
 * nothing and must not be run.
 *
 * Pure apart from stat() of resolved paths (is it a directory?) and reading
 * $HOME; any thread; no lock needed.
 */
#ifndef OCBG_BASH_ASKS_H
#define OCBG_BASH_ASKS_H

#include "base/face_guard.h"
#include <cjson/cJSON.h>

/* The longest line read, in bytes. Stricter than the host: OpenCode's bash
 * tool runs up to 131071 bytes (the most /bin/sh -c can be given on Linux,
 * MAX_ARG_STRLEN = 128 KiB with its NUL; a longer one fails to start with
 * E2BIG there, as in ocbg's shell runner). But tree-sitter's tree takes
 * about 100 bytes a node, 15 MB for a line of that length, and 100 ms to
 * build on a 2 GHz core; at 32 KiB, 4 MB and 25 ms. OpenCode's own tool
 * description tells the model to write files with its write tool, not
 * with a here-doc, so a longer line is rare; the refusal says to put long
 * text in a file. */
#define BASH_ASKS_MAX_BYTES 32768
/* The most bytes of command text an answer may copy: every command's text
 * (its redirected statement's, when it has redirections or here-docs),
 * each counted once, so a command nested in another counts in both. Eight
 * times the longest line: a here-doc filling the longest line, nested seven
 * deep, fits. */
#define BASH_ASKS_MAX_TEXT (8 * BASH_ASKS_MAX_BYTES)
/* The parse's limit, in CPU time of the calling thread: tree-sitter's error
 * recovery is quadratic on some broken lines (32 KiB of ")" takes it 20 s),
 * a line of the longest length otherwise parses in 10-20 ms on a 2 GHz core.
 * CPU time, not wall time: a busy machine does not make a line refused. */
#define BASH_ASKS_PARSE_CPU_MS 250

typedef struct bash_asks {
    cJSON *dirs;     /* directories outside the project (bare paths), strings */
    cJSON *patterns; /* "bash" patterns, strings */
    cJSON *always;   /* "always" patterns, strings */
} bash_asks;

/* Fills *out (owned by the caller, freed with bash_asks_free) for `command`
 * run in `project` (an absolute directory; NULL or relative: no path is
 * outside it). Returns 0; or, with *out holding three empty arrays, and
 * then the caller must not run the command (nothing was checked):
 * -E2BIG the line is longer than BASH_ASKS_MAX_BYTES; -ETIME its parse took
 * more than BASH_ASKS_PARSE_CPU_MS; -EOVERFLOW its commands' texts pass
 * BASH_ASKS_MAX_TEXT; -ENOMEM the parser could not be made. */
int bash_asks_of(const char *command, const char *project, bash_asks *out);

void bash_asks_free(bash_asks *a);

/* The external_directory patterns of `dirs`: each directory followed by a
 * slash and a star ("/" alone gives one slash). */
cJSON *bash_dir_patterns(const cJSON *dirs);

#endif

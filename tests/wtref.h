/*
 * wtref.h — the reference an isolated task's report is checked against, in
 * test_worktree_report and bench_worktree_report: the report as
 * worktree_report made it before it ran its git commands at once, the five
 * commands one after another, composed by worktree_report_compose.
 */
#ifndef OCBG_WTREF_H
#define OCBG_WTREF_H

#include "worktree/worktree.h"

/* m's report the five-command way (malloc'd, the caller frees it). Bails
 * out (tap.h) when a command fails. [any thread; runs git, blocks] */
char *wtref_report_sequential(const worktree_made *m);

#endif

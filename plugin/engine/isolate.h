/*
 * isolate.h — isolated tasks (a launch's `isolation`): each works in its own
 * git worktree (worktree/worktree.h) on branch ocbg/<task id>, in a folder
 * outside the checkout (<the host's data_dir>/worktrees/<task id>), which the
 * host is asked to follow (ABI 1.5 directory_watch) while a run goes on.
 *
 * The order a worktree's life keeps, whatever ends it (docs/worktrees.md):
 * made before the task exists (a refusal leaves nothing); followed before
 * its session is created in it; at each run's end, what it did is read
 * (worktree_report) and the host lets go of the folder; on removal (clear,
 * the launching session deleted) the host has let go first, then its
 * uncommitted work is committed to its branch, then the folder is removed;
 * the branch always stays. A worktree that cannot be removed without losing
 * work is kept, and the model is told where.
 *
 * Git runs with no lock held: functions marked [lock not held] take the
 * engine lock only briefly, to read or write the task.
 */
#ifndef OCBG_ISOLATE_H
#define OCBG_ISOLATE_H

#include "base/face_guard.h"
#include "base/util.h"
#include "engine/engine.h"
#include "worktree/worktree.h"

/* Where the worktrees go: <the host's data_dir>/worktrees (or beside
 * store_path). -ENOSYS (the host cannot run a session elsewhere) or -EINVAL
 * (no such folder) with the refusal in out; else 0 with *root
 * (malloc'd). [any] */
int isolate_root(engine *eng, char **root, strbuf *out);

/* Make the worktree <root>/<id> of a launch from folder `directory`
 * (its repository's HEAD), on branch ocbg/<id>. [lock not held] 0 with *m;
 * or a negative errno with the refusal in out: nothing made, or (m->left)
 * what undoing it left, named. */
int isolate_prepare(const char *directory, const char *root, isolation how, const char *id, worktree_made *m,
                    strbuf *out);

/* The launch answer's lines about worktree m. */
void isolate_describe(const worktree_made *m, strbuf *out);

/* Have the host follow task id's folder (directory_watch 1) unless it
 * already does. [lock not held] 0 (also: no worktree), or the host's
 * negative errno with *err. */
int isolate_watch(engine *eng, const char *task_id, char **err);

/* Task id's run has ended: read what it did in its worktree, once per run
 * (git runs; the report is kept in the task). The early report of the run
 * is waited for when one is being read, and taken instead when no tool call
 * of the run changed state since it began. [lock not held] */
void isolate_report(engine *eng, const char *task_id);

/* Task t's run goes on and its model began message message_id (the
 * message's first update, or a text part in it), maybe the answer, so its
 * folder may be as the run will leave it: queue an
 * early report for the git threads (JOB_EARLY, through the worker), unless
 * one was asked for at this run, tool_gen and message already. Never
 * blocks. [lock held] */
void isolate_early_ask(engine *eng, task *t, const char *message_id);

/* JOB_EARLY: read task id's report (its run `run`) and keep it as the early
 * one, with the tool_gen it began at; wakes isolate_report's wait. A report
 * git could not read is dropped: the run's end reads again. [lock not held] */
void isolate_early(engine *eng, const char *task_id, unsigned run);

/* Task id's run has ended: the host lets go of its folder until a resume.
 * A resume that came while the host was letting go has it followed again.
 * Done after the notification's push: OpenCode disposes the folder's
 * instance, which the parent need not wait for. [lock not held] */
void isolate_let_go(engine *eng, const char *task_id);

/* isolate_report, then isolate_let_go. [lock not held] */
void isolate_settle(engine *eng, const char *task_id);

/* Remove the worktrees of `list` (freed): the host lets go, the work is
 * committed, the folder removed, the branch kept. out (may be NULL) gets a
 * line per worktree: where its work is, or where the kept folder is and
 * why. [lock not held] */
void isolate_release(engine *eng, worktree_item *list, strbuf *out);

/* After a restore: when a restored task has a worktree, queue the check
 * below for the worker (JOB_ORPHANS). [lock held] */
void isolate_restored(engine *eng);

/* The launching sessions of restored isolated tasks that the host no longer
 * has (deleted while ocbg was down, or just before the host was killed):
 * dropped as their deletion would have been, so their worktrees are
 * released (their rows stay in the store until then). One host call per
 * such session. [lock not held] */
void isolate_drop_orphans(engine *eng);

#endif

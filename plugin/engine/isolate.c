/* isolate.c — see isolate.h. */
#include "engine/isolate.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"

/* Where worktrees go: beside the task store, outside any checkout. NULL
 * when the host gives no data_dir and store_path is not set. malloc'd. */
static char *worktrees_root(const engine *eng)
{
    const char *data_dir = hostapi_data_dir(&eng->api);
    if (data_dir)
        return xasprintf("%s/worktrees", data_dir);
    if (eng->opt.store_path[0]) {
        const char *slash = strrchr(eng->opt.store_path, '/');
        return xasprintf("%.*s/worktrees", (int)(slash ? slash - eng->opt.store_path : 0), eng->opt.store_path);
    }
    return NULL;
}

int isolate_root(engine *eng, char **root, strbuf *out)
{
    *root = NULL;
    if (!hostapi_has_directories(&eng->api)) {
        sb_puts(out, "Not launched: this host cannot run a task in another folder, so isolation \"worktree\" is "
                     "not available here. Launch without isolation.");
        return -ENOSYS;
    }
    *root = worktrees_root(eng);
    if (!*root) {
        sb_puts(out, "Not launched: the host gives ocbg no data folder to keep worktrees in (and no store_path is "
                     "set), so isolation \"worktree\" is not available. Launch without isolation.");
        return -EINVAL;
    }
    return 0;
}

int isolate_prepare(const char *directory, const char *root, isolation how, const char *id, worktree_made *m,
                    strbuf *out)
{
    if (!directory || directory[0] != '/') {
        sb_puts(out, "Not launched: the call has no working folder to make a worktree from.");
        return -EINVAL;
    }
    char *err = NULL;
    int rc = worktree_make(directory, root, id, how, m, &err);
    if (rc != 0)
        sb_printf(out, m->left ? "Not launched: %s." : "Not launched, nothing was created: %s.", err);
    free(err);
    return rc;
}

void isolate_describe(const worktree_made *m, strbuf *out)
{
    sb_printf(out, "Worktree: %s, on new branch %s from %.8s (the HEAD of %s)", m->path, m->branch, m->base,
              m->checkout);
    if (m->carried)
        sb_printf(out, ", with the checkout's uncommitted changes to %u tracked file%s copied in", m->changed,
                  m->changed == 1 ? "" : "s");
    sb_puts(out, ". The sub-agent works only there.\n");
    if (m->changed && !m->carried)
        sb_printf(out,
                  "Note: %u file%s with uncommitted changes in the checkout %s not in the worktree (it starts from "
                  "the last commit; isolation \"worktree_with_changes\" copies them).\n",
                  m->changed, m->changed == 1 ? "" : "s", m->changed == 1 ? "is" : "are");
    if (m->untracked)
        sb_printf(out, "Note: %u untracked file%s of the checkout %s not in the worktree.\n", m->untracked,
                  m->untracked == 1 ? "" : "s", m->untracked == 1 ? "is" : "are");
}

/* task id's folder, copied, when it has one, its watch is `watched` (the
 * flip's from) and, if ended_only, its run has ended. */
static char *folder_to_flip(engine *eng, const char *task_id, bool watched, bool ended_only)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, task_id);
    bool flip = t && t->wt && t->wt->watched == watched && !(ended_only && task_status_active(t->status));
    char *path = flip ? xstrdup(t->wt->path) : NULL;
    engine_unlock(eng);
    return path;
}

static void set_watched(engine *eng, const char *task_id, bool watched)
{
    engine_lock(eng);
    task *t = registry_find(&eng->reg, task_id);
    if (t && t->wt)
        t->wt->watched = watched;
    engine_unlock(eng);
}

int isolate_watch(engine *eng, const char *task_id, char **err)
{
    char *path = folder_to_flip(eng, task_id, false, false);
    struct stat st;
    if (path && stat(path, &st) != 0) {
        if (err)
            *err = xasprintf("its worktree %s is gone", path);
        free(path);
        return -ENOENT;
    }
    int rc = path ? hostapi_directory_watch(&eng->api, path, true, err) : 0;
    if (path && rc == 0)
        set_watched(eng, task_id, true);
    free(path);
    return rc;
}

/* What settle needs, copied under the lock: NULL path when nothing to do. */
typedef struct settle_plan {
    char *path, *branch, *base, *checkout;
    unsigned run;
} settle_plan;

/* How long a run's end waits for an early report still queued (not begun:
 * every git thread may be busy) before it reads the report itself. */
#define EARLY_QUEUED_WAIT_MS 1000

/* Task id once no early report of its ended run is being read (one begun
 * is waited for: git's deadline bounds it; one still queued, a while); an
 * early report that still holds (begun during the run's answer, no tool call
 * changed state since) is made its run's report. NULL when it is gone.
 * [lock held; may wait] */
static task *take_early(engine *eng, const char *task_id)
{
    struct timespec queued_until;
    mono_deadline(&queued_until, mono_ms() + EARLY_QUEUED_WAIT_MS);
    task *t;
    while ((t = registry_find(&eng->reg, task_id)) != NULL && t->wt && t->wt->early_pending &&
           !task_status_active(t->status) && !eng->stopping) {
        if (t->wt->early_running)
            engine_cond_wait(eng, &eng->git.early_cv);
        else if (engine_cond_timedwait(eng, &eng->git.early_cv, &queued_until) == ETIMEDOUT)
            break;
    }
    task_worktree *w = t ? t->wt : NULL;
    if (!w || task_status_active(t->status) || w->report_run == t->run || !w->early)
        return t;
    /* Tasks it launched work in its worktree too, and their tool calls are
     * not counted in tool_gen: a run that launched any reads its report at
     * the end. */
    bool launched = t->session_id && registry_parent(&eng->reg, t->session_id);
    if (!launched && w->early_run == t->run && w->early_gen == w->tool_gen && w->early_msg && t->result_message_id &&
        strcmp(w->early_msg, t->result_message_id) == 0) {
        free(w->report);
        w->report = w->early;
        w->early = NULL;
        w->report_run = t->run;
        registry_touch(&eng->reg, t);
        eng->git.early_taken++;
    }
    return t;
}

/* What git needs to read t's report, copied (the caller holds the engine lock). */
static settle_plan plan_of(const task *t)
{
    return (settle_plan){xstrdup(t->wt->path), xstrdup(t->wt->branch), xstrdup(t->wt->base), xstrdup(t->wt->checkout),
                         t->run};
}

static void plan_free(settle_plan *p)
{
    free(p->path), free(p->branch), free(p->base), free(p->checkout);
}

void isolate_report(engine *eng, const char *task_id)
{
    settle_plan p = {0};
    engine_lock(eng);
    task *t = take_early(eng, task_id);
    if (t && t->wt && !task_status_active(t->status) && t->wt->report_run != t->run)
        p = plan_of(t);
    engine_unlock(eng);
    if (!p.path)
        return;
    char *report = NULL, *err = NULL;
    if (worktree_report(p.checkout, p.path, p.branch, p.base, &report, &err) != 0)
        report = xasprintf("What it changed could not be read: %s.", err);
    free(err);
    engine_lock(eng);
    t = registry_find(&eng->reg, task_id);
    if (t && t->wt && t->run == p.run) {
        free(t->wt->report);
        t->wt->report = report;
        t->wt->report_run = p.run;
        registry_touch(&eng->reg, t);
        report = NULL;
    }
    engine_unlock(eng);
    free(report);
    plan_free(&p);
}

void isolate_early_ask(engine *eng, task *t, const char *message_id)
{
    ENGINE_ASSERT_LOCKED(eng);
    task_worktree *w = t->wt;
    if (!w || !task_status_active(t->status) || eng->stopping)
        return;
    bool new_message = !w->text_msg || strcmp(w->text_msg, message_id) != 0;
    if (new_message) {
        free(w->text_msg);
        w->text_msg = xstrdup(message_id);
    }
    if (!new_message && w->asked && w->asked_run == t->run && w->asked_gen == w->tool_gen)
        return;
    w->asked = true;
    w->asked_run = t->run;
    w->asked_gen = w->tool_gen;
    w->early_pending++;
    jobs_push(&eng->q, job_for_task(JOB_EARLY, t));
}

void isolate_early(engine *eng, const char *task_id, unsigned run)
{
    settle_plan p = {0};
    unsigned gen = 0;
    char *message = NULL;
    engine_lock(eng);
    task *t = registry_find(&eng->reg, task_id);
    if (t && t->wt && t->run == run && t->wt->text_msg && !eng->stopping) {
        p = plan_of(t);
        gen = t->wt->tool_gen;
        message = xstrdup(t->wt->text_msg);
        t->wt->early_running++;
    }
    engine_unlock(eng);
    char *report = NULL, *err = NULL;
    if (p.path && worktree_report(p.checkout, p.path, p.branch, p.base, &report, &err) != 0) {
        free(report);
        report = NULL;
    }
    free(err);
    engine_lock(eng);
    t = registry_find(&eng->reg, task_id);
    task_worktree *w = t ? t->wt : NULL;
    if (w && w->early_pending)
        w->early_pending--;
    if (w && p.path && w->early_running)
        w->early_running--;
    /* Kept unless one begun later is kept already (two may overlap). */
    if (w && report && t->run == run && !(w->early && w->early_run == run && w->early_gen > gen)) {
        free(w->early);
        free(w->early_msg);
        w->early = report;
        w->early_msg = message;
        w->early_run = run;
        w->early_gen = gen;
        report = NULL;
        message = NULL;
    }
    pthread_cond_broadcast(&eng->git.early_cv);
    engine_unlock(eng);
    free(report);
    free(message);
    plan_free(&p);
}

void isolate_let_go(engine *eng, const char *task_id)
{
    char *path = folder_to_flip(eng, task_id, true, true);
    if (!path || hostapi_directory_watch(&eng->api, path, false, NULL) != 0) {
        free(path);
        return;
    }
    free(path);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, task_id);
    bool again = t && t->wt && task_status_active(t->status);
    if (t && t->wt)
        t->wt->watched = false;
    engine_unlock(eng);
    /* Resumed meanwhile: its isolate_watch saw the folder still followed. */
    if (again)
        isolate_watch(eng, task_id, NULL);
}

void isolate_settle(engine *eng, const char *task_id)
{
    isolate_report(eng, task_id);
    isolate_let_go(eng, task_id);
}

/* What happened to one worktree, in a line of the clear's answer (and the
 * log, where no answer goes). */
static void release_words(const worktree_item *it, int rc, const worktree_removal *r, const char *err, strbuf *sb)
{
    if (rc == 0)
        sb_printf(sb, "%s: its worktree was removed; its work is on branch %s%s.", it->id, it->branch,
                  r->committed ? " (what it left uncommitted was committed there first)" : "");
    else
        sb_printf(sb, "%s: its worktree was kept at %s (branch %s): %s.", it->id, it->path, it->branch, err);
    if (r->kept_dir) {
        char size[32];
        format_bytes(size, sizeof size, r->kept_bytes);
        sb_printf(sb,
                  " %u file%s that git ignores (%s), which it does not commit, %s moved to %s: %s. ocbg does not "
                  "delete them: remove that folder when they are not needed.",
                  r->kept_files, r->kept_files == 1 ? "" : "s", size, r->kept_files == 1 ? "was" : "were", r->kept_dir,
                  r->kept_names);
    }
}

void isolate_release(engine *eng, worktree_item *list, strbuf *out)
{
    for (worktree_item *it = list; it; it = it->next) {
        char *err = NULL;
        worktree_removal r = {0};
        /* The host lets go first: a request about a folder that is gone
         * would make the host set it up again (OpenCode: a bogus instance). */
        int rc = it->watched ? hostapi_directory_watch(&eng->api, it->path, false, &err) : 0;
        if (rc == 0)
            rc = worktree_remove(it->checkout, it->path, it->branch, it->id, &r, &err);
        strbuf line = {0};
        release_words(it, rc, &r, err, &line);
        if (out)
            sb_printf(out, "\n- %s", line.buf);
        if (rc != 0 || r.kept_dir || !out)
            hostapi_log(&eng->api, rc != 0 ? OCP_LOG_WARN : OCP_LOG_INFO, "ocbg: %s", line.buf);
        sb_free(&line);
        worktree_removal_free(&r);
        free(err);
        /* Removed or kept, the host was told: the task's row may go now. */
        engine_lock(eng);
        if (!registry_find(&eng->reg, it->id))
            registry_forget_row(&eng->reg, it->id);
        engine_unlock(eng);
    }
    worktree_items_free(list);
}

/* ---- after a restart ------------------------------------------------------ */

/* The launching sessions of isolated tasks (copied). */
typedef struct session_list {
    char **ids;
    size_t n;
} session_list;

static void note_isolated_parent(const char *key, void *value, void *arg)
{
    const parent *p = value;
    session_list *l = arg;
    for (const task *t = p->head; t; t = t->pnext)
        if (t->wt) {
            l->ids = xrealloc(l->ids, (l->n + 1) * sizeof *l->ids);
            l->ids[l->n++] = xstrdup(key);
            return;
        }
}

static void session_list_free(session_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->ids[i]);
    free(l->ids);
}

static void note_isolated(const char *key, void *value, void *arg)
{
    (void)key;
    const parent *p = value;
    for (const task *t = p->head; t && !*(bool *)arg; t = t->pnext)
        *(bool *)arg = t->wt != NULL;
}

void isolate_restored(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    bool any = false;
    map_each(&eng->reg.parents, note_isolated, &any);
    if (any) {
        job *j = xcalloc(1, sizeof *j);
        j->kind = JOB_ORPHANS;
        jobs_push(&eng->q, j);
    }
}

void isolate_drop_orphans(engine *eng)
{
    session_list l = {0};
    engine_lock(eng);
    map_each(&eng->reg.parents, note_isolated_parent, &l);
    engine_unlock(eng);
    for (size_t i = 0; i < l.n; i++) {
        if (hostapi_session_get(&eng->api, l.ids[i], NULL) != -ENOENT)
            continue;
        engine_lock(eng);
        parent *p = registry_parent(&eng->reg, l.ids[i]);
        if (p)
            engine_drop_parent(eng, p); /* as the deletion's event would have */
        engine_unlock(eng);
    }
    session_list_free(&l);
}

/* persist.c — see persist.h. */
#include "engine/persist.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc_id.h"
#include "base/util.h"
#include "engine/engine.h"
#include "engine/guards.h"
#include "engine/isolate.h"
#include "store/convert.h"
#include "store/reader.h"
#include "store/store.h"

#define STORE_FILE "ocbg.db"
/* How long the store thread lets changes gather before it writes them. */
#define STORE_DELAY_MS 5
/* The most rows one transaction writes: a burst of changes is written in
 * several, so that their copies (a finished task's texts) are never all in
 * memory at once. */
#define STORE_BATCH_ROWS 256
/* The most reads of a task's stored texts per call: each one after the
 * first follows a change during the one before (a run's end, a commit). */
#define READ_TRIES 4

bool persist_on(const engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    return o->ps.st != NULL;
}

/* A line for the host's log, logged by the worker once it runs (the host
 * may not take log calls from ocp_plugin_entry's thread): 'E' error, 'W'
 * warning, as its first character. */
static void defer_log(engine *o, char level, const char *line)
{
    char *all = xasprintf("%s%c%s\n", o->ps.log ? o->ps.log : "", level, line);
    free(o->ps.log);
    o->ps.log = all;
}

void persist_log_deferred(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    char *lines = o->ps.log;
    o->ps.log = NULL;
    if (!lines)
        return;
    engine_unlock(o);
    char *save = NULL;
    for (char *line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        hc_log(&o->api, line[0] == 'W' ? OCP_LOG_WARN : OCP_LOG_ERROR, "%s", line + 1);
    free(lines);
    engine_lock(o);
}

/* ---- texts out of memory -------------------------------------------------- */

/* Needs nothing of t's texts in memory any more? Finished, nothing left
 * to tell or return from memory: its notification delivered or none owed
 * (a notice is formatted from the task when it is pushed), no blocking
 * call about to return its result, no completion check. An agent's texts
 * and a command's output alike (a foreground command's is its call's
 * answer: it stays until the call returns). */
static bool texts_done(const task *t)
{
    return task_status_terminal(t->status) && !t->foreground && !t->finalizing && t->result_waiters == 0 &&
           t->notices_unformatted == 0 && (t->notice_state == NOTICE_NONE || t->notice_state == NOTICE_DONE);
}

/* Free t's texts whose stored copy is theirs (texts_stored). A command
 * keeps its exit and command line (small): only its output goes. */
static void free_stored_texts(task *t)
{
    if ((t->texts_stored & TASK_TEXT_OUTPUT) && t->shell && !t->shell->out.stored_only)
        shell_output_drop(&t->shell->out);
    char **texts[] = {&t->prompt, &t->result, &t->error};
    const unsigned text_bits[] = {TASK_TEXT_PROMPT, TASK_TEXT_RESULT, TASK_TEXT_ERROR};
    for (size_t i = 0; i < 3; i++)
        if (t->texts_stored & text_bits[i]) {
            free(*texts[i]);
            *texts[i] = NULL;
        }
}

/* t, finished, is as its row in the store (just committed, or restored):
 * its texts are stored from now (later rows leave them as they are), and
 * leave memory once nothing needs them there. [lock held] (not asserted: t does not know its lock) */
static void texts_stored(task *t)
{
    if (!task_status_terminal(t->status))
        return;
    t->texts_stored = t->shell ? TASK_TEXTS_ALL | TASK_TEXT_OUTPUT : TASK_TEXTS_ALL;
    if (texts_done(t))
        free_stored_texts(t);
}

/* After a commit: the tasks of rows[0..n) not changed since, as written.
 * [lock held] */
static void drop_committed(engine *o, const store_row *rows, size_t n)
{
    ENGINE_ASSERT_LOCKED(o);
    for (size_t i = 0; i < n; i++) {
        task *t = registry_find(&o->reg, rows[i].id);
        if (t && !t->dirty_slot)
            texts_stored(t);
    }
}

void persist_drop_copies(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    /* After a failed write the disk is not trusted: what is in memory stays. */
    if (t && o->reg.track && texts_done(t))
        free_stored_texts(t);
}

/* Attach the copy *text of a text `bit` still kept in the store only, not
 * attached yet, and stored already when the read began (`stored`: the
 * bits then); else free it. */
static void attach_copy(task *t, unsigned stored, unsigned bit, char **field, char **text)
{
    if ((stored & bit) && (t->texts_stored & bit) && !*field) {
        *field = *text;
        *text = NULL;
    }
    free(*text);
    *text = NULL;
}

/* Attach the command's output read back (as attach_copy; a row with none
 * is an empty output): its text, in a buffer of its size. */
static void attach_output(task *t, unsigned stored, char **text)
{
    if ((stored & TASK_TEXT_OUTPUT) && (t->texts_stored & TASK_TEXT_OUTPUT) && t->shell && t->shell->out.stored_only)
        shell_output_set_text(&t->shell->out, *text ? *text : xstrdup(""));
    else
        free(*text);
    *text = NULL;
}

static bool texts_missing(const task *t)
{
    return ((t->texts_stored & TASK_TEXT_PROMPT) && !t->prompt) ||
           ((t->texts_stored & TASK_TEXT_RESULT) && !t->result) || ((t->texts_stored & TASK_TEXT_ERROR) && !t->error) ||
           ((t->texts_stored & TASK_TEXT_OUTPUT) && t->shell && t->shell->out.stored_only);
}

/* One read of task id's stored texts, without the lock (released and taken
 * again). *prompt, *result, *error, *output: what it read, or a sentence
 * saying why it could not. */
static void read_stored(engine *o, const char *id, char **prompt, char **result, char **error, char **output)
{
    store_reader *reader = o->ps.reader; /* lives until persist_stop, after every call */
    engine_unlock(o);
    char *err = NULL;
    int rc = store_reader_texts(reader, id, prompt, result, error, output, &err);
    if (err)
        hc_log(&o->api, OCP_LOG_ERROR, "ocbg: %s", err);
    if (rc != 0) {
        char *why = xasprintf("(kept in the task store, which could not be read: %s)", err ? err : "unknown error");
        *prompt = xstrdup(why);
        *result = xstrdup(why);
        *output = xstrdup(why);
        *error = why;
    }
    free(err);
    engine_lock(o);
}

task *persist_texts(engine *o, task *t)
{
    ENGINE_ASSERT_LOCKED(o);
    /* Texts change only when a run ends (its status changes) or a new one
     * begins (run + 1): read while neither happened, the copy is the
     * task's; else it is read again. And only a text already marked stored
     * when the read began: one marked during it (its row committed
     * meanwhile, its memory copy freed) may be newer than what the read
     * saw, e.g. a resumed run's result committed while the read saw the
     * row of the run before; it is read again. A read that held is the
     * last: a text still missing then is one the store holds as NULL (a
     * completed task's error). Before, such a text kept every call at
     * three reads, and when the last one did not hold (the run ended, and
     * was committed, during it) the result was shown empty. */
    for (int tries = 0; t && texts_missing(t) && o->ps.reader && tries < READ_TRIES; tries++) {
        char id[TASK_ID_SIZE];
        memcpy(id, t->id, sizeof id);
        unsigned run = t->run, stored = t->texts_stored;
        task_status status = t->status;
        char *prompt = NULL, *result = NULL, *error = NULL, *output = NULL;
        read_stored(o, id, &prompt, &result, &error, &output);
        t = registry_find(&o->reg, id);
        bool held = t && t->run == run && t->status == status;
        if (held) {
            attach_copy(t, stored, TASK_TEXT_PROMPT, &t->prompt, &prompt);
            attach_copy(t, stored, TASK_TEXT_RESULT, &t->result, &result);
            attach_copy(t, stored, TASK_TEXT_ERROR, &t->error, &error);
            attach_output(t, stored, &output);
        }
        free(prompt);
        free(result);
        free(error);
        free(output);
        if (held && t->texts_stored == stored)
            break;
    }
    return t;
}

/* ---- the store thread ---------------------------------------------------- */

typedef struct batch_rows {
    store_row *rows;
    size_t n, cap;
} batch_rows;

static void copy_task(void *arg, task *t)
{
    batch_rows *b = arg;
    if (t->foreground)
        return; /* removed when its call returns: nothing to keep */
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->rows = xrealloc(b->rows, b->cap * sizeof *b->rows);
    }
    store_row_from_task(t, &b->rows[b->n++]);
}

static void forget_task(void *arg, task *t)
{
    (void)arg;
    (void)t;
}

/* Memory only from now: nothing is marked, what was marked is forgotten. */
static void stop_tracking(engine *o)
{
    o->reg.track = false;
    registry_take_dirty(&o->reg, SIZE_MAX, forget_task, NULL);
}

/* One write: what is dirty now, in one transaction. [lock held] Let go
 * during the write. false: it failed (the store is off now). */
static bool write_dirty(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    registry *r = &o->reg;
    uint64_t gen = r->dirty_gen;
    o->ps.writing = true;
    batch_rows b = {0};
    bool all = registry_take_dirty(r, STORE_BATCH_ROWS, copy_task, &b);
    char **removed = r->removed;
    size_t nremoved = r->nremoved;
    r->removed = NULL;
    r->nremoved = r->removed_cap = 0;
    engine_unlock(o);

    char *err = NULL;
    int rc = store_write(o->ps.st, b.rows, b.n, removed, nremoved, &err);
    for (size_t i = 0; i < b.n; i++)
        store_row_clear(&b.rows[i]); /* the ids stay: drop_committed reads them */
    for (size_t i = 0; i < nremoved; i++)
        free(removed[i]);
    free(removed);
    if (rc != 0)
        hc_log(&o->api, OCP_LOG_ERROR, "ocbg: %s; tasks live in memory only from now on (a restart loses them)", err);
    free(err);

    engine_lock(o);
    o->ps.writing = false;
    o->ps.writes++;
    o->ps.rows_written += b.n;
    if (rc != 0) {
        stop_tracking(o);
    } else {
        if (all) /* else what changed after the rows taken waits for the next write */
            o->ps.committed = gen;
        drop_committed(o, b.rows, b.n);
    }
    free(b.rows);
    pthread_cond_broadcast(&o->ps.synced_cv);
    return rc == 0;
}

/* The store thread writes what changed a moment after the first change
 * (STORE_DELAY_MS: the changes of a burst of events share one commit).
 * What a tool call or a notification needs on disk now is written by
 * persist_sync on its own thread. */
static void *store_main(void *arg)
{
    engine *o = arg;
    bool delayed = false;
    engine_lock(o);
    while (o->reg.track) {
        bool pending = o->reg.dirty > 0 || o->reg.nremoved > 0;
        if (!pending && o->ps.stop)
            break;
        if (!pending) {
            o->ps.wake_pending = false;
            engine_cond_wait(o, &o->ps.cv);
        } else if (o->ps.writing) {
            engine_cond_wait(o, &o->ps.synced_cv);
        } else if (!delayed && !o->ps.stop) {
            delayed = true;
            struct timespec ts;
            mono_deadline(&ts, mono_ms() + STORE_DELAY_MS);
            engine_cond_timedwait(o, &o->ps.cv, &ts);
        } else {
            write_dirty(o);
            delayed = o->reg.dirty > 0; /* left for the next batch: written at once */
        }
    }
    stop_tracking(o);
    pthread_cond_broadcast(&o->ps.synced_cv);
    engine_unlock(o);
    return NULL;
}

static void on_dirty(void *arg)
{
    engine *o = arg;
    if (o->ps.wake_pending)
        return; /* it is awake, or will write within STORE_DELAY_MS */
    o->ps.wake_pending = true;
    pthread_cond_signal(&o->ps.cv);
}

void persist_sync(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    uint64_t want = o->reg.dirty_gen;
    while (o->reg.track && o->ps.started && o->ps.committed < want) {
        /* No write under way: this thread writes (saves the hand-off to
         * the store thread and back); else it waits for that write, and
         * writes next if its change was not in it. */
        if (!o->ps.writing)
            write_dirty(o);
        else
            engine_cond_wait(o, &o->ps.synced_cv);
    }
}

/* ---- restoring ------------------------------------------------------------ */

static void restore_row(void *arg, const store_row *row)
{
    engine *o = arg;
    task *t = store_row_to_task(row, (size_t)o->opt.shell_output_cap);
    /* An agent whose session was never made (or never recorded) did no
     * work: it waits for a slot again. */
    if (t->type == TASK_AGENT && !t->session_id && task_status_active(t->status)) {
        t->status = TASK_PENDING;
        t->started_ms = 0;
    }
    if (!registry_restore(&o->reg, t, row->parent_session, row->batch))
        task_free(t); /* its id or session is another restored task's */
}

/* A restored command: its process did not outlive its host's plugin, or if
 * it did, and it is provably the same process, it is killed now. */
static void end_shell(engine *o, task *t)
{
    shell_state *s = t->shell;
    if (s->pid > 0 && proc_alive(s->pid, s->pid_start))
        kill(-s->pid, SIGKILL);
    s->lost = true;
    engine_finish(o, t, TASK_ERROR, "stopped: the host restarted", NULL);
}

/* A notification a restored task still owes, unless it is known
 * delivered: sent again, after a look when its send may have happened. Its
 * parent's tasks oldest first, as they were launched. And what each task
 * cost, back in its sessions' spend; the texts of the others back in the
 * store only. */
static void notify_parent(const char *key, void *value, void *arg)
{
    (void)key;
    engine *o = arg;
    parent *p = value;
    task *t = p->head;
    while (t && t->pnext)
        t = t->pnext;
    for (; t; t = t->pprev) {
        guards_restore_spend(o, t);
        if (!task_status_active(t->status) && t->notice_run == t->run &&
            (t->notice_state == NOTICE_DUE || t->notice_state == NOTICE_PUSHING))
            engine_notify(o, t, t->notice_state == NOTICE_PUSHING);
        else if (!t->dirty_slot)
            texts_stored(t); /* as its row: read back when shown */
    }
}

/* What each restored task still needs: its notification (above); active
 * agents are checked with the host by the worker; commands end; pending
 * tasks wait for a slot. [lock held] */
static void resume_restored(engine *o)
{
    ENGINE_ASSERT_LOCKED(o);
    map_each(&o->reg.parents, notify_parent, o);
    isolate_restored(o);
    for (task *t = o->reg.active, *next; t; t = next) {
        next = t->live->anext;
        if (t->status == TASK_PENDING)
            o->sched_due = true;
        else if (t->type == TASK_SHELL)
            end_shell(o, t);
        else {
            t->recovering = true;
            engine_request_finalize(o, t);
        }
    }
}

static char *store_file(const engine *o)
{
    if (!o->opt.store)
        return NULL;
    if (o->opt.store_path[0])
        return xstrdup(o->opt.store_path);
    if (o->api.host.data_dir && o->api.host.data_dir[0])
        return xasprintf("%s/%s", o->api.host.data_dir, STORE_FILE);
    return NULL;
}

int persist_start(engine *o)
{
    cond_init_monotonic(&o->ps.cv);
    cond_init_monotonic(&o->ps.synced_cv);
    char *path = store_file(o), *err = NULL;
    if (!path) {
        if (o->opt.store)
            defer_log(o, 'W',
                      "ocbg: the host gives no data directory and store_path is not set: tasks live in memory "
                      "only (a restart loses them)");
        return 0;
    }
    int rc = store_open(path, &o->ps.st, &err);
    unsigned skipped = 0;
    if (rc == 0)
        rc = store_load(o->ps.st, restore_row, o, &skipped, &err);
    if (rc != 0) {
        char *line = xasprintf("ocbg: %s; tasks live in memory only (a restart loses them)", err);
        defer_log(o, 'E', line);
        free(line);
        store_close(o->ps.st, true);
        o->ps.st = NULL;
        /* A half-restored registry is still right: what loaded stays. */
    }
    if (skipped) {
        char *line =
            xasprintf("ocbg: the task store %s: %u stored tasks could not be read and were left out", path, skipped);
        defer_log(o, 'E', line);
        free(line);
    }
    free(err);
    free(path);
    if (!o->ps.st)
        return 0;
    o->ps.reader = store_reader_new(store_path(o->ps.st));
    o->reg.on_dirty = on_dirty;
    o->reg.on_dirty_arg = o;
    o->reg.track = true;
    engine_lock(o); /* no other thread yet; taken for what it calls ([lock held]) */
    resume_restored(o);
    engine_unlock(o);
    rc = pthread_create(&o->ps.thread, NULL, store_main, o);
    o->ps.started = rc == 0;
    if (rc != 0) {
        stop_tracking(o);
        store_close(o->ps.st, true);
        o->ps.st = NULL;
    }
    return rc;
}

void persist_stop(engine *o)
{
    engine_lock(o);
    o->ps.stop = true;
    pthread_cond_signal(&o->ps.cv);
    engine_unlock(o);
    if (o->ps.started)
        pthread_join(o->ps.thread, NULL);
    o->ps.started = false;
    stop_tracking(o);
    store_close(o->ps.st, true);
    o->ps.st = NULL;
    store_reader_free(o->ps.reader);
    o->ps.reader = NULL;
    free(o->ps.log);
    o->ps.log = NULL;
    pthread_cond_destroy(&o->ps.cv);
    pthread_cond_destroy(&o->ps.synced_cv);
}

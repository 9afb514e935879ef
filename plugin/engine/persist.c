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

bool persist_on(const engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    return eng->ps.st != NULL;
}

/* A line for the host's log, logged by the worker once it runs (the host
 * may not take log calls from ocp_plugin_entry's thread): 'E' error, 'W'
 * warning, as its first character. */
static void defer_log(engine *eng, char level, const char *line)
{
    char *all = xasprintf("%s%c%s\n", eng->ps.log ? eng->ps.log : "", level, line);
    free(eng->ps.log);
    eng->ps.log = all;
}

void persist_log_deferred(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    char *lines = eng->ps.log;
    eng->ps.log = NULL;
    if (!lines)
        return;
    engine_unlock(eng);
    char *save = NULL;
    for (char *line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        hostapi_log(&eng->api, line[0] == 'W' ? OCP_LOG_WARN : OCP_LOG_ERROR, "%s", line + 1);
    free(lines);
    engine_lock(eng);
}

/* ---- texts out of memory -------------------------------------------------- */

/* Needs nothing of t's texts in memory any more? Finished, nothing left
 * to tell or return from memory: its notification delivered or none owed
 * (a notification is formatted from the task when it is pushed), no blocking
 * call about to return its result, no completion check. An agent's texts
 * and a command's output alike (a foreground command's is its call's
 * answer: it stays until the call returns). */
static bool texts_done(const task *t)
{
    return task_status_terminal(t->status) && !t->foreground && !t->checking && t->result_waiters == 0 &&
           t->notifications_unformatted == 0 &&
           (t->notification_state == NOTIFICATION_NONE || t->notification_state == NOTIFICATION_DONE);
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
static void drop_committed(engine *eng, const store_row *rows, size_t n)
{
    ENGINE_ASSERT_LOCKED(eng);
    for (size_t i = 0; i < n; i++) {
        task *t = registry_find(&eng->reg, rows[i].id);
        if (t && !t->dirty_slot)
            texts_stored(t);
    }
}

void persist_drop_copies(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
    /* After a failed write the disk is not trusted: what is in memory stays. */
    if (t && eng->reg.track && texts_done(t))
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
static void read_stored(engine *eng, const char *id, char **prompt, char **result, char **error, char **output)
{
    store_reader *reader = eng->ps.reader; /* lives until persist_stop, after every call */
    engine_unlock(eng);
    char *err = NULL;
    int rc = store_reader_texts(reader, id, prompt, result, error, output, &err);
    if (err)
        hostapi_log(&eng->api, OCP_LOG_ERROR, "ocbg: %s", err);
    if (rc != 0) {
        char *why = xasprintf("(kept in the task store, which could not be read: %s)", err ? err : "unknown error");
        *prompt = xstrdup(why);
        *result = xstrdup(why);
        *output = xstrdup(why);
        *error = why;
    }
    free(err);
    engine_lock(eng);
}

task *persist_texts(engine *eng, task *t)
{
    ENGINE_ASSERT_LOCKED(eng);
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
    for (int tries = 0; t && texts_missing(t) && eng->ps.reader && tries < READ_TRIES; tries++) {
        char id[TASK_ID_SIZE];
        memcpy(id, t->id, sizeof id);
        unsigned run = t->run, stored = t->texts_stored;
        task_status status = t->status;
        char *prompt = NULL, *result = NULL, *error = NULL, *output = NULL;
        read_stored(eng, id, &prompt, &result, &error, &output);
        t = registry_find(&eng->reg, id);
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
static void stop_tracking(engine *eng)
{
    eng->reg.track = false;
    registry_take_dirty(&eng->reg, SIZE_MAX, forget_task, NULL);
}

/* One write: what is dirty now, in one transaction. [lock held] Let go
 * during the write. false: it failed (the store is off now). */
static bool write_dirty(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    registry *r = &eng->reg;
    uint64_t gen = r->dirty_gen;
    eng->ps.writing = true;
    batch_rows b = {0};
    bool all = registry_take_dirty(r, STORE_BATCH_ROWS, copy_task, &b);
    char **removed = r->removed;
    size_t nremoved = r->nremoved;
    r->removed = NULL;
    r->nremoved = r->removed_cap = 0;
    engine_unlock(eng);

    char *err = NULL;
    int rc = store_write(eng->ps.st, b.rows, b.n, removed, nremoved, &err);
    for (size_t i = 0; i < b.n; i++)
        store_row_clear(&b.rows[i]); /* the ids stay: drop_committed reads them */
    for (size_t i = 0; i < nremoved; i++)
        free(removed[i]);
    free(removed);
    if (rc != 0)
        hostapi_log(&eng->api, OCP_LOG_ERROR, "ocbg: %s; tasks live in memory only from now on (a restart loses them)",
                    err);
    free(err);

    engine_lock(eng);
    eng->ps.writing = false;
    eng->ps.writes++;
    eng->ps.rows_written += b.n;
    if (rc != 0) {
        stop_tracking(eng);
    } else {
        if (all) /* else what changed after the rows taken waits for the next write */
            eng->ps.committed = gen;
        drop_committed(eng, b.rows, b.n);
    }
    free(b.rows);
    pthread_cond_broadcast(&eng->ps.synced_cv);
    return rc == 0;
}

/* The store thread writes what changed a moment after the first change
 * (STORE_DELAY_MS: the changes of a burst of events share one commit).
 * What a tool call or a notification needs on disk now is written by
 * persist_sync on its own thread. */
static void *persist_main(void *arg)
{
    engine *eng = arg;
    bool delayed = false;
    engine_lock(eng);
    while (eng->reg.track) {
        bool pending = eng->reg.dirty > 0 || eng->reg.nremoved > 0;
        if (!pending && eng->ps.stop)
            break;
        if (!pending) {
            eng->ps.wake_pending = false;
            engine_cond_wait(eng, &eng->ps.cv);
        } else if (eng->ps.writing) {
            engine_cond_wait(eng, &eng->ps.synced_cv);
        } else if (!delayed && !eng->ps.stop) {
            delayed = true;
            struct timespec ts;
            mono_deadline(&ts, mono_ms() + STORE_DELAY_MS);
            engine_cond_timedwait(eng, &eng->ps.cv, &ts);
        } else {
            write_dirty(eng);
            delayed = eng->reg.dirty > 0; /* left for the next batch: written at once */
        }
    }
    stop_tracking(eng);
    pthread_cond_broadcast(&eng->ps.synced_cv);
    engine_unlock(eng);
    return NULL;
}

static void on_dirty(void *arg)
{
    engine *eng = arg;
    if (eng->ps.wake_pending)
        return; /* it is awake, or will write within STORE_DELAY_MS */
    eng->ps.wake_pending = true;
    pthread_cond_signal(&eng->ps.cv);
}

void persist_sync(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    uint64_t want = eng->reg.dirty_gen;
    while (eng->reg.track && eng->ps.started && eng->ps.committed < want) {
        /* No write under way: this thread writes (saves the hand-off to
         * the store thread and back); else it waits for that write, and
         * writes next if its change was not in it. */
        if (!eng->ps.writing)
            write_dirty(eng);
        else
            engine_cond_wait(eng, &eng->ps.synced_cv);
    }
}

/* ---- restoring ------------------------------------------------------------ */

static void restore_row(void *arg, const store_row *row)
{
    engine *eng = arg;
    task *t = store_row_to_task(row, (size_t)eng->opt.shell_output_cap);
    /* An agent whose session was never made (or never recorded) did no
     * work: it waits for a slot again. */
    if (t->type == TASK_AGENT && !t->session_id && task_status_active(t->status)) {
        t->status = TASK_PENDING;
        t->started_ms = 0;
    }
    if (!registry_restore(&eng->reg, t, row->parent_session, row->batch))
        task_free(t); /* its id or session is another restored task's */
}

/* A restored command: its process did not outlive its host's plugin, or if
 * it did, and it is provably the same process, it is killed now. */
static void end_shell(engine *eng, task *t)
{
    shell_state *s = t->shell;
    if (s->pid > 0 && proc_alive(s->pid, s->pid_start))
        kill(-s->pid, SIGKILL);
    s->lost = true;
    engine_finish(eng, t, TASK_ERROR, "stopped: the host restarted", NULL);
}

/* A notification a restored task still owes, unless it is known
 * delivered: sent again, after a look when its send may have happened. Its
 * parent's tasks oldest first, as they were launched. And what each task
 * cost, back in its sessions' spend; the texts of the others back in the
 * store only. */
static void notify_parent(const char *key, void *value, void *arg)
{
    (void)key;
    engine *eng = arg;
    parent *p = value;
    task *t = p->head;
    while (t && t->pnext)
        t = t->pnext;
    for (; t; t = t->pprev) {
        guards_restore_spend(eng, t);
        if (!task_status_active(t->status) && t->notification_run == t->run &&
            (t->notification_state == NOTIFICATION_DUE || t->notification_state == NOTIFICATION_PUSHING))
            engine_notify(eng, t, t->notification_state == NOTIFICATION_PUSHING);
        else if (!t->dirty_slot)
            texts_stored(t); /* as its row: read back when shown */
    }
}

/* What each restored task still needs: its notification (above); active
 * agents are checked with the host by the worker; commands end; pending
 * tasks wait for a slot. [lock held] */
static void resume_restored(engine *eng)
{
    ENGINE_ASSERT_LOCKED(eng);
    map_each(&eng->reg.parents, notify_parent, eng);
    isolate_restored(eng);
    for (task *t = eng->reg.active, *next; t; t = next) {
        next = t->active->anext;
        if (t->status == TASK_PENDING)
            eng->sched_due = true;
        else if (t->type == TASK_SHELL)
            end_shell(eng, t);
        else {
            t->recovering = true;
            engine_request_check(eng, t);
        }
    }
}

static char *store_file(const engine *eng)
{
    if (!eng->opt.store)
        return NULL;
    if (eng->opt.store_path[0])
        return xstrdup(eng->opt.store_path);
    const char *data_dir = hostapi_data_dir(&eng->api);
    if (data_dir)
        return xasprintf("%s/%s", data_dir, STORE_FILE);
    return NULL;
}

int persist_start(engine *eng)
{
    cond_init_monotonic(&eng->ps.cv);
    cond_init_monotonic(&eng->ps.synced_cv);
    char *path = store_file(eng), *err = NULL;
    if (!path) {
        if (eng->opt.store)
            defer_log(eng, 'W',
                      "ocbg: the host gives no data directory and store_path is not set: tasks live in memory "
                      "only (a restart loses them)");
        return 0;
    }
    int rc = store_open(path, &eng->ps.st, &err);
    unsigned skipped = 0;
    if (rc == 0)
        rc = store_load(eng->ps.st, restore_row, eng, &skipped, &err);
    if (rc != 0) {
        char *line = xasprintf("ocbg: %s; tasks live in memory only (a restart loses them)", err);
        defer_log(eng, 'E', line);
        free(line);
        store_close(eng->ps.st, true);
        eng->ps.st = NULL;
        /* A half-restored registry is still right: what loaded stays. */
    }
    if (skipped) {
        char *line =
            xasprintf("ocbg: the task store %s: %u stored tasks could not be read and were left out", path, skipped);
        defer_log(eng, 'E', line);
        free(line);
    }
    free(err);
    free(path);
    if (!eng->ps.st)
        return 0;
    eng->ps.reader = store_reader_new(store_path(eng->ps.st));
    eng->reg.on_dirty = on_dirty;
    eng->reg.on_dirty_arg = eng;
    eng->reg.track = true;
    engine_lock(eng); /* no other thread yet; taken for what it calls ([lock held]) */
    resume_restored(eng);
    engine_unlock(eng);
    rc = pthread_create(&eng->ps.thread, NULL, persist_main, eng);
    eng->ps.started = rc == 0;
    if (rc != 0) {
        stop_tracking(eng);
        store_close(eng->ps.st, true);
        eng->ps.st = NULL;
    }
    return rc;
}

void persist_stop(engine *eng)
{
    engine_lock(eng);
    eng->ps.stop = true;
    pthread_cond_signal(&eng->ps.cv);
    engine_unlock(eng);
    if (eng->ps.started)
        pthread_join(eng->ps.thread, NULL);
    eng->ps.started = false;
    stop_tracking(eng);
    store_close(eng->ps.st, true);
    eng->ps.st = NULL;
    store_reader_free(eng->ps.reader);
    eng->ps.reader = NULL;
    free(eng->ps.log);
    eng->ps.log = NULL;
    pthread_cond_destroy(&eng->ps.cv);
    pthread_cond_destroy(&eng->ps.synced_cv);
}

/* A finished task's texts out of memory: once its row is
 * committed and its notification delivered, its prompt, result and error
 * active only in the durable store, and every tool that shows them reads
 * them back exactly (background_output, TaskOutput, a resume, after a
 * restart). A command's output: test_results_store_shell.
 * With the store off, or after a write to it failed, they stay in memory.
 *
 * The plugin is the one linked in from libocbg-internal.a (sim_load_entry),
 * so that the test can look at what a task keeps in memory. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/persist.h"
#include "store/reader.h"
#include "shelltest.h"
#include "storetest.h"

static char dir[] = "/tmp/ocbg-results-XXXXXX";

/* The answer: several lines, non-ASCII, longer than a notice shows. */
#define ANSWER_HEAD "First line of the answer.\\nSecond: caf\\u00e9 \\u2014 na\\u00efve.\\n"
#define ANSWER_HEAD_TEXT "First line of the answer.\nSecond: café — naïve.\n"

static char answer_json[6000], answer_text[6000];

static void make_answer(void)
{
    strcpy(answer_json, ANSWER_HEAD);
    strcpy(answer_text, ANSWER_HEAD_TEXT);
    for (int i = 0; i < 100; i++) {
        strcat(answer_json, "filler words of the answer ");
        strcat(answer_text, "filler words of the answer ");
    }
    strcat(answer_json, "THE-END");
    strcat(answer_text, "THE-END");
}

/* What task id keeps in memory: -1 gone; else bit 0: its result is in
 * memory, bit 1: its prompt is, bit 2: every text is marked stored. */
static int in_memory(sim_host *h, const char *id)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    int r = !t ? -1 : (t->result != NULL) | (t->prompt != NULL) << 1 | (t->texts_stored == TASK_TEXTS_ALL) << 2;
    engine_unlock(eng);
    return r;
}

static int texts_dropped(sim_host *h, const char *id)
{
    return in_memory(h, id) == 4;
}

/* A notification is held for session psid's next answer. */
static int notice_held(sim_host *h, const char *psid)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    parent *p = registry_parent(&eng->reg, psid);
    int held = p && p->held;
    engine_unlock(eng);
    return held;
}

/* Wait (with a deadline) until task id's texts are in the store only. */
static int wait_dropped(sim_host *h, const char *id)
{
    return t_wait_until(h, texts_dropped, id);
}

static char *launch_done(sim_host *h, const char *psid, const char *prompt, const char *reply_json)
{
    const char *script = J("{'steps':[{'reply':'%s'}]}", reply_json);
    sim_script(h, prompt, script, 1);
    char *id = t_launch(h, psid, "Texts", prompt, "general");
    if (t_wait_messages_with(h, psid, "[ocbg] Background task completed", 1, tap_timeout_ms(5000)) != 0)
        bail_out("task %s was not notified", id);
    return id;
}

/* The stored prompt and result of task id (malloc'd; NULL when none). */
static void stored_texts(const char *db, const char *id, char **prompt, char **result)
{
    sqlite3 *d = NULL;
    sqlite3_stmt *st = NULL;
    *prompt = *result = NULL;
    if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(d, "SELECT prompt, result FROM task WHERE id = ?", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_text(st, 0))
            *prompt = strdup((const char *)sqlite3_column_text(st, 0));
        if (sqlite3_column_text(st, 1))
            *result = strdup((const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    sqlite3_close(d);
}

static void results_read_back(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/read.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *id = launch_done(h, f.parent, "texts-read-back one", answer_json);
    is_int(wait_dropped(h, id), 0, "a finished, delivered task keeps neither its result nor its prompt in memory");

    char *out = t_output(h, f.parent, id);
    char *want = NULL;
    if (asprintf(&want, "\n\nResult:\n%s\n", answer_text) < 0)
        bail_out("asprintf");
    like(out, want, "background_output gives the whole result, read back from the store");
    is_int(in_memory(h, id), 4, "the copy read back is not kept");
    free(out);

    const char *args = J("{'task_id':'%s','block':false}", id);
    out = t_tool(h, f.parent, "TaskOutput", args);
    free(want);
    if (asprintf(&want, "<output>\n%s\n</output>\n", answer_text) < 0)
        bail_out("asprintf");
    like(out, want, "TaskOutput gives the whole result too");
    free(out);

    /* A blocking resume: its new answer; the prompt stays stored. */
    sim_script(h, "texts-read-back two", J("{'steps':[{'reply':'the second answer'}]}"), 1);
    args = J("{'task_id':'%s','message':'texts-read-back two','block':true}", id);
    out = t_tool(h, f.parent, "background_resume", args);
    is_int(t_rc, 0, "a blocking resume of a task whose texts are in the store succeeds");
    like(out, "the second answer", "and returns the new answer");
    free(out);
    is_int(wait_dropped(h, id), 0, "the new answer leaves memory in its turn");
    t_output_like(h, f.parent, id, "Result:\nthe second answer\n", "background_output gives the new answer");
    char *prompt = NULL, *result = NULL;
    stored_texts(db, id, &prompt, &result);
    is_str(prompt, "texts-read-back one", "the stored prompt is the launch's, kept through the resume's writes");
    is_str(result, "the second answer", "the stored result is the new answer");
    free(prompt);
    free(result);

    /* After a restart: restored without its texts, read back when shown. */
    sim_unload_plugins(h);
    if (sim_load_entry(h, ocp_plugin_entry, "ocbg (linked in)", opts) != 1)
        bail_out("reloading: %s", sim_load_error(h));
    is_int(in_memory(h, id), 4, "restored after a restart, it keeps its texts in the store only");
    t_output_like(h, f.parent, id, "Result:\nthe second answer\n", "and background_output still gives its answer");
    free(want);
    free(id);
    t_close(&f);
}

static void store_off_keeps_texts(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(J("{'store':false}")));
    char *id = launch_done(h, f.parent, "texts-store-off", answer_json);
    char *out = t_output(h, f.parent, id); /* a tool call: would have waited for a write */
    like(out, "THE-END", "with the store off, background_output gives the result");
    is_int(in_memory(h, id), 3, "and the result and prompt stay in memory (none marked stored)");
    free(out);
    free(id);
    t_close(&f);
}

/* A write to the store fails (a trigger refuses the write that records the
 * notification delivered): the store degrades to memory, loudly, and the
 * texts stay in memory. */
static void failed_write_keeps_texts(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/fail.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_linked_host(opts);
    is_int(t_refuse_updates(db, "NEW.notice = 3"), SQLITE_OK,
           "a trigger makes the write of a delivered notification fail");
    t_open_with(&f, h);
    char *id = launch_done(h, f.parent, "texts-write-fails", answer_json);
    ok(t_wait_log(h, "the disk refuses") == 0 && t_wait_log(h, "memory only") == 0,
       "the failed write is logged: tasks live in memory only from now on");
    is_int(t_wait_until(h, t_store_given_up, NULL), 0, "the store is given up");
    t_output_like(h, f.parent, id, "THE-END", "after the failed write, background_output gives the result");
    is_int(in_memory(h, id) & 3, 3, "the result and prompt stay in memory");
    free(id);
    t_close(&f);
}

/* A notification the parent would not take is held for its next answer:
 * its text, formatted from the task at the last try, rides on that answer
 * whole. The task's texts stay in memory: a held notice is not known
 * delivered (a restart sends it again, after a look). */
static void held_notice_keeps_text(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/held.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\",\"notify_retries\":1,\"notify_retry_ms\":5}", db);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    const char *script = J("{'steps':[{'reply':'%s'}]}", answer_json);
    sim_script(h, "texts-held", script, 1);
    /* Every prompt after the task's own (call 1) fails: its notification
     * cannot be sent. */
    sim_fail(h, "session_prompt", 2, -1, -EIO);
    char *id = t_launch(h, f.parent, "Texts", "texts-held", "general");
    is_int(sim_wait_calls(h, "session_prompt", f.parent, 2, tap_timeout_ms(5000)), 0,
           "its notification was tried twice and not taken");
    is_int(t_wait_until(h, notice_held, f.parent), 0, "and held for the parent's next answer");
    sim_fail(h, NULL, 0, 0, 0);
    char *ans = t_tool(h, f.parent, "background_list", "{}");
    like(ans, "[ocbg] Background task completed", "the next answer carries the notification");
    like(ans, "THE-END", "with the whole result");
    is_int(in_memory(h, id) & 3, 3, "the task's texts stay in memory");
    free(ans);
    free(id);
    t_close(&f);
}

/* The reader on its own: a file that is not there, then is; a row that is
 * not there. */
static void reader_cases(void)
{
    char db[300];
    snprintf(db, sizeof db, "%s/reader.db", dir);
    store_reader *r = store_reader_new(db);
    char *prompt, *result, *error, *output, *err = NULL;
    ok(store_reader_texts(r, "bg_00000001", &prompt, &result, &error, &output, &err) < 0, "no file: the read fails");
    ok(err && strstr(err, db) && !result, "naming the file, with no text");
    free(err);
    sqlite3 *d = NULL;
    sqlite3_open(db, &d);
    sqlite3_exec(d,
                 "CREATE TABLE task(id TEXT PRIMARY KEY, prompt TEXT, result TEXT, error TEXT, output TEXT);"
                 "INSERT INTO task VALUES('bg_00000001', 'the prompt', 'the result', NULL, 'printed')",
                 NULL, NULL, NULL);
    sqlite3_close(d);
    is_int(store_reader_texts(r, "bg_00000001", &prompt, &result, &error, &output, &err), 0,
           "once the file is there, the same reader reads it");
    ok(prompt && result && !error && !err && strcmp(prompt, "the prompt") == 0 && strcmp(result, "the result") == 0 &&
           output && strcmp(output, "printed") == 0,
       "the texts as stored, a command's output with them");
    free(prompt);
    free(result);
    free(output);
    is_int(store_reader_texts(r, "bg_00000002", &prompt, &result, &error, &output, &err), -ENOENT,
           "no such row: -ENOENT");
    free(err);
    store_reader_free(r);
}

/* A task whose texts are in the store only is resumed; the write of the
 * resume fails (the store is given up): its new answer is shown, and the
 * prompt still read back. */
static void resume_after_failed_write(void)
{
    char db[300], opts[512];
    snprintf(db, sizeof db, "%s/resume-fail.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *id = launch_done(h, f.parent, "texts-resume-fail one", "the first answer");
    is_int(wait_dropped(h, id), 0, "the first answer is in the store only");
    is_int(t_refuse_updates(db, "NEW.status = 5"), SQLITE_OK, "a trigger makes the resumed run's write fail");
    sim_script(h, "texts-resume-fail two", J("{'steps':[{'wait_ms':20},{'reply':'the second answer'}]}"), 1);
    const char *args = J("{'task_id':'%s','message':'texts-resume-fail two'}", id);
    free(t_tool(h, f.parent, "background_resume", args));
    is_int(t_wait_until(h, t_store_given_up, NULL), 0, "the resume's write fails: the store is given up");
    is_int(t_wait_output_with(h, f.parent, id, "Result:\nthe second answer", tap_timeout_ms(5000)), 0,
           "background_output gives the second answer");
    free(id);
    t_close(&f);
}

/* ---- a read racing the commit of a resumed run's answer ----------------- */

typedef struct commit_race {
    engine *eng;
    char id[TASK_ID_SIZE];
    store_reader *real; /* the engine's reader, put back by the "commit" */
    sqlite3 *lock;      /* holds the stale copy's file: the read waits for it */
} commit_race;

/* What the store thread does once the resumed run's row is committed
 * (drop_committed): every text marked stored, the memory copies freed. It
 * runs while persist_texts has let the lock go for its read, which is held
 * until then; the read then returns the row as it was before the commit. */
static void *commit_during_read(void *arg)
{
    commit_race *c = arg;
    pthread_mutex_lock(&c->eng->mu); /* free only while persist_texts reads */
    task *t = registry_find(&c->eng->reg, c->id);
    if (t) {
        t->texts_stored = TASK_TEXTS_ALL;
        free(t->result);
        t->result = NULL;
    }
    c->eng->ps.reader = c->real; /* a read from now on sees the commit */
    pthread_mutex_unlock(&c->eng->mu);
    sqlite3_exec(c->lock, "ROLLBACK", NULL, NULL, NULL); /* the stale read goes on */
    return NULL;
}

/* A resumed task's new answer is committed (its texts then marked stored
 * and freed) while a tool's read of its stored texts is under way: the
 * read saw the row before the commit, with the first run's answer. That
 * copy is not the task's result: it is read again, and the new answer is
 * shown. (It was attached: run and status had not changed.) */
static void stale_read_not_attached(void)
{
    char db[300], stale[300], opts[512];
    snprintf(db, sizeof db, "%s/race.db", dir);
    snprintf(stale, sizeof stale, "%s/race-before-commit.db", dir);
    snprintf(opts, sizeof opts, "{\"store_path\":\"%s\"}", db);
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(opts));
    char *id = launch_done(h, f.parent, "texts-race one", "the first answer");
    is_int(wait_dropped(h, id), 0, "the first answer is in the store only");
    sim_script(h, "texts-race two", J("{'steps':[{'reply':'the second answer'}]}"), 1);
    const char *args = J("{'task_id':'%s','message':'texts-race two','block':true}", id);
    free(t_tool(h, f.parent, "background_resume", args));
    is_int(wait_dropped(h, id), 0, "the second answer is in the store only");

    /* The row as a read that began before the second answer's commit sees
     * it, in a file of its own, held so that the read waits. */
    sqlite3 *d = NULL;
    char *sql =
        sqlite3_mprintf("CREATE TABLE task(id TEXT PRIMARY KEY, prompt TEXT, result TEXT, error TEXT, output TEXT);"
                        "INSERT INTO task VALUES(%Q, 'texts-race one', 'the first answer', NULL, NULL)",
                        id);
    sqlite3_open(stale, &d);
    sqlite3_exec(d, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    if (sqlite3_exec(d, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK)
        bail_out("locking %s", stale);

    /* The task as the second run's end left it, before its row's commit. */
    engine *eng = t_engine(h);
    commit_race c = {.eng = eng, .lock = d};
    snprintf(c.id, sizeof c.id, "%s", id); /* id is a malloc'd string of its own length */
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    if (!t)
        bail_out("task %s is gone", id);
    t->texts_stored = TASK_TEXT_PROMPT;
    t->result = strdup("the second answer");
    c.real = eng->ps.reader;
    eng->ps.reader = store_reader_new(stale);
    store_reader *stale_reader = eng->ps.reader;
    pthread_t th;
    if (pthread_create(&th, NULL, commit_during_read, &c) != 0)
        bail_out("pthread_create");
    t = persist_texts(eng, t);
    char *shown = t && t->result ? strdup(t->result) : NULL;
    engine_unlock(eng);
    pthread_join(th, NULL);
    is_str(shown, "the second answer", "a copy read before the commit of the new answer is not taken as the result");
    free(shown);
    t_output_like(h, f.parent, id, "Result:\nthe second answer\n", "background_output gives the second answer");
    store_reader_free(stale_reader);
    sqlite3_close(d);
    free(id);
    t_close(&f);
}

int main(void)
{
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    make_answer();
    reader_cases();
    results_read_back();
    store_off_keeps_texts();
    failed_write_keeps_texts();
    held_notice_keeps_text();
    resume_after_failed_write();
    stale_read_not_attached();
    t_remove_dir(dir);
    return done_testing();
}

/* test_sim_dirs.c — the simulated host's folders (ABI 1.5), as OpenCode
 * 1.18's instance per folder: a session made by session_create_in works in
 * its folder; its events reach the plugin, and session_status lists it, only
 * while the plugin watches that folder (what happens meanwhile is lost); a
 * parent's delete still cascades its session.deleted; a "run" step runs in
 * the folder; a call about a session of a released folder is counted; the
 * calls are recorded and can fail; an older host's table lacks them. Driven
 * through the recorder test plugin (simtest.h), so each host call is a real
 * plugin call through the ocp table. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "simtest.h"

/* ---- helpers ----------------------------------------------------------- */

/* A new empty folder under /tmp (the caller frees the path; rm_dir). */
static char *make_dir(const char *name)
{
    char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "/tmp/ocbg-simdirs-%s-XXXXXX", name);
    if (!mkdtemp(tmpl))
        bail_out("mkdtemp: %s", strerror(errno));
    return strdup(tmpl);
}

static void rm_dir(char *dir)
{
    t_remove_dir(dir);
    free(dir);
}

/* directory_watch through the plugin: its rc. */
static int watch(sim_host *h, const char *dir, int w)
{
    cJSON *r = hostcall(h, J("{'fn':'directory_watch','directory':'%s','watch':%d}", dir, w));
    int rc = rc_of(r);
    cJSON_Delete(r);
    return rc;
}

/* session_create_in through the plugin: the new id (malloc'd), or NULL with
 * *rc (may be NULL) the host's rc. */
static char *create_in(sim_host *h, const char *parent, const char *dir, int *rc)
{
    cJSON *r = hostcall(h, J("{'fn':'session_create_in','parentID':'%s','title':'wt','directory':'%s'}", parent, dir));
    if (rc)
        *rc = rc_of(r);
    const char *id = rc_of(r) == 0 ? jstr(out_of(r), "id") : NULL;
    char *res = id ? strdup(id) : NULL;
    cJSON_Delete(r);
    return res;
}

/* Does session_status (through the plugin) list sid? */
static int status_lists(sim_host *h, const char *sid)
{
    char *st = NULL;
    simple_call(h, "session_status", NULL, &st);
    int r = st && strstr(st, sid) != NULL;
    free(st);
    return r;
}

static int busy_pred(sim_host *h, void *arg)
{
    return sim_session_busy(h, arg);
}

/* The last message's nth part of sid (0-based), parsed (cJSON_Delete). */
static cJSON *last_parts(sim_host *h, const char *sid)
{
    cJSON *all = t_parse(sim_session_messages_json(h, sid));
    cJSON *last = cJSON_DetachItemFromArray(all, cJSON_GetArraySize(all) - 1);
    cJSON_Delete(all);
    return last;
}

/* ---- the tests --------------------------------------------------------- */

/* A session of another folder: its events reach the plugin only while the
 * folder is watched, then the same as a session of the host's own. */
static void test_events_routed(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("events");
    char *sid = create_in(h, f.parent, dir, NULL);
    ok(sid != NULL, "session_create_in in a new folder succeeds");
    char *got = sim_session_directory(h, sid);
    is_str(got, dir, "sim_session_directory: the folder");
    free(got);
    ok(sim_session_directory(h, f.parent) == NULL, "a session of the host's own folder has none");
    char *info = sim_session_get_json(h, sid);
    like(info, J("'directory':'%s'", dir), "its Session JSON names the folder");
    free(info);
    is_int(sim_directory_watched(h, dir), 0, "the folder is not watched");
    char *tr = trace(h, sid);
    is_str(tr, "", "unwatched: not even its session.created reaches the plugin");
    free(tr);

    sim_script(h, "first", J("{'steps':[{'reply':'one'}]}"), 1);
    is_int(prompt_via_plugin(h, sid, "first", 0), 0, "prompted while unwatched");
    is_int(sim_wait_messages(h, sid, 2, tap_timeout_ms(5000)), 0, "its turn runs");
    is_int(sim_wait_idle(h, sid, tap_timeout_ms(5000)), 0, "and ends");
    tr = trace(h, sid);
    is_str(tr, "", "none of the turn's events reached the plugin");
    free(tr);

    is_int(watch(h, dir, 1), 0, "directory_watch 1");
    is_int(sim_directory_watched(h, dir), 1, "the folder is watched");
    is_int(watch(h, dir, 1), 0, "watch 1 again: idempotent");
    const char *own = t_session(&f, "own");
    sim_script(h, "second", J("{'steps':[{'tool':'read','output':'x'},{'reply':'two'}]}"), 0);
    prompt_via_plugin(h, sid, "second", 0);
    prompt_via_plugin(h, own, "second", 0);
    sim_wait_idle(h, sid, tap_timeout_ms(5000));
    sim_wait_idle(h, own, tap_timeout_ms(5000));
    tr = trace(h, sid);
    char *tr_own = trace(h, own);
    like(tr, "busy", "watched: the turn's events reach the plugin");
    ok(t_ends_with(tr, "idle!"), "to its session.idle");
    /* Its session.created came while unwatched: the rest is alike. */
    const char *rest = strncmp(tr_own, "session.created,", 16) == 0 ? tr_own + 16 : tr_own;
    is_str(tr, rest, "the same events as a session of the host's own folder");
    free(tr_own);

    is_int(watch(h, dir, 0), 0, "directory_watch 0");
    is_int(sim_directory_watched(h, dir), -1, "the folder is released");
    sim_session_prompt(h, sid, J("{'parts':[{'type':'text','text':'second'}]}"));
    is_int(sim_wait_messages(h, sid, 6, tap_timeout_ms(5000)), 0, "a turn after watch 0 runs");
    sim_wait_idle(h, sid, tap_timeout_ms(5000));
    char *after = trace(h, sid);
    is_str(after, tr, "but its events are lost again");
    free(after);
    free(tr);
    free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* session_status lists a busy session of another folder only while the
 * folder is watched. */
static void test_status(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("status");
    is_int(watch(h, dir, 1), 0, "watched");
    char *sid = create_in(h, f.parent, dir, NULL);
    sim_script(h, "stay", J("{'steps':[{'hang':true}]}"), 1);
    prompt_via_plugin(h, sid, "stay", 0);
    is_int(sim_wait(h, busy_pred, sid, tap_timeout_ms(5000)), 0, "its turn is busy");
    ok(status_lists(h, sid), "watched: session_status lists it");
    is_int(watch(h, dir, 0), 0, "released");
    ok(!status_lists(h, sid), "released: session_status does not");
    is_int(watch(h, dir, 1), 0, "watched again");
    ok(status_lists(h, sid), "watched again: it is listed again");
    is_int(sim_session_abort(h, sid), 0, "the user aborts it");
    is_int(sim_wait_idle(h, sid, tap_timeout_ms(5000)), 0, "idle");
    ok(!status_lists(h, sid), "an idle one is not listed");
    free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* A delete of a parent of the host's own folder cascades into the plugin's
 * events, the children of unwatched folders included; a direct delete of
 * such a child does not reach it. */
static void test_delete_cascade(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("cascade");
    char *parent = new_session_via_plugin(h, NULL, "parent");
    char *c1 = create_in(h, parent, dir, NULL);
    char *c2 = create_in(h, parent, dir, NULL);
    is_int(sim_session_delete(h, c2), 0, "the user deletes one child");
    char *tr = trace(h, c2);
    is_str(tr, "", "its session.deleted is lost with its folder unwatched");
    free(tr);
    is_int(sim_session_delete(h, parent), 0, "the user deletes the parent");
    tr = trace(h, c1);
    is_str(tr, "session.deleted", "the cascade's session.deleted of the other child reaches the plugin");
    free(tr);
    tr = trace(h, parent);
    like(tr, "session.deleted", "and the parent's");
    free(tr);
    free(parent), free(c1), free(c2);
    rm_dir(dir);
    t_close(&f);
}

/* "run" steps run in the session's folder (the host's own for its own
 * sessions); their output is a bash tool part; a failure goes on. */
static void test_run_step(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("run");
    char real[PATH_MAX], cwd[PATH_MAX];
    if (!realpath(dir, real) || !getcwd(cwd, sizeof cwd))
        bail_out("realpath/getcwd: %s", strerror(errno));
    watch(h, dir, 1);
    char *sid = create_in(h, f.parent, dir, NULL);
    sim_script(h, "work",
               J("{'steps':[{'run':'echo hello > made.txt && pwd -P'},{'run':'echo oops; exit 3'},"
                 "{'reply':'done'}]}"),
               0);
    prompt_via_plugin(h, sid, "work", 0);
    is_int(sim_wait_messages(h, sid, 2, tap_timeout_ms(10000)), 0, "the turn ends");
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/made.txt", dir);
    char *text = t_read_file(path);
    is_str(text, "hello\n", "the run step's file landed in the session's folder");
    free(text);
    cJSON *m = last_parts(h, sid);
    is_str(jstr(m, "parts.0.tool"), "bash", "a bash tool part");
    is_str(jstr(m, "parts.0.state.input.command"), "echo hello > made.txt && pwd -P", "with the command");
    is_str(jstr(m, "parts.0.state.status"), "completed", "completed");
    like(jstr(m, "parts.0.state.output"), real, "its output: it ran in the folder");
    is_str(jstr(m, "parts.1.state.status"), "error", "a non-zero exit: the part fails");
    is_str(jstr(m, "parts.1.state.error"), "oops\nexit status 3", "with the output and the status");
    is_str(jstr(m, "parts.2.text"), "done", "and the script goes on");
    cJSON_Delete(m);
    char *tr = trace(h, sid);
    like(tr, "tool:pending,tool:running,tool:completed", "its progress shows in events");
    free(tr);

    sim_script(h, "where", J("{'steps':[{'run':'pwd -P'}]}"), 0);
    prompt_via_plugin(h, f.parent, "where", 0);
    sim_wait_messages(h, f.parent, 2, tap_timeout_ms(10000));
    m = last_parts(h, f.parent);
    like(jstr(m, "parts.0.state.output"), cwd, "a session of the host's own runs in the working directory");
    cJSON_Delete(m);

    sim_script(h, "commit",
               "{\"steps\":[{\"run\":\"unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE; git init -q . && "
               "git add made.txt && git -c user.name=sim -c user.email=sim@example.invalid commit -qm "
               "agent && git log --format=%s\"}]}",
               0);
    prompt_via_plugin(h, sid, "commit", 0);
    sim_wait_messages(h, sid, 4, tap_timeout_ms(10000));
    m = last_parts(h, sid);
    is_str(jstr(m, "parts.0.state.status"), "completed", "a sub-agent commits in its folder");
    like(jstr(m, "parts.0.state.output"), "agent", "git log shows its commit");
    cJSON_Delete(m);
    free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* Opens the fifo (arg: {path, fd}) for writing once its reader has. */
typedef struct fifo_arg {
    const char *path;
    int fd;
} fifo_arg;

static int fifo_writer_open(sim_host *h, void *arg)
{
    (void)h;
    fifo_arg *a = arg;
    a->fd = open(a->path, O_WRONLY | O_NONBLOCK);
    return a->fd >= 0;
}

static int file_has_x(sim_host *h, void *arg)
{
    (void)h;
    char *text = t_read_file(arg);
    int r = text && strchr(text, 'x');
    free(text);
    return r;
}

/* An abort while a run step's command runs ends the turn at once; the
 * command's end later changes nothing, and the session works on. */
static void test_run_aborted(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("abort");
    char fifo[600], got[600];
    snprintf(fifo, sizeof fifo, "%s/ff", dir);
    snprintf(got, sizeof got, "%s/got.txt", dir);
    if (mkfifo(fifo, 0600) != 0)
        bail_out("mkfifo: %s", strerror(errno));
    watch(h, dir, 1);
    char *sid = create_in(h, f.parent, dir, NULL);
    sim_script(h, "block", J("{'steps':[{'run':'cat ff > got.txt'},{'reply':'never'}]}"), 1);
    prompt_via_plugin(h, sid, "block", 0);
    fifo_arg fa = {fifo, -1};
    is_int(sim_wait(h, fifo_writer_open, &fa, tap_timeout_ms(10000)), 0, "the run step's command is running");
    is_int(sim_session_abort(h, sid), 0, "the user aborts the turn meanwhile");
    is_int(sim_wait_idle(h, sid, tap_timeout_ms(5000)), 0, "it ends at once");
    cJSON *m = last_parts(h, sid);
    is_str(jstr(m, "parts.0.state.status"), "error", "its bash part failed (aborted)");
    cJSON_Delete(m);
    if (fa.fd >= 0) {
        ok(write(fa.fd, "x", 1) == 1, "the command gets its input");
        close(fa.fd);
    }
    is_int(sim_wait(h, file_has_x, got, tap_timeout_ms(10000)), 0, "and ends");
    is_int(prompt_via_plugin(h, sid, "after", 0), 0, "a new prompt");
    is_int(sim_wait_messages(h, sid, 4, tap_timeout_ms(5000)), 0, "runs");
    char *last = sim_session_message_text(h, sid, -1);
    is_str(last, "ok", "to its answer: the aborted command's end changed nothing");
    free(last);
    free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* A call about a session of a released folder is counted; status is not,
 * nor a call after the folder is watched again. */
static void test_released_touches(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("touch");
    watch(h, dir, 1);
    char *sid = create_in(h, f.parent, dir, NULL);
    prompt_via_plugin(h, sid, "hi", 0);
    sim_wait_idle(h, sid, tap_timeout_ms(5000));
    simple_call(h, "session_get", sid, NULL);
    is_int(watch(h, dir, 0), 0, "released");
    is_int(sim_released_touches(h, dir), 0, "no touch while it was watched");
    simple_call(h, "session_get", sid, NULL);
    simple_call(h, "session_messages", sid, NULL);
    prompt_via_plugin(h, sid, "again", 0);
    simple_call(h, "session_abort", sid, NULL);
    simple_call(h, "session_status", NULL, NULL);
    simple_call(h, "session_get", f.parent, NULL);
    is_int(sim_released_touches(h, dir), 4, "get, messages, prompt, abort: each counted");
    is_int(sim_released_touches(h, NULL), 4, "NULL: every folder");
    free(create_in(h, sid, dir, NULL));
    is_int(sim_released_touches(h, dir), 5, "a child made under such a session too");
    watch(h, dir, 1);
    simple_call(h, "session_get", sid, NULL);
    is_int(sim_released_touches(h, dir), 5, "watched again: no more counted");
    char *body = sim_call_body(h, "directory_watch", NULL, 0);
    like(body, J("'directory':'%s','watch':1", dir), "directory_watch is recorded with its arguments");
    free(body);
    body = sim_call_body(h, "directory_watch", NULL, 1);
    like(body, J("'watch':0"), "in order");
    free(body);
    body = sim_call_body(h, "session_create_in", f.parent, 0);
    like(body, J("'directory':'%s'", dir), "session_create_in too, against its parent");
    free(body);
    free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* Bad folders fail and make nothing; the host's own folder makes one of
 * its own sessions; a trailing slash names the same folder. */
static void test_bad_dirs(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    size_t n = sim_session_count(h);
    int rc = 0;
    ok(create_in(h, f.parent, "/nonexistent/ocbg-sim", &rc) == NULL, "create_in a missing folder fails");
    is_int(rc, -ENOENT, "-ENOENT");
    cJSON *r = hostcall(h, J("{'fn':'session_create_in','directory':'/nonexistent/ocbg-sim'}"));
    like(jstr(r, "out"), "No such directory: /nonexistent/ocbg-sim", "with a message");
    cJSON_Delete(r);
    create_in(h, f.parent, "relative/dir", &rc);
    is_int(rc, -EINVAL, "a relative path: -EINVAL");
    create_in(h, f.parent, "/dev/null", &rc);
    is_int(rc, -ENOENT, "a file, not a folder: -ENOENT");
    char *dir = make_dir("bad");
    create_in(h, "ses_nope", dir, &rc);
    is_int(rc, -ENOENT, "an unknown parent: -ENOENT");
    is_int(sim_session_count(h), n, "none of them made a session");
    is_int(sim_calls(h, "session_create_in", NULL), 5, "each is recorded");
    is_int(watch(h, "/nonexistent/ocbg-sim", 1), -ENOENT, "watch 1 of a missing folder: -ENOENT");
    is_int(watch(h, "rel", 1), -EINVAL, "of a relative path: -EINVAL");
    is_int(watch(h, "/nonexistent/ocbg-sim", 0), 0, "watch 0 of a folder already removed: fine");

    char slash[600];
    snprintf(slash, sizeof slash, "%s/", dir);
    char *sid = create_in(h, f.parent, slash, NULL);
    char *got = sim_session_directory(h, sid);
    is_str(got, dir, "a trailing slash names the same folder");
    free(got), free(sid);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        bail_out("getcwd");
    sid = create_in(h, f.parent, cwd, NULL);
    ok(sid && sim_session_directory(h, sid) == NULL, "create_in the host's own folder: one of its own");
    char *tr = trace(h, sid);
    is_str(tr, "session.created", "whose events reach the plugin unwatched");
    free(tr), free(sid);
    rm_dir(dir);
    t_close(&f);
}

/* sim_fail fails them; sim_without and sim_host_abi take them away. */
static void test_faults_and_abi(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    char *dir = make_dir("faults");
    size_t n = sim_session_count(h);
    sim_fail(h, "session_create_in", 1, 1, -EIO);
    int rc = 0;
    create_in(h, f.parent, dir, &rc);
    is_int(rc, -EIO, "sim_fail fails session_create_in");
    is_int(sim_session_count(h), n, "and nothing is made");
    sim_fail(h, "directory_watch", 1, 1, -EIO);
    is_int(watch(h, dir, 1), -EIO, "sim_fail fails directory_watch");
    is_int(sim_directory_watched(h, dir), 0, "and nothing is watched");
    is_int(watch(h, dir, 1), 0, "the next call works");
    t_close(&f);

    sim_host *old = sim_create();
    is_int(sim_host_abi(old, 6), -EINVAL, "sim_host_abi: no 1.6");
    is_int(sim_host_abi(old, 4), 0, "present ABI 1.4");
    const ocp_host *t = sim_table(old);
    is_int(t->abi_minor, 4, "abi_minor 4");
    is_int(t->struct_size, offsetof(ocp_host, session_create_in), "the table ends after publish_view");
    ok(OCP_HAS_FIELD(ocp_host, t, publish_view) && t->publish_view, "1.4's publish_view is there");
    ok(!OCP_HAS_FIELD(ocp_host, t, session_create_in) && !t->session_create_in && !t->directory_watch,
       "1.5's fields are not");
    is_int(sim_load_plugins(old, rec_dir(), NULL), 1, "the recorder loads");
    cJSON *r = hostcall(old, J("{'fn':'session_create_in','directory':'%s'}", dir));
    is_int(rc_of(r), -ENOSYS, "a plugin checking OCP_HAS_FIELD finds no session_create_in");
    cJSON_Delete(r);
    is_int(sim_host_abi(old, 5), 0, "back to 1.5");
    ok(OCP_HAS_FIELD(ocp_host, t, directory_watch) && t->directory_watch, "directory_watch is back");
    is_int(sim_without(old, "directory_watch"), 0, "sim_without takes directory_watch");
    is_int(sim_without(old, "session_create_in"), 0, "and session_create_in");
    ok(!t->directory_watch && !t->session_create_in, "both NULL");
    sim_destroy(old);
    rm_dir(dir);
}

/* A session's folder survives the journal; after a restart the folder is
 * not watched until the plugin asks again. */
static void test_journal(void)
{
    char *dir = make_dir("journal");
    char jpath[600];
    snprintf(jpath, sizeof jpath, "%s/journal", dir);
    t_fixture f;
    rec_open(&f);
    is_int(sim_journal_open(f.h, jpath), 0, "journal open");
    watch(f.h, dir, 1);
    char *sid = create_in(f.h, f.parent, dir, NULL);
    t_close(&f);

    sim_host *h = sim_create();
    is_int(sim_journal_open(h, jpath), 0, "a new host replays it");
    char *got = sim_session_directory(h, sid);
    is_str(got, dir, "the session keeps its folder");
    free(got);
    is_int(sim_directory_watched(h, dir), 0, "and its folder is not watched");
    sim_destroy(h);
    free(sid);
    rm_dir(dir);
}

int main(void)
{
    test_events_routed();
    test_status();
    test_delete_cascade();
    test_run_step();
    test_run_aborted();
    test_released_touches();
    test_bad_dirs();
    test_faults_and_abi();
    test_journal();
    return done_testing();
}

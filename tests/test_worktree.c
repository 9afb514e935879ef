/* Worktree isolation through the engine (docs/worktrees.md), in the
 * simulated host with folders (ABI 1.5): a session of another folder sends
 * its events only while that folder is watched, as OpenCode's instance per
 * folder does. The launching session's folder is a real git repository
 * (the test's working directory: the sim gives it to every tool call), and
 * the sub-agents run real commands there ({"run": …} steps).
 *   - a launch: the worktree, its branch, the answer; the folder followed
 *     before the session is made in it; the notification's report; the host
 *     let go of the folder after the run; background_output; clear commits
 *     what was left and removes the folder, keeps the branch; nothing asks
 *     about a released folder;
 *   - refusals make nothing: outside git, a host without folders, the
 *     user's permission rules;
 *   - a restart with a running isolated task: followed again, it completes;
 *   - the launching session deleted: its tasks' worktrees are removed, the
 *     work kept on the branches; also at a stop just after the deletion,
 *     and at the next start when the deletion came while ocbg was not
 *     loaded; an isolated task's stored row goes only after its release;
 *   - a fork with isolation: a new session in the worktree given the
 *     parent's history (the host's fork would stay in the parent's folder). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"

#define DEADLINE 10000

static char top[T_PROJECT_TOP], repo[T_PROJECT_PATH], data[T_PROJECT_PATH], db[340], store_opts[700];

/* The worktree folder of task id. */
static char *wt_of(const char *id)
{
    return xasprintf("%s/worktrees/%s", data, id);
}

/* The index of the first recorded call of fn naming `arg` in its record
 * (-1: none). */
static int call_index(sim_host *h, const char *fn, const char *arg)
{
    char *json = sim_calls_json(h);
    cJSON *calls = cJSON_Parse(json);
    free(json);
    int i = 0, found = -1;
    for (cJSON *c = calls ? calls->child : NULL; c && found < 0; c = c->next, i++) {
        char *text = cJSON_PrintUnformatted(c);
        if (strcmp(jstr(c, "fn") ? jstr(c, "fn") : "", fn) == 0 && strstr(text, arg))
            found = i;
        free(text);
    }
    cJSON_Delete(calls);
    return found;
}

typedef struct watch_arg {
    const char *dir;
    int want;
} watch_arg;

static int watched_is(sim_host *h, void *arg)
{
    watch_arg *w = arg;
    return sim_directory_watched(h, w->dir) == w->want;
}

static int wait_watched(sim_host *h, const char *dir, int want)
{
    watch_arg w = {dir, want};
    return sim_wait(h, watched_is, &w, tap_timeout_ms(DEADLINE));
}

/* A host with ocbg on a store of its own: no task of an earlier test is
 * restored (their sessions are not in this host: a restore would release
 * their worktrees meanwhile). */
static sim_host *fresh_host(void)
{
    t_sh(data, "rm -f ocbg.db ocbg.db-wal ocbg.db-shm");
    return t_host(store_opts);
}

static int let_go_recorded(sim_host *h, void *arg)
{
    (void)arg;
    return call_index(h, "directory_watch", J("\\'watch\\':0")) >= 0;
}

static int asked_about(sim_host *h, void *session)
{
    return sim_calls(h, "session_get", session) >= 1;
}

static int gone(sim_host *h, void *arg)
{
    (void)h;
    return !t_exists(arg);
}

typedef struct view_want {
    const char *session, *branch;
} view_want;

/* sim_wait predicate: the newest view of w->session has its newest task on
 * branch w->branch. */
static int view_branch_is(sim_host *h, void *arg)
{
    view_want *w = arg;
    cJSON *view = t_parse(sim_view(h, w->session, -1));
    const char *b = jstr(view, "tasks.0.branch");
    int yes = b && strcmp(b, w->branch) == 0;
    cJSON_Delete(view);
    return yes;
}

/* The person's detail of task id (docs/panel.md), parsed; NULL on an error. */
static cJSON *detail_of(sim_host *h, const char *id)
{
    char *out = NULL, req[128];
    snprintf(req, sizeof req, "{\"action\":\"detail\",\"task_id\":\"%s\"}", id);
    int rc = sim_ui_request(h, 0, req, &out);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    return t_parse(out);
}

static void launch_report_clear(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    const char *script = "{\"steps\":[{\"run\":\"echo from-A >> shared.txt && git add shared.txt && git -c user.name=t "
                         "-c user.email=t@example.com commit -qm 'A edit' && echo more >> shared.txt && echo new > "
                         "fresh.txt\"},{\"reply\":\"done A\"}]}";
    char *out = t_launch_isolated(h, f.parent, "writer A", script, "worktree");
    is_int(t_rc, 0, "an isolated launch is accepted");
    char *id = t_find_id(out, "bg_");
    char *wt = wt_of(id), want[700];
    snprintf(want, sizeof want, "Worktree: %s, on new branch ocbg/%s from ", wt, id);
    like(out, want, "the answer says where it works and on which branch");
    snprintf(want, sizeof want, " (the HEAD of %s). The sub-agent works only there.", repo);
    like(out, want, "made from this checkout's HEAD");
    free(out);
    int watch = call_index(h, "directory_watch", wt), create = call_index(h, "session_create_in", wt);
    ok(watch >= 0 && create > watch, "the folder is followed before the session is made in it (%d < %d)", watch,
       create);
    /* Waited on by the notification alone: a background_output (as
     * t_wait_status calls) reads the report and lets go itself. */
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", id);
    is_int(t_wait_messages_with(h, f.parent, notice, 1, DEADLINE), 0, "the task completes: the parent is notified");
    char *n = t_message_with(h, f.parent, notice);
    snprintf(want, sizeof want, "Worktree: %s (branch ocbg/%s; ocbg never merges it", wt, id);
    like(n, want, "the notification names the worktree and branch");
    like(n, ", 1 commit: 1 file changed, 1 insertion(+)\n", "what it committed");
    snprintf(want, sizeof want, "Uncommitted in %s: 1 file changed, 1 insertion(+); 1 untracked file\n", wt);
    like(n, want, "what it left uncommitted");
    like(n, "shared.txt | 2 ++\n", "the per-file stat");
    like(n, "Untracked:\n  fresh.txt\n", "the untracked file");
    free(n);
    char branch[64];
    snprintf(branch, sizeof branch, "ocbg/%s", id);
    view_want vw = {f.parent, branch};
    is_int(sim_wait(h, view_branch_is, &vw, tap_timeout_ms(DEADLINE)), 0, "the panel's view names its branch");
    cJSON *d = detail_of(h, id);
    is_str(jstr(d, "worktree.path"), wt, "the panel's detail gives its worktree");
    is_str(jstr(d, "worktree.branch"), branch, "and its branch");
    snprintf(want, sizeof want, "Branch: ocbg/%s (from ", id);
    like(jstr(d, "worktree.report"), want, "and, the run over, the report");
    like(jstr(d, "worktree.report"), "Untracked:\n  fresh.txt\n", "the report's untracked file");
    cJSON_Delete(d);
    ok(sim_events_delivered(h, "session.idle") > 0, "the child's events reached the plugin (its folder followed)");
    is_int(wait_watched(h, wt, -1), 0, "the run over, the host let go of the folder");
    /* The sim flips the folder inside the call and records the call as it returns. */
    is_int(sim_wait(h, let_go_recorded, NULL, tap_timeout_ms(DEADLINE)), 0, "the let-go call is recorded");
    int pushed = call_index(h, "session_prompt", notice), let_go = call_index(h, "directory_watch", J("\\'watch\\':0"));
    ok(pushed >= 0 && let_go > pushed, "after the notification's push (%d < %d): the parent does not wait for it",
       pushed, let_go);
    char *main_file = t_sh_line(repo, "cat shared.txt");
    is_str(main_file, "base", "the checkout's file is untouched");
    free(main_file);
    out = t_output(h, f.parent, id);
    snprintf(want, sizeof want, "Worktree: %s (branch ocbg/%s;", wt, id);
    like(out, want, "background_output names the worktree");
    like(out, "Untracked:\n  fresh.txt", "and what the task did");
    free(out);

    out = t_tool(h, f.parent, "background_clear", "{}");
    snprintf(want, sizeof want,
             "- %s: its worktree was removed; its work is on branch ocbg/%s (what it left uncommitted was committed "
             "there first).",
             id, id);
    like(out, want, "clear says where the work is");
    free(out);
    ok(!t_exists(wt), "the worktree folder is gone");
    char *fresh = t_sh_line(repo, "git show ocbg/%s:fresh.txt", id);
    is_str(fresh, "new", "the branch holds the task's untracked file, committed");
    free(fresh);
    char *count = t_sh_line(repo, "git rev-list --count main..ocbg/%s", id);
    is_str(count, "2", "two commits on the branch: the task's and ocbg's");
    free(count);
    is_int((int)sim_released_touches(h, NULL), 0, "no host call about a released folder");
    free(wt);
    free(id);
    t_close(&f);
}

static void refusals(void)
{
    sim_host *h = fresh_host();
    char *parent = sim_session_new(h, NULL, "main");
    char plain[400];
    snprintf(plain, sizeof plain, "%s/plain", top);
    mkdir(plain, 0777);
    if (chdir(plain) != 0)
        bail_out("chdir %s", plain);
    char *out = t_launch_isolated(h, parent, "outside", J("{'steps':[{'reply':'x'}]}"), "worktree");
    ok(t_rc != 0, "outside a git repository: refused");
    like(out, "Not launched, nothing was created: ", "nothing was created");
    like(out, "is not inside a git repository", "and why");
    free(out);
    if (chdir(repo) != 0)
        bail_out("chdir %s", repo);
    t_list_like(h, parent, "No background tasks", "no task");
    is_int(sim_calls(h, "session_create_in", NULL) + sim_calls(h, "session_create", NULL), 0, "no session");

    sim_permission_rules(h, J("{'external_directory':'deny'}"));
    char *before = t_sh_line(repo, "git branch --list 'ocbg/*' | wc -l");
    out = t_launch_isolated(h, parent, "denied", J("{'steps':[{'reply':'x'}]}"), "worktree");
    ok(t_rc != 0, "the user's rules deny a folder outside the project: refused");
    like(out, "Permission denied: making the task's git worktree in ", "the refusal names the worktree");
    like(out, "(permission \"external_directory\")", "and the permission");
    free(out);
    char *branches = t_sh_line(repo, "git branch --list 'ocbg/*' | wc -l");
    is_str(branches, before, "no branch was made");
    free(branches);
    free(before);
    sim_permission_rules(h, "{}");
    free(parent);
    sim_destroy(h);

    h = sim_create();
    sim_without(h, "session_create_in");
    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), store_opts) != 1)
        bail_out("loading: %s", sim_load_error(h));
    parent = sim_session_new(h, NULL, "main");
    out = t_launch_isolated(h, parent, "nohost", J("{'steps':[{'reply':'x'}]}"), "worktree");
    ok(t_rc != 0, "a host without folders: refused");
    like(out, "this host cannot run a task in another folder", "and told so");
    free(out);
    out = t_launch_isolated(h, parent, "plain", J("{'steps':[{'reply':'plain done'}]}"), "none");
    is_int(t_rc, 0, "isolation none still works there");
    free(out);
    free(parent);
    sim_destroy(h);
}

static void restart_keeps_it(void)
{
    t_fixture f;
    sim_host *h = fresh_host();
    sim_permission_rules(h, J("{'bash':'ask'}"));
    sim_permission_auto(h, NULL, NULL);
    t_open_with(&f, h);
    const char *script = J("{'steps':[{'ask':{'permission':'bash','patterns':['gate R']}},"
                           "{'run':'echo restarted > after.txt'},{'reply':'done R'}]}");
    char *out = t_launch_isolated(h, f.parent, "held", script, "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    char *child = t_prompted_session(h, "isolated held", 0);
    ok(child != NULL, "the held task's session exists");
    is_int(sim_wait_calls(h, "directory_watch", NULL, 1, tap_timeout_ms(DEADLINE)), 0, "its folder is followed");
    is_int(child ? sim_wait(h, t_question_open, child, tap_timeout_ms(DEADLINE)) : -1, 0, "it waits on its question");
    char *q = child ? sim_permission_open(h, child) : NULL;
    cJSON *d = detail_of(h, id);
    is_str(jstr(d, "worktree.path"), wt, "a running isolated task's detail gives its worktree");
    ok(jstr(d, "worktree.branch") && !jget(d, "worktree.report"), "and its branch, no report while it runs");
    cJSON_Delete(d);
    t_reload(h, store_opts);
    is_int(wait_watched(h, wt, 1), 0, "after the restart, the new instance follows its folder again");
    sim_permission_reply(h, q, "once", NULL);
    free(q);
    is_int(t_wait_status(h, f.parent, id, "completed", DEADLINE), 0, "it completes after the restart");
    char *n = NULL;
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", id);
    if (t_wait_messages_with(h, f.parent, notice, 1, DEADLINE) == 0)
        n = t_message_with(h, f.parent, notice);
    like(n, "Untracked:\n  after.txt", "its notification has what it did after the restart");
    free(n);
    ok(t_exists(wt), "its worktree is kept after it ended (it may be resumed)");
    is_int(wait_watched(h, wt, -1), 0, "and let go of");

    /* A resume works in the same worktree: followed again first. */
    sim_script(h, "follow R", J("{'steps':[{'run':'echo again >> after.txt'},{'reply':'resumed R'}]}"), 1);
    const char *args = J("{'resume':'%s','prompt':'follow R'}", id);
    out = t_tool(h, f.parent, "background_task", args);
    is_int(t_rc, 0, "the isolated task is resumed");
    free(out);
    is_int(t_wait_messages_with(h, f.parent, "resumed R", 1, DEADLINE), 0, "the resumed run's answer arrives");
    char *again = t_sh_line(repo, "cat '%s/after.txt' | tr '\\n' ' '", wt);
    is_str(again, "restarted again ", "it worked in the same worktree");
    free(again);
    ok(call_index(h, "directory_watch", wt) >= 0 && sim_released_touches(h, NULL) == 0,
       "no host call about its folder while it was let go");
    free(child);
    free(wt);
    free(id);
    t_close(&f);
}

static void parent_deleted(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    char *out = t_launch_isolated(h, f.parent, "orphan", J("{'steps':[{'run':'echo left > left.txt'},{'reply':'o'}]}"),
                                  "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    is_int(t_wait_status(h, f.parent, id, "completed", DEADLINE), 0, "the task completed");
    ok(t_exists(wt), "its worktree is there");
    sim_session_delete(h, f.parent);
    is_int(sim_wait(h, gone, wt, tap_timeout_ms(DEADLINE)), 0, "the launching session deleted: the folder goes");
    char *left = t_sh_line(repo, "git show ocbg/%s:left.txt", id);
    is_str(left, "left", "its work is on its branch");
    free(left);
    is_int((int)sim_released_touches(h, NULL), 0, "no host call about a released folder");
    free(wt);
    free(id);
    t_close(&f);
}

/* The launching session deleted just as the host stops, while the worker is
 * inside a slow call: the release it had not reached is done by the stop. */
static void parent_deleted_at_stop(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    char *other = sim_session_new(h, NULL, "other");
    char *out = t_launch_isolated(h, f.parent, "late", J("{'steps':[{'run':'echo late > late.txt'},{'reply':'l'}]}"),
                                  "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    is_int(t_wait_status(h, f.parent, id, "completed", DEADLINE), 0, "the isolated task completed");
    /* Another session's task: its notification's push is slow, and the
     * worker is inside it when the deletion comes. */
    sim_slow(h, "session_prompt", tap_timeout_ms(3000));
    size_t before = sim_calls_started(h, "session_prompt");
    free(t_launch(h, other, "slow push", "slow push", "general"));
    t_started push = {"session_prompt", before + 2}; /* the child's prompt, then the notification's push */
    int in_push = sim_wait(h, t_calls_started, &push, tap_timeout_ms(DEADLINE)) == 0;
    ok(in_push, "the worker is inside the other task's slow notification push");
    sim_session_delete(h, f.parent);
    is_int(sim_events_flush(h, tap_timeout_ms(DEADLINE)), 0, "the deletion reached ocbg");
    sim_slow(h, "session_prompt", 0);
    t_reload(h, store_opts);
    ok(!t_exists(wt), "after the stop, its folder is gone");
    char *late = t_sh_line(repo, "git show ocbg/%s:late.txt", id);
    is_str(late, "late", "its work is on its branch");
    free(late);
    free(wt);
    free(id);
    free(other);
    t_close(&f);
}

/* A resume that comes while the host is still letting go of the folder (a
 * slow host, the let-go after the notification's push): the folder ends
 * followed, and the resumed run completes by its events. (The resume waits
 * on its own settle first; a let-go that returns after a resume has the
 * folder followed again, a window this test does not force.) */
static void resumed_while_let_go(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    sim_slow(h, "directory_watch", tap_timeout_ms(1500));
    char *out = t_launch_isolated(h, f.parent, "quick", J("{'steps':[{'reply':'first Q'}]}"), "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    is_int(t_wait_messages_with(h, f.parent, "first Q", 1, DEADLINE), 0, "the first run's notification arrives");
    t_started let_go = {"directory_watch", 2}; /* follow, then let go */
    is_int(sim_wait(h, t_calls_started, &let_go, tap_timeout_ms(DEADLINE)), 0, "the host is letting go of the folder");
    sim_script(h, "again Q", J("{'steps':[{'run':'echo again > again.txt'},{'reply':'second Q'}]}"), 1);
    out = t_tool(h, f.parent, "background_task", J("{'resume':'%s','prompt':'again Q'}", id));
    is_int(t_rc, 0, "the task is resumed meanwhile");
    free(out);
    is_int(wait_watched(h, wt, 1), 0, "its folder is followed again after the let-go");
    is_int(t_wait_messages_with(h, f.parent, "second Q", 1, DEADLINE), 0, "the resumed run completes");
    char *again = xasprintf("%s/again.txt", wt);
    ok(t_exists(again), "in the same worktree");
    free(again);
    free(wt);
    free(id);
    t_close(&f);
}

/* A fork with isolation: a host's fork would stay in the parent's folder,
 * so the child is a new session in the worktree, given the parent's history
 * as its first (silent) message; it works in the worktree. */
static void fork_isolated(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    sim_script(h, "tell the plan", J("{'steps':[{'reply':'The plan is X-PLAN-7'}]}"), 1);
    sim_session_prompt(h, f.parent, J("{'parts':[{'type':'text','text':'tell the plan'}]}"));
    sim_wait_messages(h, f.parent, 2, tap_timeout_ms(DEADLINE));
    sim_wait_idle(h, f.parent, tap_timeout_ms(DEADLINE));
    sim_script(h, "forked and isolated", J("{'steps':[{'run':'echo forked > forked.txt'},{'reply':'f'}]}"), 1);
    char *out = t_tool(h, f.parent, "background_task",
                       J("{'description':'fork','prompt':'forked and isolated','agent':'general','fork':true,"
                         "'isolation':'worktree'}"));
    is_int(t_rc, 0, "an isolated fork is launched");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    is_int(sim_calls(h, "session_fork", NULL), 0, "the host's fork is not used (it stays in the parent's folder)");
    char *child = t_task_session(h, 0);
    char *dir = child ? sim_session_directory(h, child) : NULL;
    is_str(dir, wt, "the child is a session in the worktree");
    char *body = child ? sim_call_body(h, "session_prompt", child, 0) : NULL;
    like(body, J("'noReply':true"), "its first message is silent");
    like(body, "The parent conversation so far:", "and holds the parent's history");
    like(body, "X-PLAN-7", "with the parent's answer in it");
    is_int(t_wait_status(h, f.parent, id, "completed", DEADLINE), 0, "the fork completes");
    char *seen = child ? sim_session_model_input(h, child) : NULL;
    like(seen, "X-PLAN-7", "its model saw the parent's history");
    char *made = xasprintf("%s/forked.txt", wt);
    ok(t_exists(made), "it worked in the worktree");
    ok(!t_exists("forked.txt"), "not in the checkout");
    free(made);
    free(seen);
    free(body);
    free(dir);
    free(child);
    free(wt);
    free(id);
    t_close(&f);
}

/* sim_wait predicate: the store holds no row for task id (arg). */
static int row_gone(sim_host *h, void *id)
{
    (void)h;
    return t_task_stored(db, id) == 0;
}

/* The launching session deleted while a release is slow (the host lets go
 * of a running task's folder slowly): the isolated task's row stays in the
 * store until its worktree is released, so a host killed meanwhile finds
 * the task, and its folder, at its next start (below); a plain task's row
 * goes at once. */
static void row_kept_until_released(void)
{
    t_fixture f;
    sim_host *h = fresh_host();
    sim_permission_rules(h, J("{'bash':'ask'}"));
    sim_permission_auto(h, NULL, NULL);
    t_open_with(&f, h);
    char *plain = t_launch(h, f.parent, "plain", "plain", "general");
    is_int(t_wait_status(h, f.parent, plain, "completed", DEADLINE), 0, "a plain task completed");
    char *out = t_launch_isolated(h, f.parent, "kept row",
                                  J("{'steps':[{'ask':{'permission':'bash','patterns':['gate K']}},"
                                    "{'reply':'k'}]}"),
                                  "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id);
    is_int(sim_wait(h, t_question_open, NULL, tap_timeout_ms(DEADLINE)), 0, "the isolated task runs, waiting");
    is_int(wait_watched(h, wt, 1), 0, "its folder is followed");
    sim_slow(h, "directory_watch", tap_timeout_ms(3000));
    sim_session_delete(h, f.parent);
    is_int(sim_wait(h, row_gone, plain, tap_timeout_ms(DEADLINE)), 0, "the plain task's row leaves the store");
    bool releasing = t_exists(wt);
    ok(releasing, "the isolated task's folder is still being released");
    is_int(releasing ? t_task_stored(db, id) : -2, 1, "meanwhile its row is still stored");
    sim_slow(h, "directory_watch", 0);
    is_int(sim_wait(h, gone, wt, tap_timeout_ms(DEADLINE)), 0, "the folder is released");
    is_int(sim_wait(h, row_gone, id, tap_timeout_ms(DEADLINE)), 0, "then its row leaves the store");
    free(wt);
    free(id);
    free(plain);
    t_close(&f);
}

/* The launching session deleted while ocbg was not loaded (or the host was
 * killed before the deletion's release): at the next start ocbg asks the
 * host about the launching session of each restored isolated task, and
 * releases the worktrees of a session that is gone, as the deletion would
 * have; the work stays on the branch. */
static void parent_deleted_while_down(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host());
    char *kept = sim_session_new(h, NULL, "kept");
    char *out = t_launch_isolated(h, f.parent, "unseen",
                                  J("{'steps':[{'run':'echo unseen > unseen.txt'},"
                                    "{'reply':'u'}]}"),
                                  "worktree");
    char *id = t_find_id(out, "bg_");
    free(out);
    out = t_launch_isolated(h, kept, "stays", J("{'steps':[{'reply':'s'}]}"), "worktree");
    char *id2 = t_find_id(out, "bg_");
    free(out);
    char *wt = wt_of(id), *wt2 = wt_of(id2);
    is_int(t_wait_status(h, f.parent, id, "completed", DEADLINE), 0, "the isolated task completed");
    is_int(t_wait_status(h, kept, id2, "completed", DEADLINE), 0, "and another session's");
    sim_unload_plugins(h);
    is_int(t_task_stored(db, id), 1, "ocbg stopped: the task is in the store");
    sim_session_delete(h, f.parent); /* no ocbg hears it: */
    /* its event goes out while no plugin is loaded, not to the next one */
    is_int(sim_events_flush(h, tap_timeout_ms(DEADLINE)), 0, "the deletion's event went nowhere");
    if (sim_load_plugins(h, getenv("OCBG_PLUGIN_DIR"), store_opts) != 1)
        bail_out("reloading ocbg: %s", sim_load_error(h));
    /* A launch at once, its git beside the release's in the same repository. */
    out = t_launch_isolated(h, kept, "beside", J("{'steps':[{'reply':'b'}]}"), "worktree");
    char *id3 = t_find_id(out, "bg_");
    ok(id3 != NULL, "an isolated launch during the release starts");
    free(out);
    is_int(id3 ? t_wait_status(h, kept, id3, "completed", DEADLINE) : -1, 0, "and completes");
    free(id3);
    is_int(sim_wait(h, gone, wt, tap_timeout_ms(DEADLINE)), 0, "at the next start, its folder is released");
    char *unseen = t_sh_line(repo, "git show ocbg/%s:unseen.txt", id);
    is_str(unseen, "unseen", "its work is on its branch");
    free(unseen);
    is_int(sim_wait(h, asked_about, f.parent, tap_timeout_ms(DEADLINE)), 0,
           "the host was asked about the launching session");
    is_int(sim_wait(h, row_gone, id, tap_timeout_ms(DEADLINE)), 0, "its row leaves the store");
    ok(t_exists(wt2), "the worktree of a session that still exists stays");
    is_int(t_wait_output_with(h, kept, id2, "Result:\ns", DEADLINE), 0, "with its task");
    free(wt);
    free(wt2);
    free(id);
    free(id2);
    free(kept);
    t_close(&f);
}

int main(void)
{
    t_git_project_make("wt", top, repo, data);
    snprintf(db, sizeof db, "%s/ocbg.db", data);
    snprintf(store_opts, sizeof store_opts, "{\"store_path\":\"%s\"}", db);
    launch_report_clear();
    refusals();
    restart_keeps_it();
    parent_deleted();
    fork_isolated();
    parent_deleted_at_stop();
    resumed_while_let_go();
    row_kept_until_released();
    parent_deleted_while_down();
    t_git_project_remove(top);
    return done_testing();
}

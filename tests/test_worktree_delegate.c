/* Isolated tasks that delegate (docs/worktrees.md, "Tasks launched from a
 * worktree"), in the simulated host with folders (ABI 1.5). An isolated
 * sub-agent's own tool call (a "tool" step of its script: the sim gives it
 * its session's folder, the worktree, as OpenCode's instance there does)
 * reaches the same ocbg, which counts depth, caps and budgets across the
 * whole tree:
 *   - max_depth 2: its task is a session made in the worktree (its "run"
 *     steps work there), a child of the isolated task's session, at max
 *     depth (no ocbg tools); its notification goes to the isolated task's
 *     session and wakes it; the top parent is notified of the isolated task
 *     once, after; the checkout is untouched; a clear removes the worktree,
 *     the task's work on the isolated task's branch, no host call about the
 *     released folder;
 *   - a background command it starts runs in the worktree;
 *   - cancelled while its task runs: both end, the folder let go after;
 *   - max_depth 1 (the default): the launch is refused with the depth text;
 *   - isolation asked from the worktree: refused, nothing asked or made;
 *   - one run slot for the tree: its task waits for it (pending);
 *   - the session budget: its task's spend stops the isolated task, and the
 *     top session may launch no more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"

#define DEADLINE 10000
#define DEPTH1_REFUSAL                                                                                                 \
    "Not launched: this session is a background task at depth 1, and max_depth is 1, so it cannot start "              \
    "background tasks of its own. Do the work in this session instead."

static char top[T_PROJECT_TOP], repo[T_PROJECT_PATH], data[T_PROJECT_PATH], db[340];

/* A host with ocbg on a store of its own, with `extra` options (JSON
 * members, or ""). */
static sim_host *fresh_host(const char *extra)
{
    t_sh(data, "rm -f ocbg.db ocbg.db-wal ocbg.db-shm");
    char *opts = xasprintf("{\"store_path\":\"%s\"%s%s}", db, extra[0] ? "," : "", extra);
    sim_host *h = t_host(opts);
    free(opts);
    return h;
}

/* The script of an isolated task that launches `prompt` with background_task
 * (and `isolation`, when not NULL), then answers `reply`. */
static char *delegating_script(const char *prompt, const char *isolation, const char *reply)
{
    char iso[64] = "";
    if (isolation)
        snprintf(iso, sizeof iso, ",\"isolation\":\"%s\"", isolation);
    return xasprintf("{\"steps\":[{\"tool\":\"background_task\",\"input\":{\"description\":\"grandchild\","
                     "\"prompt\":\"%s\",\"agent\":\"general\"%s}},{\"reply\":\"%s\"}]}",
                     prompt, iso, reply);
}

/* Launch isolated task `name` from parent, running script (malloc'd,
 * freed here); its id. */
static char *launch_isolated(sim_host *h, const char *parent, const char *name, char *script)
{
    char *out = t_launch_isolated(h, parent, name, script, "worktree");
    free(script);
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("isolated launch of %s: %s", name, out);
    free(out);
    return id;
}

static int prompted(sim_host *h, void *needle)
{
    char *s = t_prompted_session(h, needle, 0);
    free(s);
    return s != NULL;
}

/* The session of the task whose prompt holds needle, once prompted. */
static char *session_prompted(sim_host *h, const char *needle)
{
    if (sim_wait(h, prompted, (void *)needle, tap_timeout_ms(DEADLINE)) != 0)
        bail_out("no session was prompted with %s", needle);
    return t_prompted_session(h, needle, 0);
}

static void delegates_in_its_worktree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2"));
    sim_script(h, "gc work", J("{'steps':[{'run':'pwd > gc.txt'},{'reply':'gc done'}]}"), 1);
    sim_script(h, "gc done", J("{'steps':[{'reply':'A final'}]}"), 1); /* the notification wakes A */
    char *a = launch_isolated(h, f.parent, "A", delegating_script("gc work", NULL, "A waits"));
    char *wt = xasprintf("%s/worktrees/%s", data, a);
    char *as = session_prompted(h, "isolated A"), *gs = session_prompted(h, "gc work");
    char *a_dir = sim_session_directory(h, as), *g_dir = sim_session_directory(h, gs);
    is_str(a_dir, wt, "the isolated task works in its worktree");
    is_str(g_dir, wt, "the task it launched is a session made in that worktree");
    is_int(sim_calls(h, "session_create", NULL), 0, "no session in the checkout");
    cJSON *g = t_parse(sim_session_get_json(h, gs));
    is_str(jstr(g, "parentID"), as, "a child of the isolated task's session");
    cJSON_Delete(g);
    is_int(sim_session_tool_denied(h, as, "background_task"), 0, "the isolated task (depth 1) keeps the tools");
    is_int(sim_session_tool_denied(h, gs, "background_task"), 1, "its task, at depth 2 = max_depth, gets none");

    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", a);
    is_int(t_wait_messages_with(h, f.parent, notice, 1, DEADLINE), 0, "the top parent is notified of A");
    is_int(t_wait_messages_with(h, as, "[ocbg] Background task completed: bg_", 1, DEADLINE), 0,
           "A's session was notified of its task");
    char *an = t_message_with(h, as, "[ocbg] Background task completed: bg_");
    char *g_id = t_find_id(an, "bg_");
    like(an, "Result:\ngc done", "with its task's answer");
    ok(strstr(an, "Worktree:") == NULL, "and no worktree report (the worktree is A's)");
    free(an);
    char *n = t_message_with(h, f.parent, notice);
    like(n, "Result:\nA final", "A's notification has the answer it gave when woken");
    free(n);
    is_int(t_count_messages_with(h, f.parent, g_id ? g_id : "?"), 0, "the top parent hears nothing of A's task");
    is_int(t_count_messages_with(h, as, "[ocbg] Background task"), 1, "A was notified once");
    char *where = t_sh_line(wt, "cat gc.txt");
    is_str(where, wt, "A's task ran its command in the worktree");
    free(where);
    char *in_repo = xasprintf("%s/gc.txt", repo);
    ok(!t_exists(in_repo), "not in the checkout");
    free(in_repo);
    char *out = t_tool(h, f.parent, "background_output", J("{'task_id':'%s'}", a));
    like(out, "gc.txt", "A's worktree report lists what its task made");
    free(out);
    out = t_tool(h, f.parent, "background_clear", "{}");
    char *cleared = xasprintf("- %s: its worktree was removed; its work is on branch ocbg/%s", a, a);
    like(out, cleared, "clear removes A's worktree, its task's work kept on A's branch");
    free(cleared);
    free(out);
    char *kept = t_sh_line(repo, "git show ocbg/%s:gc.txt", a);
    is_str(kept, wt, "the file A's task made is committed on A's branch");
    free(kept);
    out = t_output(h, as, g_id ? g_id : "?");
    is_int(t_rc, -ENOENT, "A's task went with A");
    free(out);
    is_int(sim_events_flush(h, tap_timeout_ms(DEADLINE)), 0, "every event delivered");
    is_int((int)sim_released_touches(h, NULL), 0, "no host call about a released folder");
    free(g_id);
    free(a_dir), free(g_dir), free(as), free(gs), free(wt), free(a);
    t_close(&f);
}

/* sim_wait predicate: the line of task arg[1] in session arg[0]'s view
 * carries a question. */
static int line_asks(sim_host *h, void *arg)
{
    const char **want = arg;
    char *text = sim_view(h, want[0], -1);
    cJSON *view = cJSON_Parse(text);
    free(text);
    const cJSON *found = jget(t_view_line(view, want[1]), "questions.0");
    cJSON_Delete(view);
    return found != NULL;
}

/* A question of the task an isolated task launched is asked in the worktree
 * (its session works there): the top-level line carries it with that folder,
 * where the panel must answer OpenCode. */
static void grandchild_question_names_the_worktree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2"));
    sim_permission_rules(h, "{\"bash\":\"ask\"}");
    sim_permission_auto(h, NULL, NULL); /* the question stays open until answered */
    sim_script(h, "gc asks", J("{'steps':[{'ask':{'permission':'bash','patterns':['gate G']}},{'reply':'gc done'}]}"),
               1);
    sim_script(h, "gc done", J("{'steps':[{'reply':'A final'}]}"), 1);
    char *a = launch_isolated(h, f.parent, "A", delegating_script("gc asks", NULL, "A waits"));
    char *wt = xasprintf("%s/worktrees/%s", data, a);
    const char *want[] = {f.parent, a};
    is_int(sim_wait(h, line_asks, want, tap_timeout_ms(DEADLINE)), 0, "A's task's question reaches A's line");
    cJSON *view = t_parse(sim_view(h, f.parent, -1));
    const cJSON *q = jget(t_view_line(view, a), "questions.0");
    ok(q && jstr(q, "task") && strcmp(jstr(q, "task"), a) != 0, "asked by A's task, not A");
    is_str(jstr(q, "directory"), wt, "with the worktree's folder, where A's task works");
    is_str(jstr(q, "what"), "bash: gate G", "and what it asks");
    char *qid = sim_permission_open(h, NULL);
    is_str(jstr(q, "id"), qid, "its id is the open question's");
    cJSON_Delete(view);
    is_int(sim_permission_reply(h, qid, "once", NULL), 0, "answered");
    free(qid);
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", a);
    is_int(t_wait_messages_with(h, f.parent, notice, 1, DEADLINE), 0, "the tree runs on: the top parent is told of A");
    free(t_tool(h, f.parent, "background_clear", "{}"));
    free(wt), free(a);
    t_close(&f);
}

static int let_go(sim_host *h, void *dir)
{
    return sim_directory_watched(h, dir) == -1;
}

static int file_is(sim_host *h, void *arg)
{
    (void)h;
    char **want = arg; /* path, content */
    char *got = t_read_file(want[0]);
    int yes = got && strncmp(got, want[1], strlen(want[1])) == 0;
    free(got);
    return yes;
}

/* A background command the isolated task starts runs in its worktree. */
static void command_in_its_worktree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2"));
    char *script = xstrdup(J("{'steps':[{'tool':'Bash','input':{'command':'pwd > sh.txt','description':'where',"
                             "'run_in_background':true}},{'reply':'F waits'}]}"));
    char *a = launch_isolated(h, f.parent, "F", script);
    char *wt = xasprintf("%s/worktrees/%s", data, a), *file = xasprintf("%s/sh.txt", wt);
    char *want[2] = {file, wt};
    is_int(sim_wait(h, file_is, want, tap_timeout_ms(DEADLINE)), 0, "its background command ran in the worktree");
    is_int(t_wait_status(h, f.parent, a, "completed", DEADLINE), 0, "the isolated task completes after it");
    free(file), free(wt), free(a);
    t_close(&f);
}

/* The isolated task cancelled while its task runs: both end, the host
 * lets go of the folder, and nothing asks about the folder afterwards. */
static void cancel_takes_the_tree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2"));
    sim_script(h, "hang work", J("{'steps':[{'hang':true}]}"), 1);
    char *a = launch_isolated(h, f.parent, "H", delegating_script("hang work", NULL, "H waits"));
    char *as = session_prompted(h, "isolated H"), *gs = session_prompted(h, "hang work");
    is_int(t_wait_output_with(h, f.parent, a, "Waiting for the background tasks it launched to end.", DEADLINE), 0,
           "H waits for its task");
    char *out = t_cancel(h, f.parent, a);
    free(out);
    is_int(t_wait_status(h, f.parent, a, "cancelled", DEADLINE), 0, "H is cancelled");
    is_int(sim_wait_idle(h, gs, tap_timeout_ms(DEADLINE)), 0, "its task's turn was stopped");
    char *wt = xasprintf("%s/worktrees/%s", data, a);
    is_int(sim_wait(h, let_go, wt, tap_timeout_ms(DEADLINE)), 0, "the host let go of the folder");
    is_int(sim_events_flush(h, tap_timeout_ms(DEADLINE)), 0, "every event delivered");
    is_int((int)sim_released_touches(h, NULL), 0, "no host call about the folder after it was let go");
    free(wt), free(as), free(gs), free(a);
    t_close(&f);
}

static void depth_one_refuses(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host(""));
    char *a = launch_isolated(h, f.parent, "B", delegating_script("never run", NULL, "B alone"));
    is_int(t_wait_status(h, f.parent, a, "completed", DEADLINE), 0, "the isolated task completes");
    char *as = session_prompted(h, "isolated B");
    is_int(sim_session_tool_denied(h, as, "background_task"), 1, "at max_depth 1 it is offered no ocbg tools");
    char *out = t_tool(h, as, "background_task", J("{'description':'x','prompt':'never run','agent':'general'}"));
    is_int(t_rc, -EPERM, "a launch from its session anyway is refused");
    is_str(out, DEPTH1_REFUSAL, "with the depth text");
    free(out);
    is_int(sim_calls(h, "session_create_in", NULL), 1, "no session but its own was made");
    free(as), free(a);
    t_close(&f);
}

static void isolation_inside_refused(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2"));
    char *before = t_sh_line(repo, "git branch --list 'ocbg/*' | wc -l");
    char *a = launch_isolated(h, f.parent, "C", delegating_script("nested wt", "worktree", "C done"));
    is_int(t_wait_status(h, f.parent, a, "completed", DEADLINE), 0, "the isolated task completes");
    char *as = session_prompted(h, "isolated C");
    char *msgs = sim_session_messages_json(h, as),
         *want = xasprintf(
             "Not launched: this session works in the worktree %s/worktrees/%s (branch ocbg/%s), and the tasks it "
             "launches work there too, so isolation \\\"worktree\\\" is not available here.",
             data, a, a);
    like(msgs, want, "isolation asked from a worktree is refused, and why");
    free(want);
    free(msgs);
    is_int(sim_calls(h, "session_create_in", NULL), 1, "no session was made for it");
    is_int((int)sim_permission_count(h), 2, "nothing was asked for it (two questions: A's task, A's folder)");
    char *after = t_sh_line(repo, "git branch --list 'ocbg/*' | wc -l");
    ok(atoi(after) == atoi(before) + 1, "no branch but A's (%s -> %s)", before, after);
    free(before), free(after), free(as), free(a);
    t_close(&f);
}

static void one_slot_for_the_tree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2,\"max_running_agents\":1"));
    sim_script(h, "slot work", J("{'steps':[{'reply':'slot done'}]}"), 1);
    sim_script(h, "slot done", J("{'steps':[{'reply':'D final'}]}"), 1);
    char *a = launch_isolated(h, f.parent, "D", delegating_script("slot work", NULL, "D waits"));
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", a);
    is_int(t_wait_messages_with(h, f.parent, notice, 1, DEADLINE), 0, "the top parent is notified of D");
    char *as = session_prompted(h, "isolated D");
    char *msgs = sim_session_messages_json(h, as);
    like(msgs, "Status: pending", "D's task waited for the one slot D held");
    like(msgs, "Queued: ", "and its launch said so");
    free(msgs);
    char *n = t_message_with(h, f.parent, notice);
    like(n, "Result:\nD final", "D answered after its task");
    free(n);
    free(as), free(a);
    t_close(&f);
}

static void budget_for_the_tree(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, fresh_host("\"max_depth\":2,\"max_session_cost_usd\":1"));
    sim_script(h, "spend work", J("{'steps':[{'usage':{'input':100,'output':10,'cost':1.5}},{'hang':true}]}"), 1);
    char *a = launch_isolated(h, f.parent, "E", delegating_script("spend work", NULL, "E waits"));
    is_int(t_wait_status(h, f.parent, a, "error", DEADLINE), 0, "E stops: the top session counts its task's spend");
    is_int(t_wait_output_with(h, f.parent, a,
                              "Stopped by the session budget: this session's background tasks spent "
                              "$1.50 (max_session_cost_usd is 1).",
                              DEADLINE),
           0, "with the spend in its error");
    char *out = t_tool(h, f.parent, "background_task", J("{'description':'x','prompt':'x','agent':'general'}"));
    is_int(t_rc, -EDQUOT, "the top session may launch no more");
    free(out);
    is_int((int)sim_released_touches(h, NULL), 0, "no host call about a released folder");
    free(a);
    t_close(&f);
}

int main(void)
{
    t_git_project_make("wtd", top, repo, data);
    snprintf(db, sizeof db, "%s/ocbg.db", data);
    delegates_in_its_worktree();
    command_in_its_worktree();
    cancel_takes_the_tree();
    depth_one_refuses();
    isolation_inside_refused();
    one_slot_for_the_tree();
    budget_for_the_tree();
    grandchild_question_names_the_worktree();
    t_git_project_remove(top);
    return done_testing();
}

/* The early report of an isolated task (engine/isolate.h: isolate_early),
 * through the engine on the simulated host: read while the answer is being
 * written, it is the run's report when nothing could have changed the folder
 * since; and it is never used stale. A text the model wrote before it went
 * on working (a tool that makes a file, the tool's own events lost, so only
 * the message tells) is followed by a report that has the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "storetest.h"
#include "testlib.h"

#define DEADLINE 10000

static char top[T_PROJECT_TOP], repo[T_PROJECT_PATH], data[T_PROJECT_PATH], store_opts[700];

/* The linked-in engine's count of run reports taken from an early one. */
static unsigned long early_taken(sim_host *h)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    unsigned long n = eng->git.early_taken;
    engine_unlock(eng);
    return n;
}

/* Task id's early report (malloc'd), or NULL while it has none. */
static char *early_of(sim_host *h, const char *id)
{
    engine *eng = t_engine(h);
    engine_lock(eng);
    task *t = registry_find(&eng->reg, id);
    char *early = t && t->wt && t->wt->early ? xstrdup(t->wt->early) : NULL;
    engine_unlock(eng);
    return early;
}

static int has_early(sim_host *h, const char *id)
{
    char *early = early_of(h, id);
    free(early);
    return early != NULL;
}

/* The completion notification of task id in session (malloc'd), or NULL. */
static char *notification_of(sim_host *h, const char *session, const char *id)
{
    char notice[96];
    snprintf(notice, sizeof notice, "[ocbg] Background task completed: %s", id);
    return t_wait_messages_with(h, session, notice, 1, DEADLINE) == 0 ? t_message_with(h, session, notice) : NULL;
}

/* Bash asks and nothing answers: an isolated task titled title runs
 * script, waiting on its gate (a question) when this returns. *id and
 * *child (malloc'd, NULL when a step failed) are the task and its session. */
static sim_host *open_gated(t_fixture *f, const char *title, const char *script, char **id, char **child)
{
    sim_host *h = t_linked_host(store_opts);
    sim_permission_rules(h, J("{'bash':'ask'}"));
    sim_permission_auto(h, NULL, NULL);
    t_open_with(f, h);
    char *out = t_launch_isolated(h, f->parent, title, script, "worktree");
    *id = t_find_id(out, "bg_");
    free(out);
    char *name = xasprintf("isolated %s", title);
    *child = t_prompted_session(h, name, 0);
    free(name);
    is_int(*child ? sim_wait(h, t_question_open, *child, tap_timeout_ms(DEADLINE)) : -1, 0,
           "the task waits on its gate");
    return h;
}

/* An answer with nothing after it: its early report is the run's. */
static void taken_when_final(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_linked_host(store_opts));
    unsigned long before = early_taken(h);
    const char *script = J("{'steps':[{'run':'echo m > made.txt'},{'reply':'wrote it'}]}");
    char *out = t_launch_isolated(h, f.parent, "final", script, "worktree");
    char *id = t_find_id(out, "bg_");
    char *n = id ? notification_of(h, f.parent, id) : NULL;
    like(n, "Untracked:\n  made.txt", "the notification reports the file the task made");
    is_int(early_taken(h) - before, 1, "its report is the one read while the answer was written");
    free(n), free(id), free(out);
    t_close(&f);
}

/* The model wrote a text, then went on working: an early report read at
 * that text is not the run's, even with the tool's events lost. */
static void not_stale(void)
{
    t_fixture f;
    char *id, *child;
    sim_host *h = open_gated(&f, "works on",
                             J("{'steps':[{'ask':{'permission':'bash','patterns':['gate E']}},"
                               "{'run':'echo late > late.txt'},{'reply':'done E'}]}"),
                             &id, &child);
    unsigned long before = early_taken(h);
    /* What the model wrote before its tool call. */
    sim_emit(h, J("{'type':'message.part.updated','properties':{'part':{'id':'prt_early_text','sessionID':'%s',"
                  "'messageID':'msg_early_text','type':'text','text':'Let me write it.','time':{'start':1}}}}",
                  child ? child : ""));
    is_int(id ? t_wait_until(h, has_early, id) : -1, 0, "an early report is read at that text");
    char *early = id ? early_of(h, id) : NULL;
    like(early, "; 0 untracked files", "it has no file yet");
    sim_event_faults(h, 1, 1.0, 0, 0, "message.part.updated"); /* the tool's events, and the answer's, lost */
    char *q = child ? sim_permission_open(h, child) : NULL;
    sim_permission_reply(h, q, "once", NULL);
    char *n = id ? notification_of(h, f.parent, id) : NULL;
    like(n, "; 1 untracked file", "the notification's report is read after the task's work");
    like(n, "Untracked:\n  late.txt", "and names the file the task made after the early report");
    is_int(early_taken(h) - before, 0, "the early report was not used");
    free(n), free(q), free(early), free(child), free(id);
    t_close(&f);
}

/* A step's message began (message.updated, no text yet, no finish): the
 * report is read from then on, before the model writes any text. */
static void read_at_message_start(void)
{
    t_fixture f;
    char *id, *child;
    sim_host *h = open_gated(&f, "starts a step",
                             J("{'steps':[{'ask':{'permission':'bash','patterns':['gate S']}},{'reply':'done S'}]}"),
                             &id, &child);
    ok(id && !has_early(h, id), "no early report before the step's message");
    sim_emit(h, J("{'type':'message.updated','properties':{'sessionID':'%s','info':{'id':'msg_step_start',"
                  "'sessionID':'%s','role':'assistant','time':{'created':1},'tokens':{'input':0,'output':0}}}}",
                  child ? child : "", child ? child : ""));
    is_int(id ? t_wait_until(h, has_early, id) : -1, 0, "an early report is read when the step's message begins");
    char *early = id ? early_of(h, id) : NULL;
    like(early, ": no file changed; 0 untracked files", "it is the worktree's report");
    char *q = child ? sim_permission_open(h, child) : NULL;
    sim_permission_reply(h, q, "once", NULL);
    char *n = id ? notification_of(h, f.parent, id) : NULL;
    like(n, ": no file changed; 0 untracked files", "the notification has the report");
    free(n), free(q), free(early), free(child), free(id);
    t_close(&f);
}

int main(void)
{
    t_git_project_make("wte", top, repo, data);
    snprintf(store_opts, sizeof store_opts, "{\"store_path\":\"%s/ocbg.db\"}", data);
    taken_when_final();
    not_stale();
    read_at_message_start();
    t_git_project_remove(top);
    return done_testing();
}

/* Deletion stops everything below it: OpenCode deletes a parent's
 * children first, then the parent, and a deleted session's running turn goes
 * on (and spends) until it is aborted. Whatever order the deletions arrive in,
 * every running task of a deleted session is aborted in the host, once, and
 * no notification is sent; a child deleted on its own ends in error and its
 * parent is told. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define TASKS 3

typedef struct family {
    char *parent;
    char *ids[TASKS];
    char *children[TASKS];
} family;

static void launch_family(sim_host *h, family *f)
{
    f->parent = sim_session_new(h, NULL, "main");
    for (int i = 0; i < TASKS; i++) {
        char desc[32];
        snprintf(desc, sizeof desc, "worker %d", i);
        f->ids[i] = t_launch_script(h, f->parent, desc, J("{'steps':[{'tool':'read','ms':5},{'hang':true}]}"));
        f->children[i] = t_task_session(h, i);
        ok(f->children[i] != NULL, "task %d has its child session", i);
    }
    for (int i = 0; i < TASKS; i++)
        ok(sim_wait(h, (int (*)(sim_host *, void *))sim_session_busy, f->children[i], tap_timeout_ms(5000)) == 0,
           "child %d is busy", i);
}

static void free_family(family *f)
{
    free(f->parent);
    for (int i = 0; i < TASKS; i++) {
        free(f->ids[i]);
        free(f->children[i]);
    }
}

static int none_busy(sim_host *h, void *arg)
{
    family *f = arg;
    for (int i = 0; i < TASKS; i++)
        if (sim_session_busy(h, f->children[i]) == 1)
            return 0;
    return 1;
}

/* After the deletion: nothing runs, each child was aborted once, the parent
 * was sent nothing, and the tasks are gone. */
static void check_stopped(sim_host *h, family *f, size_t prompts_before, const char *how)
{
    is_int(sim_wait(h, none_busy, f, tap_timeout_ms(5000)), 0, "%s: no child is left running", how);
    /* The sim records a call after its effect shows: wait for the record. */
    for (int i = 0; i < TASKS; i++) {
        sim_wait_calls(h, "session_abort", f->children[i], 1, tap_timeout_ms(5000));
        is_int(sim_calls(h, "session_abort", f->children[i]), 1, "%s: child %d aborted once", how, i);
    }
    char *other = sim_session_new(h, NULL, "elsewhere");
    is_int(t_sync_notifications(h, other), 0, "%s: the worker's queue is flushed", how);
    free(other);
    is_int(sim_calls(h, "session_prompt", f->parent), prompts_before, "%s: no notification for the deleted parent",
           how);
    char *out = t_tool(h, f->parent, "background_list", "{}");
    like(out, "No background tasks found", "%s: the tasks went with their parent", how);
    free(out);
    const char *args = J("{'task_id':'%s'}", f->ids[0]);
    out = t_tool(h, f->parent, "background_output", args);
    like(out, "Task not found: ", "%s: an old id is not found", how);
    free(out);
}

static void children_first(void)
{
    sim_host *h = t_host(NULL);
    family f;
    launch_family(h, &f);
    size_t prompts = sim_calls(h, "session_prompt", f.parent);
    is_int(sim_session_delete(h, f.parent), 0, "the parent is deleted (children's events first, as OpenCode)");
    check_stopped(h, &f, prompts, "children first");
    free_family(&f);
    sim_destroy(h);
}

static void parent_first(void)
{
    sim_host *h = t_host(NULL);
    family f;
    launch_family(h, &f);
    size_t prompts = sim_calls(h, "session_prompt", f.parent);
    /* A host that reports the parent before its children. */
    char ev[256];
    snprintf(ev, sizeof ev,
             "{\"type\":\"session.deleted\",\"properties\":{\"sessionID\":\"%s\",\"info\":{\"id\":\"%s\"}}}", f.parent,
             f.parent);
    sim_emit(h, ev);
    sim_events_flush(h, tap_timeout_ms(5000));
    is_int(sim_session_delete(h, f.parent), 0, "then the host deletes everything");
    check_stopped(h, &f, prompts, "parent first");
    free_family(&f);
    sim_destroy(h);
}

static void child_alone(void)
{
    sim_host *h = t_host(NULL);
    family f;
    launch_family(h, &f);
    is_int(sim_session_delete(h, f.children[1]), 0, "one child session is deleted, its parent lives on");
    is_int(sim_wait_calls(h, "session_abort", f.children[1], 1, tap_timeout_ms(5000)), 0, "it is aborted");
    is_int(t_wait_status(h, f.parent, f.ids[1], "error", 5000), 0, "its task ends in error");
    t_output_like(h, f.parent, f.ids[1], "Error: The task's session was deleted.", "saying why");
    is_int(t_wait_messages_with(h, f.parent, "The task's session was deleted.", 1, 5000), 0, "the parent is told");
    ok(sim_session_busy(h, f.children[1]) != 1, "the deleted child no longer runs");
    ok(sim_session_busy(h, f.children[0]) == 1, "its siblings still run");
    is_int(sim_calls(h, "session_abort", f.children[0]), 0, "and were not aborted");
    free_family(&f);
    sim_destroy(h);
}

int main(void)
{
    children_first();
    parent_first();
    child_alone();
    return done_testing();
}

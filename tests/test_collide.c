/* Collisions without isolation (engine/collide.h): background tasks of one
 * session working in the same checkout, and the session that launched them,
 * are told when they edit a file another of them edited while it is still
 * at work (ABI 1.5 tool_before), or refused with on_collision "refuse".
 *
 * The simulated host puts every sub-agent's "write" to the plugin first and
 * then writes the file for real; a warning follows the tool's output after a
 * blank line, a refusal is the failed tool's error. Tasks are gated
 * (testlib.h): each waits at its question until the test answers it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/collide.h"
#include "testlib.h"

#define WROTE "Wrote file successfully."
#define WARN_BY_TASK                                                                                                   \
    "[ocbg] Warning: %s was also edited by background task %s (\"%s\"), still running in this checkout; your "         \
    "edits may overwrite each other. Re-read the file before editing it again, or run parallel writers with "          \
    "isolation \"worktree\"."
#define WARN_BY_LAUNCHER                                                                                               \
    "[ocbg] Warning: %s was also edited by the session that launched this task, which is still working in this "       \
    "checkout; your edits may overwrite each other. Re-read the file before editing it again, or run parallel "        \
    "writers with isolation \"worktree\"."
#define REFUSED_BY_TASK                                                                                                \
    "[ocbg] Refused: %s was also edited by background task %s (\"%s\"), still running in this checkout, and "          \
    "on_collision is \"refuse\": this edit was not made. Leave the file to that task, or run parallel writers "        \
    "with isolation \"worktree\"."

static char dir[64];

/* dir/name, kept until the process exits. */
static const char *file(const char *name)
{
    return J("%s/%s", dir, name);
}

/* A script step: OpenCode's write of `content` to dir/name. */
static const char *write_step(const char *name, const char *content)
{
    return J("{'tool':'write','input':{'filePath':'%s','content':'%s'},'output':'%s'}", file(name), content, WROTE);
}

/* Launch from `parent` task <name> (prompt "gated <name>", so testlib's
 * gate helpers find it) with `description`, whose steps are `before`, its
 * question (the gate), then `after` (each a comma-separated list of steps,
 * "" for none), then the reply "done <name>". Returns its id (malloc'd). */
static char *launch_steps(sim_host *h, const char *launcher, const char *name, const char *description,
                          const char *before, const char *after, int gated)
{
    const char *steps = before;
    if (gated)
        steps = J("%s%s{'ask':{'permission':'bash','patterns':['gate %s']}}", steps, *steps ? "," : "", name);
    if (*after)
        steps = J("%s%s%s", steps, *steps ? "," : "", after);
    const char *script = J("{'steps':[%s%s{'reply':'done %s'}]}", steps, *steps ? "," : "", name);
    if (sim_script(h, J("gated %s", name), script, 1) != 0)
        bail_out("bad script for %s: %s", name, script);
    char *out = t_tool(h, launcher, "background_task",
                       J("{'description':'%s','prompt':'gated %s','agent':'explore'}", description, name));
    char *id = t_find_id(out, "bg_");
    if (t_rc != 0 || !id)
        bail_out("launch of %s failed: %s", name, out);
    free(out);
    return id;
}

/* The state of the n-th tool part (0 oldest) of the session's stored
 * messages: {"status", "output"|"error", …} (the caller's), or NULL. */
static cJSON *tool_state(sim_host *h, const char *session, int n)
{
    cJSON *msgs = t_parse(sim_session_messages_json(h, session));
    cJSON *found = NULL;
    const cJSON *m, *p;
    cJSON_ArrayForEach (m, msgs) {
        cJSON_ArrayForEach (p, cJSON_GetObjectItem(m, "parts")) {
            if (!found && jstr(p, "type") && strcmp(jstr(p, "type"), "tool") == 0 && n-- == 0)
                found = cJSON_Duplicate(jget(p, "state"), 1);
        }
    }
    cJSON_Delete(msgs);
    return found;
}

/* Check the n-th tool result of the session: completed with `output`, or
 * failed with `error` (output NULL). */
static void result_is(sim_host *h, const char *session, int n, const char *output, const char *error, const char *what)
{
    cJSON *st = tool_state(h, session, n);
    is_str(jstr(st, "status"), output ? "completed" : "error", "%s: the tool %s", what,
           output ? "completed" : "failed");
    if (output)
        is_str(jstr(st, "output"), output, "%s: what the model reads", what);
    else
        is_str(jstr(st, "error"), error, "%s: the error the model reads", what);
    cJSON_Delete(st);
}

static void file_is(const char *name, const char *content, const char *what)
{
    char *got = t_read_file(file(name));
    is_str(got, content, "%s", what);
    free(got);
}

/* Two running tasks of one session write the same file: the second is
 * warned, naming the first; a file only one wrote: nothing; once the first
 * has ended, nothing. */
/* Lets gated task A finish (checked), frees the ids and B's session, closes f. */
static void a_completes_then_close(t_fixture *f, char *a, char *b, char *bs)
{
    t_release_gated(f->h, "A");
    is_int(t_wait_status(f->h, f->parent, a, "completed", 5000), 0, "A completes");
    free(bs);
    free(a);
    free(b);
    t_close(f);
}

static void two_tasks_one_file(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *a = launch_steps(h, f.parent, "A", "fix parser", write_step("a.c", "A1"), write_step("a.c", "A2"), 1);
    if (t_wait_gate_open(h, "A", 5000) != 0)
        bail_out("A never reached its gate");
    char *b = launch_steps(h, f.parent, "B", "tidy parser",
                           J("%s,%s", write_step("a.c", "B1"), write_step("b.c", "B2")), write_step("a.c", "B3"), 1);
    if (t_wait_gate_open(h, "B", 5000) != 0)
        bail_out("B never reached its gate");
    file_is("a.c", "B1", "a warned edit is made");
    t_release_gated(h, "A"); /* A writes a.c again while B runs */
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "A completes");
    char *as = t_gated_session(h, "A");
    result_is(h, as, 0, WROTE, NULL, "A's first write, alone");
    result_is(h, as, 1, J("%s\n\n" WARN_BY_TASK, WROTE, file("a.c"), b, "tidy parser"), NULL,
              "A's second write, after B's");
    t_release_gated(h, "B"); /* B writes a.c again: A has ended */
    is_int(t_wait_status(h, f.parent, b, "completed", 5000), 0, "B completes");
    char *bs = t_gated_session(h, "B");
    result_is(h, bs, 0, J("%s\n\n" WARN_BY_TASK, WROTE, file("a.c"), a, "fix parser"), NULL,
              "B's write of the file A wrote names A");
    result_is(h, bs, 1, WROTE, NULL, "B's write of a file no one else wrote");
    result_is(h, bs, 2, WROTE, NULL, "B's write once A has ended");
    file_is("a.c", "B3", "the file holds the last write");
    file_is("b.c", "B2", "and the other file B's");
    free(as);
    free(bs);
    free(a);
    free(b);
    t_close(&f);
}

/* The launching session and its running task: each is warned of the
 * other's edit; an edit the launcher made before the task started is not
 * the task's concern. */
static void task_and_its_launcher(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    sim_script(h, "launcher writes z", J("{'steps':[%s,{'reply':'ok'}]}", write_step("z.c", "L-z")), 1);
    sim_session_prompt(h, f.parent, J("{'parts':[{'type':'text','text':'launcher writes z'}]}"));
    is_int(sim_wait_idle(h, f.parent, tap_timeout_ms(5000)), 0, "the launcher wrote z.c before launching");
    result_is(h, f.parent, 0, WROTE, NULL, "with no task running, nothing to say");
    char *a = launch_steps(h, f.parent, "A", "fix lexer",
                           J("%s,%s", write_step("y.c", "A-y"), write_step("z.c", "A-z")), write_step("x.c", "A-x"), 1);
    if (t_wait_gate_open(h, "A", 5000) != 0)
        bail_out("A never reached its gate");
    sim_script(h, "launcher writes y and x",
               J("{'steps':[%s,%s,{'reply':'ok'}]}", write_step("y.c", "L-y"), write_step("x.c", "L-x")), 1);
    sim_session_prompt(h, f.parent, J("{'parts':[{'type':'text','text':'launcher writes y and x'}]}"));
    is_int(t_wait_messages_with(h, f.parent, "launcher writes y and x", 1, 5000), 0, "the launcher's turn ran");
    is_int(sim_wait_idle(h, f.parent, tap_timeout_ms(5000)), 0, "and ended");
    result_is(h, f.parent, 1, J("%s\n\n" WARN_BY_TASK, WROTE, file("y.c"), a, "fix lexer"), NULL,
              "the launcher's write of a file its running task wrote names the task");
    result_is(h, f.parent, 2, WROTE, NULL, "the launcher's write of a file no task wrote");
    t_release_gated(h, "A");
    is_int(t_wait_status(h, f.parent, a, "completed", 5000), 0, "A completes");
    char *as = t_gated_session(h, "A");
    result_is(h, as, 0, WROTE, NULL, "A's write before the launcher's");
    result_is(h, as, 1, WROTE, NULL, "A's write of a file the launcher wrote before A started");
    result_is(h, as, 2, J("%s\n\n" WARN_BY_LAUNCHER, WROTE, file("x.c")), NULL,
              "A's write of a file the launcher wrote while A ran");
    free(as);
    free(a);
    t_close(&f);
}

/* on_collision "refuse": the second writer's tool fails with the refusal,
 * and the file keeps the first writer's content. */
static void refuse_mode(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(J("{'on_collision':'refuse'}")));
    char *a = launch_steps(h, f.parent, "A", "fix parser", write_step("r.c", "A"), "", 1);
    if (t_wait_gate_open(h, "A", 5000) != 0)
        bail_out("A never reached its gate");
    char *b = launch_steps(h, f.parent, "B", "tidy parser",
                           J("%s,%s", write_step("r.c", "B"), write_step("s.c", "B-s")), "", 0);
    is_int(t_wait_status(h, f.parent, b, "completed", 5000), 0, "B goes on after the refusal and completes");
    char *bs = t_gated_session(h, "B");
    result_is(h, bs, 0, NULL, J(REFUSED_BY_TASK, file("r.c"), a, "fix parser"), "B's write of the file A wrote");
    result_is(h, bs, 1, WROTE, NULL, "B's write of another file");
    file_is("r.c", "A", "nothing was written: the file is A's");
    file_is("s.c", "B-s", "the other file was written");
    a_completes_then_close(&f, a, b, bs);
}

/* Tasks of different launching sessions do not warn each other: each
 * session's writers are their own. */
static void other_launchers_are_apart(void)
{
    sim_host *h = t_gated_host(NULL);
    char *one = sim_session_new(h, NULL, "one");
    char *two = sim_session_new(h, NULL, "two");
    char *a = launch_steps(h, one, "A", "fix parser", write_step("o.c", "A"), "", 1);
    if (t_wait_gate_open(h, "A", 5000) != 0)
        bail_out("A never reached its gate");
    char *b = launch_steps(h, two, "B", "tidy parser", write_step("o.c", "B"), "", 0);
    is_int(t_wait_status(h, two, b, "completed", 5000), 0, "B completes");
    char *bs = t_gated_session(h, "B");
    result_is(h, bs, 0, WROTE, NULL, "a task of another session writing the same file is not warned");
    t_release_gated(h, "A");
    is_int(t_wait_status(h, one, a, "completed", 5000), 0, "A completes");
    free(bs);
    free(a);
    free(b);
    free(one);
    free(two);
    sim_destroy(h);
}

/* A patch's files count as a write's: apply_patch updating a file another
 * running task wrote is warned (its output here is the script's). */
static void a_patch_collides_too(void)
{
    t_fixture f;
    sim_host *h = t_open_with(&f, t_gated_host(NULL));
    char *a = launch_steps(h, f.parent, "A", "fix parser", write_step("p.c", "A"), "", 1);
    if (t_wait_gate_open(h, "A", 5000) != 0)
        bail_out("A never reached its gate");
    const char *patch = J("{'tool':'apply_patch','input':{'patchText':'*** Begin Patch\\n*** Update File: %s\\n@@\\n"
                          "-A\\n+B\\n*** End Patch'},'output':'Success. Updated the following files:'}",
                          file("p.c"));
    char *b = launch_steps(h, f.parent, "B", "tidy parser", patch, "", 0);
    is_int(t_wait_status(h, f.parent, b, "completed", 5000), 0, "B completes");
    char *bs = t_gated_session(h, "B");
    result_is(h, bs, 0, J("Success. Updated the following files:\n\n" WARN_BY_TASK, file("p.c"), a, "fix parser"), NULL,
              "B's patch of the file A wrote names A");
    a_completes_then_close(&f, a, b, bs);
}

/* Which files a call edits, as the plugin reads the arguments. */
static void edited_paths(void)
{
    char **p = collide_edited_paths("write", J("{'filePath':'/w//src/./a/../b.c','content':'x'}"));
    is_str(p ? p[0] : NULL, "/w/src/b.c", "a write's filePath, normalised");
    ok(p && !p[1], "one file");
    collide_paths_free(p);
    p = collide_edited_paths("apply_patch", J("{'patchText':'*** Begin Patch\\n*** Add File: new.txt\\n+hi\\n"
                                              "*** Update File: src/app.py\\n*** Move to: src/main.py\\n@@\\n-a\\n+b\\n"
                                              "*** Delete File: ./new.txt \\n*** End Patch'}"));
    is_str(p ? p[0] : NULL, "new.txt", "a patch's added file");
    is_str(p && p[0] ? p[1] : NULL, "src/app.py", "its updated file");
    is_str(p && p[0] && p[1] ? p[2] : NULL, "src/main.py", "where it moves");
    ok(p && p[0] && p[1] && p[2] && !p[3], "a file named twice counts once");
    collide_paths_free(p);
    p = collide_edited_paths("edit", J("{'filePath':'../../x/./y'}"));
    is_str(p ? p[0] : NULL, "../../x/y", "a relative path keeps its leading ..");
    collide_paths_free(p);
    ok(!collide_edited_paths("read", J("{'filePath':'/a'}")), "a read edits nothing");
    ok(!collide_edited_paths("edit", J("{'oldString':'a'}")), "no filePath, no file");
}

/* The option: "warn" (the default) or "refuse"; anything else refuses the
 * load with a reason naming it. */
static void on_collision_option(void)
{
    options o;
    char err[256] = "";
    is_int(options_parse(&o, NULL, err, sizeof err), 0, "no options");
    ok(!o.refuse_collisions, "on_collision is \"warn\" by default");
    is_int(options_parse(&o, J("{'on_collision':'refuse'}"), err, sizeof err), 0, "on_collision \"refuse\"");
    ok(o.refuse_collisions, "refuses collisions");
    is_int(options_parse(&o, J("{'on_collision':'warn'}"), err, sizeof err), 0, "on_collision \"warn\"");
    ok(!o.refuse_collisions, "warns of them");
    is_int(options_parse(&o, J("{'on_collision':'ignore'}"), err, sizeof err), -EINVAL, "another value is refused");
    is_str(err, "option 'on_collision' must be \"warn\" or \"refuse\"", "with the reason");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/ocbg-collide-XXXXXX");
    if (!mkdtemp(dir))
        bail_out("mkdtemp");
    edited_paths();
    on_collision_option();
    two_tasks_one_file();
    task_and_its_launcher();
    refuse_mode();
    other_launchers_are_apart();
    a_patch_collides_too();
    static const char *const names[] = {"a.c", "b.c", "x.c", "y.c", "z.c", "r.c", "s.c", "o.c", "p.c"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(file(names[i]));
    rmdir(dir);
    return done_testing();
}

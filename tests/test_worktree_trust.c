/* Isolated tasks whose sub-agents are hostile or whose git is slow, through
 * the engine in the simulated host (docs/worktrees.md, "What ocbg's git
 * trusts"). The launching session's folder is a real git repository; the
 * sub-agents only write files ({"run": …} steps of printf and mkdir: what
 * OpenCode's write tool can do with bash denied).
 *   - one points its .git at a repository of its own whose config runs a
 *     command (core.fsmonitor) and a hook; another at the main checkout's
 *     .git; one writes a file git ignores. After their reports and a
 *     background_clear: no command of theirs and none of the user's hooks
 *     ran, the main checkout's branch, index and files are untouched, the
 *     work is on the tasks' branches, the ignored file is kept and named in
 *     the clear's answer, and the user's own worktree whose folder is
 *     missing keeps git's record;
 *   - a git that hangs on one task's worktree delays neither another
 *     isolated task's notification nor a plain one's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "testlib.h"

#define DEADLINE 10000

static char top[256], repo[320], data[320], evidence[320], store_opts[700];

static char *completed(const char *id)
{
    return xasprintf("[ocbg] Background task completed: %s", id);
}

static void hostile_writers_then_clear(void)
{
    t_fixture f;
    sim_host *h = t_open(&f, store_opts);
    t_sh(repo, "git worktree add -q ../mine -b mine 2>/dev/null && cd ../mine && echo s > s.txt && git add s.txt && "
               "cd .. && mv mine mine.away");
    const char *hooks[] = {"post-checkout", "reference-transaction", "prepare-commit-msg", "pre-commit",
                           "commit-msg",    "post-commit",           "post-index-change",  NULL};
    for (const char **k = hooks; *k; k++)
        t_sh(repo, "printf '#!/bin/sh\\ntouch %s/%s\\n' > .git/hooks/%s && chmod +x .git/hooks/%s", evidence, *k, *k,
             *k);
    char *head = t_sh_line(repo, "git rev-parse HEAD");
    char *script = xasprintf(
        "{\"steps\":[{\"run\":\"mkdir -p .g/refs/heads .g/objects/info .g/hooks && printf 'gitdir: .g\\\\n' > .git "
        "&& printf 'ref: refs/heads/x\\\\n' > .g/HEAD && printf '%%s\\\\n' $(cat %s/head) > .g/refs/heads/x && printf "
        "'%s/.git/objects\\\\n' > .g/objects/info/alternates && printf '[core]\\\\n\\\\tfsmonitor = \\\"touch "
        "%s/fsmonitor; false\\\"\\\\n\\\\thooksPath = '$PWD'/.g/hooks\\\\n' > .g/config && printf '#!/bin/sh\\\\ntouch "
        "%s/hook\\\\n' > .g/hooks/post-commit && chmod +x .g/hooks/post-commit && echo TOKEN=1 > secret.env && echo "
        "w > made.txt\"},{\"reply\":\"done A\"}]}",
        top, repo, evidence, evidence);
    t_sh(top, "git -C '%s' rev-parse HEAD > head", repo);
    char *out = t_launch_isolated(h, f.parent, "redirect own", script, "worktree");
    char *a = t_find_id(out, "bg_");
    free(out), free(script);
    script = xasprintf("{\"steps\":[{\"run\":\"printf 'gitdir: %s/.git\\\\n' > .git && echo sneaky > sneaky.txt && rm "
                       "shared.txt\"},{\"reply\":\"done B\"}]}",
                       repo);
    out = t_launch_isolated(h, f.parent, "redirect main", script, "worktree");
    char *b = t_find_id(out, "bg_");
    free(out), free(script);
    char *na = completed(a), *nb = completed(b);
    is_int(t_wait_messages_with(h, f.parent, na, 1, DEADLINE), 0, "the .git-redirecting task completes");
    is_int(t_wait_messages_with(h, f.parent, nb, 1, DEADLINE), 0, "so does the one pointing at the main checkout");
    char *msg = t_message_with(h, f.parent, na);
    like(msg, "Untracked:\n  .g/HEAD\n", "its report is of its own worktree, read through git's own record");
    free(msg);
    out = t_tool(h, f.parent, "background_clear", "{}");
    char want[900];
    snprintf(
        want, sizeof want,
        "- %s: its worktree was removed; its work is on branch ocbg/%s (what it left uncommitted was committed "
        "there first). 1 file that git ignores (8 B), which it does not commit, was moved to %s/worktrees/%s.ignored: "
        "secret.env. ocbg does not delete them: remove that folder when they are not needed.",
        a, a, data, a);
    like(out, want, "clear names the ignored file it kept, and where");
    snprintf(want, sizeof want, "- %s: its worktree was removed; its work is on branch ocbg/%s", b, b);
    like(out, want, "and removes the other");
    free(out);
    char *ran = t_sh_line(evidence, "ls | tr '\\n' ' '");
    is_str(ran, "", "no command of the tasks' and no hook of the user's ran");
    char *head_after = t_sh_line(repo, "git rev-parse HEAD");
    is_str(head_after, head, "the user's branch did not move");
    char *status = t_sh_line(repo, "git status --porcelain | tr '\\n' ' '");
    is_str(status, "", "the main index and files are untouched");
    char *shared = t_sh_line(repo, "cat shared.txt");
    is_str(shared, "base", "shared.txt is still there");
    char *sneaky = t_sh_line(repo, "git show ocbg/%s:sneaky.txt", b);
    is_str(sneaky, "sneaky", "the task's work is on its own branch");
    char *secret = t_sh_line(data, "cat worktrees/%s.ignored/secret.env", a);
    is_str(secret, "TOKEN=1", "the ignored file is whole where clear said");
    char *mine = t_sh_line(repo, "ls .git/worktrees | tr '\\n' ' '");
    is_str(mine, "mine ", "the user's worktree with a missing folder keeps git's record");
    free(ran), free(head), free(head_after), free(status), free(shared), free(sneaky), free(secret), free(mine);
    free(na), free(nb), free(a), free(b);
    t_sh(repo, "rm -f .git/hooks/* && mv ../mine.away ../mine && git worktree remove --force ../mine && git branch -q "
               "-D mine");
    t_close(&f);
}

/* Two isolated tasks and a plain one; git hangs on the first one's
 * worktree (a wrapper on PATH that waits for a file the test makes). */
static void slow_git_delays_only_its_task(void)
{
    t_sh(data, "rm -f ocbg.db ocbg.db-wal ocbg.db-shm");
    char *real = t_sh_line(top, "command -v git");
    /* git run on a folder holding SLOW (ocbg names it with --work-tree=;
     * an older ocbg used -C) waits for <top>/release. */
    t_sh(top,
         "mkdir -p slowbin && cat > slowbin/git <<'EOF'\n#!/bin/sh\nprev=\nfor a; do\n  case \"$prev:$a\" in\n"
         "    -C:*) d=$a;; *:--work-tree=*) d=${a#--work-tree=};; *) d=;;\n  esac\n  prev=$a\n"
         "  if [ -n \"$d\" ] && [ -e \"$d/SLOW\" ]; then touch %s/stuck; while [ ! -e %s/release ]; do sleep 0.05; "
         "done; fi\ndone\nexec \"%s\" \"$@\"\nEOF\nchmod +x slowbin/git",
         top, top, real);
    char *path = xstrdup(getenv("PATH")), *slow = xasprintf("%s/slowbin:%s", top, path);
    setenv("PATH", slow, 1);
    t_fixture f;
    sim_host *h = t_open(&f, store_opts);
    char *out =
        t_launch_isolated(h, f.parent, "slow", J("{'steps':[{'run':'touch SLOW'},{'reply':'done slow'}]}"), "worktree");
    char *slow_id = t_find_id(out, "bg_");
    free(out);
    char *stuck = xasprintf("%s/stuck", top);
    int hung = 1;
    for (int64_t until = mono_ms() + tap_timeout_ms(DEADLINE); hung && mono_ms() < until;)
        hung = !t_exists(stuck);
    ok(!hung, "git hangs on the first task's worktree (its report)");
    out = t_launch_isolated(h, f.parent, "quick", J("{'steps':[{'reply':'done quick'}]}"), "worktree");
    char *quick_id = t_find_id(out, "bg_");
    free(out);
    out = t_tool(h, f.parent, "background_task", J("{'description':'plain','prompt':'plain one','agent':'general'}"));
    char *plain_id = t_find_id(out, "bg_");
    free(out);
    char *nq = completed(quick_id), *np = completed(plain_id), *ns = completed(slow_id);
    is_int(t_wait_messages_with(h, f.parent, nq, 1, DEADLINE), 0, "another isolated task's notification is not held");
    is_int(t_wait_messages_with(h, f.parent, np, 1, DEADLINE), 0, "nor a plain task's");
    char *n = t_message_with(h, f.parent, ns);
    ok(n == NULL, "while the slow one's waits for its git");
    free(n);
    t_sh(top, "touch release");
    is_int(t_wait_messages_with(h, f.parent, ns, 1, DEADLINE), 0, "then it comes, once git answers");
    n = t_message_with(h, f.parent, ns);
    like(n, "Untracked:\n  SLOW\n", "with its report");
    free(n);
    setenv("PATH", path, 1);
    free(nq), free(np), free(ns), free(stuck), free(slow_id), free(quick_id), free(plain_id);
    free(real), free(path), free(slow);
    t_close(&f);
}

int main(void)
{
    snprintf(top, sizeof top, "/tmp/ocbg-wttrust-XXXXXX");
    if (!mkdtemp(top))
        bail_out("mkdtemp");
    snprintf(repo, sizeof repo, "%s/repo", top);
    snprintf(data, sizeof data, "%s/data", top);
    snprintf(evidence, sizeof evidence, "%s/evidence", top);
    snprintf(store_opts, sizeof store_opts, "{\"store_path\":\"%s/ocbg.db\"}", data);
    mkdir(data, 0700);
    mkdir(repo, 0700);
    mkdir(evidence, 0700);
    setenv("HOME", top, 1);
    if (t_sh(repo,
             "git init -q -b main && echo base > shared.txt && echo secret.env > .gitignore && git add . && git -c "
             "user.name=t -c user.email=t@example.com commit -qm init") != 0 ||
        chdir(repo) != 0)
        bail_out("cannot make the repository in %s", repo);
    hostile_writers_then_clear();
    slow_git_delays_only_its_task();
    if (chdir("/") == 0)
        t_sh(top, "rm -rf '%s'", top);
    return done_testing();
}

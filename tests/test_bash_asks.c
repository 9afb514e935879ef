/*
 * test_bash_asks.c — the permission questions ocbg's Bash asks for a command
 * line (ops/bash_asks.c) are OpenCode's own bash tool's.
 *
 * 1. Shapes: a command nested anywhere (groups, if/for/while/case bodies,
 *    functions, `!`, substitutions, here-docs, process substitution) is asked
 *    for, so a rule that denies it stops it; the arity table's "always"
 *    prefixes; the paths outside the project.
 * 2. The corpus recorded from OpenCode 1.18.33 (tests/fixtures/
 *    bash_permissions.json, written by host/opencode/test/e2e_bash_perm.mjs
 *    --record): every line asks exactly what OpenCode asked.
 * 3. The shapes that were slow (long word lists, deep $(…), many commands,
 *    long here-docs, many paths) ask what they should, at small sizes.
 * 4. The bounds: a line longer than /bin/sh -c takes, one whose nested
 *    texts pass the cap, one whose parse runs out of time are refused:
 *    nothing asked; through Bash, the exact answer, no question, nothing run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/bash_asks.h"
#include "base/util.h"
#include "tap.h"
#include "testlib.h"

/* Recorded from OpenCode by host/opencode/test/e2e_bash_perm.mjs --record. */
#define FIXTURE "tests/fixtures/bash_permissions.json"

static char *json_of(const cJSON *a)
{
    return cJSON_PrintUnformatted(a);
}

/* command's asks in `project`, compared with the JSON arrays wanted. */
static void asks_case(const char *project, const char *command, const char *dirs, const char *patterns,
                      const char *always)
{
    bash_asks a;
    is_int(bash_asks_of(command, project, &a), 0, "parsed: %s", command);
    char *d = json_of(a.dirs), *p = json_of(a.patterns), *w = json_of(a.always);
    is_str(d, dirs, "external directories of: %s", command);
    is_str(p, patterns, "bash patterns of: %s", command);
    is_str(w, always, "always patterns of: %s", command);
    free(d);
    free(p);
    free(w);
    bash_asks_free(&a);
}

/* A command nested in every shape is asked for ("rm x" among the patterns). */
static void nested_rm_cases(void)
{
    static const char *const lines[] = {
        "a; rm x",
        "a && rm x",
        "a || rm x",
        "a | rm x",
        "a |& rm x",
        "rm x &",
        "a\nrm x",
        "echo $(rm x)",
        "echo `rm x`",
        "(rm x)",
        "{ rm x; }",
        "! rm x",
        "if rm x; then :; fi",
        "if a; then rm x; fi",
        "if a; then b; elif c; then rm x; fi",
        "if a; then b; else rm x; fi",
        "for f in a b; do rm x; done",
        "for ((i=0;i<2;i++)); do rm x; done",
        "while a; do rm x; done",
        "until a; do rm x; done",
        "case $v in a) rm x;; esac",
        "case $v in a|b) b;; *) rm x;; esac",
        "f() { rm x; }",
        "function f { rm x; }",
        "function f() { rm x; }",
        "cat <<EOF\n$(rm x)\nEOF",
        "grep a <<< \"$(rm x)\"",
        "diff <(rm x) b",
        "tee >(rm x)",
        "echo \"$(rm x)\"",
        "a=$(rm x)",
        "export A=$(rm x)",
        "[[ -f x ]] && rm x",
        "(( i )) && rm x",
        "{ { rm x; }; }",
        "if a; then for i in 1; do while b; do rm x; done; done; fi",
        "ls | while read f; do rm x; done",
        "select v in a; do rm x; done",
        "echo ${v:-$(rm x)}",
        "rm x > /dev/null 2>&1",
        "a &&\n  rm x",
        "x() (rm x)",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        bash_asks a;
        bash_asks_of(lines[i], NULL, &a);
        bool found = false, always = false;
        const cJSON *it;
        cJSON_ArrayForEach (it, a.patterns)
            found |= strcmp(it->valuestring, "rm x") == 0 || strcmp(it->valuestring, "rm x > /dev/null 2>&1") == 0;
        cJSON_ArrayForEach (it, a.always)
            always |= strcmp(it->valuestring, "rm *") == 0;
        char *p = json_of(a.patterns);
        ok(found && always, "the rm in `%s` is asked for (patterns %s)", lines[i], p);
        free(p);
        bash_asks_free(&a);
    }
}

static void pattern_cases(void)
{
    asks_case(NULL, "ls -la", "[]", J("['ls -la']"), J("['ls *']"));
    asks_case(NULL, "git status && git push origin main", "[]", J("['git status','git push origin main']"),
              J("['git status *','git push *']"));
    asks_case(NULL, "make 2>&1 | tee log; echo done &", "[]", J("['make 2>&1','tee log','echo done']"),
              J("['make *','tee *','echo *']"));
    asks_case(NULL, "echo \"a; b\" 'c && d'", "[]", "[\"echo \\\"a; b\\\" 'c && d'\"]", J("['echo *']"));
    asks_case(NULL, "echo $(rm -rf /tmp/x) `id`", "[]", J("['echo $(rm -rf /tmp/x) `id`','rm -rf /tmp/x','id']"),
              J("['echo *','rm *','id *']"));
    asks_case(NULL, "(cd sub && rm -f a) > out", "[]", J("['rm -f a']"), J("['rm *']"));
    asks_case(NULL, "npm run build -- --prod\nnpm test", "[]", J("['npm run build -- --prod','npm test']"),
              J("['npm run build *','npm test *']"));
    /* OpenCode's prefix takes words as they come: an option is a word too. */
    asks_case(NULL, "git -C repo log", "[]", J("['git -C repo log']"), J("['git -C *']"));
    asks_case(NULL, "git config --global user.name x", "[]", J("['git config --global user.name x']"),
              J("['git config --global *']"));
    asks_case(NULL, "docker compose up -d", "[]", J("['docker compose up -d']"), J("['docker compose up *']"));
    /* The words: an expansion or a number is not one. */
    asks_case(NULL, "sleep 5", "[]", J("['sleep 5']"), J("['sleep *']"));
    asks_case(NULL, "FOO=1 make test", "[]", J("['FOO=1 make test']"), J("['make test *']"));
    asks_case(NULL, "cat <<EOF > out.txt\nhello\nEOF", "[]", J("['cat <<EOF > out.txt\\nhello\\nEOF']"),
              J("['cat *']"));
    asks_case(NULL, "cd /tmp && ls", "[]", J("['ls']"), J("['ls *']"));
    asks_case(NULL, "cd sub", "[]", "[]", "[]");
    asks_case(NULL, "echo 'unclosed", "[]", J("['echo']"), J("['echo *']"));
    /* OpenCode's own limits, kept as they are (ocbg asks exactly what it
     * asks): the program `time` or `coproc` runs is an argument, and a
     * here-doc body's backticks are text to the grammar. */
    asks_case(NULL, "time rm x", "[]", J("['time rm x']"), J("['time *']"));
    asks_case(NULL, "coproc rm x", "[]", J("['coproc rm x']"), J("['coproc *']"));
    asks_case(NULL, "cat <<EOF\n`rm x`\nEOF", "[]", J("['cat <<EOF\\n`rm x`\\nEOF']"), J("['cat *']"));
    /* OpenCode's table is a JavaScript object: a name it inherits (toString,
     * constructor, …) keeps no word, as OpenCode 1.18.33's prefix() does. */
    asks_case(NULL, "toString x", "[]", J("['toString x']"), J("[' *']"));
    asks_case(NULL, "constructor; __proto__ a b", "[]", J("['constructor','__proto__ a b']"), J("[' *']"));
    asks_case(NULL, "tostring x", "[]", J("['tostring x']"), J("['tostring *']"));
    asks_case(NULL, "", "[]", "[]", "[]");
    asks_case(NULL, "# only a comment", "[]", "[]", "[]");
}

/* Paths outside the project: resolved lexically from it, ~ expanded, cut at
 * a glob, skipped when they expand; a directory is itself, a file its parent. */
static void outside_cases(void)
{
    char root[] = "/tmp/ocbg-bash-asks-XXXXXX";
    if (!mkdtemp(root))
        bail_out("mkdtemp: %s", strerror(errno));
    char *project = xasprintf("%s/project", root), *home = xasprintf("%s/home", root);
    mkdir(project, 0700);
    mkdir(home, 0700);
    char *old_home = xstrdup(getenv("HOME"));
    setenv("HOME", home, 1);
    char *want = NULL;
    asks_case(project, "cat /etc/hostname", J("['/etc']"), J("['cat /etc/hostname']"), J("['cat *']"));
    asks_case(project, "ls /tmp", "[]", J("['ls /tmp']"), J("['ls *']")); /* ls takes no paths */
    asks_case(project, "cat src/a.c ./b \"c d\"", "[]", J("['cat src/a.c ./b \\'c d\\'']"), J("['cat *']"));
    want = xasprintf("[\"%s\"]", root);
    asks_case(project, "cp a ../b", want, J("['cp a ../b']"), J("['cp *']"));
    free(want);
    want = xasprintf("[\"%s\"]", home);
    asks_case(project, "touch ~/x", want, J("['touch ~/x']"), J("['touch *']"));
    asks_case(project, "chmod -R 700 ~", want, J("['chmod -R 700 ~']"), J("['chmod *']"));
    free(want);
    asks_case(project, "cd /etc && ls", J("['/etc']"), J("['ls']"), J("['ls *']"));
    asks_case(project, "rm -rf /tmp/ocbg-none-*", J("['/tmp']"), J("['rm -rf /tmp/ocbg-none-*']"), J("['rm *']"));
    asks_case(project, "cat $HOME/x ${HOME}/y `pwd`/z *.c", "[]", J("['cat $HOME/x ${HOME}/y `pwd`/z *.c','pwd']"),
              J("['cat *','pwd *']"));
    asks_case(project, "cp -r src/ /tmp/", J("['/tmp']"), J("['cp -r src/ /tmp/']"), J("['cp *']"));
    asks_case(project, "cat /", J("['/']"), J("['cat /']"), J("['cat *']"));
    asks_case(project, "if true; then rm /etc/x; fi", J("['/etc']"), J("['true','rm /etc/x']"), J("['true *','rm *']"));
    bash_asks a;
    bash_asks_of("cat /etc/hostname /etc/hosts /", project, &a);
    cJSON *pats = bash_dir_patterns(a.dirs);
    char *p = json_of(pats);
    is_str(p, J("['/etc/*','/*']"), "external_directory patterns: each directory with /* (the root: /*)");
    free(p);
    cJSON_Delete(pats);
    bash_asks_free(&a);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
    rmdir(project);
    rmdir(home);
    rmdir(root);
    free(project);
    free(home);
}

/* text with each placeholder of the fixture replaced (malloc'd). */
static char *fill(const char *text, const char *root)
{
    strbuf sb = {0};
    for (const char *p = text; *p;) {
        if (strncmp(p, "<project-parent>", 16) == 0) {
            sb_puts(&sb, root);
            p += 16;
        } else if (strncmp(p, "<project>", 9) == 0) {
            sb_printf(&sb, "%s/project", root);
            p += 9;
        } else if (strncmp(p, "<home>", 6) == 0) {
            sb_printf(&sb, "%s/home", root);
            p += 6;
        } else {
            sb_putn(&sb, p++, 1);
        }
    }
    return sb_take(&sb);
}

/* The questions permission_bash asks for asks a: external_directory first
 * (when a path is outside), then bash (when a command is not a cd), in the
 * fixture's shape. */
static char *questions_of(const bash_asks *a)
{
    cJSON *qs = cJSON_CreateArray();
    if (cJSON_GetArraySize(a->dirs) > 0) {
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "permission", "external_directory");
        cJSON_AddItemToObject(q, "patterns", bash_dir_patterns(a->dirs));
        cJSON_AddItemToObject(q, "always", bash_dir_patterns(a->dirs));
        cJSON_AddItemToArray(qs, q);
    }
    if (cJSON_GetArraySize(a->patterns) > 0) {
        cJSON *q = cJSON_CreateObject();
        cJSON_AddStringToObject(q, "permission", "bash");
        cJSON_AddItemToObject(q, "patterns", cJSON_Duplicate(a->patterns, 1));
        cJSON_AddItemToObject(q, "always", cJSON_Duplicate(a->always, 1));
        cJSON_AddItemToArray(qs, q);
    }
    char *text = cJSON_PrintUnformatted(qs);
    cJSON_Delete(qs);
    return text;
}

/* Every line of the corpus asks what OpenCode 1.18.33's own bash asked for
 * it, in a world laid out as the recording's: <project-parent>/project (with
 * src/) and <project-parent>/home as HOME. */
static void fixture_cases(void)
{
    char *json = t_read_file(FIXTURE);
    cJSON *lines = cJSON_Parse(json ? json : "");
    free(json);
    if (!cJSON_IsArray(lines) || cJSON_GetArraySize(lines) < 200)
        bail_out("%s: no corpus of 200 lines or more", FIXTURE);
    char root[] = "/tmp/ocbg-bash-fixture-XXXXXX";
    if (!mkdtemp(root))
        bail_out("mkdtemp: %s", strerror(errno));
    char *project = xasprintf("%s/project", root), *home = xasprintf("%s/home", root);
    char *src = xasprintf("%s/src", project);
    mkdir(project, 0700);
    mkdir(src, 0700);
    mkdir(home, 0700);
    char *old_home = xstrdup(getenv("HOME"));
    setenv("HOME", home, 1);
    int n = 0, same = 0;
    const cJSON *line;
    cJSON_ArrayForEach (line, lines) {
        const char *command = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(line, "command"));
        char *recorded = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(line, "asks"));
        char *want = fill(recorded, root);
        bash_asks a;
        bash_asks_of(command, project, &a);
        char *got = questions_of(&a);
        n++;
        same += is_str(got, want, "as OpenCode asked: %s", command);
        bash_asks_free(&a);
        free(got);
        free(want);
        free(recorded);
    }
    diag("%d of %d recorded lines ask exactly what OpenCode asked", same, n);
    cJSON_Delete(lines);
    if (old_home)
        setenv("HOME", old_home, 1);
    free(old_home);
    rmdir(src);
    rmdir(project);
    rmdir(home);
    rmdir(root);
    free(src);
    free(project);
    free(home);
}

/* ---- 3. the shapes that were slow ---------------------------------------- */

/* head, then unit `times` times (each %zu replaced by its index when
 * numbered), then tail: malloc'd. */
static char *repeat(const char *head, const char *unit, size_t times, const char *tail, bool numbered)
{
    strbuf sb = {0};
    sb_puts(&sb, head);
    for (size_t i = 0; i < times; i++) {
        if (numbered)
            sb_printf(&sb, unit, i);
        else
            sb_puts(&sb, unit);
    }
    sb_puts(&sb, tail);
    return sb_take(&sb);
}

static const char *item(const cJSON *arr, int i)
{
    const cJSON *it = cJSON_GetArrayItem(arr, i);
    return it ? it->valuestring : "(none)";
}

static void shape_cases(void)
{
    /* A long word list: one pattern, the arity table's prefix. */
    char *line = repeat("git config --global", " w", 1000, "", false);
    bash_asks a;
    is_int(bash_asks_of(line, NULL, &a), 0, "1,000 words: read");
    is_int(cJSON_GetArraySize(a.patterns), 1, "1,000 words: one pattern");
    is_str(item(a.patterns, 0), line, "1,000 words: the whole line");
    is_str(item(a.always, 0), "git config --global *", "1,000 words: the 3-word prefix");
    bash_asks_free(&a);
    free(line);

    /* Deep $(…): every level is a command, each with its own text. */
    line = repeat("", "echo $(", 200, "ls", false);
    char *tail = repeat(line, ")", 200, "", false);
    free(line);
    is_int(bash_asks_of(tail, NULL, &a), 0, "200 nested $(…): read");
    is_int(cJSON_GetArraySize(a.patterns), 201, "200 nested $(…): 201 patterns");
    is_str(item(a.patterns, 0), tail, "the outermost is the whole line");
    char *inside = xstrndup(tail + 7, strlen(tail) - 8);
    is_str(item(a.patterns, 1), inside, "the next is its $(…)'s inside");
    free(inside);
    is_str(item(a.patterns, 200), "ls", "the innermost last");
    char *w = json_of(a.always);
    is_str(w, J("['echo *','ls *']"), "200 nested $(…): always, each once");
    free(w);
    bash_asks_free(&a);
    free(tail);

    /* Many commands: each in order, the repeated ones once. */
    line = repeat("", "c%zu; a; ", 300, "c0", true);
    is_int(bash_asks_of(line, NULL, &a), 0, "601 commands: read");
    is_int(cJSON_GetArraySize(a.patterns), 301, "601 commands: 301 distinct patterns");
    is_str(item(a.patterns, 0), "c0", "in order: c0");
    is_str(item(a.patterns, 1), "a", "a");
    is_str(item(a.patterns, 2), "c1", "c1");
    is_str(item(a.patterns, 300), "c299", "c299 last");
    is_str(item(a.always, 300), "c299 *", "its always");
    bash_asks_free(&a);
    free(line);

    /* A long here-doc: its statement, then each substitution in it. */
    line = repeat("cat > out <<EOF\n", "line $(c%zu)\n", 300, "EOF", true);
    is_int(bash_asks_of(line, NULL, &a), 0, "a here-doc of 300 substitutions: read");
    is_int(cJSON_GetArraySize(a.patterns), 301, "the statement and 300 commands");
    is_str(item(a.patterns, 0), line, "the statement first, whole");
    is_str(item(a.patterns, 300), "c299", "then each substitution, in order");
    is_str(item(a.always, 0), "cat *", "cat's always");
    bash_asks_free(&a);
    free(line);
}

/* Many path arguments: each directory outside the project asked once. */
static void path_shape_cases(void)
{
    char root[] = "/tmp/ocbg-bash-paths-XXXXXX";
    if (!mkdtemp(root))
        bail_out("mkdtemp: %s", strerror(errno));
    char *project = xasprintf("%s/project", root);
    mkdir(project, 0700);
    char *line = repeat("cat", " ../f%zu", 500, " ../f0 src/x /etc/a /etc/b ../", true);
    bash_asks a;
    is_int(bash_asks_of(line, project, &a), 0, "500 paths: read");
    char *want = xasprintf("[\"%s\",\"/etc\"]", root), *d = json_of(a.dirs);
    is_str(d, want, "500 paths: the parent once, then /etc");
    free(d);
    free(want);
    bash_asks_free(&a);
    free(line);
    rmdir(project);
    rmdir(root);
    free(project);
}

/* ---- 4. the bounds ----------------------------------------------------------- */

static void refused(const char *line, int rc, const char *what)
{
    bash_asks a;
    is_int(bash_asks_of(line, "/tmp", &a), rc, "%s: refused", what);
    ok(cJSON_GetArraySize(a.dirs) == 0 && cJSON_GetArraySize(a.patterns) == 0 && cJSON_GetArraySize(a.always) == 0,
       "%s: asks nothing", what);
    bash_asks_free(&a);
}

/* `levels` nested $(…) around a word of `bytes` bytes: the texts come to
 * about levels * bytes. */
static char *nested_line(size_t levels, size_t bytes)
{
    char *word = xmalloc(bytes + 1);
    memset(word, 'x', bytes);
    word[bytes] = '\0';
    char *open = repeat("", "echo $(", levels, word, false);
    char *line = repeat(open, ")", levels, "", false);
    free(open);
    free(word);
    return line;
}

/* A line of `bytes` bytes: "echo " and one long word. */
static char *long_line(size_t bytes)
{
    char *line = xmalloc(bytes + 1);
    memset(line, 'x', bytes);
    memcpy(line, "echo ", 5);
    line[bytes] = '\0';
    return line;
}

static void bound_cases(void)
{
    char *line = long_line(BASH_ASKS_MAX_BYTES);
    bash_asks a;
    is_int(bash_asks_of(line, NULL, &a), 0, "a line of the longest length (32768 bytes): read");
    is_str(item(a.patterns, 0), line, "and asked for");
    bash_asks_free(&a);
    free(line);
    line = long_line(BASH_ASKS_MAX_BYTES + 1);
    refused(line, -E2BIG, "a byte more");
    free(line);
    line = long_line(1000000);
    refused(line, -E2BIG, "a 1 MB line");
    free(line);

    /* 15 levels around a word of n bytes: texts of 16 * (n + 60) bytes. */
    line = nested_line(15, BASH_ASKS_MAX_TEXT / 16 - 60);
    is_int(bash_asks_of(line, NULL, &a), 0, "nested texts of exactly 262144 bytes: read");
    is_int(cJSON_GetArraySize(a.patterns), 16, "16 patterns (the word inside is one too)");
    bash_asks_free(&a);
    free(line);
    line = nested_line(15, BASH_ASKS_MAX_TEXT / 16 - 59);
    refused(line, -EOVERFLOW, "16 bytes more");
    free(line);

    /* tree-sitter's error recovery is quadratic here: 20 s uncapped. */
    line = repeat("", ")", BASH_ASKS_MAX_BYTES, "", false);
    refused(line, -ETIME, "32 KiB of ')' (the parse out of time)");
    free(line);
}

/* Through Bash: the exact answer, no question asked, nothing run. */
static void tool_refusal(sim_host *h, const char *session, const char *command, int rc, const char *why,
                         const char *file)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "command", command);
    char *json = cJSON_PrintUnformatted(args);
    cJSON_Delete(args);
    char *out = t_tool(h, session, "Bash", json);
    is_int(t_rc, rc, "Bash refuses: %.40s…", why);
    char *want = xasprintf("%s: running `%.200s…`. The command was not run. %s", why, command,
                           rc == -E2BIG ? "Put long text in a file and run a shorter command."
                                        : "Split it into simpler commands.");
    is_str(out, want, "the answer says why and that nothing ran");
    is_int((int)sim_permission_count(h), 0, "no permission was asked");
    ok(access(file, F_OK) != 0, "the command did not run");
    free(want);
    free(out);
    free(json);
}

static void tool_refusal_cases(void)
{
    char dir[] = "/tmp/ocbg-bash-refused-XXXXXX";
    if (!mkdtemp(dir))
        bail_out("mkdtemp: %s", strerror(errno));
    char *file = xasprintf("%s/ran", dir), *touch = xasprintf("touch %s; ", file);
    t_fixture f;
    sim_host *h = t_open(&f, NULL);
    char *pad = long_line(BASH_ASKS_MAX_BYTES), *line = xasprintf("%s%s", touch, pad);
    char *why =
        xasprintf("The command line is too long to check its permissions (%zu bytes; at most 32768)", strlen(line));
    tool_refusal(h, f.parent, line, -E2BIG, why, file);
    free(why);
    free(line);
    free(pad);
    pad = long_line(1000000);
    line = xasprintf("%s%s", touch, pad);
    why = xasprintf("The command line is too long to check its permissions (%zu bytes; at most 32768)", strlen(line));
    tool_refusal(h, f.parent, line, -E2BIG, why, file);
    free(why);
    free(line);
    free(pad);
    pad = nested_line(15, BASH_ASKS_MAX_TEXT / 16 - 59);
    line = xasprintf("%s%s", touch, pad);
    tool_refusal(h, f.parent, line, -EOVERFLOW,
                 "The command line is too complex to check its permissions (its commands' texts come to more than "
                 "262144 bytes, a nested command counted again in each command around it)",
                 file);
    free(line);
    free(pad);
    pad = repeat("", ")", BASH_ASKS_MAX_BYTES - strlen(touch), "", false);
    line = xasprintf("%s%s", touch, pad);
    tool_refusal(h, f.parent, line, -ETIME,
                 "The command line is too complex to check its permissions (parsing it took more than 250 ms)", file);
    free(line);
    free(pad);
    char *list = t_tool(h, f.parent, "background_list", "{}");
    like(list, "No background tasks found", "no task registered");
    free(list);
    t_close(&f);
    rmdir(dir);
    free(file);
    free(touch);
}

int main(void)
{
    nested_rm_cases();
    pattern_cases();
    outside_cases();
    fixture_cases();
    shape_cases();
    path_shape_cases();
    bound_cases();
    tool_refusal_cases();
    return done_testing();
}

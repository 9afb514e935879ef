/* demo.c — `make demo`: ocbg.so loaded by the simulated host from a plugin
 * directory, exactly as a host would; a model launches two background tasks,
 * keeps going, and the notifications arrive in its transcript. Above the
 * host layer: uses only simhost.h. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simhost.h"

static void print_indented(const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        printf("    %.*s\n", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}

static char *call(sim_host *h, const char *session, const char *tool, const char *args)
{
    printf("\n> model calls %s(%s)\n", tool, args);
    char *out = NULL;
    int rc = sim_tool(h, session, tool, args, &out);
    print_indented(out ? out : "");
    if (rc != 0)
        printf("    (error %d)\n", rc);
    return out;
}

/* How many ocbg notifications the session holds. */
static int t_notes(sim_host *h, const char *session)
{
    int n = sim_session_message_count(h, session), count = 0;
    for (int i = 0; i < n; i++) {
        char *text = sim_session_message_text(h, session, i);
        count += text && strstr(text, "[ocbg] Background") != NULL;
        free(text);
    }
    return count;
}

static int more_notes(sim_host *h, void *arg)
{
    const int *want = arg;
    return t_notes(h, (const char *)(want + 1)) > want[0];
}

/* Wait for the next notification after `before` and print it; 0 if none came. */
static int show_next_note(sim_host *h, const char *session, int before)
{
    struct {
        int before;
        char session[64];
    } arg = {before, ""};
    snprintf(arg.session, sizeof arg.session, "%s", session);
    if (sim_wait(h, more_notes, &arg, 10000) != 0) {
        printf("    (no notification arrived)\n");
        return 0;
    }
    int n = sim_session_message_count(h, session);
    for (int i = n - 1; i >= 0; i--) {
        char *text = sim_session_message_text(h, session, i);
        if (text && strstr(text, "[ocbg] Background")) {
            printf("\n[transcript] notification:\n");
            print_indented(text);
            free(text);
            return 1;
        }
        free(text);
    }
    return 0;
}

static char *id_in(const char *text)
{
    const char *p = text ? strstr(text, "Task ID: ") : NULL;
    return p ? strndup(p + 9, 11) : NULL;
}

/* One plugin's tools, with their parameters ("name?" when optional). */
static void print_tools(const ocp_plugin *p)
{
    printf("  %s %s (ocp ABI %u.%u) registered %zu tools:\n", p->name, p->version, p->abi_major, p->abi_minor,
           p->tool_count);
    for (size_t t = 0; t < p->tool_count; t++) {
        cJSON *schema = cJSON_Parse(p->tools[t].parameters_json);
        cJSON *required = cJSON_GetObjectItem(schema, "required");
        printf("    %-18s (", p->tools[t].name);
        const cJSON *prop;
        int first = 1;
        cJSON_ArrayForEach (prop, cJSON_GetObjectItem(schema, "properties")) {
            int req = 0;
            const cJSON *r;
            cJSON_ArrayForEach (r, required)
                req |= strcmp(r->valuestring, prop->string) == 0;
            printf("%s%s%s", first ? "" : ", ", prop->string, req ? "" : "?");
            first = 0;
        }
        printf(")\n");
        cJSON_Delete(schema);
    }
}

/* Load the plugins from dir and show what they registered. NULL (and a line
 * on stderr) when none loaded. */
static sim_host *load(const char *dir)
{
    sim_host *h = sim_create();
    int n = sim_load_plugins(h, dir, NULL);
    if (n < 1) {
        fprintf(stderr, "demo: no plugin loaded from %s: %s\n", dir, sim_load_error(h));
        sim_destroy(h);
        return NULL;
    }
    printf("Simulated host: loaded %d plugin(s) from %s\n", n, dir);
    for (size_t i = 0; i < sim_plugin_count(h); i++)
        print_tools(sim_plugin(h, i));
    return h;
}

/* Two sub-agents: one quick, one that reads and greps for a while; and the
 * parent's answer once both are in. */
static void add_scripts(sim_host *h)
{
    sim_script(h, "List the TODO comments",
               "{\"steps\":[{\"tool\":\"grep\",\"input\":{\"pattern\":\"TODO\"},\"output\":\"3 matches\",\"ms\":150},"
               "{\"reply\":\"3 TODOs: src/a.c:10, src/b.c:22, src/c.c:5\"}]}",
               1);
    sim_script(h, "Summarise the build",
               "{\"steps\":[{\"tool\":\"read\",\"input\":{\"path\":\"Makefile\"},\"output\":\"...\",\"ms\":200},"
               "{\"tool\":\"read\",\"input\":{\"path\":\"README.md\"},\"output\":\"...\",\"ms\":200},"
               "{\"reply\":\"The build is one Makefile: make, make check, make demo.\"}]}",
               1);
    sim_script(h, "[ocbg] Background task", "{\"steps\":[{\"reply\":\"Both results are in; carrying on.\"}]}", 0);
}

/* Print the two tasks' notifications as they arrive in the parent's
 * transcript, then the woken parent's reply. Returns how many arrived. */
static int show_notifications(sim_host *h, const char *parent)
{
    printf("\nWaiting for the notifications in the parent transcript...\n");
    int seen = sim_session_message_count(h, parent);
    int notes = 0;
    while (notes < 2 && sim_wait_messages(h, parent, seen + 1, 10000) == 0) {
        char *text = sim_session_message_text(h, parent, seen);
        if (text && strstr(text, "[ocbg] Background task")) {
            char *body = sim_call_body(h, "session_prompt", parent, notes);
            int silent = body && strstr(body, "\"noReply\":true");
            printf("\n[transcript] notification %d (%s):\n", ++notes,
                   silent ? "joins the context silently" : "wakes the parent");
            print_indented(text);
            free(body);
        }
        free(text);
        seen++;
    }
    sim_wait_messages(h, parent, seen + 1, 5000); /* the woken parent's reply */
    char *reply = sim_session_message_text(h, parent, -1);
    printf("\n[transcript] parent model replies: %s\n", reply ? reply : "");
    free(reply);
    return notes;
}

/* Read task id_a's result, then resume its sub-agent and wait for the answer. */
static void read_and_resume(sim_host *h, const char *parent, const char *id_a)
{
    char args[256];
    snprintf(args, sizeof args, "{\"task_id\":\"%s\"}", id_a ? id_a : "");
    free(call(h, parent, "background_output", args));

    printf("\nA follow-up to the finished sub-agent, waiting for its answer (no notification then):\n");
    sim_script(h, "Which of them is oldest", "{\"steps\":[{\"reply\":\"src/c.c:5 is the oldest TODO.\"}]}", 1);
    snprintf(args, sizeof args, "{\"task_id\":\"%s\",\"message\":\"Which of them is oldest?\",\"block\":true}",
             id_a ? id_a : "");
    free(call(h, parent, "background_resume", args));
}

/* A fork, then a background shell command; each notifies the parent.
 * Returns how many of the two notifications arrived. */
static int fork_and_shell(sim_host *h, const char *parent)
{
    printf("\nA fork: the sub-agent starts with this conversation's context:\n");
    sim_script(h, "Check the plan", "{\"steps\":[{\"reply\":\"The plan holds: both results agree.\"}]}", 1);
    int before = t_notes(h, parent);
    free(call(h, parent, "background_task",
              "{\"description\":\"Check plan\",\"prompt\":\"Check the plan\",\"agent\":\"general\",\"fork\":true}"));
    int later = show_next_note(h, parent, before);

    printf("\nA shell command in the background (the Claude-style face):\n");
    before = t_notes(h, parent);
    free(call(h, parent, "Bash",
              "{\"command\":\"for i in 1 2 3; do echo step $i; sleep 0.1; done\",\"description\":\"three steps\","
              "\"run_in_background\":true}"));
    return later + show_next_note(h, parent, before);
}

static void show_tasks_command(sim_host *h, const char *parent)
{
    printf("\n> user types /tasks\n");
    char *list = NULL;
    sim_command(h, parent, "tasks", "", &list);
    print_indented(list ? list : "");
    free(list);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/plugin-dir";
    sim_host *h = load(dir);
    if (!h)
        return 1;
    add_scripts(h);

    char *parent = sim_session_new(h, NULL, "demo conversation");
    printf("\nParent session %s: the model starts two background tasks and goes on.\n", parent);
    char *a = call(h, parent, "background_task",
                   "{\"description\":\"Find TODOs\",\"prompt\":\"List the TODO comments\",\"agent\":\"explore\"}");
    char *b = call(h, parent, "background_task",
                   "{\"description\":\"Summarise build\",\"prompt\":\"Summarise the build\",\"agent\":\"general\"}");
    char *id_a = id_in(a);
    free(call(h, parent, "background_list", "{}"));

    int notes = show_notifications(h, parent);
    read_and_resume(h, parent, id_a);
    int later = fork_and_shell(h, parent);
    show_tasks_command(h, parent);

    int ok = notes == 2 && later == 2;
    printf("\n%s\n", ok ? "Demo done: two tasks ran in parallel, their notifications arrived, a result was read "
                          "back, a sub-agent was resumed, a fork and a shell command ran."
                        : "Demo FAILED: the notifications did not arrive.");
    free(a);
    free(b);
    free(id_a);
    free(parent);
    sim_destroy(h);
    return ok ? 0 : 1;
}

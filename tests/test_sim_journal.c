/* test_sim_journal.c — the simulated host's journal (sim_journal_open)
 * survives a SIGKILL of the host's process: a forked child runs a host with
 * the journal on (a finished conversation, a sub-agent streaming a turn, a
 * deleted session) and is killed when it says it got there; a new host on the
 * same journal has the sessions, idle, with their messages as last written
 * (the streaming turn's partial answer, unfinished), not the deleted one, new
 * ids that differ from every old one, and it ignores a last line cut short. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "simhost.h"
#include "testlib.h"

#define SUB_SCRIPT                                                                                                     \
    "{\"steps\":[{\"tool\":\"read\",\"input\":{\"filePath\":\"a.c\"},\"output\":\"int a;\"},"                          \
    "{\"usage\":{\"input\":1200,\"output\":34,\"cost\":0.5}},{\"hang\":true}]}"

static int usage_reported(sim_host *h, void *arg)
{
    (void)arg;
    /* user P, answer P, user C, C's usage update: the partial answer is
     * journaled before that last event is delivered. */
    return sim_events_delivered(h, "message.updated") >= 4;
}

/* The child's life: build the state, tell the parent the ids, block until
 * killed. Never returns. */
static _Noreturn void child_life(const char *journal, int report_fd, int block_fd)
{
    sim_host *h = sim_create();
    if (!h || sim_journal_open(h, journal) != 0)
        _exit(2);
    /* Its clock runs an hour ahead: the next host's clock is behind every
     * old id's time, and its ids must still come after them. */
    sim_advance_ms(h, 3600000);
    char *p = sim_session_new(h, NULL, "the parent");
    char *c = sim_session_new(h, p, "a sub-agent");
    char *d = sim_session_new(h, NULL, "to delete");
    sim_script(h, "sub-agent work", SUB_SCRIPT, 0);
    if (sim_session_prompt(h, p, J("{'parts':[{'type':'text','text':'hello'}]}")) != 0 ||
        sim_wait_idle(h, p, tap_timeout_ms(5000)) != 0 || sim_session_delete(h, d) != 0 ||
        sim_session_prompt(h, c, J("{'parts':[{'type':'text','text':'sub-agent work'}]}")) != 0 ||
        sim_wait(h, usage_reported, NULL, tap_timeout_ms(5000)) != 0)
        _exit(3);
    char line[256];
    int n = snprintf(line, sizeof line, "%s %s %s\n", p, c, d);
    if (write(report_fd, line, (size_t)n) != n)
        _exit(4);
    char b;
    while (read(block_fd, &b, 1) != 0) /* the parent never writes: blocks until the kill */
        ;
    _exit(5);
}

/* Run the child until it reports, then SIGKILL it. Returns 0 and the three
 * ids it made, or -1. */
static int run_and_kill(const char *journal, char ids[3][64])
{
    int rep[2], blk[2];
    if (pipe(rep) != 0 || pipe(blk) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(rep[0]);
        close(blk[1]);
        child_life(journal, rep[1], blk[0]);
    }
    close(rep[1]);
    close(blk[0]);
    char buf[256] = {0};
    struct pollfd pf = {.fd = rep[0], .events = POLLIN};
    int got = poll(&pf, 1, tap_timeout_ms(10000)) == 1 ? (int)read(rep[0], buf, sizeof buf - 1) : -1;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(rep[0]);
    close(blk[1]);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the first host was killed by SIGKILL");
    if (got <= 0 || sscanf(buf, "%63s %63s %63s", ids[0], ids[1], ids[2]) != 3) {
        diag("child reported %d: '%s' (status %d)", got, buf, status);
        return -1;
    }
    return 0;
}

/* Every "<prefix>_<12 hex><10 base62>" id in text, appended to *ids. */
static void collect_ids(const char *text, cJSON *ids)
{
    for (const char *u = strchr(text, '_'); u; u = strchr(u + 1, '_')) {
        const char *s = u;
        while (s > text && s[-1] >= 'a' && s[-1] <= 'z')
            s--;
        size_t k = strspn(u + 1, "0123456789abcdef");
        size_t r = k >= 12 ? strspn(u + 13, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") : 0;
        if (s < u && k >= 12 && r >= 10) {
            char id[64];
            snprintf(id, sizeof id, "%.*s", (int)(u + 23 - s), s);
            cJSON_AddItemToArray(ids, cJSON_CreateString(id));
        }
    }
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 >= cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (b)
        b[n] = 0;
    return b;
}

/* A new id is none of the old ones and sorts after each of the same prefix. */
static int id_is_new(const char *id, const cJSON *old)
{
    const cJSON *o;
    cJSON_ArrayForEach (o, old) {
        const char *s = o->valuestring;
        size_t pl = (size_t)(strchr(s, '_') - s);
        if (strcmp(s, id) == 0 || (strncmp(s, id, pl + 1) == 0 && strcmp(s, id) > 0)) {
            diag("new id %s vs old %s", id, s);
            return 0;
        }
    }
    return 1;
}

static cJSON *messages_of(sim_host *h, const char *sid)
{
    char *m = sim_session_messages_json(h, sid);
    cJSON *j = m ? cJSON_Parse(m) : NULL;
    free(m);
    return j ? j : cJSON_CreateArray();
}

static const cJSON *at(const cJSON *o, const char *path)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    const cJSON *j = o;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = (*k >= '0' && *k <= '9') ? cJSON_GetArrayItem(j, atoi(k)) : cJSON_GetObjectItemCaseSensitive(j, k);
    return j;
}

/* The sub-agent's turn was streaming: its partial answer is there, as last
 * written (the tool done, the usage reported), unfinished. */
static void check_partial_answer(sim_host *h, const char *c)
{
    cJSON *m = messages_of(h, c);
    is_int(cJSON_GetArraySize(m), 2, "the sub-agent's prompt and its partial answer are back");
    is_str(cJSON_GetStringValue(at(m, "1.info.role")), "assistant", "the partial answer is the assistant's");
    ok(at(m, "1.info.time.created") && !at(m, "1.info.time.completed") && !at(m, "1.info.finish"),
       "the partial answer is unfinished (no time.completed, no finish)");
    is_str(cJSON_GetStringValue(at(m, "1.parts.0.state.status")), "completed", "its tool part as last written");
    is_int((long long)cJSON_GetNumberValue(at(m, "1.info.tokens.input")), 1200, "its usage as last written");
    cJSON_Delete(m);
}

/* The second host: the state is back, idle; new ids are new. */
static void check_second_life(const char *journal, char ids[3][64], const cJSON *old_ids)
{
    sim_host *h = sim_create();
    is_int(sim_journal_open(h, journal), 0, "a new host opens the journal");
    is_int(sim_journal_open(h, journal), -EBUSY, "a second open is refused");
    ok(sim_session_exists(h, ids[0]) && sim_session_exists(h, ids[1]), "both sessions are back");
    ok(!sim_session_exists(h, ids[2]), "the deleted session stays deleted");
    is_int((long long)sim_session_count(h), 2, "no other session (the cut line made none)");
    ok(!sim_session_busy(h, ids[0]) && !sim_session_busy(h, ids[1]), "every session is idle");
    char *cj = sim_session_get_json(h, ids[1]);
    like(cj, ids[0], "the sub-agent's session keeps its parent");
    like(cj, "a sub-agent", "and its title");
    free(cj);
    is_int(sim_session_message_count(h, ids[0]), 2, "the parent's conversation is back");
    char *t = sim_session_message_text(h, ids[0], -1);
    is_str(t, "ok", "with its answer");
    free(t);
    check_partial_answer(h, ids[1]);
    char *n = sim_session_new(h, NULL, "after the restart");
    ok(n && id_is_new(n, old_ids), "a new session id differs from (and sorts after) every old id");
    is_int(sim_session_prompt(h, ids[1], J("{'parts':[{'type':'text','text':'again'}]}")), 0,
           "the restored sub-agent session takes a prompt");
    is_int(sim_wait_idle(h, ids[1], tap_timeout_ms(5000)), 0, "and runs a turn to its end (no turn was left running)");
    cJSON *m = messages_of(h, ids[1]);
    is_int(cJSON_GetArraySize(m), 4, "its new prompt and answer follow the partial one");
    ok(id_is_new(cJSON_GetStringValue(at(m, "3.info.id")), old_ids), "the new message id is new");
    cJSON_Delete(m);
    sim_destroy(h);
    h = sim_create();
    is_int(sim_journal_open(h, journal), 0, "a third host opens the journal");
    is_int((long long)sim_session_count(h), 3, "the three sessions, the one made after the restart too");
    is_int(sim_session_message_count(h, ids[1]), 4, "the messages of both lives");
    ok(sim_session_exists(h, n), "the new session");
    free(n);
    sim_destroy(h);
}

int main(void)
{
    char dir[] = "/tmp/ocbg-journal-XXXXXX";
    if (!mkdtemp(dir))
        bail_out("mkdtemp: %s", strerror(errno));
    char journal[128];
    snprintf(journal, sizeof journal, "%s/host.jsonl", dir);
    char ids[3][64];
    if (run_and_kill(journal, ids) != 0)
        bail_out("the first host did not reach its state");
    char *text = read_file(journal);
    ok(text && strstr(text, ids[0]) && text[strlen(text) - 1] == '\n', "the journal holds whole lines");
    cJSON *old_ids = cJSON_CreateArray();
    collect_ids(text ? text : "", old_ids);
    ok(cJSON_GetArraySize(old_ids) >= 8, "the journal names the old ids (%d)", cJSON_GetArraySize(old_ids));
    size_t good_len = text ? strlen(text) : 0;
    free(text);
    /* A kill inside a write leaves a line cut short. */
    FILE *f = fopen(journal, "ab");
    if (!f || fputs(J("{'t':'session','id':'ses_fffffffffffffZZZ"), f) < 0 || fclose(f) != 0)
        bail_out("cannot append to %s", journal);
    check_second_life(journal, ids, old_ids);
    text = read_file(journal);
    ok(text && strlen(text) > good_len && text[good_len] == '{' && !strstr(text, "ZZZ"),
       "the cut line was dropped and the new lines follow the whole ones");
    free(text);
    cJSON_Delete(old_ids);
    unlink(journal);
    rmdir(dir);
    return done_testing();
}

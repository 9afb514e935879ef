/* storage_journal.c — layer 1 (storage): the journal's writing side: one JSON
 * line per change of a session or a message, appended with one write(2)
 * each (see sim_storage.h). Uses the core only. */
#include "sim_storage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sim_journal_on_locked(const sim_storage *st)
{
    return st->journal_fd >= 0;
}

/* Append line (owned) and a newline in one write: a reader never sees half
 * a line unless the process died inside the call. */
static void journal_write_locked(sim_storage *st, cJSON *line)
{
    char *text = sim_print(line);
    cJSON_Delete(line);
    size_t n = strlen(text);
    text = sim_xrealloc(text, n + 2);
    text[n++] = '\n';
    text[n] = 0;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(st->journal_fd, text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!st->journal_warned++)
                fprintf(stderr, "simhost: journal write failed: %s\n", w < 0 ? strerror(errno) : "short write");
            break;
        }
        off += (size_t)w;
    }
    free(text);
}

void sim_journal_session_locked(sim_storage *st, const sim_session *s)
{
    if (st->journal_fd < 0)
        return;
    cJSON *line = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "t", "session");
    cJSON_AddStringToObject(line, "id", s->id);
    if (s->parent_id)
        cJSON_AddStringToObject(line, "parentID", s->parent_id);
    cJSON_AddStringToObject(line, "title", s->title);
    if (s->directory)
        cJSON_AddStringToObject(line, "directory", s->directory);
    cJSON *t = cJSON_AddObjectToObject(line, "time");
    cJSON_AddNumberToObject(t, "created", (double)s->created);
    cJSON_AddNumberToObject(t, "updated", (double)s->updated);
    journal_write_locked(st, line);
}

void sim_journal_deleted_locked(sim_storage *st, const sim_session *s)
{
    if (st->journal_fd < 0)
        return;
    cJSON *line = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "t", "deleted");
    cJSON_AddStringToObject(line, "id", s->id);
    journal_write_locked(st, line);
}

void sim_journal_message_locked(sim_storage *st, const sim_session *s, const cJSON *msg)
{
    if (st->journal_fd < 0)
        return;
    cJSON *line = cJSON_CreateObject();
    cJSON_AddStringToObject(line, "t", "message");
    cJSON_AddStringToObject(line, "sessionID", s->id);
    cJSON_AddItemToObject(line, "message", cJSON_Duplicate(msg, 1));
    journal_write_locked(st, line);
}

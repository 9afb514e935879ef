/* storage_replay.c — layer 1 (storage), its top file: opening a journal: its
 * lines replayed into the session table, a cut last line dropped, then the
 * file kept open for appending (see sim_storage.h). Uses storage_ids.c,
 * storage_journal.c, storage_messages.c, storage_sessions.c and the core. */
#include "sim_storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read the whole file from its start. Returns 0 or a negative errno. */
static int read_all(int fd, char **buf, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *b = sim_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap)
            b = sim_xrealloc(b, cap *= 2);
        ssize_t r = pread(fd, b + n, cap - n - 1, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(b);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

/* Every id-like string in j (recursively) marks the id source. */
static void ids_seen_locked(sim_storage *st, const cJSON *j)
{
    if (cJSON_IsString(j)) {
        sim_storage_ids_seen_locked(st, j->valuestring);
        return;
    }
    const cJSON *c;
    cJSON_ArrayForEach (c, j) {
        ids_seen_locked(st, c);
    }
}

static int64_t num_at(const cJSON *o, const char *key)
{
    double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key)); /* NaN if absent */
    return v >= 0 && v < 9e15 ? (int64_t)v : 0;
}

static const char *str_at(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* {"t":"message"}: replace the session's message of that id, else append. */
static void replay_message_locked(sim_storage *st, const cJSON *line)
{
    sim_session *s = sim_find_locked(st, str_at(line, "sessionID"));
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(line, "message");
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(msg, "info");
    const char *id = str_at(info, "id");
    if (!s || !id)
        return;
    cJSON *copy = cJSON_Duplicate(msg, 1);
    cJSON *m;
    cJSON_ArrayForEach (m, s->messages) {
        const char *mid = str_at(cJSON_GetObjectItemCaseSensitive(m, "info"), "id");
        if (mid && strcmp(mid, id) == 0)
            break;
    }
    if (m)
        cJSON_ReplaceItemViaPointer(s->messages, m, copy);
    else
        cJSON_AddItemToArray(s->messages, copy);
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(info, "time");
    int64_t t = num_at(tm, "completed") > num_at(tm, "created") ? num_at(tm, "completed") : num_at(tm, "created");
    if (t > s->updated)
        s->updated = t;
}

static void replay_line_locked(sim_storage *st, const cJSON *line)
{
    const char *type = str_at(line, "t");
    if (!type)
        return;
    ids_seen_locked(st, line);
    if (strcmp(type, "session") == 0) {
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(line, "time");
        sim_session_restore_locked(st, str_at(line, "id"), str_at(line, "parentID"), str_at(line, "title"),
                                   str_at(line, "directory"), num_at(tm, "created"), num_at(tm, "updated"));
    } else if (strcmp(type, "deleted") == 0) {
        sim_session *s = sim_find_locked(st, str_at(line, "id"));
        if (s)
            sim_session_forget_locked(st, s);
    } else if (strcmp(type, "message") == 0) {
        replay_message_locked(st, line);
    }
}

/* Replay buf's lines; returns the length of its complete lines (a last one
 * with no newline is not; a complete one that does not parse is skipped). */
static size_t replay_all_locked(sim_storage *st, char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        char *nl = memchr(buf + off, '\n', len - off);
        if (!nl)
            break;
        *nl = 0;
        cJSON *line = cJSON_Parse(buf + off);
        if (line)
            replay_line_locked(st, line);
        cJSON_Delete(line);
        off = (size_t)(nl - buf) + 1;
    }
    return off;
}

/* Write the sessions from `first` to `last` (those that existed before the
 * journal was opened) and their messages to it. */
static void snapshot_locked(sim_storage *st, sim_session *first, const sim_session *last)
{
    for (sim_session *s = first; s && last; s = s->next) {
        if (!s->deleted) {
            sim_journal_session_locked(st, s);
            cJSON *m;
            cJSON_ArrayForEach (m, s->messages) {
                sim_journal_message_locked(st, s, m);
            }
        }
        if (s == last)
            break;
    }
}

int sim_storage_journal_open_locked(sim_storage *st, const char *path)
{
    if (st->journal_fd >= 0)
        return -EBUSY;
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    char *buf = NULL;
    size_t len = 0;
    int rc = read_all(fd, &buf, &len);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    sim_session *first = st->first, *last = st->last;
    size_t good = replay_all_locked(st, buf, len);
    free(buf);
    if (good < len && ftruncate(fd, (off_t)good) < 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    st->journal_fd = fd;
    snapshot_locked(st, first, last);
    sim_changed_locked(st->core);
    return 0;
}

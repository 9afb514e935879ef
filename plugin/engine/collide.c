/* collide.c — see collide.h: which files each launching session's writers
 * edited, and the answer to a host's tool_before. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/collide.h"

/* At most this many collisions are spelt out in one answer; the rest are
 * counted (a patch of many files must not flood the model's context). */
#define COLLIDE_MAX_LINES 4

/* One writer's edit of one file (its latest). */
typedef struct edit {
    struct edit *next;
    char *path;                 /* normalised */
    char *session;              /* the session that edited it */
    char task_id[TASK_ID_SIZE]; /* its task; "" for the launching session itself */
    unsigned run;               /* the task's run then */
    int64_t at;                 /* wall ms of the edit (host clock) */
} edit;

/* A launching session's writers' edits. */
typedef struct group {
    char *launcher; /* the key: the launching session's id */
    edit *edits;    /* newest first */
} group;

struct collide_state {
    map groups; /* launcher session id → group */
};

/* What session sid is to the engine now. */
typedef struct roles {
    task *t;    /* the active task whose session sid is (no worktree of its own): a writer in its launcher's group */
    bool owner; /* sid launched tasks, some still active: the writer "launcher" in its own group */
} roles;

static const char *group_key(const void *v)
{
    return ((const group *)v)->launcher;
}

/* 1: the tool names one file in "filePath"; 2: files in a patch's
 * "patchText" headers; 0: it edits nothing (OpenCode 1.18.33's names). */
static int tool_kind(const char *tool)
{
    if (!tool)
        return 0;
    if (strcmp(tool, "edit") == 0 || strcmp(tool, "write") == 0)
        return 1;
    return strcmp(tool, "apply_patch") == 0 ? 2 : 0;
}

/* p[0..n) with "." and ".." segments and repeated slashes resolved
 * lexically ("/a/./b/../c//d" → "/a/c/d"; "../x" stays). malloc'd. */
static char *normalise(const char *p, size_t n)
{
    char *out = xmalloc(n + 2);
    size_t root = p[0] == '/', len = root, base = root; /* out[0..base) is never popped */
    out[0] = '/';
    for (size_t i = 0; i < n;) {
        while (i < n && p[i] == '/')
            i++;
        size_t s = i;
        while (i < n && p[i] != '/')
            i++;
        size_t sl = i - s;
        if (sl == 0 || (sl == 1 && p[s] == '.'))
            continue;
        if (sl == 2 && p[s] == '.' && p[s + 1] == '.') {
            if (len > base) { /* drop the last segment and its slash */
                while (len > base && out[len - 1] != '/')
                    len--;
                len = len > base ? len - 1 : base;
                continue;
            }
            if (root)
                continue; /* the root's parent is the root */
        }
        if (len > root)
            out[len++] = '/';
        memcpy(out + len, p + s, sl);
        len += sl;
        if (sl == 2 && p[s] == '.' && p[s + 1] == '.')
            base = len; /* a leading ".." of a relative path stays */
    }
    if (len == 0)
        out[len++] = '.';
    out[len] = '\0';
    return out;
}

/* Add p[0..n) (trimmed of blanks) to paths unless it is empty or there. */
static void add_path(char ***paths, size_t *count, const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    if (n == 0)
        return;
    char *norm = normalise(p, n);
    for (size_t i = 0; i < *count; i++)
        if (strcmp((*paths)[i], norm) == 0) {
            free(norm);
            return;
        }
    *paths = xrealloc(*paths, (*count + 2) * sizeof **paths);
    (*paths)[(*count)++] = norm;
    (*paths)[*count] = NULL;
}

/* The files a patch's headers name, as OpenCode's apply_patch reads them. */
static void patch_paths(char ***paths, size_t *count, const char *text)
{
    static const char *const heads[] = {"*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:"};
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++) {
            size_t hl = strlen(heads[h]);
            if (n >= hl && strncmp(line, heads[h], hl) == 0)
                add_path(paths, count, line + hl, n - hl);
        }
        line += n + (line[n] == '\n');
    }
}

char **collide_edited_paths(const char *tool, const char *args_json)
{
    int kind = tool_kind(tool);
    if (!kind || !args_json)
        return NULL;
    cJSON *args = cJSON_Parse(args_json);
    char **paths = NULL;
    size_t count = 0;
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, kind == 1 ? "filePath" : "patchText"));
    if (v && kind == 1)
        add_path(&paths, &count, v, strlen(v));
    else if (v)
        patch_paths(&paths, &count, v);
    cJSON_Delete(args);
    return paths;
}

void collide_paths_free(char **paths)
{
    for (size_t i = 0; paths && paths[i]; i++)
        free(paths[i]);
    free(paths);
}

static void edit_free(edit *e)
{
    free(e->path);
    free(e->session);
    free(e);
}

static void group_free(group *g)
{
    while (g->edits) {
        edit *e = g->edits;
        g->edits = e->next;
        edit_free(e);
    }
    free(g->launcher);
    free(g);
}

/* The group of launcher session `key`: made when `create`, else NULL when
 * it has none. [lock held] */
static group *group_of(engine *eng, const char *key, bool create)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!eng->collide) {
        if (!create)
            return NULL;
        eng->collide = xcalloc(1, sizeof *eng->collide);
        map_init(&eng->collide->groups, group_key);
    }
    group *g = map_get(&eng->collide->groups, key);
    if (!g && create) {
        g = xcalloc(1, sizeof *g);
        g->launcher = xstrdup(key);
        map_put(&eng->collide->groups, g);
    }
    return g;
}

/* What sid is to the engine (collide.h: who is a writer). A launcher whose
 * tasks have all ended loses its group: nothing in it counts any more.
 * Returns whether sid is a writer at all. [lock held] */
static bool roles_of(engine *eng, const char *sid, roles *r)
{
    ENGINE_ASSERT_LOCKED(eng);
    task *t = registry_find_session(&eng->reg, sid);
    r->t = t && task_status_active((task_status)t->status) && !t->wt && t->parent ? t : NULL;
    parent *p = registry_parent(&eng->reg, sid);
    r->owner = p && p->active > 0;
    if (p && !p->active && eng->collide) {
        group *g = map_del(&eng->collide->groups, sid);
        if (g)
            group_free(g);
    }
    return r->t || r->owner;
}

/* The task of edit e while it is still at work in the run that made e;
 * NULL once it ended (or for the launcher's own edits). [lock held] */
static task *active_task(engine *eng, const edit *e)
{
    ENGINE_ASSERT_LOCKED(eng);
    if (!e->task_id[0])
        return NULL;
    task *t = registry_find(&eng->reg, e->task_id);
    bool live = t && task_status_active((task_status)t->status) && t->run == e->run && t->session_id &&
                strcmp(t->session_id, e->session) == 0;
    return live ? t : NULL;
}

/* One collision, in words: the file, the other writer, what to do. */
static void say(strbuf *sb, bool refuse, const char *path, const task *other)
{
    if (sb->len)
        sb_puts(sb, "\n");
    sb_printf(sb, "[ocbg] %s: %s was also edited by ", refuse ? "Refused" : "Warning", path);
    if (other && other->description)
        sb_printf(sb, "background task %s (\"%.*s%s\"), still running in this checkout", other->id,
                  ECHO(other->description));
    else if (other)
        sb_printf(sb, "background task %s, still running in this checkout", other->id);
    else
        sb_puts(sb, "the session that launched this task, which is still working in this checkout");
    if (!refuse) {
        sb_puts(sb, "; your edits may overwrite each other. Re-read the file before editing it again, or run "
                    "parallel writers with isolation \"worktree\".");
        return;
    }
    sb_printf(sb,
              ", and on_collision is \"refuse\": this edit was not made. Leave the file to that %s, or run "
              "parallel writers with isolation \"worktree\".",
              other ? "task" : "session");
}

/* The collisions of sid's edit of `path` with the other writers of group g
 * (me: sid's task in g, NULL when sid is g's launcher), said in sb; the
 * edits of tasks that ended are dropped on the way. Returns how many.
 * [lock held] */
static unsigned collisions(engine *eng, group *g, const char *sid, const task *me, const char *path, strbuf *sb,
                           unsigned said)
{
    ENGINE_ASSERT_LOCKED(eng);
    unsigned n = 0;
    for (edit **pe = &g->edits; *pe;) {
        edit *e = *pe;
        task *other = active_task(eng, e);
        if (e->task_id[0] && !other) {
            *pe = e->next;
            edit_free(e);
            continue;
        }
        pe = &e->next;
        if (strcmp(e->path, path) != 0 || strcmp(e->session, sid) == 0)
            continue;
        /* The launcher's edit counts for a task that was running then. */
        if (!other && !(me && me->started_ms <= e->at))
            continue;
        if (said + n < COLLIDE_MAX_LINES)
            say(sb, eng->opt.refuse_collisions, path, other);
        n++;
    }
    return n;
}

/* sid edited path at `now`, as task t (NULL: as g's launcher). [lock held]
 * (not asserted: g does not know its lock) */
static void record(group *g, const char *sid, const task *t, const char *path, int64_t now)
{
    edit *e = g->edits;
    while (e && (strcmp(e->path, path) != 0 || strcmp(e->session, sid) != 0))
        e = e->next;
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->path = xstrdup(path);
        e->session = xstrdup(sid);
        e->next = g->edits;
        g->edits = e;
    }
    snprintf(e->task_id, sizeof e->task_id, "%s", t ? t->id : "");
    e->run = t ? t->run : 0;
    e->at = now;
}

/* Check every path of sid's edit in both groups sid writes in, and record
 * them unless the edit is refused. Returns 0 or -EACCES. [lock held] */
static int check_and_record(engine *eng, const char *sid, char **paths, int64_t now, strbuf *sb)
{
    ENGINE_ASSERT_LOCKED(eng);
    roles r;
    if (!roles_of(eng, sid, &r))
        return 0; /* it ended while the arguments were read */
    group *mine = r.t ? group_of(eng, r.t->parent->session_id, true) : NULL;
    group *own = r.owner ? group_of(eng, sid, true) : NULL;
    unsigned n = 0;
    for (size_t i = 0; paths[i]; i++) {
        if (mine)
            n += collisions(eng, mine, sid, r.t, paths[i], sb, n);
        if (own)
            n += collisions(eng, own, sid, NULL, paths[i], sb, n);
    }
    if (n > COLLIDE_MAX_LINES)
        sb_printf(sb, "\n[ocbg] %u more collisions like these.", n - COLLIDE_MAX_LINES);
    if (n && eng->opt.refuse_collisions)
        return -EACCES;
    for (size_t i = 0; paths[i]; i++) {
        if (mine)
            record(mine, sid, r.t, paths[i], now);
        if (own)
            record(own, sid, NULL, paths[i], now);
    }
    return 0;
}

int collide_tool_before(engine *eng, const char *session_id, const char *tool, const char *args_json, char **out)
{
    *out = NULL;
    if (!tool_kind(tool) || !session_id)
        return 0;
    roles r;
    engine_lock(eng);
    bool writer = roles_of(eng, session_id, &r);
    engine_unlock(eng);
    if (!writer)
        return 0;
    /* Parsed unlocked: a write's arguments hold the whole file. */
    char **paths = collide_edited_paths(tool, args_json);
    if (!paths)
        return 0;
    int64_t now = engine_now(eng);
    strbuf sb = {0};
    engine_lock(eng);
    int rc = check_and_record(eng, session_id, paths, now, &sb);
    engine_unlock(eng);
    collide_paths_free(paths);
    *out = sb.len ? sb_take(&sb) : NULL;
    sb_free(&sb);
    return rc;
}

static void free_group(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    group_free(value);
}

void collide_free(engine *eng)
{
    if (!eng->collide)
        return;
    map_each(&eng->collide->groups, free_group, NULL);
    map_free(&eng->collide->groups);
    free(eng->collide);
    eng->collide = NULL;
}

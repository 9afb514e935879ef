/*
 * sim_storage.h — layer 1 of the simulated host: sessions and their messages,
 * in OpenCode's JSON shapes. Uses only the core (sim_core.h).
 *
 *   storage_ids.c       ids (sessions, messages, parts, calls)
 *   storage_dirs.c      the folders sessions work in: watched, released
 *   storage_journal.c   the journal's writing side: one JSON line per change
 *   storage_messages.c  message and part JSON: build, append, list
 *   storage_sessions.c  the session table: lookup, create, delete, fork
 *   storage_replay.c    opening a journal: its lines replayed, then appended to
 *
 * Lowest first: a file uses only those listed before it (and the core).
 *
 * A session's turn (what the agents layer runs) is not the storage's: the storage
 * keeps an opaque pointer for it (`run`) and, before it frees a session,
 * hands it back through the `release` callback the layer above set.
 *
 * Every function here is called with the core's `mu` held.
 */
#ifndef OCBG_SIM_STORE_H
#define OCBG_SIM_STORE_H

#include "core/sim_core.h"

typedef struct sim_session sim_session;
typedef struct sim_dir sim_dir;
struct sim_run; /* a session's turn state: the agents layer's, opaque here */

struct sim_session {
    char *id;
    char *parent_id; /* NULL: top-level */
    char *title;
    char *directory; /* the folder it works in (session_create_in); NULL: the host's own */
    int64_t created, updated;
    cJSON *messages;          /* array of {info, parts}, oldest first, owned */
    cJSON *denied;            /* object {tool: false} from prompt bodies, owned */
    char *model_input;        /* history the model saw last turn, after transforms */
    int busy;                 /* a turn is running (the status map shows it) */
    int deleted;              /* deleted while busy: its turn runs on, hidden (as OpenCode) */
    struct sim_run *run;      /* the layer above's, released through sim_storage.release */
    sim_session *hnext;       /* hash chain */
    sim_session *prev, *next; /* creation order */
};

typedef struct sim_storage {
    sim_core *core;
    uint64_t id_last; /* ids */
    uint64_t id_rng;
    sim_session **buckets; /* hash by id */
    size_t nbuckets, nsessions;
    size_t ndeleted;           /* deleted sessions whose turn still ran then (kept until the end) */
    sim_session *first, *last; /* creation order */
    /* Set by the layer above: called (mu held) before a session is freed, to
     * release s->run. May be NULL. */
    void (*release)(void *ctx, sim_session *s);
    void *release_ctx;
    sim_dir *dirs;                   /* folders of session_create_in, newest first */
    const sim_session *cascade_root; /* a delete in progress: its events go where the root's do */
    int journal_fd;                  /* the journal (O_APPEND), -1: none */
    int journal_warned;              /* a failed write was reported */
} sim_storage;

/* ---- storage_ids.c -------------------------------------------------------- */

/* Seed st's id source (at sim_storage_init). */
void sim_storage_ids_init(sim_storage *st);
/* A new id "<prefix>_<12 hex, increasing><10 base62 random>", malloc'd. */
char *sim_new_id_locked(sim_storage *st, const char *prefix);

/* Make every id made from now on sort after `id` ("<prefix>_<12 hex>…"; any
 * other string is ignored): a replayed id is never made again. */
void sim_storage_ids_seen_locked(sim_storage *st, const char *id);

/* ---- storage_dirs.c ------------------------------------------------------- */

/* A folder sessions work in (not the host's own). OpenCode keeps an instance
 * per folder, with its own event stream and status map: the plugin sees them
 * only while it follows the folder (directory_watch 1); after watch 0 the
 * instance is disposed, and a request about one of its sessions would make a
 * new one at a path that may be gone: the sim counts such touches. */
struct sim_dir {
    char *path;
    int watched;     /* watch 1, and no watch 0 since */
    int released;    /* watch 0 came, and no watch 1 since */
    size_t touches;  /* host calls about its sessions while released */
    cJSON *sessions; /* ids of every session created in it (strings), owned */
    sim_dir *next;
};

/* The folder at path (compared as given), created unwatched when missing. */
sim_dir *sim_dir_get_locked(sim_storage *st, const char *path);
/* The folder at path, or NULL when no session was created in it and it was
 * never watched. */
sim_dir *sim_dir_find_locked(const sim_storage *st, const char *path);
/* watch 1: follow it (released no more); 0: stop, and it is released. */
void sim_dir_watch_locked(sim_storage *st, const char *path, int watch);
/* Does the plugin see what happens in path (NULL, the host's own: always)? */
int sim_dir_visible_locked(const sim_storage *st, const char *path);
/* The folder session id was created in (also after it was freed), or NULL
 * (the host's own, or no such session). */
sim_dir *sim_dir_of_session_locked(const sim_storage *st, const char *id);
/* Free every folder. */
void sim_dirs_free_locked(sim_storage *st);

/* ---- storage_journal.c ---------------------------------------------------- */

/* The journal: with st->journal_fd >= 0, every change of a session or a
 * message is appended as one JSON line, in one write(2) (no buffering, so a
 * SIGKILL after the host function returns loses nothing):
 *   {"t":"session","id","parentID"?,"title","directory"?,"time":{"created","updated"}}
 *   {"t":"deleted","id"}
 *   {"t":"message","sessionID","message":{info, parts}}  (the last one of an
 *       id wins: a message in progress is written at each change)
 * Each does nothing when no journal is open. A failed write is reported on
 * stderr once and otherwise ignored (the sim is test machinery). */
int sim_journal_on_locked(const sim_storage *st);
void sim_journal_session_locked(sim_storage *st, const sim_session *s);
void sim_journal_deleted_locked(sim_storage *st, const sim_session *s);
void sim_journal_message_locked(sim_storage *st, const sim_session *s, const cJSON *msg);

/* ---- storage_messages.c --------------------------------------------------- */

/* Append a message {info, parts} (owned by the session afterwards). */
void sim_session_append_locked(sim_storage *st, sim_session *s, cJSON *msg);
/* The messages JSON (newest `limit` when limit > 0), owned by the caller. */
cJSON *sim_session_messages_locked(const sim_session *s, int limit);
/* A user message built from a prompt body (parts copied, agent). */
cJSON *sim_user_message_locked(sim_storage *st, sim_session *s, const cJSON *body);
/* A new message of s: {info:{id, sessionID, role, time:{created}}, parts:[]}. */
cJSON *sim_message_new_locked(sim_storage *st, const sim_session *s, const char *role);
/* A new part appended to msg's parts: {id, sessionID, messageID, type};
 * returned (owned by msg). */
cJSON *sim_part_new_locked(sim_storage *st, cJSON *msg, const char *type);
/* Give a copied message (and its parts) new ids in session s. */
void sim_message_rebase_locked(sim_storage *st, sim_session *s, cJSON *msg);
/* A prompt body's (or a message's) text: its text parts joined by "\n",
 * malloc'd. Needs no lock. */
char *sim_prompt_text(const cJSON *body);

/* ---- storage_sessions.c --------------------------------------------------- */

/* An empty store over core. */
void sim_storage_init(sim_storage *st, sim_core *core);
/* Free every session (each released first) and the table. */
void sim_storage_free_locked(sim_storage *st);
/* Find a session by id, also one deleted while busy (NULL when none). */
sim_session *sim_find_locked(sim_storage *st, const char *id);
/* The same, but not a deleted one: what the host's API can see. */
sim_session *sim_find_live_locked(sim_storage *st, const char *id);
/* Create a session (parent must exist when given; else NULL). Emits
 * session.created. */
sim_session *sim_session_create_locked(sim_storage *st, const char *parent_id, const char *title);
/* The same, the session working in `directory` (NULL: the host's own; else
 * copied and its folder noted, sim_dir_get_locked): its events, from
 * session.created on, reach the plugins only while that folder is watched. */
sim_session *sim_session_create_in_locked(sim_storage *st, const char *parent_id, const char *title,
                                          const char *directory);
/* The session as OpenCode's Session JSON, owned by the caller. */
cJSON *sim_session_info_locked(const sim_session *s);
/* Delete a session and its descendants (children first), emitting
 * session.deleted for each, each routed as s's own events are (OpenCode
 * publishes the cascade in the instance of the session deleted). A busy one
 * stays (deleted, hidden) until the end. */
void sim_session_delete_locked(sim_storage *st, sim_session *s);
/* Fork: a new session holding copies of the messages before message_id (all
 * when NULL or not found). Emits session.created. */
sim_session *sim_session_fork_locked(sim_storage *st, sim_session *s, const char *message_id);
/* A session as a journal line had it (id, parent, title, directory (may be
 * NULL), times given), with no messages, idle; no event, not journaled. NULL
 * when the id is taken. */
sim_session *sim_session_restore_locked(sim_storage *st, const char *id, const char *parent_id, const char *title,
                                        const char *directory, int64_t created, int64_t updated);
/* Free a session at once (its turn released first), with no event and no
 * journal line: a replayed deletion. */
void sim_session_forget_locked(sim_storage *st, sim_session *s);

/* ---- storage_replay.c ----------------------------------------------------- */

/* Open the journal at path (created when missing) and replay its lines: the
 * sessions it holds come back idle, with their messages as last written,
 * the deleted ones gone; ids made later sort after every replayed id. A last
 * line cut short (no newline: a kill inside a write) is ignored and cut off
 * the file; a whole line that is not JSON is skipped. Then the sessions that
 * existed before this call are written to it, and every change from now on.
 * No event is emitted. Returns 0, or a negative errno: -EBUSY (a journal is
 * already open), or open/read/ftruncate's (no journal is open then). */
int sim_storage_journal_open_locked(sim_storage *st, const char *path);

#endif

/*
 * shell_state.h — what a shell task holds beyond the common task fields: its
 * command, its process, how it exited, and the output kept of it (the first
 * and the last bytes, in fixed buffers, whatever the command prints).
 * Pure data: no threads, no host calls. The engine lock guards it like the
 * rest of the task.
 */
#ifndef OCBG_SHELL_STATE_H
#define OCBG_SHELL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The output kept of one command: the first head_cap bytes and the last
 * tail_cap bytes; what falls between is counted, not kept. */
typedef struct shell_output {
    char *head; /* head_size bytes allocated, grown as output comes (NULL: none yet) */
    size_t head_len, head_cap, head_size;
    char *tail; /* ring of tail_cap bytes, allocated when the head is full (NULL: not yet) */
    size_t tail_len, tail_pos, tail_cap;
    uint64_t total;   /* every byte the command wrote */
    bool stored_only; /* its text lives only in the task store (engine/persist.h): no buffers
                       * now, read back before it is shown (an empty output is not this) */
} shell_output;

/* What a shell task holds beyond the common task fields. */
typedef struct shell_state {
    char *command;
    char *directory;
    pid_t pid;         /* also the process group id */
    int64_t pid_start; /* its start time (base/proc_id.h): tells it from a later process with its pid */
    bool exited;
    int exit_code;        /* when it exited normally */
    int term_signal;      /* when a signal ended it (0: none) */
    bool lost;            /* its host stopped before it ended (a restart found it) */
    bool stop_requested;  /* TaskStop: the ending is "stopped", not a failure */
    int64_t kill_at_mono; /* when SIGKILL follows a SIGTERM (0: not scheduled) */
    shell_output out;
    struct shell_monitor *monitor; /* a watch on its output (model/monitor.h), or NULL */
} shell_state;

/* A new state for `command` run in `directory` (may be NULL), keeping at
 * most output_cap bytes of output (half head, half tail). Nothing of the
 * output is allocated yet: a queued command, or a quiet one, costs only
 * what it printed. */
shell_state *shell_state_new(const char *command, const char *directory, size_t output_cap);

/* Keep n more bytes of output: they fill the head, then the tail ring. */
void shell_output_append(shell_output *o, const char *data, size_t n);

/* Once the command has ended and all its output is in o (nothing is
 * appended after): give back what the buffers do not hold. The head is cut
 * to head_len bytes, the tail ring laid out in order in tail_len bytes
 * (tail_cap = tail_len, tail_pos = 0), total kept: shell_output_text gives
 * the same text before and after. Aborts only when out of memory (as
 * xmalloc). [lock held]
 * (not asserted: o does not know the lock that guards it) */
void shell_output_shrink(shell_output *o);

/* Free o's buffers: its text is in the task store only from now
 * (stored_only). [lock held]
 * (not asserted: o does not know its lock) */
void shell_output_drop(shell_output *o);

/* Make `text` (malloc'd, NUL-terminated; o takes it) all of o's output:
 * the head, exactly its size, no tail, nothing left out (a text from
 * shell_output_text already says what was). Whatever o held is freed;
 * stored_only is cleared. [lock held]
 * (not asserted: o does not know its lock) */
void shell_output_set_text(shell_output *o, char *text);

/* The output as text: all of it, or when more than max_chars characters (or
 * when the middle was dropped), the tail with a note of what was left out.
 * malloc'd. Of an output that is stored_only: the empty text (the caller
 * reads it back first: engine/persist.h persist_texts). */
char *shell_output_text(const shell_state *s, size_t max_chars);

/* "exit code 0", "killed by signal 15 (Terminated)", "running". */
void shell_describe_exit(const shell_state *s, char *buf, size_t size);

void shell_state_free(shell_state *s);

#endif

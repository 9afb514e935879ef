/*
 * options.h — the plugin's options, from the host's plugin options JSON
 * (OpenCode: the object after the plugin's path in opencode.json).
 * Every key is optional; out-of-range values are refused, and unknown keys
 * are listed (o->unknown) for the user to be told, so that a typo never
 * silently means "default".
 */
#ifndef OCBG_OPTIONS_H
#define OCBG_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum wake_policy {
    WAKE_LAST,   /* wake the parent for a failure or the last running task */
    WAKE_ALWAYS, /* wake the parent for every notification */
} wake_policy;

#define AGENT_CAPS_MAX 16
#define AGENT_NAME_MAX 64

/* A cap on the running tasks of one agent (max_running_per_agent). */
typedef struct agent_cap {
    char agent[AGENT_NAME_MAX];
    int max;
} agent_cap;

typedef struct options {
    int poll_interval_ms; /* fallback poll tick while tasks are active */
    int notify_max_chars; /* result text cap in a notification */
    int notify_retries;   /* further attempts after a failed push */
    int notify_retry_ms;  /* first retry delay; doubles each attempt */
    wake_policy wake;
    bool refuse_collisions;  /* on_collision "refuse": an edit of a file another active writer of the
                              * same session edited fails (engine/collide.h); false, "warn": it is warned */
    int isolation;           /* a launch's default isolation: 0 "none", 1 "worktree", 2 "worktree_with_changes"
                              * (the order of worktree/worktree.h's enum isolation) */
    int fork_tool_chars;     /* fork: tool results longer than this are cut */
    int fork_max_tokens;     /* fork: oldest messages dropped above this estimate */
    int shell_output_cap;    /* bytes of a command's output kept (head and tail halves) */
    int shell_kill_grace_ms; /* SIGTERM to SIGKILL when a command is stopped */
    int max_running_agents;  /* agent tasks running at once, all sessions together */
    int max_running_shells;  /* background commands running at once */
    int max_queued;          /* pending tasks (agents and commands) before a launch is refused */
    int max_depth;           /* how deep tasks nest: 1 = a task may not launch tasks of its own */
#define OPTIONS_MAX_DEPTH 10 /* max_depth's highest value */
    agent_cap agent_caps[AGENT_CAPS_MAX]; /* per-agent caps, agent_cap_count used */
    int agent_cap_count;
    bool face_opencode; /* register background_* */
    bool face_claude;   /* register Task, Bash, TaskOutput, TaskStop and /tasks */
    /* Bounds on a task's work (engine/guards.c); each is always on. */
    int max_task_tokens;         /* a task's input + output + reasoning tokens */
    double max_task_cost_usd;    /* a task's cost */
    double max_session_cost_usd; /* the cost of all the tasks a session launched */
    int max_tool_calls;          /* a task's tool calls */
    int max_repeat_calls;        /* the same call (tool and input) this many times in a row at most */
    int stale_ms;                /* a busy agent with no progress this long is stopped */
    int max_runtime_ms;          /* a run's longest runtime (a launch's timeout may be shorter) */
    int auto_background_ms;      /* a foreground Task or Bash running longer goes to the background; 0: never */
    /* The durable task store (plugin/store/). */
    bool store; /* false: tasks are kept in memory only */
#define OPTIONS_PATH_MAX 1024
    char store_path[OPTIONS_PATH_MAX]; /* the database file; "": ocbg.db in the host's data_dir */
    /* Keys this version does not know (a config written for a newer ocbg),
     * "'a', 'b'", cut to fit; "" when none. They are ignored, and the plugin
     * warns (log and a toast to the person): refusing the load would silently
     * take every tool away. */
    char unknown[256];
} options;

/* The defaults. */
void options_default(options *o);

/* The cap of agent `agent` (max_running_per_agent), or 0 when it has none. */
int options_agent_cap(const options *o, const char *agent);

/* Parse `json` (NULL or "" = defaults) into *o. Returns 0, or -EINVAL with a
 * readable reason in err (o is then left at the defaults): a known key with
 * a bad value, or text that is not an object. Unknown keys are no error:
 * they are listed in o->unknown. [any thread] */
int options_parse(options *o, const char *json, char *err, size_t err_size);

#endif

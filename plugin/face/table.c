/* table.c — the OpenCode face's tools as data: names, descriptions for
 * the model, arguments. The JSON Schemas and the argument checks come from here. */
#include "face/tools.h"

#define N(a) (sizeof a / sizeof a[0])

/* What the model reads about `isolation` (both faces). */
#define ISOLATION_ARG_HELP                                                                                             \
    "\"worktree\": the sub-agent works in its own git worktree on a new branch ocbg/<task id>, made from this "        \
    "checkout's last commit (uncommitted changes stay out), so parallel tasks cannot overwrite each other's "          \
    "files; its result names the branch and what it changed (review and merge it yourself). "                          \
    "\"worktree_with_changes\": the same, plus this checkout's uncommitted changes to tracked files. "                 \
    "\"none\": it works in this checkout. Default: the plugin's isolation option (none unless configured)"

static const char *const list_statuses[] = {"pending", "running", "completed", "error", "cancelled", "resumed", NULL};

static const arg_spec task_args[] = {
    {"description", ARG_STRING, ARG_OPTIONAL,
     "A short (3-5 words) description of the task; default: the prompt's first words. Ignored when resuming", NULL},
    {"prompt", ARG_STRING, ARG_REQUIRED_BY_HANDLER,
     "The full task for the sub-agent, or with resume: the follow-up message", NULL},
    {"agent", ARG_STRING, ARG_OPTIONAL,
     "The agent to run it (e.g. general, explore); default: general. Ignored when resuming", NULL},
    {"resume", ARG_STRING, ARG_OPTIONAL,
     "A completed task's id (bg_...): send prompt to that sub-agent as a follow-up, with its full history", NULL},
    {"fork", ARG_BOOLEAN, ARG_OPTIONAL,
     "Give the sub-agent a copy of this conversation's context (long tool results cut, oldest messages "
     "dropped if it is too long); default false. Not with resume",
     NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL,
     "Stop the task (status error) if it runs longer than this many seconds; default and maximum: the plugin's "
     "runtime limit (4 hours unless configured). Not with resume: a resumed task keeps its own",
     NULL},
    {"isolation", ARG_STRING, ARG_OPTIONAL, ISOLATION_ARG_HELP, isolation_names},
};
static const arg_spec output_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The task id (bg_...)", NULL},
    {"block", ARG_BOOLEAN, ARG_OPTIONAL, "Wait for the task to finish (default false)", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "With block: how long to wait, in seconds (default 120, at most 600)", NULL},
};
static const arg_spec cancel_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED,
     "The task id (bg_...), or a batch id (batch_...) to cancel all its running tasks", NULL},
};
static const arg_spec list_args[] = {
    {"status", ARG_STRING, ARG_OPTIONAL, "Only tasks with this status", list_statuses},
    {"batch_id", ARG_STRING, ARG_OPTIONAL, "Only tasks of this batch (batch_...)", NULL},
};
static const arg_spec resume_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The completed task to resume (bg_...)", NULL},
    {"message", ARG_STRING, ARG_REQUIRED_BY_HANDLER, "The follow-up message for the sub-agent", NULL},
    {"block", ARG_BOOLEAN, ARG_OPTIONAL, "Wait for the response and return it (no notification then); default false",
     NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "With block: how long to wait, in seconds (default 120, at most 600)", NULL},
};
static const arg_spec send_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The running task to send the message to (bg_...)", NULL},
    {"message", ARG_STRING, ARG_REQUIRED_BY_HANDLER,
     "More context or a correction for the sub-agent; it reads it when its current step ends", NULL},
};
static const arg_spec block_args[] = {
    {"task_ids", ARG_STRING_ARRAY, ARG_REQUIRED, "The task ids (bg_...) or batch ids (batch_...) to wait for", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "How long to wait at most, in seconds (default 120, at most 600)", NULL},
};

/* Both faces' monitor tool (face/monitor.c). */
static const arg_spec monitor_args[] = {
    {"command", ARG_STRING, ARG_REQUIRED_BY_HANDLER,
     "A command to watch (/bin/sh -c, asked for as a background Bash is), e.g. `tail -f app.log`; not with "
     "task_id",
     NULL},
    {"description", ARG_STRING, ARG_OPTIONAL, "What it watches for, in a few words (names its events)", NULL},
    {"task_id", ARG_STRING, ARG_OPTIONAL,
     "Instead of command (give no command then): a running background command of this session (bg_...) to follow "
     "from now on",
     NULL},
    {"pattern", ARG_STRING, ARG_OPTIONAL,
     "A POSIX extended regular expression: only the lines it matches are events (default: every line)", NULL},
    {"timeout_ms", ARG_NUMBER, ARG_OPTIONAL,
     "Milliseconds until the monitor expires (its command is stopped): default 300000, 1000 to 1800000", NULL},
};
#define MONITOR_HELP                                                                                                   \
    "Watch a command's output: each line it prints (or that pattern matches) comes to you as an event that wakes "     \
    "you, lines close together joined into one event, until the command exits or timeout_ms passes. For waiting "      \
    "on a log line, a test failure or a server's ready message without polling or sleeping. Give command (a new "      \
    "watcher, e.g. `tail -f app.log`) or task_id, a running background command of this session."

const tool_spec background_tools[] = {
    {"background_task",
     "Launch a sub-agent in the background: it works on the prompt in its own session while you go on. "
     "Returns a task id at once; you are notified in this conversation when it finishes, so do not poll. "
     "With resume=<task id>, sends prompt as a follow-up to that completed task instead.",
     task_args, N(task_args), tool_background_task},
    {"background_output",
     "Get a background task's result, or its status and progress while it runs. Non-blocking unless "
     "block=true, which waits up to timeout seconds (default 120, at most 600).",
     output_args, N(output_args), tool_background_output},
    {"background_cancel", "Cancel a running background task (aborts its session), or every running task of a batch.",
     cancel_args, N(cancel_args), tool_background_cancel},
    {"background_list", "List this session's background tasks, newest first, with status and duration.", list_args,
     N(list_args), tool_background_list},
    {"background_clear", "Remove all of this session's background tasks, aborting those still running.", NULL, 0,
     tool_background_clear},
    {"background_resume",
     "Send a follow-up message to a completed background task's sub-agent (it keeps its history). "
     "block=false (default): returns at once and you are notified of the response; block=true: waits and "
     "returns only the new response.",
     resume_args, N(resume_args), tool_background_resume},
    {"background_block",
     "Wait until the given background tasks have all finished (or the timeout), then summarise their status. "
     "For when the work truly cannot go on without them; otherwise rely on the notifications.",
     block_args, N(block_args), tool_background_block},
    {"background_send",
     "Send a message to a running background task's sub-agent: more context, a correction, a narrower goal. "
     "It returns at once; the sub-agent reads it when its current step ends and goes on. The task still "
     "notifies you once, when it finishes. For a completed task use background_resume.",
     send_args, N(send_args), tool_background_send},
    {"background_monitor", MONITOR_HELP " Stop it with background_cancel.", monitor_args, N(monitor_args),
     tool_background_monitor},
};
const size_t background_tool_count = N(background_tools);

static const arg_spec claude_task_args[] = {
    {"description", ARG_STRING, ARG_REQUIRED, "A short (3-5 words) description of the task", NULL},
    {"prompt", ARG_STRING, ARG_REQUIRED, "The task for the sub-agent to perform", NULL},
    {"subagent_type", ARG_STRING, ARG_REQUIRED, "The type of agent to use (e.g. general, explore)", NULL},
    {"run_in_background", ARG_BOOLEAN, ARG_OPTIONAL,
     "Run it in the background and return a task id at once (default false: wait for its reply)", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL,
     "Milliseconds after which the sub-agent is stopped (status failed); default and maximum: the plugin's "
     "runtime limit (4 hours unless configured)",
     NULL},
    {"isolation", ARG_STRING, ARG_OPTIONAL, ISOLATION_ARG_HELP, isolation_names},
};
static const arg_spec claude_bash_args[] = {
    {"command", ARG_STRING, ARG_REQUIRED, "The shell command to run (/bin/sh -c)", NULL},
    {"description", ARG_STRING, ARG_OPTIONAL, "What the command does, in 5-10 words", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL,
     "Milliseconds before it is stopped. Foreground: default 120000, at most 600000. Background: no default "
     "(the plugin's runtime limit, 4 hours unless configured, applies), at most that limit",
     NULL},
    {"run_in_background", ARG_BOOLEAN, ARG_OPTIONAL,
     "Run it in the background and return a task id at once (default false)", NULL},
};
static const arg_spec claude_output_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The task id (bg_...) of a shell or agent task", NULL},
    {"block", ARG_BOOLEAN, ARG_OPTIONAL, "Wait for the task to finish (default true)", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "Milliseconds to wait at most (default 30000, at most 600000)", NULL},
};
static const arg_spec claude_stop_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The task id (bg_...) to stop", NULL},
};

const tool_spec claude_tools[] = {
    {"Task",
     "Launch a sub-agent for a multi-step task. In the foreground it returns the sub-agent's reply; with "
     "run_in_background=true it returns a task id at once and you are notified when it finishes.",
     claude_task_args, N(claude_task_args), tool_claude_task},
    {"Bash",
     "Run a shell command. In the foreground it returns the output and exit code (stopped at the timeout); "
     "with run_in_background=true it returns a task id at once and you are notified when it exits.",
     claude_bash_args, N(claude_bash_args), tool_claude_bash},
    {"TaskOutput",
     "Get the output of a background task (shell or agent). Waits for it to finish by default (block=true, "
     "timeout in ms); block=false returns what there is now.",
     claude_output_args, N(claude_output_args), tool_claude_task_output},
    {"TaskStop", "Stop a running background task: a shell command's whole process group, or a sub-agent's session.",
     claude_stop_args, N(claude_stop_args), tool_claude_task_stop},
    {"Monitor", MONITOR_HELP " Stop it with TaskStop.", monitor_args, N(monitor_args), tool_claude_monitor},
};
const size_t claude_tool_count = N(claude_tools);

/* tools_table.c — the OpenCode face's tools as data: names, descriptions for
 * the model, arguments. The JSON Schemas and the argument checks come from here. */
#include "tools.h"

#define N(a) (sizeof a / sizeof a[0])

static const char *const list_statuses[] = {"pending", "running", "completed", "error", "cancelled", "resumed",
                                            NULL};

static const arg_spec task_args[] = {
    {"description", ARG_STRING, ARG_OPTIONAL,
     "A short (3-5 words) description of the task. Required when launching; ignored when resuming", NULL},
    {"prompt", ARG_STRING, ARG_REQUIRED_BY_HANDLER,
     "The full task for the sub-agent, or with resume: the follow-up message", NULL},
    {"agent", ARG_STRING, ARG_OPTIONAL,
     "The agent to run it (e.g. general, explore). Required when launching; ignored when resuming", NULL},
    {"resume", ARG_STRING, ARG_OPTIONAL,
     "A completed task's id (bg_...): send prompt to that sub-agent as a follow-up, with its full history",
     NULL},
    {"fork", ARG_BOOLEAN, ARG_OPTIONAL,
     "Give the sub-agent a copy of this conversation's context (long tool results cut, oldest messages "
     "dropped if it is too long); default false. Not with resume",
     NULL},
};
static const arg_spec output_args[] = {
    {"task_id", ARG_STRING, ARG_REQUIRED, "The task id (bg_...)", NULL},
    {"block", ARG_BOOLEAN, ARG_OPTIONAL, "Wait for the task to finish (default false)", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "With block: how long to wait, in seconds (default 120, at most 600)",
     NULL},
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
    {"block", ARG_BOOLEAN, ARG_OPTIONAL,
     "Wait for the response and return it (no notification then); default false", NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "With block: how long to wait, in seconds (default 120, at most 600)",
     NULL},
};
static const arg_spec block_args[] = {
    {"task_ids", ARG_STRING_ARRAY, ARG_REQUIRED, "The task ids (bg_...) or batch ids (batch_...) to wait for",
     NULL},
    {"timeout", ARG_NUMBER, ARG_OPTIONAL, "How long to wait at most, in seconds (default 120, at most 600)",
     NULL},
};

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
    {"background_cancel",
     "Cancel a running background task (aborts its session), or every running task of a batch.", cancel_args,
     N(cancel_args), tool_background_cancel},
    {"background_list", "List this session's background tasks, newest first, with status and duration.",
     list_args, N(list_args), tool_background_list},
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
};
const size_t background_tool_count = N(background_tools);

/*
 * wait_result.h — how a wait on the engine ended (engine_wait), a word both
 * the engine and the operations' answers to the faces (ops/ops.h) use.
 */
#ifndef OCBG_WAIT_RESULT_H
#define OCBG_WAIT_RESULT_H

typedef enum wait_result {
    WAIT_DONE,
    WAIT_TIMEOUT,
    WAIT_CANCELLED,
    WAIT_SHUTDOWN
} wait_result;

#endif

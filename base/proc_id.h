/*
 * proc_id.h — a process told apart from a later one that reuses its pid: its
 * pid with its start time (clock ticks since boot, /proc/<pid>/stat field 22)
 * and the boot it belongs to. Used to kill a command left by a host that
 * died only if it is provably the same process, and to tell whether the
 * owner of stored tasks still runs. Linux /proc; [any thread].
 */
#ifndef OCBG_PROC_ID_H
#define OCBG_PROC_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The start time of process pid, or 0 when it is gone or unreadable. */
int64_t proc_start_time(int64_t pid);

/* Is pid still the process that started at `start` on this boot? False when
 * it is gone, a zombie, or the pid was reused. */
bool proc_alive(int64_t pid, int64_t start);

/* This boot's id (/proc/sys/kernel/random/boot_id), or "" when unreadable:
 * a pid from another boot is never this boot's process. */
void proc_boot_id(char *out, size_t size);

#endif

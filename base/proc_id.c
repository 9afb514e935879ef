/* proc_id.c — see proc_id.h. */
#include "base/proc_id.h"

#include <stdio.h>
#include <string.h>

/* Field 22 of /proc/<pid>/stat, and the state (field 3). The command name
 * (field 2) may hold spaces and parentheses: parse after its last ')'. */
static int64_t read_stat(int64_t pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    long long start = 0;
    char st = 0;
    /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice threads
     * itrealvalue starttime */
    if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %lld", &st,
               &start) != 2)
        return 0;
    if (state)
        *state = st;
    return start;
}

int64_t proc_start_time(int64_t pid)
{
    return pid > 0 ? read_stat(pid, NULL) : 0;
}

bool proc_alive(int64_t pid, int64_t start)
{
    char st = 0;
    return pid > 0 && start > 0 && read_stat(pid, &st) == start && st != 'Z' && st != 'X';
}

void proc_boot_id(char *out, size_t size)
{
    if (size == 0)
        return;
    out[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (fgets(out, (int)size, f))
        out[strcspn(out, "\n")] = '\0';
    fclose(f);
}

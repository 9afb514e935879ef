/* monitor_task.c — see monitor_task.h. */
#include "model/monitor_task.h"

#include <string.h>

bool task_is_monitor(const task *t)
{
    return t->type == TASK_SHELL && t->agent && strcmp(t->agent, MONITOR_AGENT) == 0;
}

shell_monitor *task_monitor(const task *t)
{
    return t->type == TASK_SHELL && t->shell ? t->shell->monitor : NULL;
}

bool monitor_note_end(task *t, task_status s, bool guarded, int64_t now, bool *look)
{
    *look = false;
    shell_monitor *m = task_monitor(t);
    if (!m)
        return false;
    bool tells = !m->follows && !t->stopped_by_user && !guarded;
    if (m->end != MONITOR_LIVE)
        return tells;
    if (s == TASK_CANCELLED || guarded) {
        m->end = MONITOR_SILENCED; /* the model, the person or a guard stopped it: no more words */
        m->listed = false;
        if (m->follows) {
            t->shell->monitor = NULL;
            shell_monitor_free(m);
        }
        return tells;
    }
    watch_end(&m->w, now);
    *look = true;
    return tells;
}

/* test_simhost_faults.c — the simulated host's faults: host calls failed
 * or slowed on request, the call record, the clock, and events dropped,
 * duplicated and delayed (reproducibly per seed), seen through the recorder
 * test plugin (simtest.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simtest.h"

static void test_call_faults(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    const char *s = t_session(&f, "f");
    sim_fail(h, "session_get", 2, 2, -EIO);
    char *msg = NULL;
    is_int(simple_call(h, "session_get", s, NULL), 0, "call 1 succeeds");
    is_int(simple_call(h, "session_get", s, &msg), -EIO, "call 2 fails");
    is_str(msg, "simulated failure of session_get", "failure message");
    free(msg);
    is_int(simple_call(h, "session_get", s, NULL), -EIO, "call 3 fails");
    is_int(simple_call(h, "session_get", s, NULL), 0, "call 4 succeeds");
    is_int(simple_call(h, "session_status", NULL, NULL), 0, "other functions unaffected");

    sim_fail(h, "session_prompt", 1, -1, -EIO);
    is_int(prompt_via_plugin(h, s, "a", 0), -EIO, "every prompt fails (1)");
    is_int(prompt_via_plugin(h, s, "b", 0), -EIO, "every prompt fails (2)");
    is_int(sim_session_message_count(h, s), 0, "a failed prompt stores nothing");
    sim_fail(h, NULL, 0, 0, 0);
    is_int(prompt_via_plugin(h, s, "c", 0), 0, "faults cleared");

    sim_fail(h, "session_create", 1, 1, -ENOMEM);
    size_t n = sim_session_count(h);
    cJSON *r = hostcall(h, J("{'fn':'session_create'}"));
    is_int(rc_of(r), -ENOMEM, "create fails with the given errno");
    cJSON_Delete(r);
    is_int(sim_session_count(h), n, "a failed create creates nothing");

    is_int(sim_calls(h, "session_get", s), 4, "failed calls are counted");
    char *all = sim_calls_json(h);
    cJSON *a = cJSON_Parse(all);
    free(all);
    ok(cJSON_IsArray(a) && cJSON_GetArraySize(a) == (int)sim_calls(h, NULL, NULL), "calls_json lists every call");
    const cJSON *c1 = cJSON_GetArrayItem(a, 1);
    is_str(jstr(c1, "fn"), "session_get", "record fn");
    is_str(jstr(c1, "session"), s, "record session");
    is_int(jnum(c1, "rc", 0), -EIO, "record rc");
    ok(jnum(c1, "t_ms", 0) > 1.6e12, "record t_ms is wall clock");
    cJSON_Delete(a);

    /* The clock. */
    int64_t t0 = sim_now_ms(h);
    sim_advance_ms(h, 3600000);
    cJSON *now = hostcall(h, J("{'fn':'now_ms'}"));
    double tn = jnum(now, "now", 0);
    ok(tn >= (double)t0 + 3600000 && tn < (double)t0 + 3600000 + 60000, "now_ms includes the advance");
    cJSON_Delete(now);

    /* sim_slow delays the call. */
    sim_slow(h, "session_status", 50);
    int64_t before = sim_now_ms(h);
    simple_call(h, "session_status", NULL, NULL);
    ok(sim_now_ms(h) - before >= 50, "slow call takes at least 50 ms");
    sim_slow(h, "session_status", 0);

    cJSON *lg = hostcall(h, J("{'fn':'log','message':'hello log'}"));
    cJSON_Delete(lg);
    char *lb = sim_call_body(h, "log", NULL, -1);
    like(lb, "hello log", "log calls are recorded");
    free(lb);
    t_close(&f);
}

static int count_type(sim_host *h, const char *type)
{
    const char *args = J("{'type':'%s'}", type);
    char *out = NULL;
    sim_tool(h, "x", "events", args, &out);
    cJSON *a = cJSON_Parse(out);
    free(out);
    int n = cJSON_GetArraySize(a);
    cJSON_Delete(a);
    return n;
}

static size_t run_drop(uint32_t seed, int n)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    sim_event_faults(h, seed, 0.5, 0.0, 0, "test.ping");
    for (int i = 0; i < n; i++)
        sim_emit(h, J("{'type':'test.ping','properties':{}}"));
    sim_events_flush(h, tap_timeout_ms(5000));
    size_t got = sim_events_delivered(h, "test.ping");
    is_int(count_type(h, "test.ping"), (long long)got, "plugin saw exactly the delivered events");
    t_close(&f);
    return got;
}

/* Prompt s with text through the plugin, wait for its messages to reach
 * count, then let every event queued by then be delivered. */
static void prompt_and_flush(sim_host *h, const char *s, const char *text, int count)
{
    prompt_via_plugin(h, s, text, 0);
    sim_wait_messages(h, s, count, tap_timeout_ms(5000));
    sim_events_flush(h, tap_timeout_ms(5000));
}

static void test_event_faults(void)
{
    t_fixture f;
    rec_open(&f);
    sim_host *h = f.h;
    const char *s = t_session(&f, "ev");
    sim_event_faults(h, 7, 1.0, 0.0, 0, "session.idle");
    prompt_and_flush(h, s, "x", 2);
    is_int(sim_events_delivered(h, "session.idle"), 0, "drop=1 on session.idle drops it");
    is_int(sim_events_delivered(h, "session.status"), 2, "other types unaffected by only_type");
    sim_event_faults(h, 7, 0.0, 1.0, 0, "session.idle");
    prompt_and_flush(h, s, "y", 4);
    is_int(sim_events_delivered(h, "session.idle"), 2, "dup=1 delivers session.idle twice");
    is_int(count_type(h, "session.idle"), 2, "the plugin got both copies");
    sim_event_faults(h, 0, 0, 0, 0, NULL);
    prompt_and_flush(h, s, "z", 6);
    is_int(sim_events_delivered(h, "session.idle"), 3, "faults off again");

    /* Delay reorders but loses nothing. */
    sim_tool(h, "x", "clear", "{}", NULL);
    sim_event_faults(h, 42, 0, 0, 40, "test.seq");
    for (int i = 0; i < 40; i++) {
        const char *ev = J("{'type':'test.seq','properties':{'n':%d}}", i);
        sim_emit(h, ev);
    }
    is_int(sim_events_flush(h, tap_timeout_ms(5000)), 0, "flush waits out the delays");
    char *out = NULL;
    sim_tool(h, "x", "events", J("{'type':'test.seq'}"), &out);
    cJSON *a = cJSON_Parse(out);
    free(out);
    is_int(cJSON_GetArraySize(a), 40, "every delayed event delivered");
    int inversions = 0, prev = -1;
    const cJSON *e;
    cJSON_ArrayForEach (e, a) {
        int n = (int)jnum(e, "properties.n", 0);
        inversions += n < prev;
        prev = n;
    }
    ok(inversions > 0, "random delays reorder events (%d inversions)", inversions);
    cJSON_Delete(a);
    sim_emit(h, "not json at all");
    sim_events_flush(h, tap_timeout_ms(5000));
    is_int(sim_events_delivered(h, ""), 1, "malformed emitted event still delivered");
    t_close(&f);

    size_t d1 = run_drop(1234, 200), d2 = run_drop(1234, 200);
    is_int(d1, d2, "same seed, same drops (%zu)", d1);
    ok(d1 > 50 && d1 < 150, "drop 0.5 drops about half (%zu of 200)", d1);
}

int main(void)
{
    test_call_faults();
    test_event_faults();
    return done_testing();
}

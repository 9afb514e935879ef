/*
 * tap.h — a small TAP producer for the tests (run by `prove`).
 *
 * Every check prints "ok N - name" or "not ok N - name" and, on failure, where
 * it was (file:line) with what it got and what it wanted, like git's
 * t/unit-tests. Checks may be made from several threads at once.
 *
 *   plan(3);                       or  ...checks...; return done_testing();
 *   ok(p != NULL, "created");
 *   is_int(rc, 0, "call succeeds");
 *   is_str(text, "No background tasks found", "empty list");
 *   like(text, "Task not found: ", "unknown id");   (substring)
 *   skip(2, "no fork support");  diag("seed %u", seed);  bail_out("no plugin");
 */
#ifndef OCBG_TAP_H
#define OCBG_TAP_H

#include <stdarg.h>

void tap_plan(int n);
int tap_ok_at(const char *file, int line, int pass, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int tap_is_int_at(const char *file, int line, long long got, long long want, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int tap_is_str_at(const char *file, int line, const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int tap_like_at(const char *file, int line, const char *got, const char *needle, int want_found, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_skip(int n, const char *reason);
_Noreturn void tap_bail_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tap_done_testing(void); /* prints the plan if none was given; returns the exit code */
int tap_failures(void);

/* A timeout for waiting on a condition, scaled by $OCBG_TEST_TIMEOUT_SCALE
 * (valgrind runs everything 20-50x slower). */
int tap_timeout_ms(int base_ms);

#define plan(n) tap_plan(n)
#define ok(pass, ...) tap_ok_at(__FILE__, __LINE__, !!(pass), __VA_ARGS__)
#define is_int(got, want, ...) tap_is_int_at(__FILE__, __LINE__, (long long)(got), (long long)(want), __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str_at(__FILE__, __LINE__, (got), (want), __VA_ARGS__)
#define like(got, needle, ...) tap_like_at(__FILE__, __LINE__, (got), (needle), 1, __VA_ARGS__)
#define unlike(got, needle, ...) tap_like_at(__FILE__, __LINE__, (got), (needle), 0, __VA_ARGS__)
#define diag(...) tap_diag(__VA_ARGS__)
#define skip(n, reason) tap_skip((n), (reason))
#define bail_out(...) tap_bail_out(__VA_ARGS__)
#define done_testing() tap_done_testing()

#endif

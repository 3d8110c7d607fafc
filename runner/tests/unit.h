/* unit.h — a tiny header-only test framework for the runner's C unit tests.
 *
 *   CHECK(cond, "D-27: a status line with letters is PROTO_BAD");
 *   CHECK_INT(got, want, "name %d", i);       integers (int64), both shown on failure
 *   CHECK_STR(got, want, "name");              strings (NULL-safe)
 *   CHECK_CONTAINS(haystack, needle, "name");  substring (NULL-safe)
 *   int main(void) { ...; return unit_done(); }
 *
 * Each check prints "ok N - name" or "not ok N - name (file:line)" plus a
 * "# ..." diagnostic; names take printf arguments and cite requirement ids
 * where one applies. unit_done() prints the last line, exactly
 * "N passed, N failed", and returns the exit status: 0 when nothing failed.
 * scripts/run-unit-tests reads that line. The counters live in one static
 * object per test program (tests only; the runner itself keeps none). */
#ifndef PEPSI_UNIT_H
#define PEPSI_UNIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct unit_counts {
    int passed;
    int failed;
};

static inline struct unit_counts *unit_counts(void)
{
    static struct unit_counts counts;
    return &counts;
}

static inline bool unit_vreport(bool ok, const char *file, int line, const char *fmt,
                                va_list ap) __attribute__((format(printf, 4, 0)));

static inline bool unit_vreport(bool ok, const char *file, int line, const char *fmt,
                                va_list ap)
{
    struct unit_counts *c = unit_counts();
    int n = c->passed + c->failed + 1;
    if (ok)
        c->passed++;
    else
        c->failed++;
    printf("%sok %d - ", ok ? "" : "not ", n);
    vprintf(fmt, ap);
    if (!ok)
        printf(" (%s:%d)", file, line);
    printf("\n");
    fflush(stdout);
    return ok;
}

static inline bool unit_check(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline bool unit_check(bool ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool r = unit_vreport(ok, file, line, fmt, ap);
    va_end(ap);
    return r;
}

static inline bool unit_check_int(int64_t got, int64_t want, const char *file, int line,
                                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static inline bool unit_check_int(int64_t got, int64_t want, const char *file, int line,
                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool r = unit_vreport(got == want, file, line, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   got %" PRId64 ", expected %" PRId64 "\n", got, want);
    return r;
}

static inline bool unit_check_str(const char *got, const char *want, const char *file,
                                  int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static inline bool unit_check_str(const char *got, const char *want, const char *file,
                                  int line, const char *fmt, ...)
{
    bool ok = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
    va_list ap;
    va_start(ap, fmt);
    bool r = unit_vreport(ok, file, line, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   got \"%s\", expected \"%s\"\n", got ? got : "(null)", want ? want : "(null)");
    return r;
}

static inline bool unit_check_contains(const char *hay, const char *needle, const char *file,
                                       int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static inline bool unit_check_contains(const char *hay, const char *needle, const char *file,
                                       int line, const char *fmt, ...)
{
    bool ok = hay && needle && strstr(hay, needle) != NULL;
    va_list ap;
    va_start(ap, fmt);
    bool r = unit_vreport(ok, file, line, fmt, ap);
    va_end(ap);
    if (!r)
        printf("#   \"%s\" does not contain \"%s\"\n", hay ? hay : "(null)",
               needle ? needle : "(null)");
    return r;
}

/* Prints "N passed, N failed"; returns the exit status for main. */
static inline int unit_done(void)
{
    struct unit_counts *c = unit_counts();
    printf("%d passed, %d failed\n", c->passed, c->failed);
    fflush(stdout);
    return c->failed == 0 ? 0 : 1;
}

#define CHECK(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_INT(got, want, ...) \
    unit_check_int((int64_t)(got), (int64_t)(want), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_STR(got, want, ...) unit_check_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_CONTAINS(hay, needle, ...) \
    unit_check_contains((hay), (needle), __FILE__, __LINE__, __VA_ARGS__)

#endif

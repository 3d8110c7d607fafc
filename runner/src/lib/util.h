/* lib/util.h — small helpers shared by the runner and its workers.
 * Owns: nothing kept. Uses: lib/log.h only. */
#ifndef PEPSI_LIB_UTIL_H
#define PEPSI_LIB_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes (sysexits.h), as the worker protocol and the spec use them. */
#define EXIT_USAGE 64     /* EX_USAGE: bad command line */
#define EXIT_IOERR 74     /* EX_IOERR: lost database connection (status) */
#define EXIT_UNAVAILABLE 69 /* EX_UNAVAILABLE: the database cannot be reached (queue) */
#define EXIT_TEMPFAIL 75  /* EX_TEMPFAIL: database overload (status) */
#define EXIT_CONFIG 78    /* EX_CONFIG: configuration or schema refused */

/* Monotonic clock in milliseconds and microseconds. */
uint64_t now_ms(void);
uint64_t now_us(void);

/* Wall clock as an ISO 8601 UTC timestamp with microseconds, e.g.
 * "2026-11-30T04:40:00.123456Z"; buf needs 32 bytes. Returns buf. */
char *wall_timestamp(char *buf, size_t cap);

/* malloc/calloc/realloc/strdup that log and abort on exhaustion: a daemon
 * that cannot allocate a few bytes cannot keep its promises either. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes all len bytes of buf to fd, again after EINTR; 0, or -1 with
 * errno set (0 bytes written counts as an error). */
int util_write_all(int fd, const void *buf, size_t len);

#endif

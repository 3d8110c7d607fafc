/* lib/util.c — see util.h. */
#include "lib/util.h"

#include "lib/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

uint64_t now_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        abort(); /* cannot fail with a valid clock id */
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t now_ms(void)
{
    return now_us() / 1000u;
}

char *wall_timestamp(char *buf, size_t cap)
{
    struct timeval tv;
    struct tm tm;
    char base[24];

    if (gettimeofday(&tv, NULL) != 0 || gmtime_r(&tv.tv_sec, &tm) == NULL ||
        strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        snprintf(buf, cap, "1970-01-01T00:00:00.000000Z");
        return buf;
    }
    snprintf(buf, cap, "%s.%06ldZ", base, (long)tv.tv_usec);
    return buf;
}

static void out_of_memory(size_t n)
{
    log_error("memory", "out of memory allocating %zu bytes", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        out_of_memory(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        out_of_memory(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        out_of_memory(n);
    return q;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (p == NULL)
        out_of_memory(strlen(s) + 1);
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        out_of_memory(0);
    return s;
}

int util_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

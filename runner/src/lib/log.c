/* lib/log.c — see log.h. */
#include "lib/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static enum log_level threshold = PLOG_INFO;
static bool journal;

static const char *const level_names[] = {"ERROR", "WARNING", "NOTICE", "INFO", "DEBUG"};
static const char *const level_keys[] = {"error", "warning", "notice", "info", "debug"};
/* syslog priorities: err, warning, notice, info, debug */
static const int journal_prio[] = {3, 4, 5, 6, 7};

void log_init(enum log_level level, bool verbose)
{
    threshold = verbose ? PLOG_DEBUG : level;
    journal = getenv("JOURNAL_STREAM") != NULL;
}

int log_parse_level(const char *s, enum log_level *out)
{
    for (int i = 0; i <= PLOG_DEBUG; i++) {
        if (strcmp(s, level_keys[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

size_t log_sd_prefix(const char *line, size_t n, enum log_level *level)
{
    /* syslog priorities 0..7: emerg, alert, crit and err are our error. */
    static const enum log_level of_prio[] = {PLOG_ERROR, PLOG_ERROR, PLOG_ERROR,  PLOG_ERROR,
                                             PLOG_WARNING, PLOG_NOTICE, PLOG_INFO, PLOG_DEBUG};
    if (line == NULL || n < 3 || line[0] != '<' || line[1] < '0' || line[1] > '7' || line[2] != '>')
        return 0;
    *level = of_prio[line[1] - '0'];
    return 3;
}

const char *log_duration(long long ms, char *out, size_t cap)
{
    long long a = ms < 0 ? -ms : ms;
    const char *sign = ms < 0 ? "-" : "";
    if (a < 1000)
        snprintf(out, cap, "%s%lld ms", sign, a);
    else if (a % 3600000 == 0)
        snprintf(out, cap, "%s%lld h", sign, a / 3600000);
    else if (a % 60000 == 0)
        snprintf(out, cap, "%s%lld min", sign, a / 60000);
    else if (a % 1000 == 0)
        snprintf(out, cap, "%s%lld s", sign, a / 1000);
    else
        snprintf(out, cap, "%s%lld.%lld s", sign, (a + 50) / 1000, (a + 50) / 100 % 10);
    return out;
}

bool log_enabled(enum log_level level)
{
    return level <= threshold;
}

void log_msg(enum log_level level, const char *component, const char *fmt, ...)
{
    char line[2048];
    int n;
    va_list ap;

    if (!log_enabled(level))
        return;
    if (journal)
        n = snprintf(line, sizeof line, "<%d>%s: ", journal_prio[level], component);
    else
        n = snprintf(line, sizeof line, "%s:  %s: ", level_names[level], component);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write(2) per line, so lines from children sharing stderr do not
     * interleave inside a line. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

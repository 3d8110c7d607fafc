/* lib/log.h — one line per event on stderr, PostgreSQL's message style:
 * "LEVEL:  component: message key=value". With JOURNAL_STREAM set (run by
 * systemd) each line starts with a journald "<N>" priority instead.
 * Owns: the log level and the journald switch. Uses: libc only. */
#ifndef PEPSI_LIB_LOG_H
#define PEPSI_LIB_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
    PLOG_ERROR = 0,   /* something failed and was not recovered */
    PLOG_WARNING,     /* something failed and was recovered, or will be retried */
    PLOG_NOTICE,      /* a state change an operator wants to see */
    PLOG_INFO,        /* start-up, shutdown, configuration */
    PLOG_DEBUG,       /* per-message chatter */
};

/* Sets the threshold; verbose also shows every source at debug level. */
void log_init(enum log_level level, bool verbose);

/* Parses "error", "warning", "notice", "info", "debug"; 0 or -1. */
int log_parse_level(const char *s, enum log_level *out);

/* Whether a message at level would be printed. */
bool log_enabled(enum log_level level);

/* A leading sd-daemon "<N>" priority (N 0..7) of a line of n bytes: sets
 * *level (0..3 error, 4 warning, 5 notice, 6 info, 7 debug) and returns
 * the prefix's length (3); 0 when the line has none (level untouched). */
size_t log_sd_prefix(const char *line, size_t n, enum log_level *level);

/* A duration for a log line, exact and short (issue 15): "250 ms",
 * "1.5 s", "45 s", "5 min", "2 h"; a whole unit when there is one, else
 * seconds with one decimal ("300 s" only when not a whole number of
 * minutes). Writes to out (cap bytes) and returns it. */
const char *log_duration(long long ms, char *out, size_t cap);

/* log_duration into a buffer that lives until the end of the enclosing
 * block: log_info(c, "every %s", LOG_DURATION(ms)). */
#define LOG_DURATION(ms) log_duration((long long)(ms), (char[32]){0}, 32)

/* Logs one line: level, component (a stage name or "dispatch", "db", ...),
 * then the formatted message. Never fails; a short write is ignored. */
void log_msg(enum log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(comp, ...)   log_msg(PLOG_ERROR, comp, __VA_ARGS__)
#define log_warning(comp, ...) log_msg(PLOG_WARNING, comp, __VA_ARGS__)
#define log_notice(comp, ...)  log_msg(PLOG_NOTICE, comp, __VA_ARGS__)
#define log_info(comp, ...)    log_msg(PLOG_INFO, comp, __VA_ARGS__)
#define log_debug(comp, ...)   log_msg(PLOG_DEBUG, comp, __VA_ARGS__)

#endif

/* lib/pgerr.c — see pgerr.h. */
#include "lib/pgerr.h"

#include "lib/log.h"

#include <stdio.h>
#include <string.h>

const char *pgerr_sqlstate(const PGresult *res)
{
    const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return s ? s : "";
}

#define FOLD_RING 4
#define FOLD_CAP 1024

static char *fold_slot(void)
{
    static char ring[FOLD_RING][FOLD_CAP];
    static unsigned next;
    return ring[next++ % FOLD_RING];
}

const char *pgerr_message(PGconn *conn, const PGresult *res)
{
    const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!(m && *m))
        m = conn ? PQerrorMessage(conn) : NULL;
    if (!(m && *m))
        return "unknown error";
    return strpbrk(m, "\n\r\t") ? pgerr_fold(m, fold_slot(), FOLD_CAP) : m;
}

const char *pgerr_conn_message(PGconn *conn)
{
    return conn ? pgerr_fold(PQerrorMessage(conn), fold_slot(), FOLD_CAP) : "no connection";
}

/* The length of a leading "SEVERITY:  " of libpq's message, or 0. */
static size_t severity_prefix(const char *m)
{
    static const char *const sev[] = {"ERROR:", "FATAL:", "PANIC:", "WARNING:", "NOTICE:", "INFO:", "LOG:", "DEBUG:"};
    for (size_t i = 0; i < sizeof sev / sizeof *sev; i++) {
        size_t n = strlen(sev[i]);
        if (strncmp(m, sev[i], n) == 0) {
            while (m[n] == ' ')
                n++;
            return n;
        }
    }
    return 0;
}

char *pgerr_fold(const char *msg, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = msg ? msg + severity_prefix(msg) : "";
    bool pending_sep = false;
    for (; *p && o + 1 < cap; p++) {
        if (*p == '\n') {
            pending_sep = o > 0;
            continue;
        }
        if (pending_sep) {
            /* "; " between lines, never after the last one. */
            for (const char *s = "; "; *s && o + 1 < cap; s++)
                out[o++] = *s;
            pending_sep = false;
            if (o + 1 >= cap)
                break;
        }
        out[o++] = (*p == '\t' || *p == '\r') ? ' ' : *p;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
    return out;
}

void pgerr_notice_receiver(void *arg, const PGresult *res)
{
    const char *component = arg ? arg : "db";
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    enum log_level level = PLOG_WARNING;
    if (sev && strcmp(sev, "NOTICE") == 0)
        level = PLOG_NOTICE;
    else if (sev && strcmp(sev, "INFO") == 0)
        level = PLOG_INFO;
    else if (sev && (strcmp(sev, "DEBUG") == 0 || strcmp(sev, "LOG") == 0))
        level = PLOG_DEBUG;
    if (!log_enabled(level))
        return;
    char line[FOLD_CAP];
    const char *code = pgerr_sqlstate(res);
    log_msg(level, component, "server %s: %s%s%s", sev ? sev : "message",
            pgerr_fold(PQresultErrorMessage(res), line, sizeof line), *code ? " sqlstate=" : "", code);
}

enum pgerr_kind pgerr_classify(PGconn *conn, const PGresult *res)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (res && st != PGRES_FATAL_ERROR && st != PGRES_BAD_RESPONSE && st != PGRES_NONFATAL_ERROR)
        return PGERR_NONE;
    const char *code = pgerr_sqlstate(res);
    if (strncmp(code, "08", 2) == 0 || strcmp(code, "57P01") == 0 ||
        strcmp(code, "57P02") == 0 || strcmp(code, "57P03") == 0)
        return PGERR_CONNECTION;
    if (strcmp(code, "53300") == 0 || strncmp(code, "53", 2) == 0)
        return PGERR_OVERLOAD;
    if (strcmp(code, "40001") == 0 || strcmp(code, "40P01") == 0 || strcmp(code, "55P03") == 0)
        return PGERR_RETRY;
    if (conn == NULL || PQstatus(conn) != CONNECTION_OK || *code == '\0')
        return PGERR_CONNECTION;
    return PGERR_OTHER;
}

/* lib/pgerr.c — see pgerr.h. */
#include "lib/pgerr.h"

#include <string.h>

const char *pgerr_sqlstate(const PGresult *res)
{
    const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return s ? s : "";
}

const char *pgerr_message(PGconn *conn, const PGresult *res)
{
    const char *m = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (m && *m)
        return m;
    m = conn ? PQerrorMessage(conn) : NULL;
    return (m && *m) ? m : "unknown error";
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

/* lib/overlay.c — see overlay.h. */
#include "lib/overlay.h"

#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>

int overlay_apply(const char *path, const PGresult *res, struct conf *out, char *err, size_t errlen)
{
    int n = res ? PQntuples(res) : 0;
    struct conf_override *rows = xcalloc((size_t)(n ? n : 1), sizeof *rows);
    for (int i = 0; i < n; i++) {
        rows[i].section = PQgetvalue(res, i, 0);
        rows[i].key = PQgetvalue(res, i, 1);
        rows[i].value = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);
    }
    int rc = conf_load_overlay(path, rows, (size_t)n, out, err, errlen);
    free(rows);
    return rc;
}

int overlay_load(PGconn *c, const char *path, struct conf *out, char *err, size_t errlen)
{
    PGresult *res = PQexec(c, OVERLAY_SQL);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "cannot read the configuration overlay: %s", pgerr_message(c, res));
        PQclear(res);
        return -2;
    }
    int rc = overlay_apply(path, res, out, err, errlen);
    PQclear(res);
    return rc;
}

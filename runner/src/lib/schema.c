/* lib/schema.c — see schema.h. */
#include "lib/schema.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "schema_build.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char verified[32];

int schema_build_level(void)
{
    return PEPSI_SCHEMA_API_LEVEL;
}

int schema_build_changes(void)
{
    return PEPSI_SCHEMA_CHANGE_COUNT;
}

enum schema_verdict schema_api_verdict(int build, struct schema_api api)
{
    if (api.level < build)
        return SCHEMA_OLDER;
    if (api.oldest > build)
        return SCHEMA_NEWER;
    return SCHEMA_OK;
}

const char *schema_verified_token(void)
{
    return verified;
}

/* A level: a decimal int of at least 0, nothing else. */
static int parse_level(const char *s, char **end)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    long v = strtol(s, end, 10);
    return errno != 0 || v > INT_MAX ? -1 : (int)v;
}

enum schema_verdict schema_token_verdict(const char *token)
{
    char *end;
    if (token == NULL)
        return SCHEMA_ERROR;
    int level = parse_level(token, &end);
    if (level < 0 || *end != ':')
        return SCHEMA_ERROR;
    int oldest = parse_level(end + 1, &end);
    if (oldest < 0 || *end != '\0' || oldest > level)
        return SCHEMA_ERROR;
    return schema_api_verdict(PEPSI_SCHEMA_API_LEVEL, (struct schema_api){level, oldest});
}

static void log_verdict(const char *component, enum schema_verdict v, struct schema_api api)
{
    int build = PEPSI_SCHEMA_API_LEVEL;
    if (v == SCHEMA_OLDER)
        log_error(component, "the database schema is older than this program: it serves API level %d, "
                  "this program needs %d: run sqitch deploy (README \"Upgrading\")", api.level, build);
    else if (v == SCHEMA_NEWER)
        log_error(component, "the database schema is newer than this program: it serves API levels %d to %d, "
                  "this program is made for %d: upgrade the program (README \"Upgrading\")",
                  api.oldest, api.level, build);
    else
        log_debug(component, "schema serves API levels %d to %d; this program is made for %d",
                  api.oldest, api.level, build);
}

enum schema_verdict schema_verify(PGconn *conn, const char *component)
{
    PGresult *res = PQexec(conn, "select level, oldest from pepsi.schema_api()");
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 || PQgetisnull(res, 0, 0) ||
        PQgetisnull(res, 0, 1)) {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (state && (strcmp(state, "3F000") == 0 || strcmp(state, "42883") == 0)) {
            log_error(component, "the database schema is older than this program: schema \"pepsi\" is not "
                      "installed in this database or predates pepsi.schema_api(): run sqitch deploy");
            PQclear(res);
            return SCHEMA_OLDER;
        }
        log_error(component, "schema check failed: %s", pgerr_message(conn, res));
        PQclear(res);
        return SCHEMA_ERROR;
    }
    struct schema_api api = {atoi(PQgetvalue(res, 0, 0)), atoi(PQgetvalue(res, 0, 1))};
    PQclear(res);
    enum schema_verdict v = schema_api_verdict(PEPSI_SCHEMA_API_LEVEL, api);
    log_verdict(component, v, api);
    if (v == SCHEMA_OK)
        snprintf(verified, sizeof verified, "%d:%d", api.level, api.oldest);
    return v;
}

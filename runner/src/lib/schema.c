/* lib/schema.c — see schema.h. */
#include "lib/schema.h"

#include "lib/log.h"
#include "lib/pgerr.h"
#include "lib/pgarray.h"
#include "schema_build.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const build_changes[] = PEPSI_SCHEMA_CHANGES;
static const char *const build_hashes[] = PEPSI_SCHEMA_HASHES;

int schema_build_changes(void)
{
    return PEPSI_SCHEMA_CHANGE_COUNT;
}

/* FNV-1a, 64 bits: an identity of the manifest, not a defence (whoever
 * sets a worker's environment can run anything as it anyway). */
static uint64_t fnv1a(uint64_t h, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h ^ 0xff; /* ends each string: ("ab","c") differs from ("a","bc") */
}

const char *schema_build_id(void)
{
    static char id[24];
    if (id[0] == '\0') {
        uint64_t h = 14695981039346656037ULL;
        for (int i = 0; i < PEPSI_SCHEMA_CHANGE_COUNT; i++)
            h = fnv1a(fnv1a(h, build_changes[i]), build_hashes[i]);
        snprintf(id, sizeof id, "%016llx", (unsigned long long)h);
    }
    return id;
}

static enum schema_verdict verdict_of(const char *v)
{
    if (strcmp(v, "current") == 0)
        return SCHEMA_CURRENT;
    if (strcmp(v, "older") == 0)
        return SCHEMA_OLDER;
    if (strcmp(v, "newer") == 0)
        return SCHEMA_NEWER;
    return SCHEMA_DIFFERENT;
}

enum schema_verdict schema_verify(PGconn *conn, const char *component)
{
    char *changes = pgarray_of_text(build_changes, PEPSI_SCHEMA_CHANGE_COUNT);
    char *hashes = pgarray_of_text(build_hashes, PEPSI_SCHEMA_CHANGE_COUNT);
    const char *params[2] = {changes, hashes};
    PGresult *res = PQexecParams(conn, "select verdict, detail from pepsi.schema_check($1, $2)",
                                 2, NULL, params, NULL, NULL, 0);
    free(changes);
    free(hashes);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (state && (strcmp(state, "3F000") == 0 || strcmp(state, "42883") == 0)) {
            log_error(component, "schema \"pepsi\" is not installed in this database "
                      "(or predates schema_check): run sqitch deploy");
            PQclear(res);
            return SCHEMA_OLDER;
        }
        log_error(component, "schema check failed: %s", pgerr_conn_message(conn));
        PQclear(res);
        return SCHEMA_ERROR;
    }
    enum schema_verdict v = verdict_of(PQgetvalue(res, 0, 0));
    const char *detail = PQgetvalue(res, 0, 1);
    switch (v) {
    case SCHEMA_CURRENT:
        log_debug(component, "schema is current: %s", detail);
        break;
    case SCHEMA_OLDER:
        log_error(component, "the database schema is older than this program: %s", detail);
        break;
    case SCHEMA_NEWER:
        log_error(component, "the database schema is newer than this program: %s", detail);
        break;
    default:
        log_error(component, "the database schema was built from different files: %s", detail);
        break;
    }
    PQclear(res);
    return v;
}

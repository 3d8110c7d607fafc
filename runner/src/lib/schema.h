/* lib/schema.h — does the deployed schema serve the API level this build
 * is made for? (D-12, issue 15)
 *
 * The schema declares a range with pepsi.schema_api(): the level it
 * serves and the oldest level it still serves. A build is made for one
 * level (deploy/schema_api.sql when it was built, through the generated
 * schema_build.h) and runs when oldest <= its level <= level, so that a
 * compatible `sqitch deploy` under a live service stops nothing.
 * Owns: the range the last successful check found (process-wide).
 * Uses: lib/log.h, lib/pgerr.h, the generated schema_build.h, libpq;
 * nothing above lib/. */
#ifndef PEPSI_LIB_SCHEMA_H
#define PEPSI_LIB_SCHEMA_H

#include <libpq-fe.h>

enum schema_verdict {
    SCHEMA_OK,         /* the schema serves this build's level */
    SCHEMA_OLDER,      /* it serves only lower levels, or has no pepsi.schema_api(): run sqitch deploy */
    SCHEMA_NEWER,      /* it no longer serves this build's level: upgrade the program */
    SCHEMA_ERROR,      /* the check itself failed (connection, rights) */
};

/* What pepsi.schema_api() declares. */
struct schema_api {
    int level;         /* the API level the schema serves */
    int oldest;        /* the oldest level it still serves */
};

/* The verdict for a build made for level build against a schema
 * declaring api. No I/O. */
enum schema_verdict schema_api_verdict(int build, struct schema_api api);

/* Runs pepsi.schema_api() on conn (blocking) and judges this build's
 * level against it. Logs the verdict under component when it is not OK,
 * saying what to do; remembers the range when it is. */
enum schema_verdict schema_verify(PGconn *conn, const char *component);

/* "LEVEL:OLDEST" of the last schema_verify that found the schema
 * compatible, "" before one did: what the dispatcher passes to its
 * workers as PEPSI_SCHEMA_VERIFIED, so that a worker whose build the
 * range covers skips its own check (issue 19). */
const char *schema_verified_token(void);

/* The verdict for this build from such a token (another build's
 * dispatcher may have written it); SCHEMA_ERROR when it does not parse. */
enum schema_verdict schema_token_verdict(const char *token);

/* The API level this build is made for. */
int schema_build_level(void);

/* The number of sqitch changes this build was made from (--version). */
int schema_build_changes(void);

#endif

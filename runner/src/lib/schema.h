/* lib/schema.h — is the deployed schema the one this build was made from? (D-12)
 * Owns: nothing kept. Uses: lib/log.h, lib/pgarray.h, the generated schema_build.h,
 * libpq; nothing above lib/. */
#ifndef PEPSI_LIB_SCHEMA_H
#define PEPSI_LIB_SCHEMA_H

#include <libpq-fe.h>

enum schema_verdict {
    SCHEMA_CURRENT,    /* deployed == built */
    SCHEMA_OLDER,      /* the database lacks changes: run sqitch deploy */
    SCHEMA_NEWER,      /* the database has changes this build does not know */
    SCHEMA_DIFFERENT,  /* built from different files */
    SCHEMA_ERROR,      /* the check itself failed (no schema, connection) */
};

/* Runs pepsi.schema_check() on conn (blocking) with this build's change
 * list. Logs the verdict under component when it is not current, saying
 * what to do. */
enum schema_verdict schema_verify(PGconn *conn, const char *component);

/* A hash of this build's schema manifest (change names and deploy script
 * hashes), 16 hex digits: what the dispatcher passes to its workers as
 * PEPSI_SCHEMA_VERIFIED once it found the schema current, so that a
 * worker of the same build skips its own check (issue 19). */
const char *schema_build_id(void);

/* The number of sqitch changes this build was made from. */
int schema_build_changes(void);

#endif

/* lib/rights.c — see rights.h. */
#include "lib/rights.h"

#include "lib/log.h"
#include "lib/pgarray.h"
#include "lib/pgerr.h"
#include "lib/util.h"

#include <stdlib.h>

static const char *const runner_functions[] = {
    "workqueue_claim", "workqueue_claim_fair", "workqueue_requeue", "workqueue_unclaim",
    "workqueue_reset_running", "workqueue_release_paused", "workqueue_defer", "workqueue_strike",
    "claim_incarnation", "stats_flush", "stage_served_publish", "config_overlay", "topology_check",
    "schema_api", NULL};
static const char *const runner_tables[] = {NULL};

/* The role's core, not every function a stage may call: a single right
 * revoked later (settings_for, e2e 35-load-error) stays what D-103 says,
 * a host error of the messages that need it. */
static const char *const worker_functions[] = {
    "workqueue_commit", "workqueue_advance", "workqueue_finish", "workqueue_pause", "workqueue_fail",
    "workqueue_host_error", "config_overlay", NULL};
static const char *const worker_tables[] = {"workqueue", "workqueue_body", NULL};

const struct rights_need rights_runner = {"pepsi_runner", runner_functions, runner_tables};
const struct rights_need rights_worker = {"pepsi_worker", worker_functions, worker_tables};

/* Everything the login lacks, one text: the schema's USAGE, then each
 * function no overload of which it may execute, then each table it may
 * not select. An object the schema does not have is not counted: that is
 * an older schema, which schema_verify reports with what to run (sqitch
 * deploy) rather than a GRANT that cannot help. Names are the constants
 * above, never input. */
static const char missing_sql[] =
    "with s as (select n.oid from pg_catalog.pg_namespace n where n.nspname = 'pepsi')"
    " select current_user, coalesce(string_agg(m.what, ', ' order by m.ord, m.what), '') from ("
    "   select 0 as ord, 'usage on schema pepsi' as what"
    "    where not exists (select 1 from s where pg_catalog.has_schema_privilege(s.oid, 'USAGE'))"
    "   union all"
    "   select 1, 'execute on pepsi.' || f || '()' from unnest($1::text[]) f"
    "    where exists (select 1 from pg_catalog.pg_proc p join s on p.pronamespace = s.oid where p.proname = f)"
    "      and not exists (select 1 from pg_catalog.pg_proc p join s on p.pronamespace = s.oid"
    "                       where p.proname = f and pg_catalog.has_function_privilege(p.oid, 'EXECUTE'))"
    "   union all"
    "   select 2, 'select on pepsi.' || t from unnest($2::text[]) t"
    "    where exists (select 1 from pg_catalog.pg_class c join s on c.relnamespace = s.oid where c.relname = t)"
    "      and not exists (select 1 from pg_catalog.pg_class c join s on c.relnamespace = s.oid"
    "                       where c.relname = t and pg_catalog.has_table_privilege(c.oid, 'SELECT'))"
    " ) m";

/* The names as a text[] literal. */
static char *name_array(const char *const *names)
{
    struct pgarray a = PGARRAY_INIT;
    for (const char *const *n = names; *n; n++)
        pgarray_add_text(&a, *n);
    return pgarray_finish(&a);
}

int rights_check(PGconn *c, const struct rights_need *need, const char *component)
{
    char *functions = name_array(need->functions);
    char *tables = name_array(need->tables);
    const char *params[2] = {functions, tables};
    PGresult *res = PQexecParams(c, missing_sql, 2, NULL, params, NULL, NULL, 0);
    free(functions);
    free(tables);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        log_error(component, "cannot check the login's rights: %s", pgerr_message(c, res));
        PQclear(res);
        return 1;
    }
    const char *login = PQgetvalue(res, 0, 0);
    const char *missing = PQgetvalue(res, 0, 1);
    int code = 0;
    if (*missing) {
        log_error(component, "login \"%s\" lacks %s: grant %s to \"%s\" (README \"Roles\")", login, missing,
                  need->role, login);
        code = EXIT_CONFIG;
    }
    PQclear(res);
    return code;
}

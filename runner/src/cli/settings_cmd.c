/* cli/settings_cmd.c — `pepsi-runner settings`: per-address overrides of
 * [stage-*] options for operators (D-122).
 *
 *   settings list [ADDRESS]
 *   settings set ADDRESS STAGE OPTION VALUE
 *   settings delete ADDRESS [STAGE [OPTION]]
 *   settings owners [LOGIN]
 *   settings own LOGIN ADDRESS       (end user LOGIN owns ADDRESS)
 *   settings disown LOGIN [ADDRESS]
 *
 * An operator may set any option the stage knows; an end user's settings
 * control message only what the stage allow-lists, and only for the
 * addresses its login owns (pepsi.user_address, issue 11).
 * set checks, against the configuration (file and overlay), that the stage
 * exists and that the option can be set per address with that value, so
 * that a typo fails here rather than every message of that address later
 * (D-114). Exit 0, 64 on a usage error, 1 on any other error. */
#include "cli/settings_cmd.h"

#include "lib/conn.h"
#include "lib/log.h"
#include "lib/overlay.h"
#include "lib/pgerr.h"
#include "lib/schema.h"
#include "stages/stages.h"
#include "lib/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COMPONENT "settings"

static int usage(void)
{
    fprintf(stderr, "usage: pepsi-runner [-c FILE] settings list [ADDRESS]\n"
                    "       pepsi-runner [-c FILE] settings set ADDRESS STAGE OPTION VALUE\n"
                    "       pepsi-runner [-c FILE] settings delete ADDRESS [STAGE [OPTION]]\n"
                    "       pepsi-runner [-c FILE] settings owners [LOGIN]\n"
                    "       pepsi-runner [-c FILE] settings own LOGIN ADDRESS\n"
                    "       pepsi-runner [-c FILE] settings disown LOGIN [ADDRESS]\n");
    return EXIT_USAGE;
}

static int print_list(PGconn *c, const char *address)
{
    const char *p[] = {address};
    PGresult *r = PQexecParams(c, "select address, stage, option, value, to_char(updated_at, 'YYYY-MM-DD HH24:MI:SS'),"
                                  " updated_by from pepsi.settings_list($1)", 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot list settings: %s", pgerr_message(c, r));
        PQclear(r);
        return 1;
    }
    printf("%-32s %-20s %-20s %-24s %-19s %s\n", "ADDRESS", "STAGE", "OPTION", "VALUE", "UPDATED", "BY");
    for (int i = 0; i < PQntuples(r); i++)
        printf("%-32s %-20s %-20s %-24s %-19s %s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
               PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4), PQgetvalue(r, i, 5));
    PQclear(r);
    return 0;
}

static int do_set(PGconn *c, const char *path, char **a)
{
    struct conf conf;
    char why[1024];
    /* The configuration as the workers read it: file and overlay. */
    if (overlay_load(c, path, &conf, why, sizeof why) != 0) {
        log_error(COMPONENT, "%s", why);
        return 1;
    }
    const struct stage_conf *s = conf_stage(&conf, a[1]);
    int rc = pepsi_check_setting(&conf, a[1], a[2], a[3], s ? stages_builtin_of(s->program) : NULL, why,
                                 sizeof why);
    conf_free(&conf);
    if (rc != 0) {
        log_error(COMPONENT, "refused: %s", why);
        return 1;
    }
    const char *p[] = {a[0], a[1], a[2], a[3]};
    PGresult *r = PQexecParams(c, "select pepsi.settings_set($1, $2, $3, $4)", 4, NULL, p, NULL, NULL, 0);
    rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : 1;
    if (rc != 0)
        log_error(COMPONENT, "cannot set: %s", pgerr_message(c, r));
    else
        printf("%s: [stage-%s] %s = %s\n", a[0], a[1], a[2], a[3]);
    PQclear(r);
    return rc;
}

static int do_delete(PGconn *c, int argc, char **a)
{
    const char *p[] = {a[0], argc > 1 ? a[1] : NULL, argc > 2 ? a[2] : NULL};
    PGresult *r = PQexecParams(c, "select pepsi.settings_delete($1, $2, $3)", 3, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : 1;
    if (rc != 0)
        log_error(COMPONENT, "cannot delete: %s", pgerr_message(c, r));
    else
        printf("deleted %s setting(s)\n", PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

static int print_owners(PGconn *c, const char *login)
{
    const char *p[] = {login};
    PGresult *r = PQexecParams(c, "select login, address, to_char(added_at, 'YYYY-MM-DD HH24:MI:SS'), added_by"
                                  " from pepsi.user_address_list($1)", 1, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_error(COMPONENT, "cannot list address owners: %s", pgerr_message(c, r));
        PQclear(r);
        return 1;
    }
    printf("%-24s %-32s %-19s %s\n", "LOGIN", "ADDRESS", "ADDED", "BY");
    for (int i = 0; i < PQntuples(r); i++)
        printf("%-24s %-32s %-19s %s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
               PQgetvalue(r, i, 3));
    PQclear(r);
    return 0;
}

/* own LOGIN ADDRESS, or disown LOGIN [ADDRESS]. */
static int do_owner(PGconn *c, bool own, int argc, char **a)
{
    const char *p[] = {a[0], argc > 1 ? a[1] : NULL};
    PGresult *r = PQexecParams(c, own ? "select pepsi.user_address_add($1, $2)::int"
                                      : "select pepsi.user_address_remove($1, $2)",
                               2, NULL, p, NULL, NULL, 0);
    int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : 1;
    if (rc != 0)
        log_error(COMPONENT, "cannot %s: %s", own ? "own" : "disown", pgerr_message(c, r));
    else if (own)
        printf("%s owns %s%s\n", a[0], a[1], strcmp(PQgetvalue(r, 0, 0), "1") == 0 ? "" : " (already)");
    else
        printf("%s: %s address(es) disowned\n", a[0], PQgetvalue(r, 0, 0));
    PQclear(r);
    return rc;
}

int settings_command(const char *config_path, int argc, char **argv)
{
    char err[1024];
    struct conf conf;
    if (argc < 1)
        return usage();
    const char *verb = argv[0];
    int n = argc - 1;
    bool ok = (strcmp(verb, "list") == 0 && n <= 1) || (strcmp(verb, "set") == 0 && n == 4) ||
              (strcmp(verb, "delete") == 0 && n >= 1 && n <= 3) || (strcmp(verb, "owners") == 0 && n <= 1) ||
              (strcmp(verb, "own") == 0 && n == 2) || (strcmp(verb, "disown") == 0 && n >= 1 && n <= 2);
    if (!ok)
        return usage();
    const char *path = config_path ? config_path : conf_default_path();
    int loaded = conf_load(path, &conf, err, sizeof err);
    if (loaded != 0) {
        log_error("config", "%s", err);
        return loaded == CONF_INSECURE ? EXIT_CONFIG : 1;
    }
    PGconn *c = conn_open(conf.conninfo, conf.connect_timeout_ms, "pepsi-runner settings", COMPONENT, NULL);
    conf_free(&conf);
    if (c == NULL)
        return 1;
    int rc = 1;
    if (schema_verify(c, COMPONENT) == SCHEMA_OK) {
        if (strcmp(verb, "list") == 0)
            rc = print_list(c, n ? argv[1] : NULL);
        else if (strcmp(verb, "set") == 0)
            rc = do_set(c, path, argv + 1);
        else if (strcmp(verb, "delete") == 0)
            rc = do_delete(c, n, argv + 1);
        else if (strcmp(verb, "owners") == 0)
            rc = print_owners(c, n ? argv[1] : NULL);
        else
            rc = do_owner(c, strcmp(verb, "own") == 0, n, argv + 1);
    }
    PQfinish(c);
    return rc;
}

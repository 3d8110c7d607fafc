/* cli/status.h — `pepsi-runner status`: the anomaly dashboard in the terminal
 * (W-42). Connects with the configuration's CONNINFO, reads
 * pepsi.anomaly_dashboard in one query, prints a summary line and a table
 * (firing checks first), and exits.
 * Owns: the command's one query and its output. Uses: lib/ (conf, conn,
 * pgerr, log), libpq. */
#ifndef PEPSI_CLI_STATUS_H
#define PEPSI_CLI_STATUS_H

#include "lib/conf.h"

#include <libpq-fe.h>
#include <stdio.h>

/* Prints the dashboard of the database conf names to out. Returns the exit
 * status: 0 once printed (whatever the checks say), 1 when the database
 * cannot be reached or the dashboard cannot be read (the reason goes to
 * the log on stderr). */
int status_print(const struct conf *conf, FILE *out);

/* Prints the rows of a dashboard query (columns: state, severity, family,
 * check, value, unit, expected, subject, since; text) as the summary and
 * table status_print shows. Separate for the unit tests. */
void status_render(const PGresult *res, FILE *out);

#endif

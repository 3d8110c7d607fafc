/* cli/status.h — `pepsi-runner status [--json]`: the anomaly dashboard
 * (W-42) and the queue's counts in the terminal, or as one JSON object, and
 * an exit status a monitoring system reads as a Nagios plugin's (issue 16).
 * Connects with the configuration's CONNINFO; reads
 * pepsi.anomaly_dashboard, pepsi.queue_overview summed over tubes, the
 * paused stages (pepsi.stage_pause, when the schema has it) and the paused
 * tubes (pepsi.tubes); prints a summary line, the checks (firing first),
 * the counts per stage and status, and what is paused; exits.
 * Owns: the command's queries and its output. Uses: lib/ (conf, conn,
 * pgerr, log, util), cli/resjson, libpq, jansson. */
#ifndef PEPSI_CLI_STATUS_H
#define PEPSI_CLI_STATUS_H

#include "lib/conf.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>

/* Exit statuses, as a Nagios plugin's. */
#define STATUS_OK 0        /* no check firing (an info check may) */
#define STATUS_WARNING 1   /* a warning check firing, or a check in error */
#define STATUS_CRITICAL 2  /* a critical check firing */
#define STATUS_UNKNOWN 3   /* the database cannot be reached or read */

/* Runs `status` with its arguments (none, or --json); returns the exit
 * status: STATUS_*, 64 for other arguments, 78 for a configuration file
 * open to others that holds a secret. */
int status_command(const char *config_path, int argc, char **argv);

/* Prints the status of the database conf names to out, as text or JSON
 * ({"state", "checks", "queue", "paused"}). Returns STATUS_OK, _WARNING or
 * _CRITICAL from the checks, or STATUS_UNKNOWN when the database cannot
 * be reached or read (the reason goes to the log on stderr). */
int status_print(const struct conf *conf, bool json, FILE *out);

/* The worst of a dashboard's rows (columns "state" and "severity"):
 * STATUS_CRITICAL for a critical check firing, STATUS_WARNING for a
 * warning one firing or any check in error, else STATUS_OK. */
int status_state(const PGresult *res);

/* "ok", "warning" or "critical". */
const char *status_state_name(int state);

/* Prints the rows of a dashboard query (columns: state, severity, family,
 * check, value, unit, expected, subject, since; text) as the summary and
 * table status_print shows. Separate for the unit tests. */
void status_render(const PGresult *res, FILE *out);

/* Prints the queue's counts (rows: stage, pending, running, paused,
 * failed, timeout), then a line per paused stage (stage, paused_at,
 * paused_by, reason; stages may be NULL) and per paused tube (tube,
 * paused_until). */
void status_render_queue(const PGresult *queue, const PGresult *stages, const PGresult *tubes, FILE *out);

#endif

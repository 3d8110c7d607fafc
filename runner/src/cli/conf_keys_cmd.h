/* cli/conf_keys_cmd.h — `pepsi-runner conf-keys sql|readme|man`: pepsi.conf's
 * key table (lib/conf.c) as the sqitch change deploy/config_keys.sql, as
 * the README's table of keys, or as pepsi.conf(5)'s (issue 15); `make lint` regenerates both and compares
 * (scripts/check-conf-keys; issue 13: one list of keys, in C, SQL and docs).
 * Owns: the generated text. Uses: lib/ (conf_key). */
#ifndef PEPSI_CLI_CONF_KEYS_CMD_H
#define PEPSI_CLI_CONF_KEYS_CMD_H

#include <stdio.h>

/* Writes deploy/config_keys.sql to out. Returns 0, or -1 on a write error. */
int conf_keys_sql(FILE *out);

/* Writes the README's table of keys (section "Configuration") to out.
 * Returns 0, or -1 on a write error. */
int conf_keys_readme(FILE *out);

/* Writes the key table of man/pepsi.conf.5 (between its conf-keys man
 * markers): one .SS per section, one .TP per key. Returns 0, or -1 on a
 * write error. */
int conf_keys_man(FILE *out);

/* Runs the command with its arguments (argv[0] is the first one);
 * returns the exit status. */
int conf_keys_command(int argc, char **argv);

#endif

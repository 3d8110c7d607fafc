/* cli/settings_cmd.h — `pepsi-runner settings`: per-address settings for
 * operators (list, set, delete).
 * Owns: the command's argument parsing and its output. Uses: lib/ (conn,
 * overlay, schema, pgerr, log, util) and stages/stages.h (a built-in's
 * own keys, to validate a setting as its worker would). */
#ifndef PEPSI_CLI_SETTINGS_CMD_H
#define PEPSI_CLI_SETTINGS_CMD_H

/* Runs the settings command with its arguments (argv[0] is the verb);
 * returns the exit status. */
int settings_command(const char *config_path, int argc, char **argv);

#endif

/* cli/settings_cmd.h — `pepsi-runner settings`: per-address settings for
 * operators (list, set, delete). */
#ifndef PEPSI_CLI_SETTINGS_CMD_H
#define PEPSI_CLI_SETTINGS_CMD_H

/* Runs the settings command with its arguments (argv[0] is the verb);
 * returns the exit status. */
int settings_command(const char *config_path, int argc, char **argv);

#endif

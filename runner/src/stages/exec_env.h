/* stages/exec_env.h — what a command run by pepsi-stage-exec gets besides
 * the body on stdin (issue 11):
 *   - an environment that cannot overflow: each message variable only when
 *     its value fits EXEC_ENV_VALUE_MAX and all of them together fit
 *     EXEC_ENV_TOTAL_MAX (Linux refuses a single string over 128 KiB,
 *     MAX_ARG_STRLEN, and an environment over ARG_MAX); what is left out is
 *     named in PEPSI_TRUNCATED;
 *   - the complete metadata as one JSON object on a file descriptor
 *     (EXEC_MESSAGE_FD, named in PEPSI_MESSAGE_FD), always;
 *   - no connection string and no password: the runner's database
 *     variables (PEPSI_CONNINFO, PEPSI_CONFIG, PGPASSFILE, PGSERVICE, every
 *     libpq PG* variable) are removed unless the section says
 *     PASS_CONNINFO = yes; PGPASSWORD is removed always.
 * Uses the worker SDK's message, jansson and libpq; nothing above. */
#ifndef PEPSI_STAGES_EXEC_ENV_H
#define PEPSI_STAGES_EXEC_ENV_H

#include "sdk/sdk.h"

#include <stdbool.h>
#include <stddef.h>

#define EXEC_ENV_VALUE_MAX 32768    /* bytes of one message variable's value */
#define EXEC_ENV_TOTAL_MAX 65536    /* bytes ("NAME=value\0") of all message variables */
#define EXEC_MESSAGE_FD 3           /* the metadata JSON, PEPSI_MESSAGE_FD */

/* The names of the variables a command never inherits: the message
 * variables exec_env_build sets, PGPASSWORD, and without pass_conninfo the
 * connection variables. NULL-terminated, malloc'd; free with
 * exec_env_names_free. */
char **exec_env_strip_names(bool pass_conninfo);
void exec_env_names_free(char **names);

/* A command's environment. */
struct exec_env {
    char **vars;                /* "NAME=value", NULL-terminated: for execve */
    size_t n;
    size_t bytes;               /* of all strings with their NULs */
    size_t message_bytes;       /* of the message variables alone */
};

/* inherited (e.g. environ) without the variables named in strip, then the
 * message's variables within the bounds, PEPSI_MESSAGE_FD and, when
 * something was left out, PEPSI_TRUNCATED ("PEPSI_RECIPIENTS,PEPSI_STATE").
 * Free with exec_env_free. */
void exec_env_build(struct exec_env *e, char *const *inherited, char *const *strip,
                    const struct pepsi_message *m);
void exec_env_free(struct exec_env *e);

/* The value of NAME in e, or NULL. */
const char *exec_env_get(const struct exec_env *e, const char *name);

/* The message's metadata as JSON (id, stage, tube, sender_key,
 * envelope_sender, recipients, subject, header_from, state, arrived_at) in
 * a sealed memfd read from its start, close-on-exec. Returns the fd, -1
 * (errno) when the descriptor cannot be made, or -2 when the metadata
 * cannot be written as JSON (not UTF-8); why says which. */
int exec_message_fd(const struct pepsi_message *m, const char *stage, char *why, size_t cap);

#endif

/* cli/queue_cmd.h — `pepsi-runner queue`: the operator actions on messages,
 * stages and tubes from the command line (issue 16).
 *
 *   queue list [--stage S] [--status ST] [--tube T] [--limit N] [--json]
 *   queue show ID [--json]
 *   queue retry ID...
 *   queue delete ID... --reason TEXT
 *   queue move ID... --to STAGE
 *   queue pause STAGE [--reason R]      queue resume STAGE
 *   queue pause --tube T --for DURATION queue resume --tube T
 *   queue purge --older-than DURATION
 *
 * Each verb is one call of a SQL function (or one read of pepsi.messages)
 * with the configuration's CONNINFO; the database decides who may (roles
 * pepsi_reader, pepsi_operator). Exit 0 done, 1 refused by the database
 * (its PX code and message on stderr), 64 usage, 69 no connection.
 * Owns: the command's argument parsing and its output. Uses: lib/ (conf,
 * conn, pgarray, pgerr, log, util), cli/resjson, libpq, jansson. */
#ifndef PEPSI_CLI_QUEUE_CMD_H
#define PEPSI_CLI_QUEUE_CMD_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define QUEUE_MAX_IDS 10000      /* ids per call, as workqueue_delete allows */
#define QUEUE_LIST_DEFAULT 50    /* queue list --limit */
#define QUEUE_LIST_MAX 10000

enum queue_verb { QV_LIST, QV_SHOW, QV_RETRY, QV_DELETE, QV_MOVE, QV_PAUSE, QV_RESUME, QV_PURGE };

/* A parsed command line; the strings point into argv. */
struct queue_args {
    enum queue_verb verb;
    bool json;
    const char *stage;       /* list --stage, or pause/resume STAGE */
    const char *status;      /* list --status */
    const char *tube;        /* list --tube, pause/resume --tube */
    const char *reason;      /* delete --reason, pause STAGE --reason */
    const char *to;          /* move --to */
    int limit;               /* list --limit */
    int64_t ms;              /* pause --for, purge --older-than (milliseconds) */
    int64_t *ids;            /* show/retry/delete/move; xmalloc'd */
    size_t n_ids;
};

/* Parses argv (argv[0] is the verb) into *a. Returns 0, or -1 with the
 * reason in err (a usage error). Free with queue_args_free either way. */
int queue_parse(int argc, char **argv, struct queue_args *a, char *err, size_t cap);

void queue_args_free(struct queue_args *a);

/* "42s", "17m", "5h", "3d": an age in seconds, short, for the list. */
const char *queue_age(long long secs, char *out, size_t cap);

/* Prints the rows of the list query (id, tube, stage, status, age in
 * seconds, sender, subject; text) as a table, subjects clipped. */
void queue_render_list(const PGresult *res, FILE *out);

/* Runs the queue command with its arguments (argv[0] is the verb);
 * returns the exit status. */
int queue_command(const char *config_path, int argc, char **argv);

#endif

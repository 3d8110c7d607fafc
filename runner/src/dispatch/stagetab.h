/* dispatch/stagetab.h — the dispatcher's stage tables. Each is built from one
 * reading of the configuration: the file and the database overlay
 * pepsi.config_override (D-117). The newest table is current; a reload
 * retires the current one, whose workers finish what they hold while new
 * work goes to the new table's workers, and it is freed once they are gone.
 * Owns: the stage tables and their pools. Uses: dispatch/ (graph, pool,
 * stats), lib/ (conf, overlay, util). */
#ifndef PEPSI_DISPATCH_STAGETAB_H
#define PEPSI_DISPATCH_STAGETAB_H

#include "lib/conf.h"
#include "dispatch/pool.h"
#include "dispatch/stats.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

struct stagetab {
    struct stagetab *next;   /* the next older table, all retired */
    struct conf conf;        /* what this table was built from */
    struct stage *stages;    /* one per [stage-*] section, in file order */
    size_t n_stages;
};

/* A stage's statistics deltas, merged by name across tables. */
struct named_delta {
    char *name;
    struct stage_delta d;
};

/* Reads the file at path with the overlay rows of res (columns section,
 * key, value; res may be NULL for none) into a new table whose stages
 * share env. Returns NULL with the reason in err when the result cannot be
 * parsed. */
struct stagetab *stagetab_load(const char *path, const PGresult *res, struct pool_env *env,
                               char *err, size_t errlen);

/* The statement that publishes the graph a dispatcher serves (issue 15):
 * $1 the owner slot, $2 stagetab_graph_json(). */
#define STAGETAB_PUBLISH_SQL "select pepsi.stage_served_publish($1::int, $2::jsonb)"

/* The graph for pepsi.stage_served: every stage of file (the file alone,
 * as conf_load reads it; NULL: t's graph stands for it) and of t, as
 * [{"stage", "served": in t, "in_file", "program", "refs": {"NEXT",
 * "BOUNCE_STAGE", "THEN", "ELSE"}}] with the file's values, so that
 * config_set can lay the overlay over the file it cannot read as the
 * runner does. A malloc'd string, NULL when out of memory. */
char *stagetab_graph_json(const struct stagetab *t, const struct conf *file);

/* stagetab_graph_json with the file at path read again (the one t was
 * built from; unreadable now: t's graph stands for it). */
char *stagetab_publish_json(const struct stagetab *t, const char *path);

/* The stage called name in t, or NULL. */
struct stage *stagetab_find(struct stagetab *t, const char *name);

/* Retires t: its stages take no new work and their workers finish what
 * they hold and exit (D-117). */
void stagetab_retire(struct stagetab *t);

/* Whether no stage of t has a worker left. */
bool stagetab_quiet(const struct stagetab *t);

/* Frees a quiet table. */
void stagetab_free(struct stagetab *t);

/* Takes the deltas of every stage of every table from list onward, merged
 * by stage name, and zeroes them; *out is malloc'd (free with
 * named_deltas_free). Returns how many, 0 when nothing was counted. */
size_t stagetab_take_deltas(struct stagetab *list, struct named_delta **out);

/* The same for table t alone. */
size_t stagetab_take_deltas_one(struct stagetab *t, struct named_delta **out);

/* Gives deltas back after a failed write, to the stage of that name in t
 * when there is one (best effort, D-142). */
void stagetab_return_deltas(struct stagetab *t, const struct named_delta *d, size_t n);

/* Frees what stagetab_take_deltas made. */
void named_deltas_free(struct named_delta *d, size_t n);

#endif

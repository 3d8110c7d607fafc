/* lib/overlay.h — reading the database overlay of [stage-*] sections
 * (pepsi.config_override, D-117) and laying it over the file. The
 * dispatcher, the workers and `pepsi-runner settings` read it the same way.
 * Owns: nothing kept. Uses: lib/ (conf, pgerr, util), libpq; nothing above
 * lib/. */
#ifndef PEPSI_LIB_OVERLAY_H
#define PEPSI_LIB_OVERLAY_H

#include "lib/conf.h"

#include <libpq-fe.h>

/* The query whose rows (section, key, value) are the overlay, in order. */
#define OVERLAY_SQL "select section, key, value from pepsi.config_overlay()"

/* The file at path with the overlay rows of res (a result of OVERLAY_SQL;
 * NULL for none) into *out. 0, or -1 with the reason in err. */
int overlay_apply(const char *path, const PGresult *res, struct conf *out, char *err, size_t errlen);

/* Runs OVERLAY_SQL on c (blocking) and overlay_apply. 0; -1 when the
 * result cannot be parsed (err says why); -2 when the overlay cannot be
 * read (err says why: a database problem, not a configuration one). */
int overlay_load(PGconn *c, const char *path, struct conf *out, char *err, size_t errlen);

#endif

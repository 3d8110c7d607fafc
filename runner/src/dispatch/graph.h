/* dispatch/graph.h — the stage graph of a configuration, and the cycles no message
 * can leave (issue 12).
 *
 * An edge goes from a stage to every stage a message can go to next: its
 * NEXT and BOUNCE_STAGE, and for the built-in pepsi-stage-if its THEN and
 * ELSE (NEXT only without ELSE). A stage can finish a message when it has
 * nowhere to send it: no NEXT (an if: no ELSE and no NEXT), or always for
 * the built-in pepsi-stage-discard. A trap is a strongly connected
 * component that holds a cycle (two stages or more, or one whose edge
 * comes back to itself), none of whose stages can finish, and none of
 * whose edges leads out of it: a message that enters it goes round until
 * [pepsi] MAX_HOPS fails it as a loop. A cycle with a way out (an if that
 * loops until its condition holds) is no trap: MAX_HOPS still bounds it,
 * and no warning is given. A program of its own is taken to follow its
 * section's NEXT (the SDK's default), so a trap of such stages is only
 * one if the program never routes elsewhere; the warning says so. Edges
 * to a stage without a section (a THEN that names none: the worker
 * refuses to start) count as a way out.
 *
 * Uses conf.h and log.h only. */
#ifndef PEPSI_DISPATCH_GRAPH_H
#define PEPSI_DISPATCH_GRAPH_H

#include "lib/conf.h"

#include <stddef.h>

/* One trap: indexes into conf->stages, in file order. */
struct graph_trap {
    size_t *stages;
    size_t n;
};

/* Finds every trap of c's stage graph, in the file order of their first
 * stages. Returns how many; *out is malloc'd (NULL for none): free it
 * with graph_traps_free. */
size_t graph_traps(const struct conf *c, struct graph_trap **out);

/* Frees what graph_traps returned. */
void graph_traps_free(struct graph_trap *traps, size_t n);

/* Writes the trap's stage names, quoted and comma-separated, into buf
 * (at most 16 of them, then "and N more"); returns buf. */
const char *graph_trap_names(const struct conf *c, const struct graph_trap *t, char *buf, size_t cap);

/* Logs one warning under component for each trap of c, naming its
 * stages and the MAX_HOPS that bounds it. Returns how many. */
size_t graph_warn_traps(const struct conf *c, const char *component);

#endif

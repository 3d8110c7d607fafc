/* cli/resjson.h — a libpq result as JSON (jansson) for the commands' --json
 * output (issue 16): one object per row, keyed by column name, each value
 * typed by its column: NULL as null, integers as numbers, numeric and
 * floats as reals, booleans as true/false, json and jsonb parsed, anything
 * else as its text.
 * Owns: nothing kept. Uses: libpq, jansson. */
#ifndef PEPSI_CLI_RESJSON_H
#define PEPSI_CLI_RESJSON_H

#include <jansson.h>
#include <libpq-fe.h>

/* Row i of res as an object; NULL when memory runs out. */
json_t *resjson_row(const PGresult *res, int i);

/* Every row of res as an array of objects; NULL when memory runs out. */
json_t *resjson_rows(const PGresult *res);

/* Dumps v (compact, keys in insertion order) and a newline to out, and
 * drops the reference. Returns 0, or -1 when it cannot be written. */
int resjson_print(json_t *v, FILE *out);

#endif

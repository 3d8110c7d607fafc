/* lib/pgarray.h — the one builder of PostgreSQL array literals (issue 13:
 * every parameter that crosses into SQL as an array is built here, never
 * by hand elsewhere; scripts/lint-arrays keeps it so).
 *
 * A one-dimensional literal for a $n::bigint[], ::int[], ::text[],
 * ::float8[] or ::boolean[] parameter, written by PostgreSQL's array-input
 * rules: elements separated by ",", the empty array "{}", a NULL element
 * spelled unquoted NULL, every text element in double quotes with a
 * backslash before each " and \ (so "NULL", "", " a,b{}" stay text).
 *
 *   struct pgarray a = PGARRAY_INIT;
 *   pgarray_add_text(&a, "user:\"q\"");
 *   pgarray_add_null(&a);
 *   char *lit = pgarray_finish(&a);     {"user:\"q\"",NULL}; free() it
 *
 * The literal grows on the heap as needed (no fixed buffer, nothing cut
 * short); an allocation that fails aborts, as xmalloc does.
 * Owns: the literal being built, until pgarray_finish hands it over.
 * Uses: lib/util.h only. */
#ifndef PEPSI_LIB_PGARRAY_H
#define PEPSI_LIB_PGARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A literal being built; PGARRAY_INIT (all zero) is the empty array. The
 * fields are the module's: use the functions. */
struct pgarray {
    char *s;        /* "{" and the elements so far, NUL-terminated; NULL before the first */
    size_t len;     /* bytes in s, without the NUL */
    size_t cap;     /* bytes allocated for s */
    size_t n;       /* elements so far */
};

#define PGARRAY_INIT {NULL, 0, 0, 0}

/* float8 digits for pgarray_add_float8: as many as give back the same
 * double ("%.17g"), for values the database must see exactly. */
#define PGARRAY_FLOAT8_EXACT (-1)

/* Appends v (bigint, int). */
void pgarray_add_int64(struct pgarray *a, int64_t v);

/* Appends s as a quoted text element, or a NULL element when s is NULL. */
void pgarray_add_text(struct pgarray *a, const char *s);

/* Appends a NULL element. */
void pgarray_add_null(struct pgarray *a);

/* Appends v (float8) with `decimals` digits after the point ("%.*f"), or
 * exactly with PGARRAY_FLOAT8_EXACT; NaN and infinities in the spelling
 * PostgreSQL reads (NaN, Infinity, -Infinity). */
void pgarray_add_float8(struct pgarray *a, double v, int decimals);

/* Appends v (boolean) as t or f. */
void pgarray_add_bool(struct pgarray *a, bool v);

/* Elements appended so far. */
size_t pgarray_count(const struct pgarray *a);

/* The finished literal, "{}" when empty, malloc'd: the caller frees it.
 * The builder is empty again afterwards (PGARRAY_INIT). */
char *pgarray_finish(struct pgarray *a);

/* Drops what was built (the builder is empty again). */
void pgarray_reset(struct pgarray *a);

/* n numbers as one literal, "{1,2,3}" (for $n::bigint[]); malloc'd. */
char *pgarray_of_int64(const int64_t *v, size_t n);

/* n strings as one literal of quoted text elements (a NULL pointer is a
 * NULL element), for $n::text[]; malloc'd. */
char *pgarray_of_text(const char *const *v, size_t n);

#endif

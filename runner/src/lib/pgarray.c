/* lib/pgarray.c — see pgarray.h. */
#include "lib/pgarray.h"

#include "lib/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for k more bytes, the closing "}" and the NUL; the literal is
 * started ("{") on first use. */
static void reserve(struct pgarray *a, size_t k)
{
    if (a->s == NULL) {
        a->cap = 64;
        a->s = xmalloc(a->cap);
        a->s[0] = '{';
        a->s[1] = '\0';
        a->len = 1;
    }
    if (k > SIZE_MAX / 4 - a->len)
        abort(); /* a literal larger than the address space: a bug, not a load */
    size_t need = a->len + k + 2;
    if (need <= a->cap)
        return;
    size_t cap = a->cap * 2;
    a->cap = cap > need ? cap : need;
    a->s = xrealloc(a->s, a->cap);
}

static void put(struct pgarray *a, const char *s, size_t k)
{
    reserve(a, k);
    memcpy(a->s + a->len, s, k);
    a->len += k;
    a->s[a->len] = '\0';
}

/* The "," before every element but the first. */
static void next_element(struct pgarray *a)
{
    if (a->n++ > 0)
        put(a, ",", 1);
    else
        reserve(a, 0);
}

void pgarray_add_int64(struct pgarray *a, int64_t v)
{
    char digits[24], *p = digits + sizeof digits;
    /* In unsigned arithmetic, so that INT64_MIN has a magnitude too. */
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10u);
        u /= 10u;
    } while (u != 0);
    if (v < 0)
        *--p = '-';
    next_element(a);
    put(a, p, (size_t)(digits + sizeof digits - p));
}

void pgarray_add_text(struct pgarray *a, const char *s)
{
    if (s == NULL) {
        pgarray_add_null(a);
        return;
    }
    next_element(a);
    put(a, "\"", 1);
    for (;;) {
        size_t k = strcspn(s, "\"\\");
        put(a, s, k);
        s += k;
        if (*s == '\0')
            break;
        char esc[2] = {'\\', *s++};
        put(a, esc, 2);
    }
    put(a, "\"", 1);
}

void pgarray_add_null(struct pgarray *a)
{
    next_element(a);
    put(a, "NULL", 4);
}

void pgarray_add_float8(struct pgarray *a, double v, int decimals)
{
    next_element(a);
    if (isnan(v)) {
        put(a, "NaN", 3);
        return;
    }
    if (isinf(v)) {
        put(a, v > 0 ? "Infinity" : "-Infinity", v > 0 ? 8 : 9);
        return;
    }
    /* Printed in place; a number longer than the room (%.3f of 1e300)
     * grows the literal and is printed again, never cut short. */
    for (size_t room = 32;;) {
        reserve(a, room);
        int k = decimals < 0 ? snprintf(a->s + a->len, room + 1, "%.17g", v)
                             : snprintf(a->s + a->len, room + 1, "%.*f", decimals, v);
        if (k < 0)
            abort(); /* a valid format cannot fail */
        if ((size_t)k <= room) {
            a->len += (size_t)k;
            return;
        }
        room = (size_t)k;
    }
}

void pgarray_add_bool(struct pgarray *a, bool v)
{
    next_element(a);
    put(a, v ? "t" : "f", 1);
}

size_t pgarray_count(const struct pgarray *a)
{
    return a->n;
}

char *pgarray_finish(struct pgarray *a)
{
    reserve(a, 0);
    a->s[a->len++] = '}';
    a->s[a->len] = '\0';
    char *out = a->s;
    *a = (struct pgarray)PGARRAY_INIT;
    return out;
}

void pgarray_reset(struct pgarray *a)
{
    free(a->s);
    *a = (struct pgarray)PGARRAY_INIT;
}

char *pgarray_of_int64(const int64_t *v, size_t n)
{
    struct pgarray a = PGARRAY_INIT;
    for (size_t i = 0; i < n; i++)
        pgarray_add_int64(&a, v[i]);
    return pgarray_finish(&a);
}

char *pgarray_of_text(const char *const *v, size_t n)
{
    struct pgarray a = PGARRAY_INIT;
    for (size_t i = 0; i < n; i++)
        pgarray_add_text(&a, v[i]);
    return pgarray_finish(&a);
}

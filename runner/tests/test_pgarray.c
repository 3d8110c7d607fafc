/* test_pgarray.c — lib/pgarray, the one builder of PostgreSQL array
 * literals (issue 13: parameters cross into SQL as arrays built by one
 * helper). Without arguments: the literals themselves, byte for byte, and
 * each read back by a reader of PostgreSQL's array-input rules written
 * here. With a connection string (runner/tests/e2e/62-pgarray.t gives
 * one): also a round trip through a real PostgreSQL, each literal sent as
 * $1::text[] (bigint[], float8[], boolean[]) and every element compared
 * with what was added, array_length too. */
#include "unit.h"

#include "lib/pgarray.h"
#include "lib/util.h"

#include <libpq-fe.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- cases ---- */

/* Text elements that need PostgreSQL's quoting; NULL is a NULL element. */
static const char *const tricky[] = {
    "plain", "a\"quote", "back\\slash", "\\\"", "com,ma", "{brace", "brace}", "{}", " lead and trail ",
    "", "NULL", NULL, "null", "h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80", "tab\there", "a\\",
    "\"", "end\\\\",
};
#define N_TRICKY (sizeof tricky / sizeof *tricky)

#define N_MANY 10000

static char *many_text(size_t i)
{
    char *s = xmalloc(40);
    snprintf(s, 40, i % 7 ? "user:%zu" : "q\"%zu\\,{}", i);
    return s;
}

/* ---- a reader of one-dimensional literals, PostgreSQL's rules ---- */

/* The elements of lit, NULL for a NULL element, into a new array (*n its
 * length); NULL when lit is not a well-formed literal. */
static char **parse(const char *lit, size_t *n)
{
    size_t len = strlen(lit), cap = 16;
    char **out = xmalloc(cap * sizeof *out);
    *n = 0;
    if (len < 2 || lit[0] != '{' || lit[len - 1] != '}') {
        free(out);
        return NULL;
    }
    const char *p = lit + 1;
    if (*p == '}')
        return out;
    for (;;) {
        char *e = xmalloc(len + 1);
        size_t k = 0;
        bool quoted = *p == '"';
        if (quoted) {
            for (p++; *p != '"'; p++) {
                if (*p == '\0')
                    goto bad;
                if (*p == '\\')
                    p++;
                e[k++] = *p;
            }
            p++;
        } else {
            while (*p != ',' && *p != '}' && *p != '\0') {
                if (*p == '"' || *p == '\\' || *p == '{' || *p == ' ')
                    goto bad; /* unquoted specials: PostgreSQL refuses or reads otherwise */
                e[k++] = *p++;
            }
        }
        e[k] = '\0';
        if (!quoted && strcmp(e, "NULL") == 0) {
            free(e);
            e = NULL;
        }
        if (*n == cap)
            out = xrealloc(out, (cap *= 2) * sizeof *out);
        out[(*n)++] = e;
        if (*p == '}' && p[1] == '\0')
            return out;
        if (*p != ',')
            goto bad_after;
        p++;
        continue;
    bad:
        free(e);
    bad_after:
        for (size_t i = 0; i < *n; i++)
            free(out[i]);
        free(out);
        return NULL;
    }
}

static void free_parsed(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static bool same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* ---- without a database ---- */

static void test_literals(void)
{
    struct pgarray a = PGARRAY_INIT;
    char *s = pgarray_finish(&a);
    CHECK_STR(s, "{}", "issue 13: the empty array is {}");
    free(s);
    s = pgarray_of_int64(NULL, 0);
    CHECK_STR(s, "{}", "issue 13: no numbers is {}");
    free(s);

    int64_t nums[] = {INT64_MIN, INT64_MAX, 0, -1, 42};
    s = pgarray_of_int64(nums, 5);
    CHECK_STR(s, "{-9223372036854775808,9223372036854775807,0,-1,42}", "issue 13: int64 min and max, 0, -1");
    free(s);

    s = pgarray_of_text(tricky, N_TRICKY);
    CHECK_STR(s,
              "{\"plain\",\"a\\\"quote\",\"back\\\\slash\",\"\\\\\\\"\",\"com,ma\",\"{brace\",\"brace}\","
              "\"{}\",\" lead and trail \",\"\",\"NULL\",NULL,\"null\","
              "\"h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80\",\"tab\there\",\"a\\\\\",\"\\\"\","
              "\"end\\\\\\\\\"}",
              "issue 13: every text element quoted, \\ before \" and \\, NULL unquoted, \"NULL\" quoted");
    size_t n;
    char **back = parse(s, &n);
    CHECK(back != NULL, "issue 13: the text literal reads back by the array-input rules");
    CHECK_INT(back ? n : 0, N_TRICKY, "issue 13: as many elements back as added");
    for (size_t i = 0; back && i < n && i < N_TRICKY; i++)
        CHECK(same(back[i], tricky[i]), "issue 13: element %zu reads back as added (\"%s\")", i,
              tricky[i] ? tricky[i] : "NULL element");
    free_parsed(back, n);
    free(s);

    pgarray_add_text(&a, "NULL");
    pgarray_add_null(&a);
    pgarray_add_text(&a, NULL);
    s = pgarray_finish(&a);
    CHECK_STR(s, "{\"NULL\",NULL,NULL}", "issue 13: the text NULL is not a NULL element, a NULL pointer is");
    free(s);

    pgarray_add_bool(&a, true);
    pgarray_add_bool(&a, false);
    s = pgarray_finish(&a);
    CHECK_STR(s, "{t,f}", "issue 13: booleans as t and f");
    free(s);

    pgarray_add_text(&a, "dropped");
    pgarray_reset(&a);
    pgarray_add_int64(&a, 7);
    CHECK_INT(pgarray_count(&a), 1, "issue 13: a reset builder starts again from nothing");
    s = pgarray_finish(&a);
    CHECK_STR(s, "{7}", "issue 13: and builds a new literal");
    free(s);
}

static void test_float8(void)
{
    struct pgarray a = PGARRAY_INIT;
    double exact[] = {0.1, 1.0 / 3.0, -2.5e-300, 1.7976931348623157e308, 5e-324, 0.0};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        pgarray_add_float8(&a, exact[i], PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, NAN, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, INFINITY, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, -INFINITY, 3);
    char *s = pgarray_finish(&a);
    size_t n;
    char **back = parse(s, &n);
    CHECK_INT(back ? n : 0, 9, "issue 13: nine float8 elements");
    for (size_t i = 0; back && i < 6 && i < n; i++)
        CHECK(strtod(back[i], NULL) == exact[i], "issue 13: float8 %zu (%.17g) goes exactly", i, exact[i]);
    CHECK(back && n == 9 && strcmp(back[6], "NaN") == 0 && strcmp(back[7], "Infinity") == 0 &&
              strcmp(back[8], "-Infinity") == 0,
          "issue 13: NaN and the infinities spelled as PostgreSQL reads them");
    free_parsed(back, n);
    free(s);

    pgarray_add_float8(&a, 1000.0 / 3.0, 3);
    pgarray_add_float8(&a, 1e300, 3);
    s = pgarray_finish(&a);
    char want[400];
    snprintf(want, sizeof want, "{333.333,%.3f}", 1e300);
    CHECK(strlen(want) > 300, "issue 13: (1e300 with 3 decimals is over 300 characters)");
    CHECK_STR(s, want, "issue 13: %%.3f as asked, and 1e300 with 3 decimals whole, never cut short");
    free(s);
}

static void test_many(void)
{
    struct pgarray a = PGARRAY_INIT;
    char *want[N_MANY];
    for (size_t i = 0; i < N_MANY; i++) {
        want[i] = many_text(i);
        pgarray_add_text(&a, want[i]);
    }
    CHECK_INT(pgarray_count(&a), N_MANY, "issue 13: 10,000 elements counted");
    char *s = pgarray_finish(&a);
    size_t n;
    char **back = parse(s, &n);
    CHECK_INT(back ? n : 0, N_MANY, "issue 13: 10,000 text elements read back");
    size_t bad = 0;
    for (size_t i = 0; back && i < n; i++)
        bad += !same(back[i], want[i]);
    CHECK_INT(bad, 0, "issue 13: each of the 10,000 reads back as added");
    free_parsed(back, n);
    free(s);
    for (size_t i = 0; i < N_MANY; i++)
        free(want[i]);

    int64_t *nums = xmalloc(N_MANY * sizeof *nums);
    for (size_t i = 0; i < N_MANY; i++)
        nums[i] = (int64_t)i * 922337203685477LL - INT64_MAX / 2;
    s = pgarray_of_int64(nums, N_MANY);
    back = parse(s, &n);
    bad = 0;
    for (size_t i = 0; back && i < n; i++)
        bad += strtoll(back[i], NULL, 10) != nums[i];
    CHECK(back && n == N_MANY && bad == 0, "issue 13: 10,000 int64 elements read back as added");
    free_parsed(back, n);
    free(s);
    free(nums);
}

/* ---- through PostgreSQL ---- */

/* The first column of the single-row answer to sql with $1 = lit, as a
 * number; -1 when the statement failed. */
static long long scalar(PGconn *conn, const char *sql, const char *lit)
{
    PGresult *res = PQexecParams(conn, sql, 1, NULL, &lit, NULL, NULL, 0);
    long long v = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    else
        printf("#   %.300s\n", PQerrorMessage(conn)); /* the literal is in it: cut */
    PQclear(res);
    return v;
}

/* Sends lit as $1::TYPE[] and compares what PostgreSQL read: its
 * array_length, and each element as text (NULL as NULL) against want. */
static void roundtrip(PGconn *conn, const char *type, const char *lit, const char *const *want, size_t n,
                      const char *what)
{
    char sql[256];
    snprintf(sql, sizeof sql, "select coalesce(array_length($1::%s[], 1), 0)", type);
    CHECK_INT(scalar(conn, sql, lit), n, "issue 13: %s: array_length as many as added", what);
    snprintf(sql, sizeof sql, "select x::text from unnest($1::%s[]) with ordinality as u(x, i) order by i", type);
    PGresult *res = PQexecParams(conn, sql, 1, NULL, &lit, NULL, NULL, 0);
    if (!CHECK(PQresultStatus(res) == PGRES_TUPLES_OK, "issue 13: %s: PostgreSQL reads it as %s[]", what, type)) {
        printf("#   %.300s\n", PQerrorMessage(conn)); /* the literal is in it: cut */
        PQclear(res);
        return;
    }
    size_t bad = 0, rows = (size_t)PQntuples(res);
    for (size_t i = 0; i < rows && i < n; i++) {
        const char *got = PQgetisnull(res, (int)i, 0) ? NULL : PQgetvalue(res, (int)i, 0);
        if (!same(got, want[i]) && bad++ < 5)
            printf("#   element %zu: got %s, added %s\n", i, got ? got : "NULL", want[i] ? want[i] : "NULL");
    }
    CHECK(rows == n && bad == 0, "issue 13: %s: every element as added, NULLs and all", what);
    PQclear(res);
}

static void test_database(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    if (!CHECK(PQstatus(conn) == CONNECTION_OK, "the round trip connects to PostgreSQL")) {
        printf("#   %s\n", PQerrorMessage(conn));
        PQfinish(conn);
        return;
    }
    /* PostgreSQL then prints a float8 in its shortest exact form. */
    PGresult *r = PQexec(conn, "set extra_float_digits = 1");
    PQclear(r);

    char *s = pgarray_of_text(tricky, N_TRICKY);
    roundtrip(conn, "text", s, tricky, N_TRICKY, "quotes, backslashes, commas, braces, spaces, \"\", NULL, UTF-8");
    free(s);

    s = pgarray_of_text(NULL, 0);
    roundtrip(conn, "text", s, NULL, 0, "the empty array");
    free(s);

    char *many[N_MANY];
    for (size_t i = 0; i < N_MANY; i++)
        many[i] = many_text(i);
    s = pgarray_of_text((const char *const *)many, N_MANY);
    roundtrip(conn, "text", s, (const char *const *)many, N_MANY, "10,000 text elements");
    free(s);
    for (size_t i = 0; i < N_MANY; i++)
        free(many[i]);

    int64_t nums[] = {INT64_MIN, INT64_MAX, 0, -1};
    const char *numtext[] = {"-9223372036854775808", "9223372036854775807", "0", "-1"};
    s = pgarray_of_int64(nums, 4);
    roundtrip(conn, "bigint", s, numtext, 4, "int64 min and max");
    free(s);

    struct pgarray a = PGARRAY_INIT;
    pgarray_add_float8(&a, 0.1, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, 1.0 / 3.0, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, 333.3333, 3);
    pgarray_add_null(&a);
    pgarray_add_float8(&a, NAN, PGARRAY_FLOAT8_EXACT);
    pgarray_add_float8(&a, -INFINITY, PGARRAY_FLOAT8_EXACT);
    s = pgarray_finish(&a);
    const char *ftext[] = {"0.1", "0.3333333333333333", "333.333", NULL, "NaN", "-Infinity"};
    roundtrip(conn, "float8", s, ftext, 6, "float8 exact, 3 decimals, NULL, NaN, -Infinity");
    free(s);

    pgarray_add_bool(&a, true);
    pgarray_add_null(&a);
    pgarray_add_bool(&a, false);
    s = pgarray_finish(&a);
    const char *btext[] = {"true", NULL, "false"};
    roundtrip(conn, "boolean", s, btext, 3, "booleans and a NULL");
    free(s);
    PQfinish(conn);
}

int main(int argc, char **argv)
{
    test_literals();
    test_float8();
    test_many();
    if (argc > 1)
        test_database(argv[1]);
    return unit_done();
}

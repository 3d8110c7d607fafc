/* cli/resjson.c — see resjson.h. */
#include "cli/resjson.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Type OIDs of pg_type (stable across versions). */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_JSON 114
#define OID_FLOAT4 700
#define OID_FLOAT8 701
#define OID_NUMERIC 1700
#define OID_JSONB 3802

/* One value; its text when it does not read as its type claims. */
static json_t *value(const PGresult *res, int i, int c)
{
    if (PQgetisnull(res, i, c))
        return json_null();
    const char *v = PQgetvalue(res, i, c);
    char *end = NULL;
    switch (PQftype(res, c)) {
    case OID_BOOL:
        return json_boolean(strcmp(v, "t") == 0);
    case OID_INT2:
    case OID_INT4:
    case OID_INT8: {
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno == 0 && end != v && *end == '\0')
            return json_integer((json_int_t)n);
        break;
    }
    case OID_FLOAT4:
    case OID_FLOAT8:
    case OID_NUMERIC: {
        errno = 0;
        double d = strtod(v, &end);
        if (errno == 0 && end != v && *end == '\0' && isfinite(d))
            return json_real(d); /* NaN and Infinity stay text */
        break;
    }
    case OID_JSON:
    case OID_JSONB: {
        json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
        if (j != NULL)
            return j;
        break;
    }
    default:
        break;
    }
    return json_string(v);
}

json_t *resjson_row(const PGresult *res, int i)
{
    json_t *o = json_object();
    for (int c = 0; o != NULL && c < PQnfields(res); c++) {
        json_t *v = value(res, i, c);
        if (v == NULL || json_object_set_new(o, PQfname(res, c), v) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

json_t *resjson_rows(const PGresult *res)
{
    json_t *a = json_array();
    for (int i = 0; a != NULL && i < PQntuples(res); i++) {
        json_t *o = resjson_row(res, i);
        if (o == NULL || json_array_append_new(a, o) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

int resjson_print(json_t *v, FILE *out)
{
    int rc = v != NULL && json_dumpf(v, out, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0 && fputc('\n', out) != EOF
                     && fflush(out) == 0
                 ? 0
                 : -1;
    json_decref(v);
    return rc;
}

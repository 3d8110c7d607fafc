/* dispatch/stats.c — see stats.h. */
#include "dispatch/stats.h"

#include <string.h>

/* The counters in column order, so that JSON and addition share one list. */
#define STAGE_FIELDS(X) X(stages_executed) X(runs) X(run_usec) X(succeeded) X(failed) \
    X(tempfailed) X(strikes) X(requeued)
#define DISPATCH_FIELDS(X) X(claims) X(claimed) X(wakeups) X(notifications) \
    X(workers_started) X(workers_exited) X(bodies_collected)

bool stage_delta_any(const struct stage_delta *d)
{
#define NONZERO(f) if (d->f) return true;
    STAGE_FIELDS(NONZERO)
    return false;
}

bool dispatch_delta_worth_writing(const struct dispatch_delta *d)
{
    /* claims and wakeups alone are the heartbeat's own bookkeeping */
    return d->claimed || d->notifications || d->workers_started || d->workers_exited || d->bodies_collected;
}

bool dispatch_delta_any(const struct dispatch_delta *d)
{
    DISPATCH_FIELDS(NONZERO)
#undef NONZERO
    return false;
}

static int set_counter(json_t *obj, const char *key, int64_t v)
{
    if (v == 0)
        return 0;
    return json_object_set_new(obj, key, json_integer((json_int_t)v));
}

int stage_delta_to_json(const char *name, const struct stage_delta *d, json_t *arr)
{
    json_t *obj = json_object();
    int rc = 0;
    if (obj == NULL)
        return -1;
    rc |= json_object_set_new(obj, "stage", json_string(name));
#define SET(f) rc |= set_counter(obj, #f, d->f);
    STAGE_FIELDS(SET)
    if (rc != 0) {
        json_decref(obj);
        return -1;
    }
    return json_array_append_new(arr, obj);
}

json_t *dispatch_delta_to_json(const struct dispatch_delta *d)
{
    json_t *obj = json_object();
    int rc = 0;
    if (obj == NULL)
        return NULL;
    DISPATCH_FIELDS(SET)
#undef SET
    if (rc != 0) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

void stage_delta_add(struct stage_delta *a, const struct stage_delta *b)
{
#define ADD(f) a->f += b->f;
    STAGE_FIELDS(ADD)
}

void dispatch_delta_add(struct dispatch_delta *a, const struct dispatch_delta *b)
{
    DISPATCH_FIELDS(ADD)
#undef ADD
}

/* test_tube.c — tube name validation, the FNV-1a 64 hash and the partition
 * against the published vectors in testdata/tube-hash-vectors.json (issue
 * 14, T-01..T-04, T-14, T-30), which scripts/gen-tube-vectors computed with
 * an implementation of its own; pgtap/50-tube-hash.sql checks the same file
 * against pepsi.tube_hash. */
#include "unit.h"

#include "lib/tube.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>

#define VECTORS "testdata/tube-hash-vectors.json"

static void check_valid(json_t *v, json_t *counts)
{
    const char *name = json_string_value(json_object_get(v, "name"));
    size_t n = json_string_length(json_object_get(v, "name"));
    const char *want = json_string_value(json_object_get(v, "hash"));
    CHECK(name != NULL && want != NULL, "vector has a name and a hash");
    if (name == NULL || want == NULL)
        return;
    CHECK(tube_name_valid(name, n), "T-02: \"%.40s\" (%zu bytes) is a valid tube name", name, n);
    uint64_t h = tube_hash(name, n);
    char got[24];
    snprintf(got, sizeof got, "%" PRIu64, h);
    CHECK_STR(got, want, "T-01, T-03, T-14: fnv1a64(\"%.40s\") (%zu bytes)", name, n);
    size_t i;
    json_t *c;
    json_array_foreach(counts, i, c) {
        char key[16];
        snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT, json_integer_value(c));
        json_t *p = json_object_get(json_object_get(v, "partition"), key);
        CHECK(json_is_integer(p), "vector \"%.40s\" has a partition for count %s", name, key);
        CHECK_INT(tube_partition(h, (uint32_t)json_integer_value(c)), json_integer_value(p),
                  "T-01, T-14: partition(\"%.40s\", %s)", name, key);
    }
}

/* T-42: the router's only inputs are the name's bytes and the stored
 * topology's partition count; the types leave no way in for the number
 * of live runners (a third parameter, or a count of runners in place of
 * the partition count's type, fails here). */
static void check_router_inputs(void)
{
    CHECK(_Generic(&tube_hash, uint64_t(*)(const char *, size_t): true, default: false),
          "T-42: tube_hash(name, length) reads the name's bytes only");
    CHECK(_Generic(&tube_partition, uint32_t(*)(uint64_t, uint32_t): true, default: false),
          "T-42: tube_partition(hash, partition count): no input for the number of live runners");
    uint64_t h = tube_hash("job.17", 6);
    CHECK_INT(tube_partition(h, 256), (int64_t)(h % 256), "T-42: partition(\"job.17\", 256) is hash mod 256");
}

int main(void)
{
    json_error_t err;
    json_t *all = json_load_file(VECTORS, 0, &err);
    CHECK(all != NULL, "issue 14: " VECTORS " loads (%s)", all ? "ok" : err.text);
    if (all == NULL)
        return unit_done();
    CHECK_STR(json_string_value(json_object_get(all, "algorithm")), TUBE_HASH_NAME,
              "the vectors are for this build's hash");
    json_t *counts = json_object_get(all, "counts");
    json_t *valid = json_object_get(all, "valid");
    json_t *invalid = json_object_get(all, "invalid");
    CHECK(json_array_size(valid) >= 40, "T-30: at least 40 valid vectors (%zu)", json_array_size(valid));
    CHECK(json_array_size(invalid) >= 10, "T-02: at least 10 invalid names (%zu)", json_array_size(invalid));

    size_t i, longest = 0;
    json_t *v;
    json_array_foreach(valid, i, v) {
        check_valid(v, counts);
        size_t n = json_string_length(json_object_get(v, "name"));
        if (n > longest)
            longest = n;
    }
    CHECK_INT(longest, TUBE_NAME_MAX, "T-30: the vectors include a name of the maximum length");

    json_array_foreach(invalid, i, v) {
        json_t *name = json_object_get(v, "name");
        CHECK(!tube_name_valid(json_string_value(name), json_string_length(name)),
              "T-02: \"%.40s\" is refused: %s", json_string_value(name),
              json_string_value(json_object_get(v, "reason")));
    }

    /* Things JSON strings cannot carry or the file does not cover. */
    CHECK(!tube_name_valid("a\0b", 3), "T-02: a NUL byte inside the name is refused");
    CHECK(!tube_name_valid(NULL, 0), "a NULL name is refused");
    CHECK(tube_name_valid("ab", 1), "the length given is the name: \"a\" of \"ab\"");
    CHECK(tube_hash("ab", 1) == tube_hash("a", 1), "T-03: the hash reads exactly n bytes");
    CHECK(tube_hash("a", 1) != tube_hash("A", 1), "T-03: no case folding");
    CHECK(tube_hash("", 0) == TUBE_FNV_OFFSET_BASIS, "FNV-1a of no bytes is the offset basis");
    CHECK(tube_partition(UINT64_MAX, 1024) == 1023, "T-01: the partition treats the hash as unsigned");
    check_router_inputs();
    json_decref(all);
    return unit_done();
}

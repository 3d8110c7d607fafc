/* test_topology.c — how a runner judges the stored topology against its
 * configuration (issue 14, T-08, T-10, T-41), without a database: the
 * answers of pepsi.topology_check are built by hand. e2e 63-owner-slot.t
 * runs the same rules against a real one. */
#include "unit.h"

#include "lib/topology.h"
#include "lib/util.h"

#include <stdlib.h>
#include <string.h>

#define FP "95c138cc5289c357f2b096a0f941a8a03bed82fb871ed99f32cc5e83ff3b76d4"

/* An answer with no row (n_rows 0) or one: count, hash, version, fp, owned,
 * shard (NULL: not a shard, issue 18). */
static PGresult *answer_shard(int n_rows, const char *count, const char *hash, const char *fp, const char *owned,
                              const char *shard)
{
    static const char *const names[] = {"partition_count", "hash_name", "version", "fingerprint", "slot_partitions",
                                        "shard"};
    PGresAttDesc att[6];
    memset(att, 0, sizeof att);
    for (int c = 0; c < 6; c++) {
        att[c].name = (char *)names[c];
        att[c].typid = 25;
        att[c].typlen = -1;
        att[c].atttypmod = -1;
    }
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    if (!res || !PQsetResultAttrs(res, 6, att))
        abort();
    if (n_rows == 1) {
        const char *v[] = {count, hash, "3", fp, owned, shard};
        for (int c = 0; c < 6; c++)
            if (!PQsetvalue(res, 0, c, (char *)v[c], v[c] ? (int)strlen(v[c]) : -1))
                abort();
    }
    return res;
}

static PGresult *answer(int n_rows, const char *count, const char *hash, const char *fp, const char *owned)
{
    return answer_shard(n_rows, count, hash, fp, owned, NULL);
}

static int judge(PGresult *res, int slot, int count, const char *fp)
{
    struct conf conf;
    memset(&conf, 0, sizeof conf);
    conf.owner_slot = slot;
    conf.partition_count = count;
    conf.topology_fingerprint = (char *)fp;
    int code = topology_judge(NULL, res, &conf, "test");
    PQclear(res);
    return code;
}

int main(void)
{
    CHECK_INT(judge(answer(0, 0, 0, 0, 0), 0, 0, NULL), 0, "no topology: slot 0, configured for none, serves");
    CHECK_INT(judge(answer(0, 0, 0, 0, 0), 1, 0, NULL), EXIT_CONFIG, "issue 14: no topology: slot 1 refuses (78)");
    CHECK_INT(judge(answer(0, 0, 0, 0, 0), 0, 256, NULL), EXIT_CONFIG,
              "T-41: no topology but PARTITION_COUNT set: refuses (78)");
    CHECK_INT(judge(answer(0, 0, 0, 0, 0), 0, 0, FP), EXIT_CONFIG,
              "T-08: no topology but TOPOLOGY_FINGERPRINT set: refuses (78)");

    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "128"), 1, 0, NULL), 0, "a topology, nothing configured: serves");
    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "128"), 1, 256, FP), 0, "T-08: count and fingerprint match: serves");
    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "128"), 1, 0,
                    "95C138CC5289C357F2B096A0F941A8A03BED82FB871ED99F32CC5E83FF3B76D4"),
              0, "T-08: the fingerprint compares without regard to hex case");
    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "128"), 1, 1024, NULL), EXIT_CONFIG,
              "T-41: PARTITION_COUNT 1024 against 256: refuses (78)");
    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "128"), 1, 0, "00"), EXIT_CONFIG,
              "T-08: another fingerprint: refuses (78)");
    CHECK_INT(judge(answer(1, "256", "xxh64", FP, "128"), 1, 0, NULL), EXIT_CONFIG,
              "T-41: a hash this build does not know: refuses (78)");
    CHECK_INT(judge(answer(1, "256", "fnv1a64", FP, "0"), 5, 0, NULL), EXIT_CONFIG,
              "a slot that owns no partition: refuses (78)");
    CHECK_INT(judge(answer_shard(1, "256", "fnv1a64", FP, "128", "1"), 0, 0, NULL), EXIT_CONFIG,
              "issue 18: a shard without TOPOLOGY_FINGERPRINT: refuses (78)");
    CHECK_INT(judge(answer_shard(1, "256", "fnv1a64", FP, "128", "1"), 0, 0, "00"), EXIT_CONFIG,
              "issue 18: a shard whose fingerprint is not the configured (router's) one: refuses (78)");
    CHECK_INT(judge(answer_shard(1, "256", "fnv1a64", FP, "128", "1"), 0, 0, FP), 0,
              "issue 18: a shard with the router's fingerprint: serves");
    CHECK_INT(judge(PQmakeEmptyPGresult(NULL, PGRES_FATAL_ERROR), 0, 0, NULL), 1,
              "a failed read without PX041 is an error (1), not a verdict");

    return unit_done();
}

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
 * and the owned partitions (parts; NULL: "{0}"). */
static PGresult *answer_parts(int n_rows, const char *count, const char *hash, const char *fp, const char *owned,
                              const char *parts)
{
    static const char *const names[] = {"partition_count", "hash_name", "version", "fingerprint", "slot_partitions",
                                        "partitions"};
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
        const char *v[] = {count, hash, "3", fp, owned, parts ? parts : "{0}"};
        for (int c = 0; c < 6; c++)
            if (!PQsetvalue(res, 0, c, (char *)v[c], (int)strlen(v[c])))
                abort();
    }
    return res;
}

static PGresult *answer(int n_rows, const char *count, const char *hash, const char *fp, const char *owned)
{
    return answer_parts(n_rows, count, hash, fp, owned, NULL);
}

/* The partitions topology_judge hands back for an answer (NULL: all). */
static char *judged_parts(PGresult *res, int slot, int *code)
{
    struct conf conf;
    memset(&conf, 0, sizeof conf);
    conf.owner_slot = slot;
    char *parts = (char *)"unset";
    *code = topology_judge(NULL, res, &conf, "test", &parts);
    PQclear(res);
    return parts;
}

static int judge(PGresult *res, int slot, int count, const char *fp)
{
    struct conf conf;
    memset(&conf, 0, sizeof conf);
    conf.owner_slot = slot;
    conf.partition_count = count;
    conf.topology_fingerprint = (char *)fp;
    int code = topology_judge(NULL, res, &conf, "test", NULL);
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
    CHECK_INT(judge(PQmakeEmptyPGresult(NULL, PGRES_FATAL_ERROR), 0, 0, NULL), 1,
              "a failed read without PX041 is an error (1), not a verdict");

    /* issue 14: the slot's partitions, as one int[] literal of lib/pgarray. */
    char *lit = NULL;
    CHECK_INT((int)topology_partitions_literal("{3,17,255}", &lit), 3, "issue 14: three partitions read");
    CHECK_STR(lit, "{3,17,255}", "issue 14: ... and written again by lib/pgarray");
    free(lit);
    lit = NULL;
    CHECK_INT((int)topology_partitions_literal("{}", &lit), 0, "issue 14: no partition: an empty list");
    CHECK_STR(lit, "{}", "issue 14: ... the empty literal");
    free(lit);
    lit = NULL;
    const char *bad[] = {"", "3,4", "{3,,4}", "{-1}", "{65536}", "{3,4", "{3}x", "{a}", "{NULL}", "{3,}", NULL};
    for (int i = 0; i < 11; i++)
        CHECK_INT((int)topology_partitions_literal(bad[i], &lit), -1, "issue 14: not a list of partitions: %s",
                  bad[i] ? bad[i] : "NULL");
    CHECK(lit == NULL, "issue 14: nothing allocated for a bad list");
    int code = -1;
    char *parts = judged_parts(answer_parts(1, "4", "fnv1a64", FP, "2", "{1,3}"), 1, &code);
    CHECK_INT(code, 0, "issue 14: a slot owning 2 of 4 partitions serves");
    CHECK_STR(parts, "{1,3}", "issue 14: ... with its partitions as the claims' literal");
    free(parts);
    parts = judged_parts(answer_parts(1, "4", "fnv1a64", FP, "4", "{0,1,2,3}"), 0, &code);
    CHECK_INT(code, 0, "issue 14: a slot owning every partition serves");
    CHECK(parts == NULL, "issue 14: ... with NULL partitions: all");
    parts = judged_parts(answer(0, 0, 0, 0, 0), 0, &code);
    CHECK(code == 0 && parts == NULL, "issue 14: no topology: slot 0 serves every partition (NULL)");
    parts = judged_parts(answer_parts(1, "4", "fnv1a64", FP, "2", "{1}"), 1, &code);
    CHECK_INT(code, 1, "issue 14: a list that does not match the slot's count is an error (1)");
    CHECK(parts == NULL, "issue 14: ... and hands back nothing");
    return unit_done();
}

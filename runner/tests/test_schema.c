/* test_schema.c — the API level verdict (D-12, issue 15): a build runs
 * against a schema whose declared range (pepsi.schema_api(): oldest ..
 * level) covers its level; older and newer schemas are told apart; the
 * dispatcher's token for its workers is parsed strictly, and a token that
 * does not cover a worker's own build makes that worker check itself. */
#include "unit.h"

#include "lib/schema.h"

#include <stdio.h>

static void test_verdicts(void)
{
    CHECK_INT(schema_api_verdict(3, (struct schema_api){3, 1}), SCHEMA_OK, "D-12: level 3 of range 1..3 runs");
    CHECK_INT(schema_api_verdict(1, (struct schema_api){3, 1}), SCHEMA_OK,
              "issue 15: an older build runs against a schema that still serves its level (additive change)");
    CHECK_INT(schema_api_verdict(2, (struct schema_api){2, 2}), SCHEMA_OK, "D-12: level 2 of range 2..2 runs");
    CHECK_INT(schema_api_verdict(4, (struct schema_api){3, 1}), SCHEMA_OLDER,
              "D-12: a build for level 4 refuses a schema serving at most 3 (older: run sqitch deploy)");
    CHECK_INT(schema_api_verdict(1, (struct schema_api){3, 2}), SCHEMA_NEWER,
              "D-12: a build for level 1 refuses a schema that serves only 2..3 (newer: upgrade the program)");
}

static void test_tokens(void)
{
    int b = schema_build_level();
    char tok[64];
    snprintf(tok, sizeof tok, "%d:%d", b, b);
    CHECK_INT(schema_token_verdict(tok), SCHEMA_OK, "issue 19: the dispatcher's range %s covers this build", tok);
    snprintf(tok, sizeof tok, "%d:0", b + 5);
    CHECK_INT(schema_token_verdict(tok), SCHEMA_OK, "issue 15: a wider range from a newer dispatcher covers it (%s)", tok);
    snprintf(tok, sizeof tok, "%d:%d", b + 2, b + 1);
    CHECK_INT(schema_token_verdict(tok), SCHEMA_NEWER, "a range above this build does not cover it (%s)", tok);
    snprintf(tok, sizeof tok, "%d:0", b - 1);
    CHECK_INT(schema_token_verdict(tok), SCHEMA_OLDER, "a range below this build does not cover it (%s)", tok);
    const char *bad[] = {NULL, "", ":", "1", "1:", ":1", "a:b", "1:1x", " 1:1", "-1:0", "+1:0", "1:2",
                         "99999999999999999999:1", "0123456789abcdef"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(schema_token_verdict(bad[i]), SCHEMA_ERROR, "a malformed token \"%s\" is not trusted",
                  bad[i] ? bad[i] : "(null)");
    CHECK_STR(schema_verified_token(), "", "no token before a check found the schema compatible");
}

int main(void)
{
    test_verdicts();
    test_tokens();
    return unit_done();
}

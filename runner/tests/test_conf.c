/* test_conf.c — pepsi.conf: defaults, values, errors (file, line, key). */
#include "lib/conf.h"
#include "lib/conf_key.h"
#include "lib/conf_value.h"
#include "unit.h"

#include <jansson.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME "t.conf"
#define S(x) "[stage-" x "]\nPROGRAM = p\n"

static bool is_zero(const struct conf *c)
{
    static const struct conf zero;
    return memcmp(c, &zero, sizeof(zero)) == 0;
}

/* Loads text that must fail with an error starting with where (such as
 * "t.conf:3: ") and containing what. */
static void bad(const char *text, const char *where, const char *what, const char *name)
{
    struct conf c;
    char err[512] = "";
    memset(&c, 0xA5, sizeof(c));
    int rc = conf_load_string(text, NAME, &c, err, sizeof(err));
    CHECK_INT(rc, -1, "%s: refused", name);
    CHECK(strncmp(err, where, strlen(where)) == 0, "%s: error at \"%s\"", name, where);
    if (strncmp(err, where, strlen(where)) != 0)
        printf("#   error: %s\n", err);
    CHECK_CONTAINS(err, what, "%s: error says %s", name, what);
    CHECK(is_zero(&c), "%s: *out zeroed", name);
    conf_free(&c);
}

static int good(const char *text, struct conf *c, const char *name)
{
    char err[512] = "";
    int rc = conf_load_string(text, NAME, c, err, sizeof(err));
    CHECK_INT(rc, 0, "%s: loads", name);
    if (rc != 0)
        printf("#   error: %s\n", err);
    return rc;
}

static void test_defaults(void)
{
    struct conf c;
    if (good("", &c, "defaults: an empty file") != 0)
        return;
    CHECK_STR(c.path, NAME, "the name stands in for the path");
    CHECK(c.allow_fusion == true, "D-126: ALLOW_FUSION defaults to yes");
    CHECK(c.share_telemetry == false, "SHARE_TELEMETRY defaults to no");
    CHECK_INT(c.max_hops, 1000, "issue 12: MAX_HOPS defaults to 1000");
    CHECK_STR(c.conninfo, "", "CONNINFO defaults to \"\" (libpq defaults)");
    CHECK(c.worker_conninfo == NULL, "issue 11: WORKER_CONNINFO is unset by default");
    CHECK(c.worker_synchronous_commit == false, "D-77: WORKER_SYNCHRONOUS_COMMIT defaults to no");
    CHECK_INT(c.connect_timeout_ms, 10000, "CONNECT_TIMEOUT defaults to 10 s");
    CHECK(c.config_file == NULL, "D-21: CONFIG_FILE is unset by default");
    CHECK_INT(c.poll_interval_ms, 5000, "D-29: POLL_INTERVAL defaults to 5 s");
    CHECK_INT(c.stats_interval_ms, 10000, "D-138: STATS_INTERVAL defaults to 10 s");
    CHECK_INT(c.owner_slot, 0, "OWNER_SLOT defaults to 0");
    CHECK_INT(c.partition_count, 0, "issue 14: PARTITION_COUNT defaults to 0 (not checked)");
    CHECK(c.topology_fingerprint == NULL, "issue 14: TOPOLOGY_FINGERPRINT is unset by default");
    CHECK_INT(c.lock_wait_ms, 10000, "D-15: LOCK_WAIT defaults to 10 s");
    CHECK_INT(c.cooldown_ms, 5000, "D-90: COOLDOWN defaults to 5 s");
    CHECK(c.fair_scheduling == true, "D-42: FAIR_SCHEDULING defaults to yes");
    CHECK_INT(c.fair_half_life_ms, 60000, "D-55: FAIR_HALF_LIFE defaults to 60 s");
    CHECK_INT(c.fair_fifo_percent, 10, "D-57: FAIR_FIFO_PERCENT defaults to 10");
    CHECK(c.n_stages == 0 && c.stages == NULL, "no stages");
    CHECK(c.n_ingress == 0 && c.n_beanstalk == 0, "no ingress or beanstalk keys");
    conf_free(&c);

    if (good("[stage-a]\nPROGRAM = pepsi-stage-pass\n", &c, "defaults: a minimal stage") != 0)
        return;
    CHECK_INT(c.n_stages, 1, "one stage");
    const struct stage_conf *s = &c.stages[0];
    CHECK_STR(s->name, "a", "stage name");
    CHECK_INT(s->line, 1, "stage header line");
    CHECK_STR(s->program, "pepsi-stage-pass", "D-21: PROGRAM");
    CHECK_INT(s->parallelism, 4, "D-62: PARALLELISM defaults to 4");
    CHECK_INT(s->queue_limit, 4, "D-66: QUEUE_LIMIT defaults to 4");
    CHECK_INT(s->max_messages, 0, "D-68, issue 19: MAX_MESSAGES unset (0) by default: 1000, built-ins on memory");
    CHECK_INT(s->max_rss_growth_mb, 64, "issue 19: MAX_RSS_GROWTH defaults to 64 MiB");
    CHECK_INT(s->worker_idle_timeout_ms, 5000, "D-65: WORKER_IDLE_TIMEOUT defaults to 5 s");
    CHECK_INT(s->max_runtime_ms, 600000, "D-82: MAX_RUNTIME defaults to 10 min");
    CHECK_INT(s->max_lifetime_ms, 120LL * 3600 * 1000, "D-107: MAX_LIFETIME defaults to 120 h");
    CHECK(s->bounce_stage == NULL, "D-109: BOUNCE_STAGE unset by default");
    CHECK_INT(s->fusion, -1, "D-127: FUSION unset (-1) by default");
    CHECK(s->next == NULL, "NEXT unset by default");
    CHECK(s->n_own == 0 && s->own == NULL, "no own keys");
    conf_free(&c);
    CHECK(is_zero(&c), "conf_free zeroes the conf");
    conf_free(&c);
    CHECK(is_zero(&c), "conf_free twice is safe");
}

static void test_all_keys_set(void)
{
    const char *text = "[pepsi]\n"
                       "ALLOW_FUSION = no\n"
                       "SHARE_TELEMETRY = yes\n"
                       "MAX_HOPS = 50\n"
                       "[pepsi-postgres]\n"
                       "CONNINFO = host=/tmp dbname=pepsi\n"
                       "WORKER_CONNINFO = host=/tmp dbname=pepsi user=worker\n"
                       "WORKER_SYNCHRONOUS_COMMIT = on\n"
                       "CONNECT_TIMEOUT = 3s\n"
                       "[pepsi-dispatch]\n"
                       "CONFIG_FILE = /etc/pepsi/pepsi.conf\n"
                       "POLL_INTERVAL = 500ms\n"
                       "STATS_INTERVAL = 1min\n"
                       "OWNER_SLOT = 3\n"
                       "PARTITION_COUNT = 256\n"
                       "TOPOLOGY_FINGERPRINT = 95c138cc\n"
                       "LOCK_WAIT = 2s\n"
                       "COOLDOWN = 1s\n"
                       "FAIR_SCHEDULING = false\n"
                       "FAIR_HALF_LIFE = 2min\n"
                       "FAIR_FIFO_PERCENT = 100\n"
                       "[stage-a]\n"
                       "PROGRAM = /usr/bin/a\n"
                       "PARALLELISM = 1024\n"
                       "QUEUE_LIMIT = 1\n"
                       "MAX_MESSAGES = 1\n"
                       "WORKER_IDLE_TIMEOUT = 250ms\n"
                       "MAX_RUNTIME = 1h\n"
                       "MAX_LIFETIME = 2d\n"
                       "BOUNCE_STAGE = b\n"
                       "FUSION = yes\n"
                       "NEXT = b\n"
                       "[stage-b]\n"
                       "PROGRAM = b\n"
                       "FUSION = no\n";
    struct conf c;
    if (good(text, &c, "every key set") != 0)
        return;
    CHECK(!c.allow_fusion && c.share_telemetry, "D-136: [pepsi] values");
    CHECK_INT(c.max_hops, 50, "issue 12: MAX_HOPS = 50");
    CHECK_STR(c.conninfo, "host=/tmp dbname=pepsi", "CONNINFO with '=' in the value");
    CHECK_STR(c.worker_conninfo, "host=/tmp dbname=pepsi user=worker", "issue 11: WORKER_CONNINFO");
    CHECK(c.worker_synchronous_commit, "D-77: WORKER_SYNCHRONOUS_COMMIT = on");
    CHECK_INT(c.connect_timeout_ms, 3000, "CONNECT_TIMEOUT = 3s");
    CHECK_STR(c.config_file, "/etc/pepsi/pepsi.conf", "D-21: CONFIG_FILE");
    CHECK_INT(c.poll_interval_ms, 500, "POLL_INTERVAL = 500ms");
    CHECK_INT(c.stats_interval_ms, 60000, "STATS_INTERVAL = 1min");
    CHECK_INT(c.owner_slot, 3, "OWNER_SLOT = 3");
    CHECK_INT(c.partition_count, 256, "issue 14: PARTITION_COUNT = 256");
    CHECK_STR(c.topology_fingerprint, "95c138cc", "issue 14: TOPOLOGY_FINGERPRINT");
    CHECK_INT(c.lock_wait_ms, 2000, "LOCK_WAIT = 2s");
    CHECK_INT(c.cooldown_ms, 1000, "COOLDOWN = 1s");
    CHECK(!c.fair_scheduling, "D-41: FAIR_SCHEDULING = false");
    CHECK_INT(c.fair_half_life_ms, 120000, "FAIR_HALF_LIFE = 2min");
    CHECK_INT(c.fair_fifo_percent, 100, "FAIR_FIFO_PERCENT = 100");
    CHECK_INT(c.n_stages, 2, "two stages");
    if (c.n_stages == 2) {
        const struct stage_conf *a = &c.stages[0];
        CHECK_STR(a->program, "/usr/bin/a", "PROGRAM");
        CHECK_INT(a->parallelism, 1024, "PARALLELISM = 1024");
        CHECK_INT(a->queue_limit, 1, "QUEUE_LIMIT = 1");
        CHECK_INT(a->max_messages, 1, "MAX_MESSAGES = 1");
        CHECK_INT(a->worker_idle_timeout_ms, 250, "WORKER_IDLE_TIMEOUT = 250ms");
        CHECK_INT(a->max_runtime_ms, 3600000, "MAX_RUNTIME = 1h");
        CHECK_INT(a->max_lifetime_ms, 2LL * 86400000, "MAX_LIFETIME = 2d");
        CHECK_STR(a->bounce_stage, "b", "BOUNCE_STAGE = b");
        CHECK_INT(a->fusion, 1, "FUSION = yes");
        CHECK_STR(a->next, "b", "NEXT = b");
        CHECK_INT(c.stages[1].fusion, 0, "FUSION = no");
        CHECK(c.stages[1].next == NULL, "no NEXT: finished after this stage");
    }
    conf_free(&c);
}

static void test_durations(void)
{
    static const struct {
        const char *s;
        int64_t ms;
    } ok[] = {
        {"500ms", 500}, {"30s", 30000}, {"5min", 300000}, {"120h", 432000000},
        {"2d", 172800000}, {"30", 30000}, {"0", 0}, {"1.5s", 1500}, {"0.25min", 15000},
        {"1.5", 1500}, {"0.001s", 1}, {"5 min", 300000}, {"5\tmin", 300000}, {"10MS", 10},
        {"2H", 7200000}, {"1.50s", 1500}, {"007s", 7000}, {"0.5h", 1800000},
        {"106751991167d", 106751991167LL * 86400000}, {"9223372036854775807ms", INT64_MAX},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms = -1;
        int rc = conf_parse_duration(ok[i].s, &ms);
        CHECK(rc == 0 && ms == ok[i].ms, "duration \"%s\" is %lld ms", ok[i].s, (long long)ok[i].ms);
    }
    static const char *const bad_ones[] = {
        "", "5m", "5 m", "-5s", "+5s", "s", "ms", "5x", "5 s x", "5s ", " 5s", "5.s", ".5s",
        "0.5ms", "1.0001s", "1e3", "5sec", "5 ", "9223372036854775808ms", "106751991168d",
        "99999999999999999999", "1..5s", "5mins", "0x10",
    };
    for (size_t i = 0; i < sizeof(bad_ones) / sizeof(bad_ones[0]); i++) {
        int64_t ms = 42;
        int rc = conf_parse_duration(bad_ones[i], &ms);
        CHECK(rc == -1 && ms == 42, "duration \"%s\" is refused", bad_ones[i]);
    }
    int64_t ms;
    CHECK(conf_parse_duration(NULL, &ms) == -1, "duration NULL is refused");
}

static void test_bools_ints(void)
{
    static const char *const yes[] = {"yes", "YES", "true", "True", "on", "ON", "1"};
    static const char *const no[] = {"no", "No", "false", "FALSE", "off", "Off", "0"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        bool b = false, b2 = true;
        CHECK(conf_parse_bool(yes[i], &b) == 0 && b, "bool \"%s\" is true", yes[i]);
        CHECK(conf_parse_bool(no[i], &b2) == 0 && !b2, "bool \"%s\" is false", no[i]);
    }
    static const char *const bad_bools[] = {"", "y", "n", "2", "yes ", "enable", "nope"};
    for (size_t i = 0; i < sizeof(bad_bools) / sizeof(bad_bools[0]); i++) {
        bool b;
        CHECK(conf_parse_bool(bad_bools[i], &b) == -1, "bool \"%s\" is refused", bad_bools[i]);
    }
    int v = 0;
    CHECK(conf_parse_int("7", 1, 10, &v) == 0 && v == 7, "int 7 in [1,10]");
    CHECK(conf_parse_int("1", 1, 10, &v) == 0 && v == 1, "int at min");
    CHECK(conf_parse_int("10", 1, 10, &v) == 0 && v == 10, "int at max");
    CHECK(conf_parse_int("-3", -5, 0, &v) == 0 && v == -3, "negative int in range");
    CHECK(conf_parse_int("2147483647", 0, INT_MAX, &v) == 0 && v == INT_MAX, "INT_MAX");
    v = 99;
    CHECK(conf_parse_int("0", 1, 10, &v) == -1 && v == 99, "int below min refused");
    CHECK(conf_parse_int("11", 1, 10, &v) == -1, "int above max refused");
    CHECK(conf_parse_int("2147483648", 0, INT_MAX, &v) == -1, "int overflow refused");
    CHECK(conf_parse_int("99999999999999999999", 0, INT_MAX, &v) == -1, "long overflow refused");
    CHECK(conf_parse_int("", 0, 10, &v) == -1, "empty int refused");
    CHECK(conf_parse_int("5x", 0, 10, &v) == -1, "int with letters refused");
    CHECK(conf_parse_int(" 5", 0, 10, &v) == -1, "int after a blank refused");
    CHECK(conf_parse_int("+5", 0, 10, &v) == -1, "int with '+' refused");
    CHECK(conf_parse_int("5.0", 0, 10, &v) == -1, "fractional int refused");
}

static void test_value_errors(void)
{
    bad("[pepsi-dispatch]\nPOLL_INTERVAL = soon\n", NAME ":2: ",
        "key \"POLL_INTERVAL\" in [pepsi-dispatch]: invalid value \"soon\": expected a duration "
        "such as 500ms, 30s, 5min, 120h",
        "a bad duration");
    bad("[pepsi-dispatch]\n\nPOLL_INTERVAL = 5m\n", NAME ":3: ", "\"m\" is ambiguous",
        "\"5m\" is refused as ambiguous");
    bad("[pepsi-postgres]\nCONNECT_TIMEOUT = 0s\n", NAME ":2: ", "greater than 0",
        "a zero duration");
    bad("[pepsi]\nALLOW_FUSION = maybe\n", NAME ":2: ",
        "key \"ALLOW_FUSION\" in [pepsi]: invalid value \"maybe\": expected yes or no",
        "a bad boolean");
    bad("[pepsi]\nMAX_HOPS = 0\n", NAME ":2: ",
        "key \"MAX_HOPS\" in [pepsi]: invalid value \"0\": expected an integer from 1 to 100000000",
        "issue 12: MAX_HOPS 0 (no limit) is refused");
    bad("[pepsi]\nMAX_HOPS = 100000001\n", NAME ":2: ",
        "key \"MAX_HOPS\" in [pepsi]: invalid value \"100000001\": expected an integer from 1 to 100000000",
        "issue 12: MAX_HOPS above what SQL accepts is refused");
    bad("[pepsi-dispatch]\nMAX_HOPS = 10\n", NAME ":2: ", "unknown key \"MAX_HOPS\" in [pepsi-dispatch]",
        "issue 12: MAX_HOPS belongs to [pepsi], which workers read");
    bad("[pepsi-dispatch]\nFAIR_FIFO_PERCENT = 101\n", NAME ":2: ",
        "key \"FAIR_FIFO_PERCENT\" in [pepsi-dispatch]: invalid value \"101\": expected an "
        "integer from 0 to 100",
        "D-57: FAIR_FIFO_PERCENT above 100");
    bad("[pepsi-dispatch]\nOWNER_SLOT = -1\n", NAME ":2: ", "expected an integer of at least 0",
        "a negative OWNER_SLOT");
    bad("[pepsi-dispatch]\nPARTITION_COUNT = 65537\n", NAME ":2: ",
        "key \"PARTITION_COUNT\" in [pepsi-dispatch]: invalid value \"65537\": expected an integer from 0 to 65536",
        "issue 14: PARTITION_COUNT above pepsi.topology_set's 65536");
    bad(S("a") "PARALLELISM = 0\n", NAME ":3: ",
        "key \"PARALLELISM\" in [stage-a]: invalid value \"0\": expected an integer from 1 to 1024",
        "D-62: PARALLELISM 0");
    bad(S("a") "QUEUE_LIMIT = 1025\n", NAME ":3: ", "key \"QUEUE_LIMIT\"", "D-66: QUEUE_LIMIT 1025");
    bad(S("a") "MAX_MESSAGES = -1\n", NAME ":3: ", "expected an integer of at least 0",
        "D-68: MAX_MESSAGES -1");
    bad(S("a") "MAX_RSS_GROWTH = 0\n", NAME ":3: ", "expected an integer from 1 to 1048576",
        "issue 19: MAX_RSS_GROWTH 0");
    bad(S("a") "MAX_RUNTIME = 10\xc2\xa0min\n", NAME ":3: ", "key \"MAX_RUNTIME\"",
        "a duration with a non-breaking space");
    bad(S("a") "WORKER_IDLE_TIMEOUT = 0\n", NAME ":3: ", "greater than 0",
        "D-65: WORKER_IDLE_TIMEOUT 0");
    bad(S("a") "FUSION = sometimes\n", NAME ":3: ", "key \"FUSION\" in [stage-a]", "a bad FUSION");
    bad(S("a") "NEXT = -b\n", NAME ":3: ", "key \"NEXT\" in [stage-a]: invalid value \"-b\": expected a stage name",
        "NEXT with an invalid stage name");
    bad("[stage-a]\nPROGRAM =\n", NAME ":2: ", "key \"PROGRAM\" in [stage-a]: must not be empty",
        "an empty PROGRAM");
}

static void test_structure_errors(void)
{
    bad("[pepsi]\n\n[pepsy]\n", NAME ":3: ", "section [pepsy]: unknown section", "an unknown section");
    bad("[Pepsi]\n", NAME ":1: ", "section [Pepsi]: unknown section", "section names are case-sensitive");
    bad("[stage-_x]\nPROGRAM = p\n", NAME ":1: ", "section [stage-_x]: invalid stage name",
        "a stage name starting with '_'");
    bad("[stage-]\n", NAME ":1: ", "invalid stage name", "an empty stage name");
    bad("[stage-a b]\n", NAME ":1: ", "invalid stage name", "a stage name with a blank");
    bad("[stage-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n", NAME ":1: ",
        "invalid stage name", "a 64-character stage name");
    bad("[pepsi]\nALLOW_FUSION = yes\n[pepsi-dispatch]\n[pepsi]\n", NAME ":4: ",
        "section [pepsi]: appears twice (first on line 1)", "a section twice");
    bad(S("a") "\n" S("a"), NAME ":4: ", "section [stage-a]: appears twice (first on line 1)",
        "a stage section twice");
    bad("[pepsi-ingress]\n[pepsi-ingress]\n", NAME ":2: ", "appears twice", "[pepsi-ingress] twice");
    bad("[pepsi]\nALLOW_FUSION = yes\nALLOW_FUSION = no\n", NAME ":3: ",
        "key \"ALLOW_FUSION\" in [pepsi]: appears twice (first on line 2)", "a key twice");
    bad(S("a") "NEXT = a\nNEXT = a\n", NAME ":4: ",
        "key \"NEXT\" in [stage-a]: appears twice (first on line 3)", "a stage key twice");
    bad(S("a") "COMMAND = x\nCOMMAND = y\n", NAME ":4: ",
        "key \"COMMAND\" in [stage-a]: appears twice (first on line 3)", "an own key twice");
    bad("[pepsi-beanstalk]\nLISTEN = a\nLISTEN = b\n", NAME ":3: ",
        "key \"LISTEN\" in [pepsi-beanstalk]: appears twice", "a beanstalk key twice");
    bad("[pepsi]\nFOO = 1\n", NAME ":2: ", "unknown key \"FOO\" in [pepsi]", "an unknown [pepsi] key");
    bad("[pepsi-postgres]\nPOOL = 1\n", NAME ":2: ", "unknown key \"POOL\" in [pepsi-postgres]",
        "an unknown [pepsi-postgres] key");
    bad("[pepsi-dispatch]\nPOLL_INTERVALL = 1s\n", NAME ":2: ",
        "unknown key \"POLL_INTERVALL\" in [pepsi-dispatch] (did you mean POLL_INTERVAL?)",
        "an unknown [pepsi-dispatch] key with a suggestion");
    bad("[pepsi-dispatch]\nPROGRAM = x\n", NAME ":2: ", "unknown key \"PROGRAM\" in [pepsi-dispatch]",
        "a stage key in [pepsi-dispatch]");
    bad("[pepsi-dispatch]\npoll_interval = 1s\n", NAME ":2: ",
        "key \"poll_interval\" in [pepsi-dispatch]: keys are upper case", "a lower-case key");
    bad("[pepsi-dispatch]\npoll_interval = 1s\n", NAME ":2: ", "did you mean POLL_INTERVAL?",
        "a lower-case key gets a suggestion");
    bad(S("a") "Command = x\n", NAME ":3: ", "key \"Command\" in [stage-a]: keys are upper case",
        "a mixed-case own key");
    bad("[pepsi-ingress]\nlisten = x\n", NAME ":2: ", "key \"listen\" in [pepsi-ingress]",
        "a lower-case ingress key");
    bad(S("a") "MY-KEY = x\n", NAME ":3: ", "key \"MY-KEY\"", "a key with '-'");
    bad(S("a") "1KEY = x\n", NAME ":3: ", "key \"1KEY\"", "a key starting with a digit");
    bad("[pepsi]\n= yes\n", NAME ":2: ", "a value without a key in [pepsi]", "a line \"= value\"");
    bad(S("a") "MAX_RUNTIME = 1.0001s\n", NAME ":3: ", "whole milliseconds",
        "an inexact fraction says why");
    bad("ALLOW_FUSION = yes\n", NAME ":1: ", "key \"ALLOW_FUSION\": outside any section",
        "a key before any section");
}

static void test_stage_errors(void)
{
    bad("[pepsi]\n\n[stage-a]\nPARALLELISM = 2\n", NAME ":3: ", "section [stage-a]: PROGRAM is required",
        "a stage without PROGRAM names its header line");
    bad(S("a") "[stage-b]\n", NAME ":3: ", "section [stage-b]: PROGRAM is required",
        "an empty stage section");
    bad(S("a") "NEXT = zz\n", NAME ":3: ", "key \"NEXT\" in [stage-a]: no section [stage-zz]",
        "NEXT naming a stage without a section");
    bad(S("a") "PARALLELISM = 2\nBOUNCE_STAGE = gone\n", NAME ":4: ",
        "key \"BOUNCE_STAGE\" in [stage-a]: no section [stage-gone]",
        "D-108: BOUNCE_STAGE naming a stage without a section");
    bad(S("a") "BOUNCE_STAGE = x\nNEXT = y\n", NAME ":3: ", "BOUNCE_STAGE",
        "the earlier of two bad references wins");
    bad(S("a") "NEXT = y\n" S("b") "BOUNCE_STAGE = x\n", NAME ":3: ", "NEXT",
        "the first stage's bad reference wins");
    bad(S("a") "PARALELISM = 2\n", NAME ":3: ",
        "unknown key \"PARALELISM\" in [stage-a] (did you mean PARALLELISM?)",
        "a misspelt stage key is refused");
    bad(S("a") "QUEUELIMIT = 2\n", NAME ":3: ", "(did you mean QUEUE_LIMIT?)", "QUEUELIMIT");
    bad(S("a") "MAX_RUNTIEM = 2s\n", NAME ":3: ", "(did you mean MAX_RUNTIME?)",
        "a transposition is one edit");
    bad(S("a") "PROGRAMS = x\n", NAME ":3: ", "(did you mean PROGRAM?)", "PROGRAMS");
    bad(S("a") "NEXTT = a\n", NAME ":3: ", "(did you mean NEXT?)", "NEXTT");
    bad(S("a") "FUSOIN = yes\n", NAME ":3: ", "(did you mean FUSION?)", "FUSOIN");
    bad(S("a") "TEXT = yes\n", NAME ":3: ", "(did you mean NEXT?)",
        "a key one edit from NEXT is refused (TEST, two edits, is an own key)");
}

static void test_own_keys(void)
{
    const char *text = "[stage-x]\n"
                       "PROGRAM = pepsi-stage-exec\n"
                       "COMMAND = /bin/sh -c 'exit 0'\n"
                       "TIMEOUT_HINT = 3\n"
                       "TEST = a\n"
                       "HOST = h\n"
                       "EMPTY =\n"
                       "[pepsi-ingress]\n"
                       "LISTEN = 127.0.0.1:8080\n"
                       "SECRET_FILE = /etc/pepsi/secret\n"
                       "[pepsi-beanstalk]\n"
                       "PORT = 11300\n";
    struct conf c;
    if (good(text, &c, "own keys") != 0)
        return;
    const struct stage_conf *s = conf_stage(&c, "x");
    CHECK(s != NULL && s->n_own == 5, "own keys kept");
    if (s && s->n_own == 5) {
        CHECK(strcmp(s->own[0].key, "COMMAND") == 0 && strcmp(s->own[1].key, "TIMEOUT_HINT") == 0
                  && strcmp(s->own[2].key, "TEST") == 0 && strcmp(s->own[3].key, "HOST") == 0
                  && strcmp(s->own[4].key, "EMPTY") == 0,
              "own keys in file order");
        CHECK_STR(s->own[0].value, "/bin/sh -c 'exit 0'", "own value kept as text");
        CHECK_INT(s->own[0].line, 3, "own key line");
        CHECK_INT(s->own[4].line, 7, "own key line of the last");
        CHECK_STR(conf_stage_own(s, "COMMAND"), "/bin/sh -c 'exit 0'", "conf_stage_own finds COMMAND");
        CHECK_STR(conf_stage_own(s, "EMPTY"), "", "an empty own value is \"\"");
        CHECK(conf_stage_own(s, "MISSING") == NULL, "conf_stage_own of a missing key is NULL");
        CHECK(conf_stage_own(s, "PROGRAM") == NULL, "common keys are not own keys");
    }
    CHECK(c.n_ingress == 2 && strcmp(c.ingress[0].key, "LISTEN") == 0
              && strcmp(c.ingress[0].value, "127.0.0.1:8080") == 0 && c.ingress[0].line == 9
              && strcmp(c.ingress[1].key, "SECRET_FILE") == 0 && c.ingress[1].line == 10,
          "[pepsi-ingress] kept raw with lines");
    CHECK(c.n_beanstalk == 1 && strcmp(c.beanstalk[0].key, "PORT") == 0
              && strcmp(c.beanstalk[0].value, "11300") == 0 && c.beanstalk[0].line == 12,
          "[pepsi-beanstalk] kept raw with lines");
    conf_free(&c);
}

static void test_stages_in_order(void)
{
    const char *text = "[stage-c]\nPROGRAM = pc\nNEXT = a\n"
                       "[pepsi]\n"
                       "[stage-a]\nPROGRAM = pa\nNEXT = b.2\nBOUNCE_STAGE = c\n"
                       "[stage-b.2]\nPROGRAM = pb\nNEXT = c\n";
    struct conf c;
    if (good(text, &c, "D-23: three stages") != 0)
        return;
    CHECK(c.n_stages == 3 && strcmp(c.stages[0].name, "c") == 0 && strcmp(c.stages[1].name, "a") == 0
              && strcmp(c.stages[2].name, "b.2") == 0,
          "D-23: stages in file order");
    CHECK(c.n_stages == 3 && c.stages[0].line == 1 && c.stages[1].line == 5 && c.stages[2].line == 9,
          "stage header lines");
    const struct stage_conf *a = conf_stage(&c, "a");
    CHECK(a && strcmp(a->program, "pa") == 0 && strcmp(a->next, "b.2") == 0
              && strcmp(a->bounce_stage, "c") == 0,
          "D-23: conf_stage finds a stage by name");
    CHECK(conf_stage(&c, "d") == NULL, "conf_stage of an unknown stage is NULL");
    CHECK(conf_stage(&c, "stage-a") == NULL, "conf_stage takes the bare name");
    conf_free(&c);
}

static void test_syntax(void)
{
    struct conf c;
    const char *text = "\xEF\xBB\xBF# comment\r\n"
                       "; another\r\n"
                       "[pepsi]   ; trailing comment\r\n"
                       "  ALLOW_FUSION = no ; inline comment\r\n"
                       "\tSHARE_TELEMETRY=yes\r\n"
                       "\r\n"
                       "[stage-a] # hash comment\n"
                       "PROGRAM = p\n"
                       "    COMMAND = x\n"
                       "PARALLELISM = 7";
    if (good(text, &c, "BOM, CRLF, comments, indentation, no final newline") == 0) {
        CHECK(!c.allow_fusion && c.share_telemetry, "indented keys are keys (no continuation)");
        CHECK(c.n_stages == 1 && c.stages[0].line == 7, "stage line counted across CRLF");
        CHECK(c.n_stages == 1 && c.stages[0].parallelism == 7, "the last line without newline");
        CHECK(c.n_stages == 1 && c.stages[0].n_own == 1 && c.stages[0].own[0].line == 9
                  && strcmp(c.stages[0].own[0].value, "x") == 0,
              "an indented own key after another key is a key");
        conf_free(&c);
    }
    bad("[pepsi]\nALLOW_FUSION\n", NAME ":2: ", "syntax error", "a line without '='");
    bad("[pepsi]\n\n\nthis is not ini\nFOO = 1\n", NAME ":4: ", "syntax error",
        "a syntax error before a key error wins");
    bad("[pepsi]\nFOO = 1\nthis is not ini\n", NAME ":2: ", "unknown key \"FOO\"",
        "a key error before a syntax error wins");
    bad("[pepsi\nALLOW_FUSION = yes\n", NAME ":1: ", "section header without a closing ']'",
        "an unterminated section header");
    bad("[pepsi ; x]\n", NAME ":1: ", "without a closing ']'", "a comment inside the brackets");
    bad("[pepsi] x\n", NAME ":1: ", "unexpected text after the section header",
        "text after a section header");
    bad("[pepsi]\n[stage-a]\nPROGRAM = p\n[pepsi-dispatch]\nPOLL_INTERVAL = 0\n[nope]\n",
        NAME ":5: ", "POLL_INTERVAL", "the first of several errors wins");
}

static void test_long_lines(void)
{
    char text[600], value[300];
    struct conf c;
    /* "COMMAND = " is 10 characters: 187 more make 197. */
    memset(value, 'v', 187);
    value[187] = '\0';
    snprintf(text, sizeof(text), S("a") "COMMAND = %s\n", value);
    if (good(text, &c, "a line of 197 characters") == 0) {
        CHECK(c.stages[0].n_own == 1 && strlen(c.stages[0].own[0].value) == 187,
              "a 197-character line is kept whole");
        conf_free(&c);
    }
    value[187] = 'v';
    value[188] = '\0';
    snprintf(text, sizeof(text), S("a") "COMMAND = %s\nPARALLELISM = 2\n", value);
    bad(text, NAME ":3: ", "line is longer than 197 characters", "a line of 198 characters");
    memset(value, 'x', 250);
    value[0] = '#';
    value[250] = '\0';
    snprintf(text, sizeof(text), "[pepsi]\n%s\n", value);
    bad(text, NAME ":2: ", "line is longer than 197 characters", "a long comment line");
    snprintf(text, sizeof(text), "[pepsi]\r\n%.197s\r\n", value);
    if (good(text, &c, "197 characters before CRLF") == 0)
        conf_free(&c);
}

/* Writes text (len bytes) to a temporary file; returns its path or NULL. */
static char *temp_file(const char *text, size_t len, char *path, size_t cap)
{
    snprintf(path, cap, "/tmp/pepsi-test-conf-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    ssize_t w = write(fd, text, len);
    close(fd);
    if (w != (ssize_t)len) {
        unlink(path);
        return NULL;
    }
    return path;
}

static void test_files(void)
{
    char path[64], err[512], where[160];
    struct conf c;
    const char *text = "[pepsi-dispatch]\nOWNER_SLOT = 2\n" S("a");
    if (CHECK(temp_file(text, strlen(text), path, sizeof(path)) != NULL, "temp file written")) {
        int rc = conf_load(path, &c, err, sizeof(err));
        CHECK_INT(rc, 0, "D-04: conf_load reads a file");
        CHECK(rc == 0 && strcmp(c.path, path) == 0 && c.owner_slot == 2 && c.n_stages == 1,
              "D-04: the file's values and path");
        conf_free(&c);
        unlink(path);
    }
    text = "[pepsi]\nALLOW_FUSION = yes\n\nSHARE_TELEMETRY = never\n";
    if (CHECK(temp_file(text, strlen(text), path, sizeof(path)) != NULL, "temp file written")) {
        CHECK_INT(conf_load(path, &c, err, sizeof(err)), -1, "a bad file is refused");
        snprintf(where, sizeof(where), "%s:4: key \"SHARE_TELEMETRY\" in [pepsi]: ", path);
        CHECK_CONTAINS(err, where, "the error names the file, the line and the key");
        CHECK(is_zero(&c), "*out zeroed after a bad file");
        unlink(path);
    }
    static const char nul[] = "[pepsi]\nALLOW_FUSION = y\0es\n";
    if (CHECK(temp_file(nul, sizeof(nul) - 1, path, sizeof(path)) != NULL, "temp file written")) {
        CHECK_INT(conf_load(path, &c, err, sizeof(err)), -1, "a NUL byte is refused");
        snprintf(where, sizeof(where), "%s:2: line contains a NUL byte", path);
        CHECK_STR(err, where, "the NUL byte's line is named");
        unlink(path);
    }
    CHECK_INT(conf_load("/nonexistent/pepsi.conf", &c, err, sizeof(err)), -1, "a missing file");
    CHECK_STR(err, "/nonexistent/pepsi.conf: cannot open: No such file or directory",
              "a missing file: FILE: cannot open: strerror");
    CHECK(is_zero(&c), "*out zeroed for a missing file");
    CHECK_INT(conf_load("/tmp", &c, err, sizeof(err)), -1, "a directory is refused");
    CHECK_CONTAINS(err, "/tmp: cannot read: Is a directory", "a directory: cannot read");
    char tiny[8];
    CHECK_INT(conf_load("/nonexistent/x", &c, tiny, sizeof(tiny)), -1, "a small error buffer");
    CHECK_INT(strlen(tiny), 7, "the error is truncated to the buffer");
    CHECK_INT(conf_load("/nonexistent/x", &c, NULL, 0), -1, "no error buffer at all");
    CHECK_INT(conf_load_string("[bad]", NULL, &c, NULL, 0), -1, "no error buffer, string");
}

/* issue 11: connection strings are checked with libpq's parser, and a
 * WORKER_CONNINFO with a password is refused. */
static void test_conninfo_keys(void)
{
    bad("[pepsi-postgres]\nCONNINFO = host=h nosuch=1\n", NAME ":2: ",
        "key \"CONNINFO\" in [pepsi-postgres]: invalid connection option \"nosuch\"", "a bad CONNINFO");
    bad("[pepsi-postgres]\nCONNINFO = postgresql://h/db?nosuch=1\n", NAME ":2: ", "CONNINFO",
        "a bad CONNINFO URI");
    bad("[pepsi-postgres]\nWORKER_CONNINFO = host=h password=x\n", NAME ":2: ",
        "key \"WORKER_CONNINFO\" in [pepsi-postgres]: holds a password",
        "issue 11: a WORKER_CONNINFO with a password");
    bad("[pepsi-postgres]\nWORKER_CONNINFO = postgres://u:pw@h/db\n", NAME ":2: ", "passfile",
        "issue 11: a WORKER_CONNINFO URI with a password (the error says where passwords go)");
    bad("[pepsi-postgres]\nWORKER_CONNINFO = sslkey=/k sslpassword=x\n", NAME ":2: ", "holds a password",
        "issue 11: a WORKER_CONNINFO with an sslpassword");
    bad("[pepsi-postgres]\nWORKER_CONNINFO = user='\n", NAME ":2: ", "WORKER_CONNINFO",
        "an unparsable WORKER_CONNINFO");
    struct conf c;
    if (good("[pepsi-postgres]\nCONNINFO = postgresql://u:pw@h/db\nWORKER_CONNINFO =\n", &c,
             "a CONNINFO URI with a password, an empty WORKER_CONNINFO") == 0) {
        CHECK(c.worker_conninfo == NULL, "an empty WORKER_CONNINFO is unset");
        conf_free(&c);
    }
}

/* Writes text to a temporary file with mode, loads it; the result code. */
static int load_with_mode(const char *text, mode_t mode, char *path, size_t cap, char *err, size_t errlen)
{
    struct conf c;
    if (temp_file(text, strlen(text), path, cap) == NULL || chmod(path, mode) != 0)
        return -99;
    int rc = conf_load(path, &c, err, errlen);
    if (rc == 0)
        conf_free(&c);
    return rc;
}

/* issue 11: a file holding a secret is refused when other users may read it. */
static void test_secret_files(void)
{
    char path[64], err[1024], want[256];
    static const struct {
        const char *text, *what;
    } secrets[] = {
        {"[pepsi-postgres]\nCONNINFO = host=h password=pw\n", "key \"CONNINFO\" in [pepsi-postgres] holds a password"},
        {"[pepsi-postgres]\nCONNINFO = postgresql://u:pw@h/db\n", "CONNINFO\" in [pepsi-postgres] holds a password"},
        {"[pepsi-postgres]\nCONNINFO = sslkey=/k sslpassword=x\n", "CONNINFO\" in [pepsi-postgres] holds a password"},
        {"[stage-out]\nPROGRAM = pepsi-stage-http\nURL = https://x.org/\nSIGNING_SECRET = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
         "key \"SIGNING_SECRET\" in [stage-out] holds a secret"},
        {"[stage-out]\nPROGRAM = pepsi-stage-http\nAUTHORIZATION = Bearer sk_live_x\n",
         "key \"AUTHORIZATION\" in [stage-out] holds a secret"},
        {"[stage-out]\nPROGRAM = pepsi-stage-http\nURL = https://u:pw@x.org/hook\n",
         "key \"URL\" in [stage-out] holds a secret"},
        {"[pepsi-ingress]\nMETRICS_TOKEN = abc\n", "key \"METRICS_TOKEN\" in [pepsi-ingress] holds a secret"},
        {"[pepsi-beanstalk]\nPASSWORD = abc\n", "key \"PASSWORD\" in [pepsi-beanstalk] holds a secret"},
    };
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++) {
        int rc = load_with_mode(secrets[i].text, 0644, path, sizeof path, err, sizeof err);
        CHECK_INT(rc, CONF_INSECURE, "issue 11: refused at mode 0644: %s", secrets[i].what);
        CHECK_CONTAINS(err, secrets[i].what, "issue 11: the error names the secret");
        snprintf(want, sizeof want, "run chmod o-rwx %s", path);
        CHECK_CONTAINS(err, want, "issue 11: and says the fix");
        CHECK_CONTAINS(err, "(mode 0644)", "issue 11: and the mode");
        CHECK(strncmp(err, path, strlen(path)) == 0 && err[strlen(path)] == ':', "the error starts with the file");
        unlink(path);
        CHECK_INT(load_with_mode(secrets[i].text, 0640, path, sizeof path, err, sizeof err), 0,
                  "issue 11: the same file at mode 0640 loads");
        unlink(path);
    }
    const char *pw = "[pepsi-postgres]\nCONNINFO = host=h password=pw\n";
    CHECK_INT(load_with_mode(pw, 0604, path, sizeof path, err, sizeof err), CONF_INSECURE,
              "issue 11: o+r alone is refused");
    unlink(path);
    CHECK_INT(load_with_mode(pw, 0602, path, sizeof path, err, sizeof err), CONF_INSECURE,
              "issue 11: o+w too (anyone could put in a COMMAND)");
    unlink(path);
    CHECK_INT(load_with_mode(pw, 0600, path, sizeof path, err, sizeof err), 0, "mode 0600 loads");
    unlink(path);
    static const char *const harmless[] = {
        "[pepsi-postgres]\nCONNINFO = host=h user=u\n",
        "[pepsi-postgres]\nCONNINFO = postgresql://u@h/db\n",
        "[stage-out]\nPROGRAM = pepsi-stage-http\nURL = https://u@x.org/\nSIGNING_SECRET =\n",
        "[stage-x]\nPROGRAM = pepsi-stage-exec\nCOMMAND = curl https://u:p@x.org/\n",
    };
    for (size_t i = 0; i < sizeof harmless / sizeof harmless[0]; i++) {
        CHECK_INT(load_with_mode(harmless[i], 0644, path, sizeof path, err, sizeof err), 0,
                  "a file without a secret loads at mode 0644 (%zu)", i);
        unlink(path);
    }
    /* The worker's path: the file under the overlay, also refused. */
    struct conf c;
    if (temp_file(pw, strlen(pw), path, sizeof path) && chmod(path, 0644) == 0) {
        CHECK_INT(conf_load_overlay(path, NULL, 0, &c, err, sizeof err), CONF_INSECURE,
                  "issue 11: conf_load_overlay refuses it as well");
        unlink(path);
    }
    CHECK_INT(conf_load_string(pw, NAME, &c, err, sizeof err), 0, "a string is no file: no mode to check");
    conf_free(&c);
}

static void test_big_file(void)
{
    /* Many stages and keys: the arrays grow past their first size. */
    size_t cap = 64 * 1024, len = 0;
    char *text = malloc(cap);
    if (!text) {
        CHECK(false, "malloc");
        return;
    }
    for (int i = 0; i < 40; i++)
        len += (size_t)snprintf(text + len, cap - len, "[stage-s%d]\nPROGRAM = p%d\nNEXT = s%d\nK%d = %d\n", i,
                                i, (i + 1) % 40, i, i);
    struct conf c;
    if (good(text, &c, "forty stages") == 0) {
        CHECK_INT(c.n_stages, 40, "forty stages kept");
        CHECK(strcmp(c.stages[39].name, "s39") == 0 && strcmp(c.stages[39].next, "s0") == 0
                  && c.stages[39].line == 157 && strcmp(conf_stage_own(&c.stages[39], "K39"), "39") == 0,
              "the last stage is complete");
        conf_free(&c);
    }
    free(text);
}

static void test_default_path(void)
{
    unsetenv("PEPSI_CONFIG");
    CHECK_STR(conf_default_path(), "/etc/pepsi/pepsi.conf", "D-04: default path");
    setenv("PEPSI_CONFIG", "/srv/pepsi.conf", 1);
    CHECK_STR(conf_default_path(), "/srv/pepsi.conf", "D-04: $PEPSI_CONFIG wins");
    setenv("PEPSI_CONFIG", "", 1);
    CHECK_STR(conf_default_path(), "/etc/pepsi/pepsi.conf", "an empty $PEPSI_CONFIG is ignored");
    unsetenv("PEPSI_CONFIG");
}

static void test_shipped_example(void)
{
    struct conf c;
    char err[512] = "";
    int rc = conf_load("conf/pepsi.conf", &c, err, sizeof(err));
    CHECK_INT(rc, 0, "conf/pepsi.conf loads");
    if (rc != 0) {
        printf("#   error: %s\n", err);
        return;
    }
    CHECK(c.allow_fusion && !c.share_telemetry && c.max_hops == 1000 && c.poll_interval_ms == 5000
              && c.fair_fifo_percent == 10 && c.config_file == NULL,
          "conf/pepsi.conf keeps the defaults");
    const struct stage_conf *r = conf_stage(&c, "receive"), *t = conf_stage(&c, "transform"),
                            *d = conf_stage(&c, "deliver");
    CHECK(c.n_stages == 3 && r && t && d, "conf/pepsi.conf has the three example stages");
    if (r && t && d) {
        CHECK(strcmp(r->program, "pepsi-stage-pass") == 0 && strcmp(r->next, "transform") == 0,
              "receive passes to transform");
        CHECK(strcmp(t->program, "pepsi-stage-exec") == 0 && strcmp(t->next, "deliver") == 0
                  && conf_stage_own(t, "COMMAND") != NULL,
              "transform runs a COMMAND and passes to deliver");
        CHECK(strcmp(d->program, "pepsi-stage-pass") == 0 && d->next == NULL,
              "deliver finishes the message");
    }
    conf_free(&c);
}

/* USER_OPTIONS: what end users may set per address (issue 11). */
static void test_user_options(void)
{
    struct conf c;
    if (good(S("a") "USER_OPTIONS = HEADERS, MAX_LIFETIME\n", &c, "USER_OPTIONS with two options") == 0) {
        CHECK(conf_list_has(c.stages[0].user_options, "HEADERS"), "issue 11: USER_OPTIONS lists HEADERS");
        CHECK(conf_list_has(c.stages[0].user_options, "MAX_LIFETIME"), "issue 11: and MAX_LIFETIME");
        CHECK(!conf_list_has(c.stages[0].user_options, "HEADER"), "issue 11: a prefix is not an item");
        conf_free(&c);
    }
    if (good(S("a") "USER_OPTIONS =\n", &c, "an empty USER_OPTIONS") == 0) {
        CHECK(c.stages[0].user_options == NULL, "issue 11: an empty USER_OPTIONS is unset");
        conf_free(&c);
    }
    bad(S("a") "USER_OPTIONS = HEADERS COMMAND\n", NAME ":3: ",
        "key \"USER_OPTIONS\" in [stage-a]: \"COMMAND\" is operator-only",
        "issue 11: USER_OPTIONS may not name COMMAND");
    bad(S("a") "USER_OPTIONS = WEBHOOK_URL\n", NAME ":3: ", "\"WEBHOOK_URL\" is operator-only",
        "issue 11: nor anything naming a URL");
    bad(S("a") "USER_OPTIONS = NEXT\n", NAME ":3: ", "\"NEXT\" is operator-only", "issue 11: nor routing");
    bad(S("a") "USER_OPTIONS = headers\n", NAME ":3: ", "\"headers\" is not an option name",
        "issue 11: option names are upper case");
    /* The same names as pgtap/18-settings-owner.sql. */
    static const char *const operator_only[] = {
        "API_KEY", "AUTHORIZATION", "BOUNCE_STAGE", "COMMAND", "CONDITION", "DB_PASSWORD", "ELSE", "FUSION",
        "MAX_RUNTIME", "NEXT", "PARALLELISM", "PASS_CONNINFO", "PROGRAM", "SIGNING_SECRET", "SMTP_HOST", "THEN",
        "TOKEN", "URL", "USER_OPTIONS", "WEBHOOK_URL", NULL};
    static const char *const end_user[] = {"HEADERS", "MAX_LIFETIME", "TIMEOUT", "LANGUAGE", "SIGNATURE_TEXT", NULL};
    for (const char *const *k = operator_only; *k; k++)
        CHECK(conf_option_operator_only(*k), "issue 11: %s is operator-only", *k);
    for (const char *const *k = end_user; *k; k++)
        CHECK(!conf_option_operator_only(*k), "issue 11: %s may be allow-listed", *k);
}

#define VALUE_VECTORS "testdata/conf-value-vectors.json"

/* Issue 15: the durations and typos that pgtap/54 checks against the SQL
 * twins (pepsi.conf_duration_ms, pepsi.conf_key_typo), so the two cannot
 * drift apart. */
static void test_value_vectors(void)
{
    json_error_t jerr;
    json_t *all = json_load_file(VALUE_VECTORS, 0, &jerr);
    CHECK(all != NULL, "issue 15: " VALUE_VECTORS " loads (%s)", all ? "ok" : jerr.text);
    if (all == NULL)
        return;
    json_t *durs = json_object_get(all, "durations"), *typos = json_object_get(all, "typos"), *v;
    size_t i;
    CHECK(json_array_size(durs) >= 30, "issue 15: at least 30 duration vectors");
    json_array_foreach(durs, i, v) {
        const char *text = json_string_value(json_object_get(v, "text"));
        json_t *want = json_object_get(v, "ms");
        int64_t ms = -1;
        int rc = conf_parse_duration(text, &ms);
        if (json_is_null(want))
            CHECK(rc < 0, "issue 15: duration \"%s\" is refused", text);
        else
            CHECK(rc == 0 && ms == (int64_t)json_integer_value(want), "issue 15: duration \"%s\" is %lld ms",
                  text, (long long)json_integer_value(want));
    }
    json_array_foreach(typos, i, v) {
        const char *key = json_string_value(json_object_get(v, "key"));
        const char *want = json_string_value(json_object_get(v, "typo_of"));
        const char *got = conf_key_typo(CS_STAGE, key);
        CHECK(want ? got && strcmp(got, want) == 0 : got == NULL, "issue 15: %s is a typo of %s (got %s)", key,
              want ? want : "nothing", got ? got : "nothing");
    }
    json_decref(all);
}

/* issue 19: QUEUE_LIMIT unset lets the dispatcher adapt the hand-out up to
 * CONF_HAND_LIMIT_MAX held, in batches of CONF_BATCH_LIMIT_MAX; set in the
 * file or the overlay, both are exactly it. */
static void test_hand_max(void)
{
    struct conf c;
    char path[64], err[1024] = "";
    if (good("[stage-a]\nPROGRAM = p\n[stage-b]\nPROGRAM = p\nQUEUE_LIMIT = 4\n"
             "[stage-c]\nPROGRAM = p\nQUEUE_LIMIT = 200\n", &c, "three stages") != 0)
        return;
    CHECK(!c.stages[0].queue_limit_set, "issue 19: QUEUE_LIMIT unset is known as unset");
    CHECK_INT(conf_stage_hand_max(&c.stages[0]), 512, "issue 19: unset: a worker holds up to 4 batches of 128");
    CHECK_INT(conf_stage_batch_max(&c.stages[0]), 128, "issue 19: unset: batches of up to 128");
    CHECK(c.stages[1].queue_limit_set, "issue 19: QUEUE_LIMIT = 4 written out is set");
    CHECK_INT(conf_stage_hand_max(&c.stages[1]), 4, "D-66: set to the default: exactly 4");
    CHECK_INT(conf_stage_batch_max(&c.stages[1]), 4, "D-69: set to the default: batches of at most 4");
    CHECK_INT(conf_stage_hand_max(&c.stages[2]), 200, "D-66: set above the adaptive batch: exactly it");
    CHECK_INT(conf_stage_batch_max(&c.stages[2]), 200, "D-69: set above the adaptive batch: batches of it");
    conf_free(&c);

    const char *text = "[stage-a]\nPROGRAM = p\nQUEUE_LIMIT = 8\n[stage-b]\nPROGRAM = p\n";
    if (temp_file(text, strlen(text), path, sizeof path) == NULL) {
        CHECK(0, "temp file");
        return;
    }
    const struct conf_override rows[] = {{"stage-a", "QUEUE_LIMIT", NULL}, {"stage-b", "QUEUE_LIMIT", "2"}};
    CHECK_INT(conf_load_overlay(path, rows, 2, &c, err, sizeof err), 0, "the overlay loads: %s", err);
    CHECK(!c.stages[0].queue_limit_set && c.stages[0].queue_limit == 4,
          "issue 19: the overlay unsets QUEUE_LIMIT: the default, adaptive again");
    CHECK(c.stages[1].queue_limit_set && conf_stage_hand_max(&c.stages[1]) == 2,
          "issue 19: the overlay sets QUEUE_LIMIT: exact");
    conf_free(&c);
    unlink(path);
}

int main(void)
{
    test_hand_max();
    test_value_vectors();
    test_defaults();
    test_all_keys_set();
    test_durations();
    test_bools_ints();
    test_value_errors();
    test_structure_errors();
    test_stage_errors();
    test_own_keys();
    test_stages_in_order();
    test_syntax();
    test_long_lines();
    test_files();
    test_conninfo_keys();
    test_secret_files();
    test_big_file();
    test_default_path();
    test_shipped_example();
    test_user_options();
    return unit_done();
}

/* test_beanstalk_proto.c — the beanstalkd frontend's protocol layer (issue
 * 17): every command parses, every malformed line gets the reply
 * beanstalkd 1.12 gives it (observed on the wire against Debian's
 * beanstalkd), a put's body framing, and the YAML of the stats replies. */
#include "unit.h"

#include "beanstalk/bconf.h"
#include "beanstalk/proto.h"

#include <stdlib.h>
#include <string.h>

#define MAXJOB 65535

static struct bs_cmd parse(const char *line)
{
    struct bs_cmd c;
    bs_parse(line, strlen(line), MAXJOB, &c);
    return c;
}

/* A line is accepted as op. */
static void ok(const char *line, enum bs_op op)
{
    struct bs_cmd c = parse(line);
    CHECK(c.op == op && c.error == NULL, "\"%s\" parses as %s (got %s, error %s)", line, bs_op_name(op),
          bs_op_name(c.op), c.error ? c.error : "none");
}

/* A line is refused with reply. */
static void bad(const char *line, const char *reply)
{
    struct bs_cmd c = parse(line);
    CHECK_STR(c.error, reply, "\"%.60s\" is answered %.*s", line, (int)strlen(reply) - 2, reply);
}

static void check_commands(void)
{
    struct bs_cmd c;
    c = parse("put 10 20 30 5");
    CHECK(c.op == BS_OP_PUT && !c.error && c.pri == 10 && c.delay == 20 && c.ttr == 30 && c.bytes == 5,
          "put <pri> <delay> <ttr> <bytes>");
    c = parse("put  4294967295  0  0  0");
    CHECK(!c.error && c.pri == 4294967295u && c.ttr == 0, "put: spaces before each integer, pri 2^32-1, ttr 0");
    ok("use foo", BS_OP_USE);
    c = parse("use a-b+c/d;e.f$g_h(i)");
    CHECK_STR(c.tube, "a-b+c/d;e.f$g_h(i)", "use: every name character");
    ok("reserve", BS_OP_RESERVE);
    c = parse("reserve-with-timeout 5");
    CHECK(c.op == BS_OP_RESERVE_TIMEOUT && !c.error && c.timeout == 5, "reserve-with-timeout 5");
    c = parse("reserve-with-timeout 0");
    CHECK(!c.error && c.timeout == 0, "reserve-with-timeout 0");
    c = parse("reserve-with-timeout abc");
    CHECK(!c.error && c.timeout == 0, "reserve-with-timeout abc reads as 0 (beanstalkd's strtol)");
    c = parse("reserve-with-timeout -1");
    CHECK(!c.error && c.timeout < 0, "reserve-with-timeout -1 waits without end (beanstalkd)");
    c = parse("reserve-with-timeout 1x");
    CHECK(!c.error && c.timeout == 1, "reserve-with-timeout 1x reads as 1");
    bad("reserve-with-timeout 99999999999999999999999", BS_BAD_FORMAT);
    c = parse("reserve-job 7");
    CHECK(c.op == BS_OP_RESERVE_JOB && !c.error && c.id == 7, "reserve-job <id>");
    c = parse("delete 18446744073709551615");
    CHECK(c.op == BS_OP_DELETE && !c.error && c.id == UINT64_MAX, "delete <id> up to 2^64-1");
    c = parse("release 3 100 5");
    CHECK(c.op == BS_OP_RELEASE && !c.error && c.id == 3 && c.pri == 100 && c.delay == 5, "release <id> <pri> <delay>");
    c = parse("bury 3 9");
    CHECK(c.op == BS_OP_BURY && !c.error && c.id == 3 && c.pri == 9, "bury <id> <pri>");
    c = parse("touch 3");
    CHECK(c.op == BS_OP_TOUCH && !c.error && c.id == 3, "touch <id>");
    ok("watch foo", BS_OP_WATCH);
    ok("ignore foo", BS_OP_IGNORE);
    c = parse("peek 12");
    CHECK(c.op == BS_OP_PEEK && !c.error && c.id == 12, "peek <id>");
    ok("peek-ready", BS_OP_PEEK_READY);
    ok("peek-delayed", BS_OP_PEEK_DELAYED);
    ok("peek-buried", BS_OP_PEEK_BURIED);
    c = parse("kick 10");
    CHECK(c.op == BS_OP_KICK && !c.error && c.bound == 10, "kick <bound>");
    c = parse("kick  3");
    CHECK(!c.error && c.bound == 3, "kick: leading spaces");
    c = parse("kick 5abc");
    CHECK(!c.error && c.bound == 5, "kick 5abc kicks 5 (beanstalkd's strtoul)");
    c = parse("kick-job 4");
    CHECK(c.op == BS_OP_KICK_JOB && !c.error && c.id == 4, "kick-job <id>");
    c = parse("stats-job 4");
    CHECK(c.op == BS_OP_STATS_JOB && !c.error && c.id == 4, "stats-job <id>");
    c = parse("stats-tube default");
    CHECK(c.op == BS_OP_STATS_TUBE && !c.error && strcmp(c.tube, "default") == 0, "stats-tube <tube>");
    ok("stats", BS_OP_STATS);
    ok("list-tubes", BS_OP_LIST_TUBES);
    ok("list-tube-used", BS_OP_LIST_TUBE_USED);
    ok("list-tubes-watched", BS_OP_LIST_TUBES_WATCHED);
    ok("quit", BS_OP_QUIT);
    ok("quitx", BS_OP_QUIT); /* beanstalkd closes on the prefix */
    c = parse("pause-tube foo 30");
    CHECK(c.op == BS_OP_PAUSE_TUBE && !c.error && strcmp(c.tube, "foo") == 0 && c.delay == 30,
          "pause-tube <tube> <delay>");
    c = parse("pause-tube foo  0");
    CHECK(!c.error && c.delay == 0, "pause-tube: spaces before the delay");
}

static void check_errors(void)
{
    char name[260];
    bad("", BS_UNKNOWN_COMMAND);
    bad("foo", BS_UNKNOWN_COMMAND);
    bad("peek", BS_UNKNOWN_COMMAND);
    bad("kick", BS_UNKNOWN_COMMAND);
    bad("use", BS_UNKNOWN_COMMAND);
    bad("PUT 1 0 1 1", BS_UNKNOWN_COMMAND);
    bad("reservex", BS_BAD_FORMAT);
    bad("reserve ", BS_BAD_FORMAT);
    bad("reserve-with-timeout", BS_BAD_FORMAT);
    bad("statsx", BS_BAD_FORMAT);
    bad("peek-readyx", BS_BAD_FORMAT);
    bad("peek-delayed ", BS_BAD_FORMAT);
    bad("peek-buried 1", BS_BAD_FORMAT);
    bad("list-tubesx", BS_BAD_FORMAT);
    bad("list-tube-used ", BS_BAD_FORMAT);
    bad("list-tubes-watchedx", BS_BAD_FORMAT);
    bad("put -1 0 1 1", BS_BAD_FORMAT);
    bad("put +1 0 1 1", BS_BAD_FORMAT);
    bad("put 4294967296 0 1 1", BS_BAD_FORMAT);
    bad("put 1 4294967296 1 1", BS_BAD_FORMAT);
    bad("put 1 0 4294967296 1", BS_BAD_FORMAT);
    bad("put 1 0 1 1 ", BS_BAD_FORMAT);
    bad("put 1 0 1 1x", BS_BAD_FORMAT);
    bad("put 1 0 1", BS_BAD_FORMAT);
    bad("put a 0 1 1", BS_BAD_FORMAT);
    struct bs_cmd c = parse("put 1 0 1 65536");
    CHECK(c.error && strcmp(c.error, BS_JOB_TOO_BIG) == 0 && c.skip == 65538,
          "put of 65536 bytes over 65535: JOB_TOO_BIG once the body and CRLF (65538 bytes) are dropped");
    c = parse("put 1 0 1 70000 x");
    CHECK_STR(c.error, BS_JOB_TOO_BIG, "put: too big is found before trailing bytes (beanstalkd's order)");
    bs_parse("put 1 0 1 11", 12, 10, &c);
    CHECK_STR(c.error, BS_JOB_TOO_BIG, "put: the limit is the configured MAX_JOB_SIZE");
    bad("delete 1 ", BS_BAD_FORMAT);
    bad("delete +1", BS_BAD_FORMAT);
    bad("delete -1", BS_BAD_FORMAT);
    bad("delete 18446744073709551616", BS_BAD_FORMAT);
    bad("delete ", BS_BAD_FORMAT);
    bad("peek x", BS_BAD_FORMAT);
    bad("reserve-job x", BS_BAD_FORMAT);
    bad("touch 1 2", BS_BAD_FORMAT);
    bad("kick-job 1x", BS_BAD_FORMAT);
    bad("stats-job -3", BS_BAD_FORMAT);
    bad("release 1 2", BS_BAD_FORMAT);
    bad("release 1 2 3 ", BS_BAD_FORMAT);
    bad("release 1 4294967296 0", BS_BAD_FORMAT);
    bad("bury 1", BS_BAD_FORMAT);
    bad("bury 1 2 3", BS_BAD_FORMAT);
    bad("kick abc", BS_BAD_FORMAT);
    bad("kick 99999999999999999999999", BS_BAD_FORMAT);
    bad("use -a", BS_BAD_FORMAT);
    bad("use a b", BS_BAD_FORMAT);
    bad("use  a", BS_BAD_FORMAT);
    bad("use ", BS_BAD_FORMAT);
    bad("use a*b", BS_BAD_FORMAT);
    bad("watch a b", BS_BAD_FORMAT);
    bad("ignore -x", BS_BAD_FORMAT);
    bad("stats-tube -x", BS_BAD_FORMAT);
    bad("stats-tube a\xc3\xa9", BS_BAD_FORMAT);
    memset(name, 'a', sizeof name);
    memcpy(name, "use ", 4);
    name[4 + 200] = '\0';
    ok(name, BS_OP_USE);
    name[4 + 200] = 'a';
    name[4 + 201] = '\0';
    bad(name, BS_BAD_FORMAT);
    bad("pause-tube -x 1", BS_BAD_FORMAT);
    bad("pause-tube default", BS_BAD_FORMAT);
    bad("pause-tube default 1 ", BS_BAD_FORMAT);
    bad("pause-tube default -1", BS_BAD_FORMAT);
    bad("pause-tube default 4294967296", BS_BAD_FORMAT);
    memset(name, 'a', sizeof name);
    memcpy(name, "pause-tube ", 11);
    memcpy(name + 11 + 201, " 1", 3);
    bad(name, BS_BAD_FORMAT);
    bs_parse("a\0b", 3, MAXJOB, &c);
    CHECK_STR(c.error, BS_BAD_FORMAT, "a NUL byte in a line: BAD_FORMAT");
}

/* Feeds chunks of text (split at '|' in spec) into a framer and records
 * each item as "C:op" (a command, with ":body" for put), "E:REPLY" (an
 * error) joined by spaces. */
static void frames(struct bs_framer *f, const char *data, size_t n, char *out, size_t cap)
{
    size_t off = 0;
    while (off < n) {
        size_t used;
        struct bs_frame fr;
        bs_framer_feed(f, data + off, n - off, &used, &fr);
        off += used;
        if (fr.kind == BS_FRAME_MORE)
            break;
        size_t len = strlen(out);
        if (fr.kind == BS_FRAME_ERROR)
            snprintf(out + len, cap - len, "%sE:%.*s", len ? " " : "", (int)strlen(fr.reply) - 2, fr.reply);
        else if (fr.cmd.op == BS_OP_PUT)
            snprintf(out + len, cap - len, "%sC:put:%.*s", len ? " " : "", (int)fr.cmd.bytes, fr.body);
        else
            snprintf(out + len, cap - len, "%sC:%s", len ? " " : "", bs_op_name(fr.cmd.op));
        free(fr.body);
    }
}

/* The whole input at once, then the same one byte at a time: the same items. */
static void framing(const char *input, size_t n, uint32_t max_job, const char *want, const char *what)
{
    char got[2048] = "", split[2048] = "";
    struct bs_framer f;
    bs_framer_init(&f, max_job);
    frames(&f, input, n, got, sizeof got);
    bs_framer_free(&f);
    CHECK_STR(got, want, "%s", what);
    bs_framer_init(&f, max_job);
    for (size_t i = 0; i < n; i++)
        frames(&f, input + i, 1, split, sizeof split);
    bs_framer_free(&f);
    CHECK_STR(split, want, "%s (one byte per read)", what);
}

#define FRAMING(lit, max, want, what) framing(lit, sizeof lit - 1, max, want, what)

static void check_framing(void)
{
    char big[600];
    FRAMING("put 1 0 10 5\r\nhello\r\nreserve\r\n", MAXJOB, "C:put:hello C:reserve", "put with its body, then a command");
    FRAMING("put 1 0 10 4\r\na\r\nb\r\n", MAXJOB, "C:put:a\r\nb", "a body may hold CRLF: only the count frames it");
    FRAMING("put 1 0 10 0\r\n\r\n", MAXJOB, "C:put:", "an empty body");
    FRAMING("put 1 0 1 3\r\nabcde\r\n", MAXJOB, "E:EXPECTED_CRLF E:UNKNOWN_COMMAND",
            "body without CRLF after its bytes: EXPECTED_CRLF, the rest is a new (empty) line, as beanstalkd");
    FRAMING("put 1 0 1 1\r\nxyz", MAXJOB, "E:EXPECTED_CRLF", "EXPECTED_CRLF as soon as bytes + 2 arrived");
    FRAMING("put 1 0 1 10\r\n0123456789\r\nstats\r\n", 5, "E:JOB_TOO_BIG C:stats",
            "JOB_TOO_BIG after the body is dropped, then the next command");
    FRAMING("put 1 0 1 10\r\n01234", 5, "", "JOB_TOO_BIG waits for the whole body");
    FRAMING("put 1 0 1\r\nstats\r\n", MAXJOB, "E:BAD_FORMAT C:stats", "a bad put line reads no body");
    FRAMING("stats\r\nlist-tubes\r\n\r\n", MAXJOB, "C:stats C:list-tubes E:UNKNOWN_COMMAND", "lines in one read");
    FRAMING("stats\nlist-tubes\r\n", MAXJOB, "E:BAD_FORMAT", "a bare LF does not end a line (stats with trailing bytes)");
    memset(big, 'x', sizeof big);
    memcpy(big + 222, "\r\n", 2);
    framing(big, 224, MAXJOB, "E:UNKNOWN_COMMAND", "a line of 224 bytes with its CRLF is read");
    memset(big, 'x', sizeof big);
    memcpy(big + 230, "\r\nstats\r\n", 9);
    framing(big, 239, MAXJOB, "E:BAD_FORMAT C:stats",
            "a line over 224 bytes: one BAD_FORMAT, the rest of the line dropped, the next line read");
    memset(big, 'y', sizeof big);
    memcpy(big + 500, "\r\nquit\r\n", 8);
    framing(big, 508, MAXJOB, "E:BAD_FORMAT C:quit", "a line of 500 bytes: one BAD_FORMAT");
    memset(big, 'z', sizeof big);
    big[223] = '\r';
    memcpy(big + 224, "\nstats\r\n", 8);
    framing(big, 232, MAXJOB, "E:BAD_FORMAT C:stats", "an over-long line whose CR is its 224th byte");
}

static void check_yaml(void)
{
    struct bs_buf y = {0}, r = {0};
    const char *names[] = {"default", "foo"};
    bs_yaml_list(&y, names, 2);
    bs_reply_ok(&r, y.s, y.len);
    CHECK_STR(r.s, "OK 20\r\n---\n- default\n- foo\n\r\n", "list-tubes: beanstalkd's YAML list and OK <bytes>");
    bs_yaml_list(&y, names, 1);
    bs_reply_ok(&r, y.s, y.len);
    CHECK_STR(r.s, "OK 14\r\n---\n- default\n\r\n", "list-tubes of default alone, as beanstalkd 1.12 sends it");

    struct bs_job_stats j = {1, "default", "ready", 1, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0};
    bs_yaml_job(&y, &j);
    bs_reply_ok(&r, y.s, y.len);
    CHECK_STR(r.s,
              "OK 144\r\n---\nid: 1\ntube: default\nstate: ready\npri: 1\nage: 0\ndelay: 0\nttr: 10\ntime-left: 0\n"
              "file: 0\nreserves: 0\ntimeouts: 0\nreleases: 0\nburies: 0\nkicks: 0\n\r\n",
              "stats-job: byte for byte beanstalkd 1.12's reply for a fresh job");

    struct bs_tube_stats t = {"default", 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0};
    bs_yaml_tube(&y, &t);
    bs_reply_ok(&r, y.s, y.len);
    CHECK_STR(r.s,
              "OK 265\r\n---\nname: default\ncurrent-jobs-urgent: 1\ncurrent-jobs-ready: 1\n"
              "current-jobs-reserved: 0\ncurrent-jobs-delayed: 0\ncurrent-jobs-buried: 0\ntotal-jobs: 1\n"
              "current-using: 1\ncurrent-watching: 1\ncurrent-waiting: 0\ncmd-delete: 0\ncmd-pause-tube: 0\n"
              "pause: 0\npause-time-left: 0\n\r\n",
              "stats-tube: byte for byte beanstalkd 1.12's reply");

    struct bs_server_stats s;
    memset(&s, 0, sizeof s);
    s.urgent = s.ready = 1;
    s.cmd[BS_OP_PUT] = 1;
    s.cmd[BS_OP_STATS] = s.cmd[BS_OP_STATS_JOB] = s.cmd[BS_OP_STATS_TUBE] = s.cmd[BS_OP_LIST_TUBES] = 1;
    s.cmd[BS_OP_RESERVE_JOB] = 5; /* counted, never shown */
    s.total_jobs = 1;
    s.max_job_size = 65535;
    s.tubes = s.connections = s.producers = s.total_connections = 1;
    s.pid = 31094;
    s.version = "1.12";
    s.utime_us = s.stime_us = 8308;
    s.uptime = 2;
    s.id = "ca5d0c957606e4e0";
    s.hostname = "vm";
    s.os = "#1 SMP PREEMPT_DYNAMIC @0";
    s.platform = "x86_64";
    bs_yaml_server(&y, &s);
    bs_reply_ok(&r, y.s, y.len);
    /* beanstalkd 1.12's answer, recorded, but for binlog-max-size (0 here: no binlog) */
    CHECK_STR(r.s,
              "OK 949\r\n---\ncurrent-jobs-urgent: 1\ncurrent-jobs-ready: 1\ncurrent-jobs-reserved: 0\n"
              "current-jobs-delayed: 0\ncurrent-jobs-buried: 0\ncmd-put: 1\ncmd-peek: 0\ncmd-peek-ready: 0\n"
              "cmd-peek-delayed: 0\ncmd-peek-buried: 0\ncmd-reserve: 0\ncmd-reserve-with-timeout: 0\n"
              "cmd-delete: 0\ncmd-release: 0\ncmd-use: 0\ncmd-watch: 0\ncmd-ignore: 0\ncmd-bury: 0\ncmd-kick: 0\n"
              "cmd-touch: 0\ncmd-stats: 1\ncmd-stats-job: 1\ncmd-stats-tube: 1\ncmd-list-tubes: 1\n"
              "cmd-list-tube-used: 0\ncmd-list-tubes-watched: 0\ncmd-pause-tube: 0\njob-timeouts: 0\n"
              "total-jobs: 1\nmax-job-size: 65535\ncurrent-tubes: 1\ncurrent-connections: 1\n"
              "current-producers: 1\ncurrent-workers: 0\ncurrent-waiting: 0\ntotal-connections: 1\npid: 31094\n"
              "version: \"1.12\"\nrusage-utime: 0.008308\nrusage-stime: 0.008308\nuptime: 2\n"
              "binlog-oldest-index: 0\nbinlog-current-index: 0\nbinlog-records-migrated: 0\n"
              "binlog-records-written: 0\nbinlog-max-size: 0\ndraining: false\nid: ca5d0c957606e4e0\n"
              "hostname: vm\nos: #1 SMP PREEMPT_DYNAMIC @0\nplatform: x86_64\n\r\n",
              "stats: beanstalkd 1.12's keys in its order");

    char h[64];
    size_t n = bs_job_header(h, sizeof h, "RESERVED", 18446744073709551615u, 65535);
    CHECK_STR(h, "RESERVED 18446744073709551615 65535\r\n", "RESERVED <id> <bytes>");
    CHECK_INT(n, strlen(h), "the header's length");
    bs_job_header(h, sizeof h, "FOUND", 3, 0);
    CHECK_STR(h, "FOUND 3 0\r\n", "FOUND <id> <bytes>");
    bs_buf_free(&y);
    bs_buf_free(&r);
}

/* [pepsi-beanstalk]'s LISTEN and its defaults (bconf.c). */
static void check_conf(void)
{
    struct bs_conf c;
    struct conf conf;
    char err[512];
    memset(&conf, 0, sizeof conf);
    conf.path = "t.conf";
    CHECK_INT(bconf_load(&conf, &c, err, sizeof err), 0, "[pepsi-beanstalk] defaults load");
    CHECK(strcmp(c.host, "127.0.0.1") == 0 && c.port == 11300 && c.max_job_size == 65535 && c.connections == 4 &&
              c.max_clients == 1024 && c.reap_interval_ms == 5000,
          "defaults: 127.0.0.1:11300, MAX_JOB_SIZE 65535, CONNECTIONS 4, MAX_CLIENTS 1024, REAP_INTERVAL 5s");
    CHECK(bconf_parse_listen("0.0.0.0:0", &c) == 0 && strcmp(c.host, "0.0.0.0") == 0 && c.port == 0,
          "LISTEN 0.0.0.0:0");
    CHECK(bconf_parse_listen("[::1]:11301", &c) == 0 && strcmp(c.host, "::1") == 0 && c.port == 11301,
          "LISTEN [::1]:11301");
    CHECK(bconf_parse_listen("11302", &c) == 0 && strcmp(c.host, "127.0.0.1") == 0 && c.port == 11302,
          "LISTEN 11302: the port on 127.0.0.1");
    CHECK(bconf_parse_listen("localhost:11300", &c) != 0, "LISTEN takes an address, not a host name");
    CHECK(bconf_parse_listen("127.0.0.1:65536", &c) != 0, "LISTEN: a port over 65535 is refused");
    struct conf_kv kv[] = {{(char *)"CONNECTIONS", (char *)"0", 7}};
    conf.beanstalk = kv;
    conf.n_beanstalk = 1;
    CHECK_INT(bconf_load(&conf, &c, err, sizeof err), -1, "CONNECTIONS 0 is refused");
    CHECK_STR(err, "t.conf:7: key \"CONNECTIONS\" in [pepsi-beanstalk]: expected a whole number in range (1 to 64), not \"0\"",
              "with the file, line and key");
    struct conf_kv kv2[] = {{(char *)"PORT", (char *)"1", 3}};
    conf.beanstalk = kv2;
    CHECK_INT(bconf_load(&conf, &c, err, sizeof err), -1, "an unknown key is refused");
    CHECK_CONTAINS(err, "t.conf:3: key \"PORT\" in [pepsi-beanstalk]: unknown key", "naming it");
}

int main(void)
{
    check_conf();
    check_commands();
    check_errors();
    check_framing();
    check_yaml();
    return unit_done();
}

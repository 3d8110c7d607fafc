/* test_log.c — log lines that fit journald (issue 15): libpq messages
 * folded to one line (lib/pgerr), a worker's sd-daemon "<N>" prefix read
 * as the line's level (lib/log), durations written for people (lib/log). */
#include "unit.h"

#include "lib/log.h"
#include "lib/pgerr.h"

static void check_fold(void)
{
    char out[256];
    CHECK_STR(pgerr_fold("FATAL:  terminating connection due to administrator command\n"
                         "DETAIL:  the server is shutting down\n", out, sizeof out),
              "terminating connection due to administrator command; DETAIL:  the server is shutting down",
              "issue 15: a FATAL with a DETAIL folds to one line, the severity dropped");
    CHECK_STR(pgerr_fold("server closed the connection unexpectedly\n\tThis probably means the server terminated "
                         "abnormally\n\tbefore or while processing the request.\n", out, sizeof out),
              "server closed the connection unexpectedly;  This probably means the server terminated abnormally;  "
              "before or while processing the request.",
              "issue 15: libpq's own three-line message folds to one line, tabs made spaces");
    CHECK_STR(pgerr_fold("ERROR:  x\r\n\n\nHINT:  y  \n", out, sizeof out), "x ; HINT:  y",
              "issue 15: empty lines add no separator; carriage returns are spaces; trailing blanks cut");
    CHECK_STR(pgerr_fold("", out, sizeof out), "", "an empty message stays empty");
    CHECK_STR(pgerr_fold(NULL, out, sizeof out), "", "a NULL message is empty");
    CHECK(strchr(pgerr_fold("a\nb\nc\n", out, sizeof out), '\n') == NULL, "issue 15: no newline is left");
    char tiny[6];
    CHECK_STR(pgerr_fold("abc\ndef\n", tiny, sizeof tiny), "abc;", "the output is cut to its buffer");
    CHECK_STR(pgerr_conn_message(NULL), "no connection", "no connection: says so");
}

static void check_sd_prefix(void)
{
    static const enum log_level want[] = {PLOG_ERROR, PLOG_ERROR, PLOG_ERROR,  PLOG_ERROR,
                                          PLOG_WARNING, PLOG_NOTICE, PLOG_INFO, PLOG_DEBUG};
    for (int n = 0; n <= 7; n++) {
        char line[32];
        snprintf(line, sizeof line, "<%d>text", n);
        enum log_level got = PLOG_INFO;
        CHECK_INT(log_sd_prefix(line, strlen(line), &got), 3, "issue 15: \"<%d>\" is a prefix of 3 bytes", n);
        CHECK_INT(got, want[n], "issue 15: \"<%d>\" is level %d", n, (int)want[n]);
    }
    enum log_level lv = PLOG_NOTICE;
    CHECK_INT(log_sd_prefix("<8>x", 4, &lv), 0, "\"<8>\" is no sd-daemon priority");
    CHECK_INT(log_sd_prefix("<3x", 3, &lv), 0, "\"<3x\" is no prefix");
    CHECK_INT(log_sd_prefix("<3", 2, &lv), 0, "a line cut before \">\" is no prefix");
    CHECK_INT(log_sd_prefix(" <3>x", 5, &lv), 0, "the prefix must lead the line");
    CHECK_INT(log_sd_prefix("<3>x", 2, &lv), 0, "only the given length is read");
    CHECK_INT(lv, PLOG_NOTICE, "no prefix: the level is left alone");
}

static void check_duration(void)
{
    static const struct {
        long long ms;
        const char *want;
    } cases[] = {
        {0, "0 ms"},        {250, "250 ms"},    {999, "999 ms"},      {1000, "1 s"},      {1500, "1.5 s"},
        {1999, "2.0 s"},    {45000, "45 s"},    {60000, "1 min"},     {90000, "90 s"},    {300000, "5 min"},
        {301500, "301.5 s"}, {3600000, "1 h"},  {7200000, "2 h"},     {5400000, "90 min"}, {-2000, "-2 s"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[32];
        CHECK_STR(log_duration(cases[i].ms, buf, sizeof buf), cases[i].want, "issue 15: %lld ms reads \"%s\"",
                  cases[i].ms, cases[i].want);
    }
    CHECK_STR(LOG_DURATION(300000), "5 min", "issue 15: LOG_DURATION(300000) is \"5 min\", not \"300000 ms\"");
}

int main(void)
{
    check_fold();
    check_sd_prefix();
    check_duration();
    return unit_done();
}

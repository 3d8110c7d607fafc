/* test_sdk_api.c — the public API of libpepsi-worker (issue 13,
 * sdk/pepsi-worker.h) that needs no database: the command line of a stage
 * program of its own (pepsi_worker_run), its log lines (pepsi_log), the
 * API version, and a stage definition it cannot run. The whole library,
 * installed and linked by a program of its own, is e2e 46-c-sdk. */
#include "sdk/pepsi-worker.h"
#include "sdk/sdk_internal.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void never_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    (void)w;
    (void)m;
    (void)out;
}

static const struct pepsi_stage_def def = {.program = "unit", .run = never_run};

/* Runs pepsi_worker_run on the given words with stderr (and stdout) sent
 * to a file; returns its status and what it wrote in text. */
static int run_words(const char *const *words, char *text, size_t cap)
{
    char *argv[8];
    int argc = 0;
    for (; argc < 7 && words[argc]; argc++)
        argv[argc] = (char *)words[argc];
    argv[argc] = NULL;
    FILE *tmp = tmpfile();
    int saved_err = dup(STDERR_FILENO), saved_out = dup(STDOUT_FILENO);
    if (tmp == NULL || saved_err < 0 || saved_out < 0)
        abort();
    fflush(stdout);
    dup2(fileno(tmp), STDERR_FILENO);
    dup2(fileno(tmp), STDOUT_FILENO);
    int rc = pepsi_worker_run(argc, argv, &def);
    fflush(stdout);
    dup2(saved_err, STDERR_FILENO);
    dup2(saved_out, STDOUT_FILENO);
    close(saved_err);
    close(saved_out);
    rewind(tmp);
    size_t n = fread(text, 1, cap - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return rc;
}

static void test_command_line(void)
{
    char text[4096];
    unsetenv("PEPSI_STAGE");
    CHECK_INT(run_words((const char *[]){"stage", NULL}, text, sizeof text), 64,
              "issue 13: no \"worker\" is a usage error (64)");
    CHECK_CONTAINS(text, "usage: stage [-c FILE] [-L LEVEL] [-v] worker", "... with the usage line");
    CHECK_INT(run_words((const char *[]){"stage", "serve", NULL}, text, sizeof text), 64,
              "issue 13: another word than \"worker\" is 64");
    CHECK_INT(run_words((const char *[]){"stage", "worker", "extra", NULL}, text, sizeof text), 64,
              "issue 13: a word after \"worker\" is 64");
    CHECK_INT(run_words((const char *[]){"stage", "-x", "worker", NULL}, text, sizeof text), 64,
              "issue 13: an unknown option is 64");
    CHECK_CONTAINS(text, "unknown or incomplete option \"-x\"", "... naming it");
    CHECK_INT(run_words((const char *[]){"stage", "-L", "loud", "worker", NULL}, text, sizeof text), 64,
              "issue 13: an unknown log level is 64");
    CHECK_CONTAINS(text, "unknown log level \"loud\"", "... naming it");
    CHECK_INT(run_words((const char *[]){"stage", "worker", "-c", "/x", NULL}, text, sizeof text), 64,
              "issue 13: options come before \"worker\", as pepsi-runner passes them");
    CHECK_INT(run_words((const char *[]){"stage", "--help", NULL}, text, sizeof text), 0,
              "issue 13: --help is 0");
    CHECK_CONTAINS(text, "usage:", "... and prints the usage");
    /* Read as the runner starts a worker: the worker itself then refuses
     * without PEPSI_STAGE (78), having read -c and -L. */
    CHECK_INT(run_words((const char *[]){"stage", "-c", "/nonexistent/pepsi.conf", "-L", "warning", "worker", NULL},
                        text, sizeof text),
              78, "issue 13: PROGRAM -c FILE -L LEVEL worker reaches the worker: 78 without PEPSI_STAGE");
    CHECK_CONTAINS(text, "PEPSI_STAGE is not set", "... saying why");
}

static void test_log(void)
{
    char text[4096];
    struct pepsi_worker w;
    memset(&w, 0, sizeof w);
    w.stage = "count";
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    if (tmp == NULL || saved < 0)
        abort();
    dup2(fileno(tmp), STDERR_FILENO);
    /* The level of the last run_words: -L warning. */
    pepsi_log(&w, PEPSI_LOG_WARNING, "message %d: %s", 42, "slow");
    pepsi_log(&w, PEPSI_LOG_INFO, "not shown");
    pepsi_log(NULL, PEPSI_LOG_ERROR, "no worker yet");
    pepsi_log(&w, (enum pepsi_log_level)99, "out of range");
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    CHECK_CONTAINS(text, "WARNING:  count: message 42: slow\n", "issue 13: pepsi_log writes the runner's format, tagged with the stage");
    CHECK(strstr(text, "not shown") == NULL, "issue 13: pepsi_log obeys -L (info is below warning)");
    CHECK_CONTAINS(text, "ERROR:  worker: no worker yet\n", "issue 13: pepsi_log without a worker tags \"worker\"");
    CHECK_CONTAINS(text, "ERROR:  count: out of range\n", "issue 13: an unknown level is logged as an error");
}

static void test_version_and_def(void)
{
    CHECK_INT(pepsi_worker_api_version(), PEPSI_WORKER_API_VERSION, "issue 13: the library's API version is the header's");
    CHECK_INT(PEPSI_WORKER_API_VERSION, 1, "issue 13: API version 1");
    struct pepsi_stage_def no_run = {.program = "unit"};
    int saved = dup(STDERR_FILENO);
    FILE *null = fopen("/dev/null", "w");
    if (saved < 0 || null == NULL)
        abort();
    dup2(fileno(null), STDERR_FILENO); /* its error line is expected */
    int rc_no_run = pepsi_worker_main(&no_run, NULL), rc_null = pepsi_worker_main(NULL, NULL);
    dup2(saved, STDERR_FILENO);
    close(saved);
    fclose(null);
    CHECK_INT(rc_no_run, 1, "issue 13: a definition without run() is refused (1)");
    CHECK_INT(rc_null, 1, "issue 13: no definition is refused (1)");
}

int main(void)
{
    test_command_line();
    test_log();
    test_version_and_def();
    return unit_done();
}

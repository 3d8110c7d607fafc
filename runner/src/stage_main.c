/* stage_main.c — pepsi-stage, the built-in stage programs alone (issue 19):
 *
 *   pepsi-stage-NAME [GLOBAL-OPTIONS] worker       (a link to pepsi-stage)
 *   pepsi-stage [GLOBAL-OPTIONS] NAME worker
 *
 * The same workers as `pepsi-runner stage NAME worker`, in a binary linked
 * only with what stages/, sdk/ and the lib/ objects they use need (libpq,
 * jansson, inih, PCRE2, libcurl), not the runner's libuv, libmicrohttpd,
 * libsystemd and the rest: a worker starts for every MAX_MESSAGES, and the
 * dynamic loader was 18 % of a start's CPU with the runner's 43 libraries.
 * All built-ins are in it, so fusion between them is unchanged (D-126). */
#include "lib/log.h"
#include "lib/schema.h"
#include "lib/util.h"
#include "stages/stages.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: pepsi-stage-NAME [GLOBAL-OPTIONS] worker\n"
            "       %s [GLOBAL-OPTIONS] NAME worker\n"
            "Runs built-in stage NAME (%s) as a worker of pepsi-runner serve.\n"
            "  -c, --config FILE   read FILE instead of $PEPSI_CONFIG or /etc/pepsi/pepsi.conf\n"
            "  -L, --log LEVEL     error, warning, notice, info (default) or debug\n"
            "  -v, --verbose       show log messages from all sources (debug)\n"
            "  -h, --help          print this summary and exit\n"
            "  -V, --version       print the version and exit\n",
            prog, stages_builtin_names());
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'}, {"log", required_argument, NULL, 'L'},
        {"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *base = strrchr(argv[0], '/');
    enum log_level level = PLOG_INFO;
    bool verbose = false;
    int ch;
    base = base ? base + 1 : argv[0];
    opterr = 0;
    while ((ch = getopt_long(argc, argv, "+c:L:vhV", longs, NULL)) != -1) {
        if (ch == 'c') {
            config = optarg;
        } else if (ch == 'L' && log_parse_level(optarg, &level) == 0) {
            continue;
        } else if (ch == 'v') {
            verbose = true;
        } else if (ch == 'h' || ch == 'V') {
            if (ch == 'h')
                usage(stdout, argv[0]);
            else
                printf("pepsi-stage (schema API level %d, %d sqitch changes)\n", schema_build_level(), schema_build_changes());
            return 0;
        } else {
            fprintf(stderr, "%s: unknown or incomplete option \"%s\"\n", argv[0], argv[optind - 1]);
            usage(stderr, argv[0]);
            return EXIT_USAGE;
        }
    }
    log_init(level, verbose);
    const char *name = NULL;
    if (strncmp(base, "pepsi-stage-", 12) == 0)
        name = base + 12;
    else if (optind < argc)
        name = argv[optind++];
    if (name == NULL || optind + 1 != argc || strcmp(argv[optind], "worker") != 0) {
        fprintf(stderr, "%s: expected \"worker\" after the stage name\n", argv[0]);
        return EXIT_USAGE;
    }
    return stages_run_worker(name, config);
}

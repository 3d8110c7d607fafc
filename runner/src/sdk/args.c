/* sdk/args.c — pepsi_worker_run (pepsi-worker.h): the command line a
 * stage program of its own is started with, `PROGRAM [-c FILE] [-L LEVEL]
 * [-v] worker` (README "The worker protocol"), read the way pepsi-runner
 * reads its own global options (main.c), then the worker (worker.c).
 * Uses: sdk/pepsi-worker.h, lib/ (log, util). */
#include "sdk/pepsi-worker.h"

#include "lib/log.h"
#include "lib/util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *to, const char *argv0)
{
    fprintf(to,
            "usage: %s [-c FILE] [-L LEVEL] [-v] worker\n"
            "  a pepsi stage program: pepsi-runner serve starts it as a worker of the\n"
            "  [stage-*] sections whose PROGRAM it is (PEPSI_STAGE names the section)\n"
            "  -c, --config FILE   the configuration file (default: $PEPSI_CONFIG, then /etc/pepsi/pepsi.conf)\n"
            "  -L, --log LEVEL     error, warning, notice, info (default), debug\n"
            "  -v, --verbose       debug level\n",
            argv0);
}

int pepsi_worker_run(int argc, char **argv, const struct pepsi_stage_def *def)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'}, {"log", required_argument, NULL, 'L'},
        {"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *argv0 = argc > 0 && argv[0] ? argv[0] : "pepsi-stage";
    const char *config = NULL;
    enum log_level level = PLOG_INFO;
    bool verbose = false;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "+c:L:vh", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            config = optarg;
            break;
        case 'L':
            if (log_parse_level(optarg, &level) != 0) {
                fprintf(stderr, "%s: unknown log level \"%s\"\n", argv0, optarg);
                return EXIT_USAGE;
            }
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            usage(stdout, argv0);
            return 0;
        default:
            fprintf(stderr, "%s: unknown or incomplete option \"%s\"\n", argv0, argv[optind - 1]);
            usage(stderr, argv0);
            return EXIT_USAGE;
        }
    }
    if (optind + 1 != argc || strcmp(argv[optind], "worker") != 0) {
        usage(stderr, argv0);
        return EXIT_USAGE;
    }
    log_init(level, verbose);
    return pepsi_worker_main(def, config);
}

/* main.c — the pepsi-runner command line (D-01..D-07).
 *
 *   pepsi-runner [GLOBAL-OPTIONS] serve            the dispatcher
 *   pepsi-runner [GLOBAL-OPTIONS] ingress          the webhook endpoint
 *   pepsi-runner [GLOBAL-OPTIONS] beanstalk        the beanstalkd protocol frontend (issue 17)
 *   pepsi-runner [GLOBAL-OPTIONS] maintain         reconciliation and anomaly runs alone
 *   pepsi-runner [GLOBAL-OPTIONS] status [--json]  the anomaly dashboard and queue counts
 *   pepsi-runner [GLOBAL-OPTIONS] queue ...        operator actions on messages (issue 16)
 *   pepsi-runner [GLOBAL-OPTIONS] settings ...     per-address settings
 *   pepsi-runner [GLOBAL-OPTIONS] stage NAME worker a built-in stage's worker
 *   pepsi-stage-NAME [GLOBAL-OPTIONS] worker       the same, through a link
 *
 * Global options come before the subcommand; a flag after it is rejected
 * (exit 64), except the options of status and queue (--json, --stage ...),
 * which those commands parse and which are never global options. */
#include "lib/conf.h"
#include "dispatch/dispatch.h"
#include "ingress/ingress.h"
#include "beanstalk/beanstalk.h"
#include "lib/log.h"
#include "dispatch/maintain.h"
#include "lib/pgpass.h"
#include "lib/schema.h"
#include "lib/service.h"
#include "cli/status.h"
#include "cli/settings_cmd.h"
#include "cli/queue_cmd.h"
#include "cli/conf_keys_cmd.h"
#include "stages/stages.h"
#include "lib/util.h"

#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEPSI_VERSION "0.1.0"

struct options {
    const char *config;      /* -c FILE, or NULL */
    enum log_level level;
    bool verbose;
};

static void usage(FILE *out, const char *prog)
{
    fprintf(out,
            "usage: %s [GLOBAL-OPTIONS] serve\n"
            "       %s [GLOBAL-OPTIONS] ingress\n"
            "       %s [GLOBAL-OPTIONS] beanstalk\n"
            "       %s [GLOBAL-OPTIONS] maintain\n"
            "       %s [GLOBAL-OPTIONS] status [--json]\n"
            "       %s [GLOBAL-OPTIONS] queue list|show|retry|delete|move|pause|resume|purge ...\n"
            "       %s [GLOBAL-OPTIONS] settings list|set|delete|owners|own|disown ...\n"
            "       %s [GLOBAL-OPTIONS] stage NAME worker\n"
            "       %s conf-keys sql|readme|man\n"
            "\n"
            "Global options (before the subcommand):\n"
            "  -c, --config FILE   read FILE instead of $PEPSI_CONFIG or /etc/pepsi/pepsi.conf\n"
            "  -L, --log LEVEL     error, warning, notice, info (default) or debug\n"
            "  -v, --verbose       show log messages from all sources (debug)\n"
            "  -h, --help          print this summary and exit\n"
            "  -V, --version       print the version and exit\n"
            "\n"
            "Commands:\n"
            "  serve               run the dispatcher until SIGINT or SIGTERM (SIGHUP: reload)\n"
            "  ingress             run the webhook endpoint until SIGINT or SIGTERM (SIGHUP: reload)\n"
            "  beanstalk           run the beanstalkd protocol frontend ([pepsi-beanstalk]) until SIGINT or\n"
            "                      SIGTERM\n"
            "  maintain            run reconciliation and anomaly checks alone until SIGINT or SIGTERM\n"
            "  status [--json]     print the anomaly checks and the queue's counts per stage and exit\n"
            "                      0 ok, 1 a warning check firing, 2 a critical one, 3 unknown\n"
            "  queue list [--stage S] [--status ST] [--tube T] [--limit N] [--json] | show ID [--json]\n"
            "  queue retry ID... | delete ID... --reason TEXT | move ID... --to STAGE\n"
            "  queue pause STAGE [--reason TEXT] | resume STAGE | pause --tube T --for DURATION\n"
            "  queue resume --tube T | purge --older-than DURATION\n"
            "                      operator actions on messages, stages and tubes\n"
            "  settings list [ADDRESS] | set ADDRESS STAGE OPTION VALUE | delete ADDRESS [STAGE [OPTION]]\n"
            "                      per-address overrides of [stage-*] options\n"
            "  settings owners [LOGIN] | own LOGIN ADDRESS | disown LOGIN [ADDRESS]\n"
            "                      which addresses an end user's control messages may change\n"
            "  stage NAME worker   run built-in stage NAME as a worker (%s)\n"
            "  conf-keys sql|readme|man\n"
            "                      print the configuration keys as SQL (deploy/config_keys.sql), as\n"
            "                      the README's table, or as pepsi.conf(5)'s (man/pepsi.conf.5)\n",
            prog, prog, prog, prog, prog, prog, prog, prog, prog, stages_builtin_names());
}

/* Parses the global options; returns the index of the subcommand, or -1
 * after printing help/version (exit 0), or -2 on a usage error. */
static int parse_globals(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'}, {"log", required_argument, NULL, 'L'},
        {"verbose", no_argument, NULL, 'v'},      {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    int ch;
    opterr = 0;
    /* "+": stop at the first non-option, so the subcommand ends the globals. */
    while ((ch = getopt_long(argc, argv, "+c:L:vhV", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->config = optarg;
            break;
        case 'L':
            if (log_parse_level(optarg, &o->level) != 0) {
                fprintf(stderr, "%s: unknown log level \"%s\"\n", argv[0], optarg);
                return -2;
            }
            break;
        case 'v':
            o->verbose = true;
            break;
        case 'h':
            usage(stdout, argv[0]);
            return -1;
        case 'V':
            printf("pepsi-runner %s (schema API level %d, %d sqitch changes)\n", PEPSI_VERSION, schema_build_level(),
                   schema_build_changes());
            return -1;
        default:
            fprintf(stderr, "%s: unknown or incomplete option \"%s\"\n", argv[0], argv[optind - 1]);
            return -2;
        }
    }
    return optind;
}

/* Any argument after the subcommand that looks like a flag is rejected (D-03). */
static int reject_late_flags(int argc, char **argv, int from)
{
    for (int i = from; i < argc; i++) {
        if (argv[i][0] == '-') {
            fprintf(stderr, "%s: option \"%s\" must come before the subcommand\n", argv[0], argv[i]);
            return -1;
        }
    }
    return 0;
}

/* The directory of the running executable, for pepsi-stage-* built-ins. */
static char *self_dir(void)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    return xstrdup(dirname(buf));
}

enum daemon { DAEMON_SERVE, DAEMON_INGRESS, DAEMON_MAINTAIN, DAEMON_BEANSTALK };

/* Issue 17: the stage 'beanstalk' is the beanstalkd frontend's pull stage,
 * which no runner claims; a [stage-beanstalk] section is refused. */
static int refuse_reserved_stage(const struct conf *conf)
{
    const struct stage_conf *s = conf_stage(conf, "beanstalk");
    if (s == NULL)
        return 0;
    log_error("config", "%s:%d: section [stage-beanstalk]: the stage name \"beanstalk\" is reserved for the "
              "beanstalkd frontend (pepsi-runner beanstalk); name the stage otherwise",
              conf->path, s->line);
    return EXIT_CONFIG;
}

/* The dispatcher, with the workers' connection string and passfile made
 * before it starts and removed after it stops, whatever its exit. */
static int serve(struct conf *conf, const char *path)
{
    struct worker_auth auth;
    char err[1024];
    if (worker_auth_prepare(conf, &auth, err, sizeof err) != 0) {
        log_error("dispatch", "%s", err);
        return 1;
    }
    if (refuse_reserved_stage(conf) != 0) {
        worker_auth_cleanup(&auth);
        return EXIT_CONFIG;
    }
    char *dir = self_dir();
    /* Issue 15: a PROGRAM that cannot run, or a key a built-in stage does
     * not know, is a configuration error now, not at the first message. */
    if (stages_check_programs(conf, dir, err, sizeof err) != 0) {
        log_error("config", "%s", err);
        free(dir);
        worker_auth_cleanup(&auth);
        return EXIT_CONFIG;
    }
    int code = dispatch_serve(conf, path, dir, &auth);
    free(dir);
    worker_auth_cleanup(&auth);
    return code;
}

static int run_daemon(const struct options *o, enum daemon which)
{
    struct conf conf;
    char err[1024];
    const char *path = o->config ? o->config : conf_default_path();
    int rc = conf_load(path, &conf, err, sizeof err);
    if (rc != 0) {
        log_error("config", "%s", err);
        /* D-10: a malformed configuration file; 78 for one that holds a
         * secret and is open to other users (issue 11). */
        int code = rc == CONF_INSECURE ? EXIT_CONFIG : 1;
        service_refused("config", code);
        return code;
    }
    int code;
    if (which == DAEMON_INGRESS)
        code = ingress_serve(&conf, path);
    else if (which == DAEMON_BEANSTALK)
        code = beanstalk_serve(&conf, path, PEPSI_VERSION);
    else if (which == DAEMON_MAINTAIN)
        code = maintain_command(&conf, path);
    else
        code = serve(&conf, path);
    conf_free(&conf);
    service_refused(which == DAEMON_INGRESS     ? "ingress"
                    : which == DAEMON_MAINTAIN ? "maintain"
                    : which == DAEMON_BEANSTALK ? BS_COMPONENT
                                                : "dispatch",
                    code); /* a restart backoff systemd 252 lacks (issue 15) */
    return code;
}

static int run_stage(const struct options *o, const char *name, int argc, char **argv, int at)
{
    if (at >= argc || strcmp(argv[at], "worker") != 0 || at + 1 != argc) {
        fprintf(stderr, "%s: expected \"worker\" after the stage name\n", argv[0]);
        return EXIT_USAGE;
    }
    return stages_run_worker(name, o->config);
}

int main(int argc, char **argv)
{
    struct options o = {NULL, PLOG_INFO, false};
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];

    int at = parse_globals(argc, argv, &o);
    if (at == -1)
        return 0;
    if (at == -2) {
        usage(stderr, argv[0]);
        return EXIT_USAGE;
    }
    log_init(o.level, o.verbose);
    /* status and queue parse their own options (issue 16). */
    bool own_options = at < argc && (strcmp(argv[at], "status") == 0 || strcmp(argv[at], "queue") == 0);
    if (!own_options && reject_late_flags(argc, argv, at) != 0)
        return EXIT_USAGE;

    /* Multi-call: pepsi-stage-NAME is the built-in stage NAME. */
    if (strncmp(base, "pepsi-stage-", 12) == 0)
        return run_stage(&o, base + 12, argc, argv, at);
    if (at >= argc) {
        usage(stderr, argv[0]);
        return EXIT_USAGE;
    }
    if (strcmp(argv[at], "serve") == 0 || strcmp(argv[at], "ingress") == 0 || strcmp(argv[at], "maintain") == 0 ||
        strcmp(argv[at], "beanstalk") == 0) {
        if (at + 1 != argc) {
            fprintf(stderr, "%s: %s takes no arguments\n", argv[0], argv[at]);
            return EXIT_USAGE;
        }
        return run_daemon(&o, strcmp(argv[at], "serve") == 0       ? DAEMON_SERVE
                              : strcmp(argv[at], "ingress") == 0   ? DAEMON_INGRESS
                              : strcmp(argv[at], "beanstalk") == 0 ? DAEMON_BEANSTALK
                                                                   : DAEMON_MAINTAIN);
    }
    if (strcmp(argv[at], "status") == 0)
        return status_command(o.config, argc - at - 1, argv + at + 1);
    if (strcmp(argv[at], "queue") == 0)
        return queue_command(o.config, argc - at - 1, argv + at + 1);
    if (strcmp(argv[at], "conf-keys") == 0)
        return conf_keys_command(argc - at - 1, argv + at + 1);
    if (strcmp(argv[at], "settings") == 0)
        return settings_command(o.config, argc - at - 1, argv + at + 1);
    if (strcmp(argv[at], "stage") == 0 && at + 1 < argc)
        return run_stage(&o, argv[at + 1], argc, argv, at + 2);
    fprintf(stderr, "%s: unknown command \"%s\"\n", argv[0], argv[at]);
    usage(stderr, argv[0]);
    return EXIT_USAGE;
}

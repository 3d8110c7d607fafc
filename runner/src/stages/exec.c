/* stages/exec.c — pepsi-stage-exec: runs COMMAND (with /bin/sh -c) for each
 * message, the body on its stdin, the message's metadata as JSON on file
 * descriptor 3 and, within bounds, in its environment (stages/exec_env.h):
 *   PEPSI_MESSAGE_ID, PEPSI_TUBE, PEPSI_SENDER_KEY,
 *   PEPSI_ENVELOPE_SENDER (unset: none; empty: the null sender),
 *   PEPSI_RECIPIENTS (space-separated), PEPSI_SUBJECT, PEPSI_HEADER_FROM,
 *   PEPSI_STATE (the state as JSON), PEPSI_MESSAGE_FD (3), PEPSI_TRUNCATED
 *   (the variables left out for their size). PEPSI_HEADERS_FILE is not
 *   provided: the header block, when there is one, precedes the body on
 *   stdin separated by an empty line only if HEADERS = yes.
 * The command gets no connection string and no password (issue 11) unless
 * the section says PASS_CONNINFO = yes, which only the operator can: it is
 * read from the section, never from a per-address override.
 * Its stdout and stderr go to the runner's log. Outcome by exit status:
 *   0          advance to NEXT (finish when none)
 *   75         host error: retried later, 1, 2, 4 ... minutes (D-104)
 *   a signal   host error as well (an OOM kill is not the message's fault)
 *   126, 127   host error (D-103): the command cannot be run (not found, not
 *              executable, environment too large), which is the host's
 *              fault; the reason says why. So is a /bin/sh that could not
 *              be started at all.
 *   other      permanent failure, with the command's last stderr line as
 *              the reason (D-110) */
#include "stages/stages.h"

#include "lib/log.h"
#include "stages/exec_env.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *const exec_keys[] = {"COMMAND", "HEADERS", "PASS_CONNINFO", NULL};
/* What an end user's settings control message may set (issue 11): never COMMAND. */
static const char *const exec_user_keys[] = {"HEADERS", NULL};

struct exec_conf {
    const char *command;
    bool headers;        /* HEADERS = yes: the header block and an empty line precede the body */
    bool pass_conninfo;  /* PASS_CONNINFO = yes: the command may connect as the worker does */
    char **strip;        /* variables the command never inherits (exec_env_strip_names) */
};

static int exec_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    const char *cmd = conf_stage_own(pepsi_worker_section(w), "COMMAND");
    const char *hdr = conf_stage_own(pepsi_worker_section(w), "HEADERS");
    const char *pass = conf_stage_own(pepsi_worker_section(w), "PASS_CONNINFO");
    struct exec_conf *ec;
    bool headers = false, pass_conninfo = false;

    if (cmd == NULL || *cmd == '\0') {
        snprintf(err, errlen, "key \"COMMAND\" is required by pepsi-stage-exec");
        return -1;
    }
    if (hdr && conf_parse_bool(hdr, &headers) != 0) {
        snprintf(err, errlen, "key \"HEADERS\": expected yes or no, not \"%s\"", hdr);
        return -1;
    }
    if (pass && conf_parse_bool(pass, &pass_conninfo) != 0) {
        snprintf(err, errlen, "key \"PASS_CONNINFO\": expected yes or no, not \"%s\"", pass);
        return -1;
    }
    ec = xcalloc(1, sizeof *ec);
    ec->command = cmd;
    ec->headers = headers;
    ec->pass_conninfo = pass_conninfo;
    ec->strip = exec_env_strip_names(pass_conninfo);
    pepsi_worker_set_data(w, ec);
    return 0;
}

static int exec_check_option(struct pepsi_worker *w, const char *key, const char *value, char *err,
                             size_t errlen)
{
    bool b;
    (void)w;
    if (strcmp(key, "HEADERS") == 0 && conf_parse_bool(value, &b) != 0) {
        snprintf(err, errlen, "HEADERS: expected yes or no, not \"%s\"", value);
        return -1;
    }
    if (strcmp(key, "COMMAND") == 0 && *value == '\0') {
        snprintf(err, errlen, "COMMAND must not be empty");
        return -1;
    }
    if (strcmp(key, "PASS_CONNINFO") == 0) {
        snprintf(err, errlen, "PASS_CONNINFO cannot be set per address: only the stage's section "
                 "gives a command the database connection");
        return -1;
    }
    return 0;
}

static void exec_teardown(struct pepsi_worker *w)
{
    struct exec_conf *ec = pepsi_worker_data(w);
    if (ec)
        exec_env_names_free(ec->strip);
    free(ec);
}

/* Why the child could not run /bin/sh, sent to us through a close-on-exec
 * pipe (nothing arrives when the exec succeeded). */
struct exec_failure {
    int step;            /* 1: its descriptors, 2: execve */
    int err;             /* errno */
};

/* Makes fd the descriptor at, open across exec. */
static int put_fd(int fd, int at)
{
    if (fd == at)
        return fcntl(fd, F_SETFD, 0);
    return dup2(fd, at) < 0 ? -1 : 0;
}

/* In the child: stdin, stdout (our stderr: stdout is the protocol
 * channel), stderr and the metadata at 3, then /bin/sh. Never returns. */
static void child_exec(int in, int err, int meta, int report, char *const argv[], char *const envp[])
{
    struct exec_failure f = {1, 0};
    if (report == EXEC_MESSAGE_FD)
        report = fcntl(report, F_DUPFD_CLOEXEC, EXEC_MESSAGE_FD + 1);
    if (report < 0 || dup2(in, 0) < 0 || dup2(STDERR_FILENO, 1) < 0 || dup2(err, 2) < 0 ||
        put_fd(meta, EXEC_MESSAGE_FD) != 0) {
        f.err = errno;
    } else {
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execve("/bin/sh", argv, envp);
        f.step = 2;
        f.err = errno;
    }
    if (report >= 0 && write(report, &f, sizeof f) != (ssize_t)sizeof f)
        _exit(126);
    _exit(f.step == 2 ? 127 : 126);
}

/* The pipes of one command: our ends of its stdin and stderr, and of the
 * report of a failed exec. */
struct child_io {
    int in, err, report;
};

static void close_pair(int p[2])
{
    close(p[0]);
    close(p[1]);
}

/* fork and exec /bin/sh -c command with env and the metadata at fd 3.
 * Returns the pid or -1 (errno). */
static pid_t spawn_command(const char *command, char *const env[], int meta, struct child_io *io)
{
    int pin[2], perr[2], prep[2];
    if (pipe2(pin, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(perr, O_CLOEXEC) != 0) {
        close_pair(pin);
        return -1;
    }
    if (pipe2(prep, O_CLOEXEC) != 0) {
        close_pair(pin);
        close_pair(perr);
        return -1;
    }
    char *argv[] = {"sh", "-c", (char *)command, NULL};
    pid_t pid = fork();
    if (pid == 0)
        child_exec(pin[0], perr[1], meta, prep[1], argv, env);
    int e = errno;
    close(pin[0]);
    close(perr[1]);
    close(prep[1]);
    if (pid < 0) {
        close(pin[1]);
        close(perr[0]);
        close(prep[0]);
        errno = e;
        return -1;
    }
    io->in = pin[1];
    io->err = perr[0];
    io->report = prep[0];
    return pid;
}

struct feed {
    const unsigned char *parts[3];
    size_t lens[3];
    int part;
    size_t off;
};

/* Writes what the pipe takes; returns false when done (or the reader left). */
static bool feed_some(struct feed *f, int fd)
{
    while (f->part < 3) {
        if (f->off == f->lens[f->part]) {
            f->part++;
            f->off = 0;
            continue;
        }
        ssize_t n = write(fd, f->parts[f->part] + f->off, f->lens[f->part] - f->off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n <= 0)
            return false; /* EPIPE: the command does not read its input */
        f->off += (size_t)n;
    }
    return false;
}

/* Reads stderr; keeps the last non-empty line in last, logs each line. */
static bool drain_stderr(struct pepsi_worker *w, int fd, char *acc, size_t *alen, char *last, size_t lastcap)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return true;
    if (n <= 0) {
        if (*alen) {
            snprintf(last, lastcap, "%.*s", (int)*alen, acc);
            log_info(pepsi_worker_stage(w), "command: %.*s", (int)*alen, acc);
            *alen = 0;
        }
        return false;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\n' || *alen == 1023) {
            if (*alen) {
                snprintf(last, lastcap, "%.*s", (int)*alen, acc);
                log_info(pepsi_worker_stage(w), "command: %.*s", (int)*alen, acc);
            }
            *alen = 0;
            if (buf[i] == '\n')
                continue;
        }
        acc[(*alen)++] = buf[i];
    }
    return true;
}

/* Feeds the input and reads stderr until both are done; returns the wait status. */
static int pump(struct pepsi_worker *w, pid_t pid, int in, int err, struct feed *f, char *last, size_t lastcap)
{
    char acc[1024];
    size_t alen = 0;
    int status = 0;
    bool feeding = true, reading = true;

    if (fcntl(in, F_SETFL, O_NONBLOCK) != 0)
        log_warning(pepsi_worker_stage(w), "cannot make the command's stdin non-blocking");
    while (feeding || reading) {
        struct pollfd p[2] = {{err, POLLIN, 0}, {in, POLLOUT, 0}};
        int np = feeding ? 2 : 1;
        if (!reading) {
            p[0].fd = -1;
        }
        if (poll(p, (nfds_t)np, -1) < 0 && errno != EINTR)
            break;
        if (reading && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
            reading = drain_stderr(w, err, acc, &alen, last, lastcap);
        if (feeding && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            feeding = feed_some(f, in);
            if (!feeding)
                close(in);
        }
    }
    if (feeding)
        close(in);
    close(err);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

/* The failure report of the child, if its exec failed: 1 and *f, else 0. */
static int read_failure(int report, struct exec_failure *f)
{
    ssize_t n;
    while ((n = read(report, f, sizeof *f)) < 0 && errno == EINTR)
        ;
    close(report);
    return n == (ssize_t)sizeof *f;
}

/* The outcome of a /bin/sh that could not be started at all: a host error
 * (D-103: a helper that cannot be started), as its 126/127 exit is; the
 * reason says why. */
static void exec_failed(struct pepsi_worker *w, const struct exec_failure *f, const struct exec_env *env,
                        struct pepsi_outcome *out)
{
    const char *stage = pepsi_worker_stage(w);
    out->kind = PEPSI_HOST_ERROR;
    if (f->step == 2 && f->err == E2BIG)
        pepsi_outcome_reason(out, "stage %s: environment too large to start the command (%zu bytes in %zu "
                             "variables, %zu of them the message's; the system allows %ld): "
                             "shrink the runner's environment", stage, env->bytes, env->n,
                             env->message_bytes, sysconf(_SC_ARG_MAX));
    else if (f->step == 2)
        pepsi_outcome_reason(out, "stage %s: cannot start /bin/sh: %s", stage, strerror(f->err));
    else
        pepsi_outcome_reason(out, "stage %s: cannot set up the command's descriptors: %s", stage,
                             strerror(f->err));
}

/* The outcome of the command's exit status (last: its last stderr line). */
static void exec_outcome(struct pepsi_worker *w, int status, const char *last, struct pepsi_outcome *out)
{
    const char *stage = pepsi_worker_stage(w), *sep = last[0] ? ": " : "";
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 0) {
        out->kind = PEPSI_ADVANCE;
    } else if (code == EXIT_TEMPFAIL) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command asked to retry (exit 75)%s%s", stage, sep, last);
    } else if (WIFSIGNALED(status)) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command killed by signal %d%s%s", stage, WTERMSIG(status),
                             sep, last);
    } else if ((code == 126 || code == 127) && strstr(last, "Argument list too long")) {
        /* The shell could not start the command: E2BIG. Like every 126
         * and 127, the host's fault, not the message's (D-103). */
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: environment too large to start the command (exit %d): %s",
                             stage, code, last);
    } else if (code == 127) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command not found (exit 127)%s%s", stage, sep, last);
    } else if (code == 126) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command cannot be run (exit 126: not executable or not "
                             "permitted)%s%s", stage, sep, last);
    } else {
        out->kind = PEPSI_FAIL;
        if (last[0])
            pepsi_outcome_reason(out, "%s", last);
        else
            pepsi_outcome_reason(out, "stage %s: command exited with status %d", stage, code);
    }
}

static void exec_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    const struct exec_conf *ec = pepsi_worker_data(w);
    char last[512] = "", why[256];
    struct child_io io;
    struct exec_env env;
    static const unsigned char blank[] = "\n";

    /* Per-address overrides of COMMAND and HEADERS (D-122), checked
     * before the stage ran (exec_check_option); PASS_CONNINFO never. */
    const char *command = pepsi_option(w, m, "COMMAND");
    const char *hdr = pepsi_option(w, m, "HEADERS");
    bool headers = ec->headers;
    if (hdr)
        conf_parse_bool(hdr, &headers);
    int meta = exec_message_fd(m, pepsi_worker_stage(w), why, sizeof why);
    if (meta < 0) {
        out->kind = meta == -2 ? PEPSI_FAIL : PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: %s", pepsi_worker_stage(w), why);
        return;
    }
    exec_env_build(&env, environ, ec->strip, m);
    if (exec_env_get(&env, "PEPSI_TRUNCATED"))
        log_debug(pepsi_worker_stage(w), "message %lld: %s left out of the command's environment "
                  "(on fd %d only)", (long long)m->id, exec_env_get(&env, "PEPSI_TRUNCATED"), EXEC_MESSAGE_FD);
    pid_t pid = spawn_command(command ? command : ec->command, env.vars, meta, &io);
    int e = errno;
    close(meta);
    if (pid < 0) {
        exec_env_free(&env);
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: cannot start the command: %s", pepsi_worker_stage(w),
                             strerror(e));
        return;
    }
    struct feed f = {{NULL, NULL, NULL}, {0, 0, 0}, 0, 0};
    if (headers && m->headers) {
        f.parts[0] = (const unsigned char *)m->headers;
        f.lens[0] = strlen(m->headers);
        f.parts[1] = blank;
        f.lens[1] = 1;
    }
    f.parts[2] = m->body;
    f.lens[2] = m->body ? m->body_len : 0;

    int status = pump(w, pid, io.in, io.err, &f, last, sizeof last);
    struct exec_failure failure;
    if (read_failure(io.report, &failure))
        exec_failed(w, &failure, &env, out);
    else
        exec_outcome(w, status, last, out);
    exec_env_free(&env);
}

const struct pepsi_stage_def stage_exec = {
    .program = "exec",
    .fusion_default = false,  /* D-127 */
    .loads_body = true,
    .own_keys = exec_keys,
    .user_keys = exec_user_keys,
    .setup = exec_setup,
    .run = exec_run,
    .teardown = exec_teardown,
    .check_option = exec_check_option,
};

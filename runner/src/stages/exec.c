/* stages/exec.c — pepsi-stage-exec: runs COMMAND (with /bin/sh -c) for each
 * message, the body on its stdin and the message's metadata in its
 * environment:
 *   PEPSI_MESSAGE_ID, PEPSI_STAGE, PEPSI_TUBE, PEPSI_SENDER_KEY,
 *   PEPSI_ENVELOPE_SENDER (unset: none; empty: the null sender),
 *   PEPSI_RECIPIENTS (space-separated), PEPSI_SUBJECT, PEPSI_HEADER_FROM,
 *   PEPSI_STATE (the state as JSON), PEPSI_HEADERS_FILE is not provided:
 *   the header block, when there is one, precedes the body on stdin
 *   separated by an empty line only if HEADERS = yes.
 * Its stdout and stderr go to the runner's log. Outcome by exit status:
 *   0          advance to NEXT (finish when none)
 *   75         host error: retried later, 1, 2, 4 ... minutes (D-104)
 *   a signal   host error as well (an OOM kill is not the message's fault)
 *   other      permanent failure, with the command's last stderr line as
 *              the reason (D-110) */
#include "stages/stages.h"

#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const exec_keys[] = {"COMMAND", "HEADERS", NULL};
/* What an end user's settings control message may set (issue 11): never COMMAND. */
static const char *const exec_user_keys[] = {"HEADERS", NULL};

struct exec_conf {
    const char *command;
    bool headers;        /* HEADERS = yes: the header block and an empty line precede the body */
};

static int exec_setup(struct pepsi_worker *w, char *err, size_t errlen)
{
    const char *cmd = conf_stage_own(pepsi_worker_section(w), "COMMAND");
    const char *hdr = conf_stage_own(pepsi_worker_section(w), "HEADERS");
    struct exec_conf *ec;
    bool headers = false;

    if (cmd == NULL || *cmd == '\0') {
        snprintf(err, errlen, "key \"COMMAND\" is required by pepsi-stage-exec");
        return -1;
    }
    if (hdr && conf_parse_bool(hdr, &headers) != 0) {
        snprintf(err, errlen, "key \"HEADERS\": expected yes or no, not \"%s\"", hdr);
        return -1;
    }
    ec = xcalloc(1, sizeof *ec);
    ec->command = cmd;
    ec->headers = headers;
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
    return 0;
}

static void exec_teardown(struct pepsi_worker *w)
{
    free(pepsi_worker_data(w));
}

/* In the child: the message's metadata as environment variables. */
static void child_environment(const struct pepsi_message *m)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)m->id);
    setenv("PEPSI_MESSAGE_ID", num, 1);
    setenv("PEPSI_TUBE", m->tube, 1);
    setenv("PEPSI_SENDER_KEY", m->sender_key, 1);
    if (m->envelope_sender)
        setenv("PEPSI_ENVELOPE_SENDER", m->envelope_sender, 1);
    else
        unsetenv("PEPSI_ENVELOPE_SENDER");
    size_t len = 1;
    for (size_t i = 0; i < m->n_recipients; i++)
        len += strlen(m->recipients[i]) + 1;
    char *rcpt = malloc(len);
    if (rcpt) {
        rcpt[0] = '\0';
        for (size_t i = 0; i < m->n_recipients; i++) {
            if (i)
                strcat(rcpt, " ");
            strcat(rcpt, m->recipients[i]);
        }
        setenv("PEPSI_RECIPIENTS", rcpt, 1);
    }
    setenv("PEPSI_SUBJECT", m->subject ? m->subject : "", 1);
    setenv("PEPSI_HEADER_FROM", m->header_from ? m->header_from : "", 1);
    char *state = json_dumps(m->state, JSON_COMPACT);
    setenv("PEPSI_STATE", state ? state : "{}", 1);
}

/* fork and exec /bin/sh -c command; *in and *err get our ends of its stdin
 * and stderr. Returns the pid or -1. */
static pid_t spawn_command(const char *command, const struct pepsi_message *m, int *in, int *err)
{
    int pin[2], perr[2];
    if (pipe2(pin, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(perr, O_CLOEXEC) != 0) {
        close(pin[0]);
        close(pin[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        /* stdout is the protocol channel: the command writes to our stderr. */
        if (dup2(pin[0], 0) < 0 || dup2(STDERR_FILENO, 1) < 0 || dup2(perr[1], 2) < 0)
            _exit(126);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        child_environment(m);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(pin[0]);
    close(perr[1]);
    if (pid < 0) {
        close(pin[1]);
        close(perr[0]);
        return -1;
    }
    *in = pin[1];
    *err = perr[0];
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

static void exec_run(struct pepsi_worker *w, const struct pepsi_message *m, struct pepsi_outcome *out)
{
    const struct exec_conf *ec = pepsi_worker_data(w);
    char last[512] = "";
    int in, err;
    static const unsigned char blank[] = "\n";

    /* Per-address overrides of COMMAND and HEADERS (D-122), checked
     * before the stage ran (exec_check_option). */
    const char *command = pepsi_option(w, m, "COMMAND");
    const char *hdr = pepsi_option(w, m, "HEADERS");
    bool headers = ec->headers;
    if (hdr)
        conf_parse_bool(hdr, &headers);
    pid_t pid = spawn_command(command ? command : ec->command, m, &in, &err);
    if (pid < 0) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: cannot start the command: %s", pepsi_worker_stage(w),
                             strerror(errno));
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

    int status = pump(w, pid, in, err, &f, last, sizeof last);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        out->kind = PEPSI_ADVANCE;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_TEMPFAIL) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command asked to retry (exit 75)%s%s", pepsi_worker_stage(w),
                             last[0] ? ": " : "", last);
    } else if (WIFSIGNALED(status)) {
        out->kind = PEPSI_HOST_ERROR;
        pepsi_outcome_reason(out, "stage %s: command killed by signal %d%s%s", pepsi_worker_stage(w),
                             WTERMSIG(status), last[0] ? ": " : "", last);
    } else {
        out->kind = PEPSI_FAIL;
        if (last[0])
            pepsi_outcome_reason(out, "%s", last);
        else
            pepsi_outcome_reason(out, "stage %s: command exited with status %d", pepsi_worker_stage(w),
                                 WEXITSTATUS(status));
    }
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

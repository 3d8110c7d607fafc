/* lib/pgpass.c — see pgpass.h. */
#include "lib/pgpass.h"

#include "lib/log.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COMPONENT "dispatch"
#define PASSFILE_NAME "pgpass"
#define DIR_TEMPLATE "pepsi-runner.XXXXXX"

/* ---- connection strings ---- */

static void copy_error(char *err, size_t errlen, const char *msg)
{
    if (!err || errlen == 0)
        return;
    snprintf(err, errlen, "%s", msg ? msg : "out of memory");
    size_t n = strlen(err);
    while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
        err[--n] = '\0';
}

/* PQconninfoParse, its error copied into err; NULL on error. */
static PQconninfoOption *parse(const char *conninfo, char *err, size_t errlen)
{
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo ? conninfo : "", &msg);
    if (!opts)
        copy_error(err, errlen, msg);
    PQfreemem(msg);
    return opts;
}

static const char *option(const PQconninfoOption *opts, const char *key)
{
    for (const PQconninfoOption *o = opts; o->keyword; o++)
        if (strcmp(o->keyword, key) == 0)
            return o->val && *o->val ? o->val : NULL;
    return NULL;
}

/* Appends " key='value'" with '\' and '\'' escaped, libpq's quoting. */
static void append_pair(char **buf, size_t *len, size_t *cap, const char *key, const char *val)
{
    size_t need = *len + strlen(key) + 2 * strlen(val) + 6;
    if (need > *cap) {
        *cap = need * 2;
        *buf = xrealloc(*buf, *cap);
    }
    char *p = *buf + *len;
    if (*len > 0)
        *p++ = ' ';
    p += sprintf(p, "%s='", key);
    for (const char *v = val; *v; v++) {
        if (*v == '\\' || *v == '\'')
            *p++ = '\\';
        *p++ = *v;
    }
    *p++ = '\'';
    *p = '\0';
    *len = (size_t)(p - *buf);
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

int conninfo_split(const char *conninfo, bool drop_passfile, struct conninfo_parts *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof *out);
    PQconninfoOption *opts = parse(conninfo, err, errlen);
    if (!opts)
        return -1;
    size_t len = 0, cap = 64;
    char *buf = xmalloc(cap);
    buf[0] = '\0';
    for (const PQconninfoOption *o = opts; o->keyword; o++) {
        if (o->val == NULL || strcmp(o->keyword, "password") == 0)
            continue;
        if (strcmp(o->keyword, "passfile") == 0) {
            out->has_passfile = true;
            if (drop_passfile)
                continue;
        }
        append_pair(&buf, &len, &cap, o->keyword, o->val);
    }
    out->without = buf;
    out->password = dup_or_null(option(opts, "password"));
    out->has_sslpassword = option(opts, "sslpassword") != NULL;
    const char *host = option(opts, "host");
    out->host = dup_or_null(host ? host : option(opts, "hostaddr"));
    out->port = dup_or_null(option(opts, "port"));
    out->dbname = dup_or_null(option(opts, "dbname"));
    out->user = dup_or_null(option(opts, "user"));
    PQconninfoFree(opts);
    return 0;
}

void conninfo_parts_free(struct conninfo_parts *p)
{
    if (!p)
        return;
    free(p->without);
    if (p->password) {
        /* Not in freed heap either. */
        memset(p->password, 0, strlen(p->password));
        free(p->password);
    }
    free(p->host);
    free(p->port);
    free(p->dbname);
    free(p->user);
    memset(p, 0, sizeof *p);
}

int conninfo_has_password(const char *conninfo, char *err, size_t errlen)
{
    PQconninfoOption *opts = parse(conninfo, err, errlen);
    if (!opts)
        return -1;
    int has = option(opts, "password") != NULL || option(opts, "sslpassword") != NULL;
    PQconninfoFree(opts);
    return has;
}

/* ---- passfile lines ---- */

char *pgpass_field(const char *value)
{
    if (value == NULL)
        return xstrdup("*");
    char *out = xmalloc(2 * strlen(value) + 1), *p = out;
    for (const char *v = value; *v; v++) {
        if (*v == ':' || *v == '\\')
            *p++ = '\\';
        *p++ = *v;
    }
    *p = '\0';
    return out;
}

static bool one_line(const char *s)
{
    return s == NULL || strpbrk(s, "\r\n") == NULL;
}

/* A list of hosts or ports ("a,b") matches no single passfile entry: '*'. */
static const char *single(const char *s)
{
    return s && strchr(s, ',') == NULL ? s : NULL;
}

char *pgpass_line(const struct conninfo_parts *p, const char *password)
{
    if (!password || !one_line(password) || !one_line(p->host) || !one_line(p->port) ||
        !one_line(p->dbname) || !one_line(p->user))
        return NULL;
    bool many = (p->host && !single(p->host)) || (p->port && !single(p->port));
    char *f[5] = {
        pgpass_field(many ? NULL : p->host), pgpass_field(many ? NULL : p->port),
        pgpass_field(p->dbname), pgpass_field(p->user), pgpass_field(password),
    };
    char *line = xasprintf("%s:%s:%s:%s:%s\n", f[0], f[1], f[2], f[3], f[4]);
    memset(f[4], 0, strlen(f[4]));
    for (int i = 0; i < 5; i++)
        free(f[i]);
    return line;
}

/* ---- the passfile ---- */

/* What exit() removes when the runner leaves without cleaning up. */
static char *exit_passfile, *exit_dir;

static void remove_at_exit(void)
{
    if (exit_passfile)
        unlink(exit_passfile);
    if (exit_dir)
        rmdir(exit_dir);
}

/* Where the private directory goes: systemd's RuntimeDirectory= (the
 * first of a ':'-separated list), else $TMPDIR, else /tmp. malloc'd. */
static char *runtime_base(void)
{
    const char *rd = getenv("RUNTIME_DIRECTORY");
    if (rd && *rd == '/') {
        size_t n = strcspn(rd, ":");
        char *base = xmalloc(n + 1);
        memcpy(base, rd, n);
        base[n] = '\0';
        return base;
    }
    const char *tmp = getenv("TMPDIR");
    return xstrdup(tmp && *tmp == '/' ? tmp : "/tmp");
}

/* Writes line to a new file at path, mode 0600; 0 or -1 with errno. */
static int write_passfile(const char *path, const char *line)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    /* umask can only take bits away; say exactly what libpq requires. */
    if (fchmod(fd, 0600) != 0 || util_write_all(fd, line, strlen(line)) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        errno = e;
        return -1;
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(path);
        errno = e;
        return -1;
    }
    return 0;
}

/* Makes the private directory and the passfile in it for line. */
static int make_passfile(struct worker_auth *a, const char *line, char *err, size_t errlen)
{
    char *base = runtime_base();
    char *dir = xasprintf("%s/" DIR_TEMPLATE, base);
    free(base);
    if (mkdtemp(dir) == NULL) {
        snprintf(err, errlen, "cannot create a private directory for the workers' passfile (%s): %s",
                 dir, strerror(errno));
        free(dir);
        return -1;
    }
    char *path = xasprintf("%s/" PASSFILE_NAME, dir);
    if (write_passfile(path, line) != 0) {
        snprintf(err, errlen, "cannot write the workers' passfile %s: %s", path, strerror(errno));
        rmdir(dir);
        free(path);
        free(dir);
        return -1;
    }
    a->dir = dir;
    a->passfile = path;
    static bool registered;
    if (!registered && atexit(remove_at_exit) == 0)
        registered = true;
    exit_passfile = a->passfile;
    exit_dir = a->dir;
    return 0;
}

int worker_auth_prepare(const struct conf *c, struct worker_auth *a, char *err, size_t errlen)
{
    struct conninfo_parts p;
    memset(a, 0, sizeof *a);
    if (c->worker_conninfo) {
        a->conninfo = xstrdup(c->worker_conninfo);
        return 0;
    }
    if (conninfo_split(c->conninfo, true, &p, err, errlen) != 0)
        return -1;
    if (p.has_sslpassword) {
        snprintf(err, errlen, "CONNINFO holds an sslpassword, which would go into every worker's "
                 "environment (libpq reads it from no passfile): give workers a WORKER_CONNINFO "
                 "without it (e.g. a client key without a passphrase that they may read)");
        conninfo_parts_free(&p);
        return -1;
    }
    const char *env_pw = getenv("PGPASSWORD");
    const char *password = p.password ? p.password : env_pw && *env_pw ? env_pw : NULL;
    if (password == NULL) {
        /* Nothing to hide: the operator's passfile=, service= and PG*
         * variables reach the workers as they are. */
        a->conninfo = xstrdup(c->conninfo ? c->conninfo : "");
        conninfo_parts_free(&p);
        return 0;
    }
    char *line = pgpass_line(&p, password);
    if (line == NULL) {
        snprintf(err, errlen, "the database password (from %s) or a connection field contains a line "
                 "break, which a passfile cannot hold", p.password ? "CONNINFO" : "PGPASSWORD");
        conninfo_parts_free(&p);
        return -1;
    }
    int rc = make_passfile(a, line, err, errlen);
    memset(line, 0, strlen(line));
    free(line);
    if (rc == 0)
        a->conninfo = xstrdup(p.without);
    conninfo_parts_free(&p);
    return rc;
}

void worker_auth_cleanup(struct worker_auth *a)
{
    if (!a)
        return;
    if (a->passfile && unlink(a->passfile) != 0 && errno != ENOENT)
        log_warning(COMPONENT, "cannot remove the workers' passfile %s: %s", a->passfile, strerror(errno));
    if (a->dir && rmdir(a->dir) != 0 && errno != ENOENT)
        log_warning(COMPONENT, "cannot remove %s: %s", a->dir, strerror(errno));
    if (exit_passfile == a->passfile) {
        exit_passfile = NULL;
        exit_dir = NULL;
    }
    free(a->conninfo);
    free(a->passfile);
    free(a->dir);
    memset(a, 0, sizeof *a);
}

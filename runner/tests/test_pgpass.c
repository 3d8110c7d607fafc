/* test_pgpass.c — issue 11, secrets stay with their owner: the password
 * taken out of a connection string (key=value and URI forms), passfile
 * lines escaped as libpq reads them (checked against libpq itself), and
 * the passfile the runner writes for its workers. */
#include "lib/pgpass.h"
#include "unit.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The value of key in conninfo as libpq parses it, malloc'd, or NULL. */
static char *parsed(const char *conninfo, const char *key)
{
    char *err = NULL;
    PQconninfoOption *o = PQconninfoParse(conninfo, &err);
    PQfreemem(err);
    char *val = NULL;
    for (PQconninfoOption *p = o; p && p->keyword; p++)
        if (strcmp(p->keyword, key) == 0 && p->val)
            val = strdup(p->val);
    PQconninfoFree(o);
    return val;
}

static void check_parsed(const char *conninfo, const char *key, const char *want, const char *name)
{
    char *got = parsed(conninfo, key);
    CHECK_STR(got, want, "%s: %s", name, key);
    free(got);
}

static void test_split_keyvalue(void)
{
    struct conninfo_parts p;
    char err[256] = "";
    const char *ci = "host=/run/pg port=5433 dbname=pepsi user=runner password=s3cret application_name='a b'";
    if (!CHECK_INT(conninfo_split(ci, false, &p, err, sizeof err), 0, "issue 11: a key=value string splits"))
        return;
    CHECK_STR(p.password, "s3cret", "issue 11: its password is taken out");
    CHECK(strstr(p.without, "s3cret") == NULL && strstr(p.without, "password") == NULL,
          "issue 11: the rest holds no password: %s", p.without);
    check_parsed(p.without, "password", NULL, "the rest parses without a password");
    check_parsed(p.without, "host", "/run/pg", "the rest keeps");
    check_parsed(p.without, "port", "5433", "the rest keeps");
    check_parsed(p.without, "dbname", "pepsi", "the rest keeps");
    check_parsed(p.without, "user", "runner", "the rest keeps");
    check_parsed(p.without, "application_name", "a b", "the rest keeps a quoted value");
    CHECK(strcmp(p.host, "/run/pg") == 0 && strcmp(p.port, "5433") == 0 && strcmp(p.dbname, "pepsi") == 0 &&
              strcmp(p.user, "runner") == 0, "the passfile fields");
    conninfo_parts_free(&p);
}

static void test_split_uri(void)
{
    struct conninfo_parts p;
    char err[256] = "";
    const char *ci = "postgresql://runner:p%40ss%3Aw%5Cd@db.example.org:6432/pepsi?sslmode=require";
    if (!CHECK_INT(conninfo_split(ci, false, &p, err, sizeof err), 0, "issue 11: a URI splits"))
        return;
    CHECK_STR(p.password, "p@ss:w\\d", "issue 11: the URI's password, percent-decoded by libpq");
    CHECK(strstr(p.without, "ss") == NULL || strstr(p.without, "p@ss") == NULL, "no password in %s", p.without);
    check_parsed(p.without, "password", NULL, "URI: the rest parses without a password");
    check_parsed(p.without, "host", "db.example.org", "URI: the rest keeps");
    check_parsed(p.without, "port", "6432", "URI: the rest keeps");
    check_parsed(p.without, "dbname", "pepsi", "URI: the rest keeps");
    check_parsed(p.without, "user", "runner", "URI: the rest keeps");
    check_parsed(p.without, "sslmode", "require", "URI: the rest keeps");
    conninfo_parts_free(&p);
}

static void test_split_quoting(void)
{
    struct conninfo_parts p;
    char err[256] = "";
    /* Values with quotes and backslashes survive the rebuild. */
    const char *ci = "dbname='it\\'s' options='-c search_path=a\\\\b' password='x y\\'z'";
    if (!CHECK_INT(conninfo_split(ci, false, &p, err, sizeof err), 0, "quoted values split"))
        return;
    CHECK_STR(p.password, "x y'z", "a quoted password with a quote in it");
    check_parsed(p.without, "dbname", "it's", "a quote survives");
    check_parsed(p.without, "options", "-c search_path=a\\b", "a backslash survives");
    conninfo_parts_free(&p);
}

static void test_split_edges(void)
{
    struct conninfo_parts p;
    char err[256] = "";
    CHECK_INT(conninfo_split("", false, &p, err, sizeof err), 0, "an empty string (libpq's defaults) splits");
    CHECK_STR(p.without, "", "an empty string stays empty");
    CHECK(p.password == NULL && p.host == NULL && p.user == NULL, "and has nothing in it");
    conninfo_parts_free(&p);

    CHECK_INT(conninfo_split("dbname=x password=", false, &p, err, sizeof err), 0, "an empty password");
    CHECK(p.password == NULL, "an empty password is none (libpq then reads the passfile)");
    conninfo_parts_free(&p);

    CHECK_INT(conninfo_split("hostaddr=10.0.0.1 password=p passfile=/etc/pgpass", true, &p, err, sizeof err), 0,
              "with a passfile");
    CHECK_STR(p.host, "10.0.0.1", "hostaddr stands in for host in a passfile line");
    CHECK(p.has_passfile, "the string's own passfile= is noticed");
    check_parsed(p.without, "passfile", NULL, "drop_passfile leaves it out (ours takes its place)");
    conninfo_parts_free(&p);
    CHECK_INT(conninfo_split("passfile=/etc/pgpass", false, &p, err, sizeof err), 0, "kept");
    check_parsed(p.without, "passfile", "/etc/pgpass", "without drop_passfile it stays");
    conninfo_parts_free(&p);

    CHECK_INT(conninfo_split("dbname=x nosuch=1", false, &p, err, sizeof err), -1, "a bad key is refused");
    CHECK_CONTAINS(err, "invalid connection option \"nosuch\"", "with libpq's reason");
    CHECK(strchr(err, '\n') == NULL, "on one line");
    CHECK_INT(conninfo_split("postgresql://h/db?bogus=1", false, &p, err, sizeof err), -1, "a bad URI");

    CHECK_INT(conninfo_has_password("user=a password=b", err, sizeof err), 1, "has a password");
    CHECK_INT(conninfo_has_password("postgres://a:b@h/d", err, sizeof err), 1, "a URI has a password");
    CHECK_INT(conninfo_has_password("postgres://a@h/d", err, sizeof err), 0, "a URI without one");
    CHECK_INT(conninfo_has_password("service=pepsi", err, sizeof err), 0, "a service has none");
    CHECK_INT(conninfo_has_password("'", err, sizeof err), -1, "unparsable");
    CHECK_INT(conninfo_has_password("sslkey=/k sslpassword=x", err, sizeof err), 1,
              "an sslpassword counts as a password");
}

static void test_pgpass_escaping(void)
{
    char *f = pgpass_field("a:b\\c");
    CHECK_STR(f, "a\\:b\\\\c", "issue 11: ':' and '\\' are escaped with '\\'");
    free(f);
    f = pgpass_field(NULL);
    CHECK_STR(f, "*", "a field not given is '*'");
    free(f);
    f = pgpass_field("*");
    CHECK_STR(f, "*", "a given '*' stays (libpq has no escape for it either)");
    free(f);

    struct conninfo_parts p = {0};
    p.host = "/tmp/dir:x";
    p.port = "5432";
    p.dbname = "db";
    p.user = "u\\v";
    char *line = pgpass_line(&p, "pw:1\\2");
    CHECK_STR(line, "/tmp/dir\\:x:5432:db:u\\\\v:pw\\:1\\\\2\n", "a whole line");
    free(line);
    p.host = "a,b";
    line = pgpass_line(&p, "pw");
    CHECK_STR(line, "*:*:db:u\\\\v:pw\n", "several hosts: any host and port");
    free(line);
    p.host = NULL;
    p.port = NULL;
    p.dbname = NULL;
    p.user = NULL;
    line = pgpass_line(&p, "pw");
    CHECK_STR(line, "*:*:*:*:pw\n", "nothing given: wildcards");
    free(line);
    CHECK(pgpass_line(&p, "two\nlines") == NULL, "a password with a line break cannot be written");
    p.user = "a\rb";
    CHECK(pgpass_line(&p, "pw") == NULL, "nor a field with one");
}

/* What libpq itself reads from a passfile for host/port/db/user: it reads
 * the file when a connection starts, before it knows whether the server
 * is there. */
static char *libpq_reads(const char *passfile, const char *host, const char *port, const char *db,
                         const char *user)
{
    const char *keys[] = {"host", "port", "dbname", "user", "passfile", "connect_timeout", NULL};
    const char *vals[] = {host, port, db, user, passfile, "1", NULL};
    PGconn *c = PQconnectStartParams(keys, vals, 0);
    /* PQpass answers "" when it found none. */
    char *pw = c && PQpass(c) && *PQpass(c) ? strdup(PQpass(c)) : NULL;
    PQfinish(c);
    return pw;
}

static void test_libpq_reads_our_line(void)
{
    char dir[] = "/tmp/pepsi-test-pgpass.XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL, "a scratch directory"))
        return;
    char sock[128], path[160];
    snprintf(sock, sizeof sock, "%s/no:socket\\here", dir);
    snprintf(path, sizeof path, "%s/pgpass", dir);
    struct conninfo_parts p = {0};
    p.host = sock;
    p.port = "1";
    p.dbname = "d:b";
    p.user = "u\\ser";
    const char *password = "p:a\\ss:w\\:ord";
    char *line = pgpass_line(&p, password);
    FILE *f = fopen(path, "w");
    if (CHECK(f && line, "passfile written")) {
        fputs(line, f);
        fclose(f);
        chmod(path, 0600);
        char *got = libpq_reads(path, sock, "1", "d:b", "u\\ser");
        CHECK_STR(got, password, "issue 11: libpq reads back the password of an escaped line");
        free(got);
        got = libpq_reads(path, sock, "1", "d:b", "other");
        CHECK(got == NULL, "issue 11: and only for the user it names");
        free(got);
    } else if (f) {
        fclose(f);
    }
    free(line);
    unlink(path);
    rmdir(dir);
}

static struct conf conf_with(char *conninfo, char *worker_conninfo)
{
    struct conf c;
    memset(&c, 0, sizeof c);
    c.conninfo = conninfo;
    c.worker_conninfo = worker_conninfo;
    return c;
}

static bool dir_gone(const char *dir)
{
    struct stat st;
    return stat(dir, &st) != 0;
}

static void test_worker_auth(void)
{
    char base[] = "/tmp/pepsi-test-rt.XXXXXX", err[512] = "";
    if (!CHECK(mkdtemp(base) != NULL, "a scratch runtime directory"))
        return;
    setenv("RUNTIME_DIRECTORY", base, 1);
    unsetenv("PGPASSWORD");
    struct worker_auth a;
    struct conf c = conf_with("host=/run/pg dbname=pepsi user=runner password=top:secret", NULL);
    if (CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), 0, "issue 11: a passfile for a CONNINFO password")) {
        CHECK(strstr(a.conninfo, "top") == NULL && strstr(a.conninfo, "password") == NULL,
              "issue 11: the workers' conninfo holds no password: %s", a.conninfo);
        check_parsed(a.conninfo, "user", "runner", "workers' conninfo");
        CHECK(a.passfile && strncmp(a.passfile, base, strlen(base)) == 0,
              "issue 11: the passfile is under $RUNTIME_DIRECTORY: %s", a.passfile ? a.passfile : "");
        struct stat st;
        CHECK(a.passfile && stat(a.passfile, &st) == 0 && (st.st_mode & 0777) == 0600,
              "issue 11: the passfile has mode 0600");
        CHECK(a.dir && stat(a.dir, &st) == 0 && (st.st_mode & 0777) == 0700,
              "issue 11: in a private directory, mode 0700");
        char *got = a.passfile ? libpq_reads(a.passfile, "/run/pg", "5432", "pepsi", "runner") : NULL;
        CHECK_STR(got, "top:secret", "issue 11: libpq finds the password in it");
        free(got);
        char *dir = strdup(a.dir);
        worker_auth_cleanup(&a);
        CHECK(dir_gone(dir), "issue 11: cleanup removes the passfile and its directory");
        free(dir);
        CHECK(a.conninfo == NULL && a.passfile == NULL, "cleanup zeroes");
        worker_auth_cleanup(&a);
    }

    setenv("PGPASSWORD", "from-env", 1);
    c = conf_with("postgresql://runner@h/pepsi", NULL);
    if (CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), 0, "issue 11: a passfile for $PGPASSWORD")) {
        char *got = a.passfile ? libpq_reads(a.passfile, "h", "5432", "pepsi", "runner") : NULL;
        CHECK_STR(got, "from-env", "issue 11: $PGPASSWORD goes into the passfile");
        free(got);
        worker_auth_cleanup(&a);
    }
    unsetenv("PGPASSWORD");

    c = conf_with("host=h user=u passfile=/etc/pepsi/pgpass", NULL);
    if (CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), 0, "no password anywhere")) {
        CHECK_STR(a.conninfo, "host=h user=u passfile=/etc/pepsi/pgpass",
                  "issue 11: the operator's passfile= passes through unchanged");
        CHECK(a.passfile == NULL && a.dir == NULL, "and no passfile is written");
        worker_auth_cleanup(&a);
    }

    c = conf_with("host=h password=p", "service=pepsi-worker");
    if (CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), 0, "WORKER_CONNINFO")) {
        CHECK_STR(a.conninfo, "service=pepsi-worker", "issue 11: WORKER_CONNINFO is what workers get");
        CHECK(a.passfile == NULL, "and the runner writes no passfile");
        worker_auth_cleanup(&a);
    }

    c = conf_with("host=h password='two\nlines'", NULL);
    CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), -1, "a password with a line break is refused");
    CHECK_CONTAINS(err, "line break", "saying why");

    c = conf_with("host=h sslkey=/etc/pepsi/key sslpassword=x", NULL);
    CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), -1,
              "issue 11: a CONNINFO with an sslpassword is refused (no file holds it for workers)");
    CHECK_CONTAINS(err, "WORKER_CONNINFO", "saying what to do instead");
    c = conf_with("host=h sslkey=/etc/pepsi/key sslpassword=x", "host=h sslkey=/etc/pepsi/worker.key");
    CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), 0, "with a WORKER_CONNINFO it starts");
    worker_auth_cleanup(&a);

    setenv("RUNTIME_DIRECTORY", "/nonexistent/run", 1);
    c = conf_with("password=p", NULL);
    CHECK_INT(worker_auth_prepare(&c, &a, err, sizeof err), -1, "an unusable runtime directory");
    CHECK_CONTAINS(err, "/nonexistent/run/pepsi-runner.", "is named");
    unsetenv("RUNTIME_DIRECTORY");

    DIR *d = opendir(base);
    int left = 0;
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK_INT(left, 0, "nothing is left behind in the runtime directory");
    rmdir(base);
}

int main(void)
{
    test_split_keyvalue();
    test_split_uri();
    test_split_quoting();
    test_split_edges();
    test_pgpass_escaping();
    test_libpq_reads_our_line();
    test_worker_auth();
    return unit_done();
}

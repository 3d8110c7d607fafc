/* test_exec_env.c — issue 11: what a command of pepsi-stage-exec gets:
 * an environment that cannot overflow (each message variable within its
 * bound, the rest named in PEPSI_TRUNCATED), the whole metadata as JSON on
 * a sealed descriptor, and no connection string or password. */
#include "stages/exec_env.h"
#include "unit.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has_name(char **names, const char *name)
{
    for (size_t i = 0; names && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static void test_strip_names(void)
{
    char **n = exec_env_strip_names(false);
    static const char *const conn[] = {"PEPSI_CONNINFO", "PEPSI_CONFIG", "PGPASSWORD", "PGPASSFILE",
                                       "PGSERVICE", "PGSERVICEFILE", "PGHOST", "PGHOSTADDR", "PGPORT",
                                       "PGUSER", "PGDATABASE", "PGSSLKEY", "PGOPTIONS"};
    for (size_t i = 0; i < sizeof conn / sizeof conn[0]; i++)
        CHECK(has_name(n, conn[i]), "issue 11: a command never inherits %s", conn[i]);
    CHECK(has_name(n, "PEPSI_STATE") && has_name(n, "PEPSI_TRUNCATED"), "nor an outer PEPSI_STATE, PEPSI_TRUNCATED");
    CHECK(!has_name(n, "PATH") && !has_name(n, "HOME") && !has_name(n, "PEPSI_STAGE"), "PATH, HOME, PEPSI_STAGE stay");
    exec_env_names_free(n);
    n = exec_env_strip_names(true);
    CHECK(!has_name(n, "PEPSI_CONNINFO") && !has_name(n, "PGPASSFILE") && !has_name(n, "PGHOST"),
          "issue 11: PASS_CONNINFO = yes keeps the connection variables");
    CHECK(has_name(n, "PGPASSWORD"), "issue 11: but never PGPASSWORD");
    exec_env_names_free(n);
}

static struct pepsi_message small_message(void)
{
    static char *rcpt[] = {"a@x.org", "b@y.org"};
    struct pepsi_message m;
    memset(&m, 0, sizeof m);
    m.id = 42;
    m.stage = "run";
    m.tube = "default";
    m.sender_key = "from:x.org";
    m.envelope_sender = "s@x.org";
    m.recipients = rcpt;
    m.n_recipients = 2;
    m.subject = "hello";
    m.header_from = "S <s@x.org>";
    m.arrived_at = "2026-11-30 10:00:00+00";
    return m;
}

static void test_small(void)
{
    char *inherited[] = {"PATH=/bin", "PGPASSWORD=hunter2", "PEPSI_CONNINFO=host=h", "PGHOST=h",
                         "PEPSI_STATE=stale", "HOME=/root", NULL};
    char **strip = exec_env_strip_names(false);
    struct pepsi_message m = small_message();
    m.state = json_pack("{s:i}", "amount", 5);
    struct exec_env e;
    exec_env_build(&e, inherited, strip, &m);
    CHECK_STR(exec_env_get(&e, "PATH"), "/bin", "inherited PATH stays");
    CHECK_STR(exec_env_get(&e, "HOME"), "/root", "inherited HOME stays");
    CHECK(exec_env_get(&e, "PGPASSWORD") == NULL, "issue 11: no PGPASSWORD");
    CHECK(exec_env_get(&e, "PEPSI_CONNINFO") == NULL && exec_env_get(&e, "PGHOST") == NULL,
          "issue 11: no connection string");
    CHECK_STR(exec_env_get(&e, "PEPSI_MESSAGE_ID"), "42", "PEPSI_MESSAGE_ID");
    CHECK_STR(exec_env_get(&e, "PEPSI_TUBE"), "default", "PEPSI_TUBE");
    CHECK_STR(exec_env_get(&e, "PEPSI_SENDER_KEY"), "from:x.org", "PEPSI_SENDER_KEY");
    CHECK_STR(exec_env_get(&e, "PEPSI_ENVELOPE_SENDER"), "s@x.org", "PEPSI_ENVELOPE_SENDER");
    CHECK_STR(exec_env_get(&e, "PEPSI_RECIPIENTS"), "a@x.org b@y.org", "PEPSI_RECIPIENTS, space-separated");
    CHECK_STR(exec_env_get(&e, "PEPSI_SUBJECT"), "hello", "PEPSI_SUBJECT");
    CHECK_STR(exec_env_get(&e, "PEPSI_HEADER_FROM"), "S <s@x.org>", "PEPSI_HEADER_FROM");
    CHECK_STR(exec_env_get(&e, "PEPSI_STATE"), "{\"amount\":5}", "PEPSI_STATE replaces an inherited one");
    CHECK_STR(exec_env_get(&e, "PEPSI_MESSAGE_FD"), "3", "issue 11: PEPSI_MESSAGE_FD=3");
    CHECK(exec_env_get(&e, "PEPSI_TRUNCATED") == NULL, "nothing left out: no PEPSI_TRUNCATED");
    CHECK(e.vars[e.n] == NULL, "NULL-terminated for execve");
    exec_env_free(&e);

    m.envelope_sender = NULL;
    m.subject = NULL;
    exec_env_build(&e, inherited, strip, &m);
    CHECK(exec_env_get(&e, "PEPSI_ENVELOPE_SENDER") == NULL, "no envelope sender: unset");
    CHECK_STR(exec_env_get(&e, "PEPSI_SUBJECT"), "", "no subject: empty");
    CHECK(exec_env_get(&e, "PEPSI_TRUNCATED") == NULL, "and nothing named as left out");
    exec_env_free(&e);
    json_decref(m.state);
    exec_env_names_free(strip);
}

static char *filled(size_t n, char c)
{
    char *s = malloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

static void test_bounds(void)
{
    char **strip = exec_env_strip_names(false);
    char *inherited[] = {"PATH=/bin", NULL};
    struct pepsi_message m = small_message();

    /* A 600 kB state and 5,000 recipients (issue 11). */
    char *big = filled(600 * 1024, 'x');
    m.state = json_pack("{s:s}", "blob", big);
    char **rcpt = calloc(5000, sizeof *rcpt);
    for (int i = 0; i < 5000; i++) {
        rcpt[i] = malloc(32);
        snprintf(rcpt[i], 32, "user%04d@example.org", i);
    }
    m.recipients = rcpt;
    m.n_recipients = 5000;
    struct exec_env e;
    exec_env_build(&e, inherited, strip, &m);
    CHECK(exec_env_get(&e, "PEPSI_STATE") == NULL, "issue 11: a 600 kB state is left out of the environment");
    CHECK(exec_env_get(&e, "PEPSI_RECIPIENTS") == NULL, "issue 11: so are 5,000 recipients");
    CHECK_STR(exec_env_get(&e, "PEPSI_TRUNCATED"), "PEPSI_RECIPIENTS,PEPSI_STATE",
              "issue 11: PEPSI_TRUNCATED names what was left out");
    CHECK_STR(exec_env_get(&e, "PEPSI_SUBJECT"), "hello", "the small ones are still there");
    CHECK(e.message_bytes <= EXEC_ENV_TOTAL_MAX, "message variables within the total bound (%zu)", e.message_bytes);
    exec_env_free(&e);
    json_decref(m.state);

    /* Each just at / over the bound of one value. */
    char *at = filled(EXEC_ENV_VALUE_MAX, 's'), *over = filled(EXEC_ENV_VALUE_MAX + 1, 's');
    m.recipients = rcpt;
    m.n_recipients = 1;
    m.state = json_object();
    m.subject = at;
    exec_env_build(&e, inherited, strip, &m);
    CHECK(exec_env_get(&e, "PEPSI_SUBJECT") && strlen(exec_env_get(&e, "PEPSI_SUBJECT")) == EXEC_ENV_VALUE_MAX,
          "a subject of exactly %d bytes is kept", EXEC_ENV_VALUE_MAX);
    CHECK(exec_env_get(&e, "PEPSI_TRUNCATED") == NULL, "and nothing is left out");
    exec_env_free(&e);
    m.subject = over;
    exec_env_build(&e, inherited, strip, &m);
    CHECK(exec_env_get(&e, "PEPSI_SUBJECT") == NULL, "one byte more is left out");
    CHECK_STR(exec_env_get(&e, "PEPSI_TRUNCATED"), "PEPSI_SUBJECT", "and named");
    exec_env_free(&e);

    /* Three values that each fit but not together: the total bound. */
    char *third = filled(30000, 'h');
    m.subject = third;
    m.header_from = third;
    char *st = filled(29990, 'v');
    json_decref(m.state);
    m.state = json_pack("{s:s}", "v", st);
    exec_env_build(&e, inherited, strip, &m);
    CHECK(exec_env_get(&e, "PEPSI_HEADER_FROM") && exec_env_get(&e, "PEPSI_SUBJECT"), "the first two fit");
    CHECK(exec_env_get(&e, "PEPSI_STATE") == NULL, "the third does not fit the total of %d", EXEC_ENV_TOTAL_MAX);
    CHECK_STR(exec_env_get(&e, "PEPSI_TRUNCATED"), "PEPSI_STATE", "and is named");
    CHECK(e.message_bytes <= EXEC_ENV_TOTAL_MAX, "within the total bound");
    exec_env_free(&e);
    json_decref(m.state);

    for (int i = 0; i < 5000; i++)
        free(rcpt[i]);
    free(rcpt);
    free(big);
    free(at);
    free(over);
    free(third);
    free(st);
    exec_env_names_free(strip);
}

static void test_message_fd(void)
{
    struct pepsi_message m = small_message();
    char *big = filled(600 * 1024, 'x');
    m.state = json_pack("{s:s, s:i}", "blob", big, "n", 7);
    m.envelope_sender = NULL;
    char why[256] = "";
    int fd = exec_message_fd(&m, "run", why, sizeof why);
    if (!CHECK(fd >= 0, "issue 11: the metadata descriptor is made (%s)", why)) {
        json_decref(m.state);
        free(big);
        return;
    }
    json_error_t jerr;
    json_t *o = json_loadfd(fd, 0, &jerr);
    CHECK(o != NULL, "it holds one JSON object (%s)", o ? "" : jerr.text);
    CHECK_INT(json_integer_value(json_object_get(o, "id")), 42, "id");
    CHECK_STR(json_string_value(json_object_get(o, "stage")), "run", "stage");
    CHECK_STR(json_string_value(json_object_get(o, "tube")), "default", "tube");
    CHECK(json_is_null(json_object_get(o, "envelope_sender")), "no envelope sender: null");
    CHECK_INT(json_array_size(json_object_get(o, "recipients")), 2, "recipients as an array");
    CHECK_STR(json_string_value(json_object_get(o, "subject")), "hello", "subject");
    CHECK(json_equal(json_object_get(o, "state"), m.state), "issue 11: the whole 600 kB state");
    CHECK_STR(json_string_value(json_object_get(o, "arrived_at")), "2026-11-30 10:00:00+00", "arrived_at");
    json_decref(o);
    CHECK(write(fd, "x", 1) == -1 && errno == EPERM, "issue 11: sealed: a command cannot change it");
    close(fd);

    char bad[] = "\xff\xfe";
    m.subject = bad;
    CHECK_INT(exec_message_fd(&m, "run", why, sizeof why), -2, "metadata that is not UTF-8");
    CHECK_CONTAINS(why, "not UTF-8", "says why");
    json_decref(m.state);
    free(big);
}

int main(void)
{
    test_strip_names();
    test_small();
    test_bounds();
    test_message_fd();
    return unit_done();
}

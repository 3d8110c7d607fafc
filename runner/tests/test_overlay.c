/* test_overlay.c — the database overlay of [stage-*] sections (D-117),
 * laid over a configuration file by conf_load_overlay(). */
#include "lib/conf.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char base_text[] =
    "[pepsi-dispatch]\n"
    "POLL_INTERVAL = 1s\n"
    "[stage-a]\n"
    "PROGRAM = pepsi-stage-pass\n"
    "NEXT = b\n"
    "[stage-b]\n"
    "PROGRAM = pepsi-stage-exec\n"
    "COMMAND = true\n";

static char path[64];

static void write_base(void)
{
    snprintf(path, sizeof path, "/tmp/pepsi-overlay-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, base_text, sizeof base_text - 1) != (ssize_t)(sizeof base_text - 1)) {
        perror("mkstemp");
        exit(2);
    }
    close(fd);
}

static int load(const struct conf_override *rows, size_t n, struct conf *c, char *err)
{
    return conf_load_overlay(path, rows, n, c, err, 512);
}

static void test_set_common_key(void)
{
    struct conf c;
    char err[512] = "";
    struct conf_override rows[] = {{"stage-a", "PARALLELISM", "2"}, {"stage-a", "QUEUE_LIMIT", "16"}};
    CHECK_INT(load(rows, 2, &c, err), 0, "D-117: an overlay row sets a common key (%s)", err);
    CHECK_INT(conf_stage(&c, "a")->parallelism, 2, "D-117: PARALLELISM from the overlay");
    CHECK_INT(conf_stage(&c, "a")->queue_limit, 16, "D-117: QUEUE_LIMIT from the overlay");
    CHECK_INT(c.poll_interval_ms, 1000, "D-120: [pepsi-dispatch] comes from the file");
    conf_free(&c);
}

static void test_add_and_remove_stage(void)
{
    struct conf c;
    char err[512] = "";
    struct conf_override add[] = {{"stage-c", "PROGRAM", "pepsi-stage-discard"}, {"stage-b", "NEXT", "c"}};
    CHECK_INT(load(add, 2, &c, err), 0, "D-117: the overlay adds a stage (%s)", err);
    CHECK_INT((int)c.n_stages, 3, "D-117: three stages after adding one");
    CHECK_STR(conf_stage(&c, "c")->program, "pepsi-stage-discard", "D-117: the added stage's PROGRAM");
    CHECK_INT(conf_stage(&c, "c")->parallelism, 4, "D-117: the added stage gets the defaults");
    CHECK_STR(conf_stage(&c, "b")->next, "c", "D-117: NEXT may name a stage the overlay added");
    conf_free(&c);

    struct conf_override rm[] = {{"stage-b", "*", NULL}};
    CHECK_INT(load(rm, 1, &c, err), -1, "D-118: removing a stage that another's NEXT names is an error");
    CHECK_CONTAINS(err, "no section [stage-b]", "D-118: the error names the missing section");

    struct conf_override rm2[] = {{"stage-b", "*", NULL}, {"stage-a", "NEXT", NULL}};
    CHECK_INT(load(rm2, 2, &c, err), 0, "D-117: removing a stage and the reference to it (%s)", err);
    CHECK_INT((int)c.n_stages, 1, "D-117: one stage left");
    CHECK(conf_stage(&c, "a")->next == NULL, "D-117: a NULL value takes NEXT back out");
    conf_free(&c);
}

static void test_own_keys(void)
{
    struct conf c;
    char err[512] = "";
    struct conf_override rows[] = {{"stage-b", "COMMAND", "cat"}, {"stage-b", "HEADERS", "yes"}};
    CHECK_INT(load(rows, 2, &c, err), 0, "D-117: overlay rows set a stage's own keys (%s)", err);
    CHECK_STR(conf_stage_own(conf_stage(&c, "b"), "COMMAND"), "cat", "D-117: own key replaced");
    CHECK_STR(conf_stage_own(conf_stage(&c, "b"), "HEADERS"), "yes", "D-117: own key added");
    CHECK_INT((int)conf_stage(&c, "b")->n_own, 2, "D-117: a replaced own key is not duplicated");
    conf_free(&c);

    struct conf_override unset[] = {{"stage-b", "COMMAND", NULL}, {"stage-a", "NEXT", NULL}};
    CHECK_INT(load(unset, 2, &c, err), 0, "D-117: NULL removes an own key (%s)", err);
    CHECK(conf_stage_own(conf_stage(&c, "b"), "COMMAND") == NULL, "D-117: COMMAND is gone");
    conf_free(&c);
}

static void test_unset_common_key(void)
{
    struct conf c;
    char err[512] = "";
    struct conf_override rows[] = {{"stage-a", "PARALLELISM", "9"}, {"stage-a", "PARALLELISM", NULL}};
    CHECK_INT(load(rows, 2, &c, err), 0, "D-117: unsetting a common key (%s)", err);
    CHECK_INT(conf_stage(&c, "a")->parallelism, 4, "D-117: an unset common key returns to its default");
    conf_free(&c);
}

static void test_errors(void)
{
    struct conf c;
    char err[512] = "";
    struct conf_override bad_value[] = {{"stage-a", "PARALLELISM", "lots"}};
    CHECK_INT(load(bad_value, 1, &c, err), -1, "D-118: a bad overlay value is an error");
    CHECK_CONTAINS(err, "pepsi.config_override: key \"PARALLELISM\" in [stage-a]",
                   "D-118: the error names the overlay, the section and the key");

    struct conf_override typo[] = {{"stage-a", "PARALELISM", "2"}};
    CHECK_INT(load(typo, 1, &c, err), -1, "D-118: a near miss of a common key is refused");
    CHECK_CONTAINS(err, "did you mean PARALLELISM", "D-118: the typo is named");

    struct conf_override dispatch[] = {{"pepsi-dispatch", "POLL_INTERVAL", "2s"}};
    CHECK_INT(load(dispatch, 1, &c, err), -1, "D-120: [pepsi-dispatch] cannot be overridden");
    CHECK_CONTAINS(err, "only [stage-NAME] sections", "D-120: the error says which sections can");

    struct conf_override no_program[] = {{"stage-new", "PARALLELISM", "2"}};
    CHECK_INT(load(no_program, 1, &c, err), -1, "D-118: an added stage without PROGRAM is an error");
    CHECK_CONTAINS(err, "pepsi.config_override: section [stage-new]: PROGRAM is required",
                   "D-118: the error names the overlay and the section");

    struct conf_override lower[] = {{"stage-a", "next", "b"}};
    CHECK_INT(load(lower, 1, &c, err), -1, "D-118: a lower-case key is refused");

    struct conf_override unset_program[] = {{"stage-a", "PROGRAM", NULL}};
    CHECK_INT(load(unset_program, 1, &c, err), -1, "D-118: taking PROGRAM out leaves an invalid section");
}

int main(void)
{
    write_base();
    test_set_common_key();
    test_add_and_remove_stage();
    test_own_keys();
    test_unset_common_key();
    test_errors();
    unlink(path);
    return unit_done();
}

/* fuzz_conf.c — libFuzzer target for the configuration reader and
 * validator (issue 11): conf.c reading pepsi.conf from a file, the
 * database overlay rows laid over it through overlay.c, the [pepsi-ingress]
 * validator (iconf_load), and the value parsers (durations, sizes,
 * booleans, integers).
 *
 * Input: the INI text; optionally a line "%%" after which every line is
 * one overlay row (at most 256), SECTION TAB KEY TAB VALUE, a row without
 * a second TAB having a NULL value (the row that takes a key back out).
 * The text goes to a memfd read back through its /proc/self/fd path, so
 * conf_load's own file reader runs (NUL bytes and all); the rows become a
 * real PGresult (PQmakeEmptyPGresult, PQsetvalue) for overlay_apply().
 * Checked, beyond not crashing or leaking:
 *   - a refused configuration leaves *out zeroed and an error naming the
 *     file or pepsi.config_override;
 *   - a loaded one holds what the validator promises: valid unique stage
 *     names, a PROGRAM, NEXT and BOUNCE_STAGE naming stages that exist,
 *     values within their ranges, own keys found by conf_stage_own;
 *   - without rows and NUL bytes, conf_load_string() agrees with the file;
 *   - each line, and each row's value, through every value parser: what
 *     they accept is in range. */
#include "lib/conf.h"
#include "ingress/iconf.h"
#include "lib/overlay.h"
#include "lib/proto.h"

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQUIRE(cond)                                                                     \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz_conf: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                               \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#define MAX_ROWS 256
#define VALUE_MAX 256                /* bytes of a line given to the value parsers */

/* The memfd holding the text, made once; its path for conf_load. */
static int text_fd = -1;
static char text_path[64];

static void put_text(const uint8_t *text, size_t len)
{
    if (text_fd < 0) {
        text_fd = memfd_create("fuzz_conf", MFD_CLOEXEC);
        if (text_fd < 0) {
            perror("fuzz_conf: memfd_create");
            abort();
        }
        /* Owner-only, as an operator's file holding a secret must be: a
         * memfd is created 0777, and conf_load refuses a file others may
         * read when a key looks like a credential (CONF_INSECURE). The
         * fuzzer found "PASSWORD" in a key name; the parser is the target. */
        if (fchmod(text_fd, 0600) != 0) {
            perror("fuzz_conf: fchmod");
            abort();
        }
        snprintf(text_path, sizeof text_path, "/proc/self/fd/%d", text_fd);
    }
    if (ftruncate(text_fd, 0) != 0 || (len > 0 && pwrite(text_fd, text, len, 0) != (ssize_t)len)) {
        perror("fuzz_conf: writing the memfd");
        abort();
    }
}

/* ---- the value parsers ---- */

static void check_value(const char *s)
{
    int64_t ms = -1, bytes = -1;
    bool b;
    int i = 0;
    if (conf_parse_duration(s, &ms) == 0)
        REQUIRE(ms >= 0);
    if (conf_parse_int(s, -5, 1000, &i) == 0)
        REQUIRE(i >= -5 && i <= 1000);
    if (iconf_parse_size(s, &bytes) == 0)
        REQUIRE(bytes >= 0);
    if (conf_parse_bool(s, &b) == 0)
        REQUIRE(s[0] != '\0');
}

static void check_values(const char *text, size_t len)
{
    char buf[VALUE_MAX + 1];
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t l = nl ? (size_t)(nl - (text + at)) : len - at;
        const char *eq = memchr(text + at, '=', l);
        size_t from = eq ? (size_t)(eq - (text + at)) + 1 : 0;
        while (from < l && text[at + from] == ' ')
            from++;
        size_t n = l - from < VALUE_MAX ? l - from : VALUE_MAX;
        memcpy(buf, text + at + from, n);
        buf[n] = '\0';
        check_value(buf);
        at += l + 1;
    }
}

/* ---- the overlay rows ---- */

static char *field(const char **s, const char *end, char stop)
{
    const char *e = memchr(*s, stop, (size_t)(end - *s));
    if (!e)
        e = end;
    char *copy = strndup(*s, (size_t)(e - *s));
    *s = e < end ? e + 1 : end;
    if (!copy)
        abort();
    return copy;
}

/* One row "SECTION\tKEY\tVALUE" (or without its VALUE) into row i. */
static void add_row(PGresult *res, int i, const char *line, const char *end)
{
    const char *tab1 = memchr(line, '\t', (size_t)(end - line));
    const char *tab2 = tab1 ? memchr(tab1 + 1, '\t', (size_t)(end - tab1 - 1)) : NULL;
    const char *s = line;
    char *section = field(&s, end, '\t');
    char *key = tab1 ? field(&s, end, '\t') : NULL;
    char *value = tab2 ? field(&s, end, '\n') : NULL;
    /* a length of -1 (or a NULL value) makes the field NULL */
    REQUIRE(PQsetvalue(res, i, 0, section, (int)strlen(section)));
    REQUIRE(PQsetvalue(res, i, 1, key ? key : (char *)"", key ? (int)strlen(key) : 0));
    REQUIRE(PQsetvalue(res, i, 2, value, value ? (int)strlen(value) : -1));
    if (value)
        check_value(value);
    free(section);
    free(key);
    free(value);
}

static PGresult *make_rows(const char *rows, size_t len)
{
    static PGresAttDesc attrs[3] = {
        {"section", 0, 0, 0, 25, -1, 0}, {"key", 0, 0, 0, 25, -1, 0}, {"value", 0, 0, 0, 25, -1, 0}};
    PGresult *res = PQmakeEmptyPGresult(NULL, PGRES_TUPLES_OK);
    REQUIRE(res && PQsetResultAttrs(res, 3, attrs));
    const char *s = rows, *end = rows + len;
    for (int i = 0; i < MAX_ROWS && s < end; i++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *line_end = nl ? nl : end;
        add_row(res, i, s, line_end);
        s = nl ? nl + 1 : end;
    }
    return res;
}

/* ---- what a loaded configuration promises ---- */

static void check_stage(const struct conf *c, const struct stage_conf *s)
{
    REQUIRE(s->name && proto_stage_name_valid(s->name, strlen(s->name)));
    REQUIRE(conf_stage(c, s->name) == s);
    REQUIRE(s->program && s->program[0] != '\0');
    REQUIRE(s->parallelism >= 1 && s->parallelism <= 1024);
    REQUIRE(s->queue_limit >= 1 && s->queue_limit <= 1024);
    REQUIRE(s->max_messages >= 0); /* 0: unset (issue 19) */
    REQUIRE(s->max_rss_growth_mb >= 1 && s->max_rss_growth_mb <= 1048576);
    REQUIRE(s->worker_idle_timeout_ms > 0 && s->max_runtime_ms > 0 && s->max_lifetime_ms > 0);
    REQUIRE(s->fusion >= -1 && s->fusion <= 1);
    REQUIRE(!s->next || conf_stage(c, s->next) != NULL);
    REQUIRE(!s->bounce_stage || conf_stage(c, s->bounce_stage) != NULL);
    for (size_t k = 0; k < s->n_own; k++) {
        REQUIRE(s->own[k].key && s->own[k].value);
        REQUIRE(s->own[k].key[0] >= 'A' && s->own[k].key[0] <= 'Z');
        REQUIRE(conf_stage_own(s, s->own[k].key) == s->own[k].value);
    }
}

static void check_loaded(const struct conf *c)
{
    REQUIRE(c->path && strcmp(c->path, text_path) == 0);
    REQUIRE(c->conninfo != NULL);
    REQUIRE(c->connect_timeout_ms > 0 && c->poll_interval_ms > 0 && c->stats_interval_ms > 0);
    REQUIRE(c->lock_wait_ms > 0 && c->cooldown_ms > 0 && c->overload_window_ms > 0);
    REQUIRE(c->fair_half_life_ms > 0 && c->reconcile_interval_ms > 0 && c->anomaly_interval_ms > 0);
    REQUIRE(c->owner_slot >= 0 && c->fair_fifo_percent >= 0 && c->fair_fifo_percent <= 100);
    REQUIRE(!c->config_file || c->config_file[0] != '\0');
    for (size_t i = 0; i < c->n_stages; i++)
        check_stage(c, &c->stages[i]);
    struct ingress_conf ic;
    char err[512] = "";
    if (iconf_load(c, &ic, err, sizeof err) != 0)
        REQUIRE(err[0] != '\0');
    else
        REQUIRE(ic.port >= 0 && ic.port <= 65535 && ic.max_body > 0 && ic.max_header > 0);
}

static void check_refused(const struct conf *c, const char *err)
{
    static const struct conf zero;
    REQUIRE(memcmp(c, &zero, sizeof zero) == 0);
    REQUIRE(memchr(err, '\0', 512) != NULL);
    REQUIRE(strncmp(err, text_path, strlen(text_path)) == 0
            || strncmp(err, "pepsi.config_override: ", 23) == 0);
}

/* conf_load_string on the same text says the same. */
static void check_string_agrees(const char *text, size_t len, int rc, const char *err)
{
    char *copy = strndup(text, len);
    struct conf c;
    char err2[512] = "";
    REQUIRE(copy != NULL);
    int rc2 = conf_load_string(copy, text_path, &c, err2, sizeof err2);
    REQUIRE(rc2 == rc);
    REQUIRE(rc == 0 || strcmp(err, err2) == 0);
    conf_free(&c);
    free(copy);
}

/* ---- the target ---- */

/* Where the rows start (after a line "%%"), or NULL. */
static const char *rows_start(const char *text, size_t len, size_t *text_len)
{
    for (size_t at = 0; at + 2 <= len;) {
        if (memcmp(text + at, "%%", 2) == 0 && (at + 2 == len || text[at + 2] == '\n')) {
            *text_len = at;
            return at + 2 < len ? text + at + 3 : text + len;
        }
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl)
            break;
        at = (size_t)(nl - text) + 1;
    }
    *text_len = len;
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t text_len;
    const char *rows = rows_start(text, size, &text_len);
    PGresult *res = rows ? make_rows(rows, (size_t)(text + size - rows)) : NULL;
    struct conf c;
    char err[512] = "";
    put_text(data, text_len);
    int rc = overlay_apply(text_path, res, &c, err, sizeof err);
    REQUIRE(rc == 0 || rc == -1);
    if (rc == 0)
        check_loaded(&c);
    else
        check_refused(&c, err);
    if (!res && !memchr(text, '\0', text_len))
        check_string_agrees(text, text_len, rc, err);
    check_values(text, text_len);
    conf_free(&c);
    PQclear(res);
    return 0;
}

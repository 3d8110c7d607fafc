/* fuzz_proto.c — libFuzzer target for the worker line protocol (issue 11):
 * line_buf_feed() splitting a byte stream into lines, proto_parse_line()
 * on every worker line, proto_parse_id() on the same lines as message ids.
 *
 * Input: byte 0 bounds the chunk sizes the stream is fed in (1..256, or
 * 4 kB..68 kB with a filler), in a pseudo-random order seeded by the input;
 * byte 1 says which lines stop the feed from the callback (every Nth, N
 * its low 3 bits, 0 none) and, with bit 3 set, that bytes 2 and 3 place a
 * filler of 'x' around PROTO_MAX_LINE long (65408 + byte 2) at offset
 * byte 3 of the rest, so that lines just under, at and past the limit are
 * reachable; the rest is the stream. Checked, beyond not crashing:
 *   - any split of the stream delivers the same lines, in order, as
 *     cutting it at every '\n'; a line longer than PROTO_MAX_LINE ends the
 *     feed with -1; what is left unterminated stays buffered;
 *   - a callback that stops the feed loses nothing: feeds of 0 bytes
 *     resume with the next line;
 *   - PROTO_READY is exactly "ready"; PROTO_BAD leaves *out zeroed; a
 *     status is 0..255 and a kept report re-formats (proto_format_status)
 *     into a line that parses back to the same status and report;
 *   - an id that parses is > 0 and survives proto_format_ids and back. */
#include "lib/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed property is a crash for libFuzzer (and replay.c). */
#define REQUIRE(cond)                                                                      \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "fuzz_proto: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                                \
            abort();                                                                       \
        }                                                                                  \
    } while (0)

struct feed {
    const char *stream;             /* the whole stream */
    size_t len;
    size_t expect;                  /* where the next line must start */
    unsigned lines;                 /* delivered so far */
    unsigned stop_every;            /* the callback stops the feed every Nth line, 0 never */
};

static void check_report_roundtrip(const struct proto_status *st)
{
    static char buf[PROTO_MAX_LINE + 2];
    size_t n = proto_format_status(buf, sizeof buf, st->status, st->report, st->n_report);
    if (n == 0) {
        /* only a report too long for one line may fail to format */
        REQUIRE(st->n_report > 0);
        return;
    }
    REQUIRE(buf[n - 1] == '\n');
    struct proto_status back;
    REQUIRE(proto_parse_line(buf, n - 1, &back) == PROTO_STATUS);
    REQUIRE(back.status == st->status);
    REQUIRE(back.n_report == st->n_report);
    REQUIRE(back.has_report == (st->n_report > 0));
    REQUIRE(back.report_ok == (st->n_report > 0));
    for (size_t i = 0; i < st->n_report; i++) {
        REQUIRE(strcmp(back.report[i].stage, st->report[i].stage) == 0);
        REQUIRE(back.report[i].usec == st->report[i].usec);
    }
    proto_status_free(&back);
}

static void check_status_line(const char *line, size_t len)
{
    static const struct proto_status zero;
    struct proto_status st;
    enum proto_line_kind kind = proto_parse_line(line, len, &st);
    size_t bare = len > 0 && line[len - 1] == '\r' ? len - 1 : len;
    REQUIRE((kind == PROTO_READY) == (bare == 5 && memcmp(line, "ready", 5) == 0));
    if (kind != PROTO_STATUS) {
        REQUIRE(memcmp(&st, &zero, sizeof st) == 0);
        return;
    }
    REQUIRE(st.status >= 0 && st.status <= 255);
    REQUIRE(bare > 0 && line[0] >= '0' && line[0] <= '9');
    REQUIRE(st.has_report == (memchr(line, ' ', bare) != NULL));
    if (st.report_ok) {
        REQUIRE(st.has_report && (st.n_report == 0) == (st.report == NULL));
        for (size_t i = 0; i < st.n_report; i++) {
            const struct proto_report_entry *e = &st.report[i];
            REQUIRE(proto_stage_name_valid(e->stage, strlen(e->stage)) && e->usec >= 0);
        }
        check_report_roundtrip(&st);
    } else {
        REQUIRE(st.report == NULL && st.n_report == 0);
        REQUIRE(!st.has_report || memchr(st.report_error, '\0', sizeof st.report_error));
        REQUIRE(!st.has_report || st.report_error[0] != '\0');
        if (!st.has_report)
            check_report_roundtrip(&st);
    }
    proto_status_free(&st);
    REQUIRE(memcmp(&st, &zero, sizeof st) == 0);
}

static void check_id_line(const char *line, size_t len)
{
    int64_t id = 0, back = 0;
    char buf[32];
    if (proto_parse_id(line, len, &id) != 0)
        return;
    REQUIRE(id > 0);
    size_t n = proto_format_ids(buf, sizeof buf, &id, 1);
    REQUIRE(n > 1 && buf[n - 1] == '\n');
    REQUIRE(proto_parse_id(buf, n - 1, &back) == 0 && back == id);
}

static int line_cb(void *arg, const char *line, size_t len)
{
    struct feed *f = arg;
    /* the line is the next one of the stream, whole, ended by '\n' */
    REQUIRE(f->expect + len < f->len);
    REQUIRE(memcmp(line, f->stream + f->expect, len) == 0);
    REQUIRE(f->stream[f->expect + len] == '\n');
    REQUIRE(len <= PROTO_MAX_LINE);
    f->expect += len + 1;
    f->lines++;
    check_status_line(line, len);
    check_id_line(line, len);
    return f->stop_every && f->lines % f->stop_every == 0 ? 1 : 0;
}

/* Where cutting the stream at every '\n' fails: the start of the first
 * line longer than PROTO_MAX_LINE, or len when there is none. */
static size_t first_long_line(const char *s, size_t len)
{
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(s + at, '\n', len - at);
        size_t l = nl ? (size_t)(nl - (s + at)) : len - at;
        if (l > PROTO_MAX_LINE)
            return at;
        at += l + 1;
    }
    return len;
}

/* Feeds one chunk, from a buffer of exactly its size so that ASan sees a
 * read past it, then 0-byte feeds while the callback keeps stopping the
 * feed. Returns line_buf_feed's -1, else 0. */
static int feed_chunk(struct line_buf *lb, struct feed *f, const char *data, size_t n)
{
    char *chunk = malloc(n);
    REQUIRE(chunk != NULL);
    memcpy(chunk, data, n);
    int rc = line_buf_feed(lb, chunk, n, line_cb, f);
    free(chunk);
    while (rc > 0)
        rc = line_buf_feed(lb, NULL, 0, line_cb, f);
    return rc;
}

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* The stream: body, with the filler inserted at its offset when asked. */
static char *make_stream(const uint8_t *data, size_t size, size_t *len)
{
    bool filler = (data[1] & 8) && size >= 4;
    const char *body = (const char *)data + (filler ? 4 : 2);
    size_t body_len = size - (filler ? 4 : 2);
    size_t fill = filler ? PROTO_MAX_LINE - 128 + (size_t)data[2] : 0;
    size_t at = filler && body_len > 0 ? data[3] % (body_len + 1) : 0;
    char *s = malloc(body_len + fill + 1);
    if (!s)
        return NULL;
    memcpy(s, body, at);
    memset(s + at, 'x', fill);
    memcpy(s + at + fill, body + at, body_len - at);
    *len = body_len + fill;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct feed f = {NULL, 0, 0, 0, data[1] & 7};
    char *stream = make_stream(data, size, &f.len);
    if (!stream)
        return 0;
    f.stream = stream;
    /* a long stream in few pieces: line_buf_feed scans a partial line
     * again on every feed */
    bool long_stream = f.len > PROTO_MAX_LINE / 4;
    size_t min_chunk = long_stream ? 4096 : 1;
    size_t max_chunk = ((size_t)data[0] + 1) * (long_stream ? 256 : 1);
    struct line_buf lb = {0};
    uint32_t seed = 0x9E3779B9u ^ data[0] ^ ((uint32_t)data[1] << 8) ^ (uint32_t)size;
    size_t pos = 0;
    int rc = 0;
    while (rc == 0 && pos < f.len) {
        size_t n = min_chunk + next_rand(&seed) % max_chunk;
        if (n > f.len - pos)
            n = f.len - pos;
        rc = feed_chunk(&lb, &f, stream + pos, n);
        pos += n;
    }
    size_t bad = first_long_line(stream, f.len);
    if (bad < f.len) {
        /* every line before the long one arrived, then the feed failed */
        REQUIRE(rc == -1 && f.expect == bad && lb.len == 0);
    } else {
        REQUIRE(rc == 0 && f.expect + lb.len == f.len);
        REQUIRE(lb.len == 0 || memchr(lb.buf, '\n', lb.len) == NULL);
    }
    line_buf_free(&lb);
    free(stream);
    return 0;
}

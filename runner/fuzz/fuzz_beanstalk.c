/* fuzz_beanstalk.c — libFuzzer target for the beanstalkd frontend's input
 * (issue 17): bs_framer_feed() framing a client's byte stream into command
 * lines and put bodies, bs_parse() on every line.
 *
 * Input: byte 0 bounds the chunk sizes the stream is fed in (1..256), in a
 * pseudo-random order seeded by the input; byte 1 is the put size limit
 * (0..255, so that bodies over it are reachable); the rest is the stream.
 * Checked, beyond not crashing:
 *   - any split of the stream gives the same items, in order, as feeding it
 *     whole (the framer keeps no state that depends on read boundaries);
 *   - every reply is one of beanstalkd's error lines; every command has a
 *     known op and no error; a put's body is exactly its bytes, then CRLF,
 *     and never over the limit;
 *   - a feed takes at least one byte or reports that it needs more. */
#include "beanstalk/proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQUIRE(cond)                                                                          \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_beanstalk: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                                    \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

#define MAX_ITEMS 4096

struct item {
    enum bs_frame_kind kind;
    const char *reply;
    enum bs_op op;
    uint32_t bytes;
    uint32_t sum;                  /* a checksum of the body */
};

static bool known_reply(const char *r)
{
    static const char *const replies[] = {BS_BAD_FORMAT, BS_UNKNOWN_COMMAND, BS_EXPECTED_CRLF, BS_JOB_TOO_BIG};
    for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++)
        if (r == replies[i] || (r && strcmp(r, replies[i]) == 0))
            return true;
    return false;
}

/* Feeds stream in chunks of at most max_chunk (0: whole); records items. */
static size_t run(const char *s, size_t n, uint32_t max_job, unsigned max_chunk, uint32_t seed, struct item *items)
{
    struct bs_framer f;
    size_t k = 0, off = 0;
    bs_framer_init(&f, max_job);
    while (off < n && k < MAX_ITEMS) {
        size_t len = n - off;
        if (max_chunk) {
            seed = seed * 1103515245u + 12345u;
            size_t c = 1 + (seed >> 16) % max_chunk;
            if (c < len)
                len = c;
        }
        size_t pos = 0;
        while (pos < len && k < MAX_ITEMS) {
            size_t used;
            struct bs_frame fr;
            bs_framer_feed(&f, s + off + pos, len - pos, &used, &fr);
            REQUIRE(used <= len - pos);
            pos += used;
            if (fr.kind == BS_FRAME_MORE) {
                REQUIRE(pos == len);
                break;
            }
            struct item *it = &items[k++];
            memset(it, 0, sizeof *it);
            it->kind = fr.kind;
            if (fr.kind == BS_FRAME_ERROR) {
                REQUIRE(known_reply(fr.reply));
                REQUIRE(fr.body == NULL);
                it->reply = fr.reply;
            } else {
                REQUIRE(fr.cmd.error == NULL && fr.cmd.op > BS_OP_UNKNOWN && fr.cmd.op < BS_OP_COUNT);
                it->op = fr.cmd.op;
                if (fr.cmd.op == BS_OP_PUT) {
                    REQUIRE(fr.body != NULL && fr.cmd.bytes <= max_job);
                    REQUIRE(fr.body[fr.cmd.bytes] == '\r' && fr.body[fr.cmd.bytes + 1] == '\n');
                    it->bytes = fr.cmd.bytes;
                    for (uint32_t i = 0; i < fr.cmd.bytes; i++)
                        it->sum = it->sum * 31 + (unsigned char)fr.body[i];
                } else {
                    REQUIRE(fr.body == NULL);
                }
            }
            free(fr.body);
        }
        off += len;
    }
    bs_framer_free(&f);
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct item whole[MAX_ITEMS], split[MAX_ITEMS];
    if (size < 2)
        return 0;
    unsigned max_chunk = 1 + data[0];
    uint32_t max_job = data[1];
    const char *s = (const char *)data + 2;
    size_t n = size - 2;
    size_t a = run(s, n, max_job, 0, 0, whole);
    size_t b = run(s, n, max_job, max_chunk, (uint32_t)size * 2654435761u, split);
    if (a < MAX_ITEMS && b < MAX_ITEMS) {
        REQUIRE(a == b);
        for (size_t i = 0; i < a; i++) {
            REQUIRE(whole[i].kind == split[i].kind && whole[i].op == split[i].op);
            REQUIRE(whole[i].bytes == split[i].bytes && whole[i].sum == split[i].sum);
            REQUIRE((whole[i].reply == NULL) == (split[i].reply == NULL));
            REQUIRE(whole[i].reply == NULL || strcmp(whole[i].reply, split[i].reply) == 0);
        }
    }
    return 0;
}

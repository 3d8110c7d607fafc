/* fuzz_cond.c — libFuzzer target for the condition language of
 * pepsi-stage-if (stages/cond.h, issue 11): compiles the input as a
 * condition and, when it compiles, evaluates it against a few fixed
 * messages (state JSON, recipients, odd bytes, missing fields). Any crash,
 * sanitizer report, leak, timeout or allocation past -rss_limit_mb is a
 * bug. Inputs longer than COND_MAX_LENGTH + 1 bytes are cut there: the
 * length limit is the first check, past it nothing else runs. */
#include "stages/cond.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_MESSAGES 3

static char *plain_rcpts[] = {"alice@example.org", "bob@example.net", "ops@x.org"};
static char *odd_rcpts[] = {"", "\xff\xfe@\x01", "a\nb@c"};

static struct pepsi_message *messages(void)
{
    static struct pepsi_message m[N_MESSAGES];
    static char subject[513];
    static bool ready;
    if (ready)
        return m;
    ready = true;
    m[0] = (struct pepsi_message){.id = 1, .stage = "in", .tube = "orders", .sender_key = "ip:192.0.2.7",
                                  .envelope_sender = "shop@example.com", .recipients = plain_rcpts,
                                  .n_recipients = 3, .header_from = "Shop <shop@example.com>",
                                  .subject = "Invoice 42"};
    m[0].state = json_loads("{\"amount\": 120, \"kind\": \"refund\", \"deep\": {\"flag\": true, \"list\": [1, 2, "
                            "{\"x\": null}]}, \"n\": -1.5e300, \"s\": \"caf\\u00e9\"}", 0, NULL);
    /* The null sender, no subject, no recipients, no state. */
    m[1] = (struct pepsi_message){.id = 2, .stage = "in", .tube = "", .sender_key = "user:x",
                                  .envelope_sender = "", .recipients = NULL, .n_recipients = 0,
                                  .header_from = NULL, .subject = NULL, .state = NULL};
    /* Newlines, invalid UTF-8, a longer subject. */
    for (size_t i = 0; i < sizeof subject - 1; i++)
        subject[i] = "ab\n\xff a+(x)"[i % 11];
    subject[sizeof subject - 1] = '\0';
    m[2] = (struct pepsi_message){.id = 3, .stage = "in", .tube = "t\xc3\x28", .sender_key = "",
                                  .envelope_sender = "x@y", .recipients = odd_rcpts, .n_recipients = 3,
                                  .header_from = "\"a\" <b@c>", .subject = subject};
    m[2].state = json_loads("{\"a\": {\"b\": {\"c\": \"d\"}}, \"\": 1, \"e\": [], \"f\": {}}", 0, NULL);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pepsi_message *m = messages();
    size_t n = size > COND_MAX_LENGTH + 1 ? COND_MAX_LENGTH + 1 : size;
    char *text = malloc(n + 1), err[512];
    if (text == NULL)
        return 0;
    memcpy(text, data, n);
    text[n] = '\0';
    struct cond *c = cond_compile(text, err, sizeof err);
    free(text);
    if (c == NULL)
        return 0;
    for (size_t i = 0; i < N_MESSAGES; i++) {
        int r = cond_eval(c, &m[i], err, sizeof err);
        if (r < -1 || r > 1)
            abort();
    }
    cond_free(c);
    return 0;
}

/* fuzz_ingress_event.c — libFuzzer target for the ingress's event parsing
 * (runner/src/ingress/event.c and the id sources of provider.c, issue 11):
 * an id source ("header:X", "json:a.b", "sha256"), the external id found
 * in the headers or the JSON body of a verified request (Svix's svix-id
 * alias included), and the event object built from the headers.
 *
 * Input: byte 0 picks the provider's scheme; then lines separated by
 * '\n': the id source, then up to 16 headers "Name: value", an empty
 * line, and the body (the rest, raw bytes). */
#include "ingress/event.h"
#include "ingress/provider.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N_HEADERS 16

struct fuzz_request {
    const char *name[N_HEADERS];
    const char *value[N_HEADERS];
    size_t n;
};

static const char *fuzz_get(void *ctx, const char *name)
{
    const struct fuzz_request *r = ctx;
    for (size_t i = 0; i < r->n; i++)
        if (strcasecmp(r->name[i], name) == 0)
            return r->value[i];
    return NULL;
}

static void fuzz_each(void *ctx, event_header_visit visit, void *arg)
{
    const struct fuzz_request *r = ctx;
    for (size_t i = 0; i < r->n; i++)
        visit(arg, r->name[i], r->value[i]);
}

/* Cuts the next line out of buf at *pos (NUL-terminated in place). */
static char *next_line(char *buf, size_t len, size_t *pos)
{
    if (*pos >= len)
        return NULL;
    char *line = buf + *pos;
    char *nl = memchr(line, '\n', len - *pos);
    if (nl == NULL) {
        *pos = len;
        return line; /* buf[len] is '\0' */
    }
    *nl = '\0';
    *pos = (size_t)(nl - buf) + 1;
    return line;
}

/* Reads "Name: value" lines until an empty line; returns where the body starts. */
static size_t read_headers(char *buf, size_t len, size_t pos, struct fuzz_request *r)
{
    char *line;
    while ((line = next_line(buf, len, &pos)) != NULL && *line != '\0') {
        char *colon = strchr(line, ':');
        if (colon == NULL || r->n == N_HEADERS)
            continue;
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ')
            value++;
        r->name[r->n] = line;
        r->value[r->n] = value;
        r->n++;
    }
    return pos;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_request req = {.n = 0};
    struct provider p;
    char *id = NULL;
    size_t pos = 0;
    if (size < 1)
        return 0;
    char *buf = malloc(size);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    size_t len = size - 1;

    memset(&p, 0, sizeof p);
    p.name = "fuzz";
    p.sig.scheme = (enum sig_scheme)(data[0] % 6);
    char *source = next_line(buf, len, &pos);
    if (source == NULL || provider_parse_id_source(source, &p.id_kind, &p.id_arg) != 0) {
        free(buf);
        return 0;
    }
    size_t body_at = read_headers(buf, len, pos, &req);
    const unsigned char *body = (const unsigned char *)buf + (body_at < len ? body_at : len);
    size_t body_len = body_at < len ? len - body_at : 0;

    struct event_source src = {fuzz_get, fuzz_each, &req};
    enum event_result r = event_external_id(&p, &src, body, body_len, &id);
    if (r == EV_OK) {
        if (id == NULL || *id == '\0' || strlen(id) > EVENT_ID_MAX)
            abort(); /* an accepted id is never empty nor over the limit */
        char *ev = event_json(p.name, id, &src, "2026-11-30T06:00:00.000001Z", body_len);
        free(ev);
    } else if (id != NULL) {
        abort(); /* no id is handed out with a refusal */
    }
    for (size_t i = 0; i < req.n; i++)
        (void)webhook_keeps_header(req.name[i]);
    free(id);
    free(p.id_arg);
    free(buf);
    return 0;
}

/* webhook_load.c — a small load generator for `pepsi-runner ingress`,
 * used by the end-to-end tests (runner/tests/e2e/ingress*.t) and the
 * benchmark (bench/ingress). Not part of the runner; built on demand:
 *
 *   cc -O2 -o webhook-load runner/tests/webhook_load.c -lcrypto -lpthread
 *
 * It POSTs Standard Webhooks requests (webhook-id, webhook-timestamp,
 * webhook-signature) over keep-alive HTTP/1.1 connections, one request in
 * flight on each, driven by a few threads with epoll (like wrk):
 *   -h HOST -p PORT -P PATH         target (default 127.0.0.1, /hooks/sw)
 *   -s SECRET                       whsec_... signing secret
 *   -c CONNECTIONS                  parallel connections (default 16)
 *   -t THREADS                      threads sharing them, epoll each (default 2)
 *   -n EVENTS -r DELIVERIES         EVENTS distinct ids, each sent DELIVERIES
 *                                   times, all deliveries shuffled (seed -S)
 *   -i PREFIX                       external ids are PREFIX0, PREFIX1, ...
 *   -b BYTES                        pad each body to about BYTES
 *   -f                              forged: signed with the wrong key
 *   -a FILE                         write the id of every 2xx answer to FILE
 * and prints one JSON object: requests, status counts, errors, seconds,
 * requests per second and latency percentiles (ms). Exit 0 unless it could
 * not run at all. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct opts {
    const char *host, *path, *secret, *prefix, *ack;
    int port, conns, threads, deliveries, body_size;
    long events;
    unsigned seed;
    int forged;
};

struct shared {
    struct opts o;
    unsigned char key[256];
    int keylen;
    long *order;            /* event index of each delivery, shuffled */
    long total;
    atomic_long next;
};

struct thread_result {
    long requests, s2xx, s4xx, s5xx, other, errors;
    uint32_t *lat_us;       /* one per request */
    long *acked;            /* event indexes answered 2xx */
    long n_acked;
    long cap;
};

/* One keep-alive connection of a thread. */
struct conn {
    int fd;
    long ev;                /* the event being delivered, -1: none */
    char out[16384];
    size_t outlen, outoff;
    char in[65536];
    size_t inlen;
    uint64_t t0;
};

struct worker {
    pthread_t t;
    struct shared *sh;
    struct thread_result r;
    struct conn *c;
    int nconn;
    int epfd;
    int failures;
};

static uint64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- connections ---- */

static int dial(const struct opts *o)
{
    struct sockaddr_in a;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)o->port);
    if (inet_pton(AF_INET, o->host, &a.sin_addr) != 1 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Parses one complete response from c->in: its status, or 0 when more
 * bytes are needed, -1 when it is not HTTP. */
static int parse_response(struct conn *c, int *close_after)
{
    char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
    int status = 0;
    long clen = 0;
    if (end == NULL)
        return c->inlen == sizeof c->in ? -1 : 0;
    size_t head = (size_t)(end - c->in) + 4;
    *end = '\0';
    if (sscanf(c->in, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    const char *cl = strcasestr(c->in, "\r\nContent-Length:");
    if (cl)
        clen = strtol(cl + 17, NULL, 10);
    *close_after = strcasestr(c->in, "\r\nConnection: close") != NULL;
    *end = '\r';
    if (c->inlen < head + (size_t)clen)
        return 0;
    memmove(c->in, c->in + head + clen, c->inlen - head - (size_t)clen);
    c->inlen -= head + (size_t)clen;
    return status;
}

/* ---- requests ---- */

static size_t build_request(struct shared *sh, long ev, char *buf, size_t cap)
{
    const struct opts *o = &sh->o;
    char id[128], body[8192], signed_content[8400], sig[64];
    unsigned char mac[32];
    unsigned int maclen = 0;
    long ts = (long)time(NULL);
    snprintf(id, sizeof id, "%s%ld", o->prefix, ev);
    int blen = snprintf(body, sizeof body, "{\"type\":\"test.event\",\"id\":\"%s\",\"n\":%ld,\"pad\":\"", id, ev);
    while (blen < o->body_size - 3 && blen < (int)sizeof body - 4)
        body[blen++] = 'x';
    blen += snprintf(body + blen, sizeof body - (size_t)blen, "\"}");
    int slen = snprintf(signed_content, sizeof signed_content, "%s.%ld.%s", id, ts, body);
    unsigned char key[256];
    memcpy(key, sh->key, (size_t)sh->keylen);
    if (o->forged)
        key[0] ^= 0x5a;
    HMAC(EVP_sha256(), key, sh->keylen, (unsigned char *)signed_content, (size_t)slen, mac, &maclen);
    EVP_EncodeBlock((unsigned char *)sig, mac, (int)maclen);
    return (size_t)snprintf(buf, cap,
                            "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                            "webhook-id: %s\r\nwebhook-timestamp: %ld\r\nwebhook-signature: v1,%s\r\n"
                            "Content-Length: %d\r\n\r\n%s",
                            o->path, o->host, o->port, id, ts, sig, blen, body);
}

static void record(struct worker *w, long ev, int status, uint64_t us)
{
    struct thread_result *r = &w->r;
    if (r->requests < r->cap)
        r->lat_us[r->requests] = (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us);
    r->requests++;
    if (status >= 200 && status < 300) {
        r->s2xx++;
        if (r->n_acked < r->cap)
            r->acked[r->n_acked++] = ev;
    } else if (status >= 400 && status < 500) {
        r->s4xx++;
    } else if (status >= 500) {
        r->s5xx++;
    } else {
        r->other++;
    }
}

static void conn_close(struct worker *w, struct conn *c)
{
    if (c->fd >= 0) {
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->inlen = 0;
}

/* Watches c for input, and for output while part of its request is unsent
 * (a level-triggered EPOLLOUT on an idle socket would spin). */
static int conn_watch(struct worker *w, struct conn *c)
{
    struct epoll_event e = {.events = EPOLLIN | (c->outoff < c->outlen ? EPOLLOUT : 0), .data.ptr = c};
    if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
        return 0;
    return errno == ENOENT ? epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &e) : -1;
}

static int conn_send(struct conn *c);

/* Starts the next delivery on c; returns 0, or -1 when there is no more
 * work or the server cannot be reached. */
static int conn_next(struct worker *w, struct conn *c)
{
    struct shared *sh = w->sh;
    long k = atomic_fetch_add(&sh->next, 1);
    c->ev = -1;
    if (k >= sh->total)
        return -1;
    while (c->fd < 0) {
        c->fd = dial(&sh->o);
        if (c->fd >= 0)
            break;
        w->r.errors++;
        if (++w->failures >= 3)
            return -1; /* the server is gone */
        usleep(100000);
    }
    c->ev = sh->order[k];
    c->outlen = build_request(sh, c->ev, c->out, sizeof c->out);
    c->outoff = 0;
    c->t0 = mono_us();
    if (conn_send(c) != 0) {
        /* the server closed a kept-alive connection: count it, dial again */
        w->r.errors++;
        conn_close(w, c);
        return -1;
    }
    return conn_watch(w, c);
}

/* Writes what the socket takes; returns -1 on error. */
static int conn_send(struct conn *c)
{
    while (c->outoff < c->outlen) {
        ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0)
            return -1;
        c->outoff += (size_t)n;
    }
    return 0;
}

/* Reads what arrived; returns the status of a complete response, 0 when
 * incomplete, -1 on error or close. */
static int conn_recv(struct conn *c, int *close_after)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->inlen, sizeof c->in - c->inlen, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0)
            return -1;
        c->inlen += (size_t)n;
        if (c->inlen == sizeof c->in)
            break;
    }
    return parse_response(c, close_after);
}

/* Handles readiness of c; returns 1 while c has work, 0 when it is done. */
static int conn_event(struct worker *w, struct conn *c, uint32_t ev)
{
    int close_after = 0, status = 0;
    if ((ev & EPOLLOUT) && c->outoff < c->outlen) {
        if (conn_send(c) != 0)
            status = -1;
        else if (c->outoff == c->outlen && conn_watch(w, c) != 0)
            status = -1;
    }
    if (status == 0 && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        status = conn_recv(c, &close_after);
    if (status == 0)
        return 1;
    if (status < 0) {
        w->r.errors++;
        conn_close(w, c);
    } else {
        w->failures = 0;
        record(w, c->ev, status, mono_us() - c->t0);
        if (close_after)
            conn_close(w, c);
    }
    return conn_next(w, c) == 0 ? 1 : 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[64];
    int active = 0;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < w->nconn; i++) {
        w->c[i].fd = -1;
        if (conn_next(w, &w->c[i]) == 0)
            active++;
    }
    while (active > 0 && w->epfd >= 0) {
        int n = epoll_wait(w->epfd, evs, 64, 1000);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++)
            if (!conn_event(w, evs[i].data.ptr, evs[i].events))
                active--;
    }
    for (int i = 0; i < w->nconn; i++)
        conn_close(w, &w->c[i]);
    if (w->epfd >= 0)
        close(w->epfd);
    return NULL;
}

/* ---- set-up and report ---- */

static int decode_secret(struct shared *sh)
{
    const char *b64 = strncmp(sh->o.secret, "whsec_", 6) == 0 ? sh->o.secret + 6 : sh->o.secret;
    size_t len = strlen(b64), pad = 0;
    if (len == 0 || len % 4 || len > 300)
        return -1;
    while (pad < 2 && b64[len - 1 - pad] == '=')
        pad++;
    int n = EVP_DecodeBlock(sh->key, (const unsigned char *)b64, (int)len);
    if (n <= 0)
        return -1;
    sh->keylen = n - (int)pad;
    return 0;
}

static void shuffle(struct shared *sh)
{
    uint64_t x = sh->o.seed ? sh->o.seed : 88172645463325252ull;
    for (long i = sh->total - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        long j = (long)(x % (uint64_t)(i + 1));
        long t = sh->order[i];
        sh->order[i] = sh->order[j];
        sh->order[j] = t;
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const uint32_t *v, long n, double p)
{
    if (n == 0)
        return 0;
    long i = (long)(p * (double)(n - 1) + 0.5);
    return v[i] / 1000.0;
}

static int usage(void)
{
    fprintf(stderr, "usage: webhook-load -p PORT -s SECRET [-h HOST] [-P PATH] [-c CONNS] [-n EVENTS] "
                    "[-t THREADS] [-r DELIVERIES] [-S SEED] [-i PREFIX] [-b BYTES] [-f] [-a ACKFILE]\n");
    return 64;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    int ch;
    *o = (struct opts){"127.0.0.1", "/hooks/sw", NULL, "evt_", NULL, 0, 16, 2, 1, 200, 1000, 1, 0};
    while ((ch = getopt(argc, argv, "h:p:P:s:c:t:n:r:S:i:b:fa:")) != -1) {
        switch (ch) {
        case 'h': o->host = optarg; break;
        case 'p': o->port = atoi(optarg); break;
        case 'P': o->path = optarg; break;
        case 's': o->secret = optarg; break;
        case 'c': o->conns = atoi(optarg); break;
        case 't': o->threads = atoi(optarg); break;
        case 'n': o->events = atol(optarg); break;
        case 'r': o->deliveries = atoi(optarg); break;
        case 'S': o->seed = (unsigned)atoi(optarg); break;
        case 'i': o->prefix = optarg; break;
        case 'b': o->body_size = atoi(optarg); break;
        case 'f': o->forged = 1; break;
        case 'a': o->ack = optarg; break;
        default: return -1;
        }
    }
    if (o->threads > o->conns)
        o->threads = o->conns;
    return o->port > 0 && o->secret && o->conns > 0 && o->threads > 0 && o->events > 0 && o->deliveries > 0 ? 0 : -1;
}

static void report(struct shared *sh, struct worker *w, double secs)
{
    long req = 0, s2 = 0, s4 = 0, s5 = 0, other = 0, err = 0, k = 0;
    for (int i = 0; i < sh->o.threads; i++) {
        req += w[i].r.requests;
        s2 += w[i].r.s2xx;
        s4 += w[i].r.s4xx;
        s5 += w[i].r.s5xx;
        other += w[i].r.other;
        err += w[i].r.errors;
    }
    uint32_t *all = calloc((size_t)(req ? req : 1), sizeof *all);
    if (all == NULL)
        exit(1);
    for (int i = 0; i < sh->o.threads; i++) {
        long n = w[i].r.requests < w[i].r.cap ? w[i].r.requests : w[i].r.cap;
        memcpy(all + k, w[i].r.lat_us, (size_t)n * sizeof *all);
        k += n;
    }
    req = k < req ? k : req;
    qsort(all, (size_t)req, sizeof *all, cmp_u32);
    printf("{\"requests\": %ld, \"status_2xx\": %ld, \"status_4xx\": %ld, \"status_5xx\": %ld, \"status_other\": %ld, "
           "\"errors\": %ld, \"seconds\": %.3f, \"rps\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f}\n",
           req, s2, s4, s5, other, err, secs, secs > 0 ? (double)req / secs : 0.0, pct(all, req, 0.50),
           pct(all, req, 0.99), pct(all, req, 1.0));
    free(all);
}

static void write_acks(struct shared *sh, struct worker *w)
{
    FILE *f = fopen(sh->o.ack, "w");
    if (f == NULL) {
        perror(sh->o.ack);
        return;
    }
    for (int i = 0; i < sh->o.threads; i++)
        for (long j = 0; j < w[i].r.n_acked; j++)
            fprintf(f, "%s%ld\n", sh->o.prefix, w[i].r.acked[j]);
    fclose(f);
}

int main(int argc, char **argv)
{
    static struct shared sh;
    if (parse_opts(argc, argv, &sh.o) != 0)
        return usage();
    if (decode_secret(&sh) != 0) {
        fprintf(stderr, "webhook-load: the secret is not whsec_<base64>\n");
        return 64;
    }
    sh.total = sh.o.events * sh.o.deliveries;
    sh.order = malloc((size_t)sh.total * sizeof *sh.order);
    struct worker *w = calloc((size_t)sh.o.threads, sizeof *w);
    if (sh.order == NULL || w == NULL)
        return 1;
    for (long i = 0; i < sh.total; i++)
        sh.order[i] = i % sh.o.events;
    shuffle(&sh);
    uint64_t t0 = mono_us();
    for (int i = 0; i < sh.o.threads; i++) {
        w[i].sh = &sh;
        w[i].nconn = sh.o.conns / sh.o.threads + (i < sh.o.conns % sh.o.threads);
        w[i].c = calloc((size_t)w[i].nconn, sizeof *w[i].c);
        w[i].r.cap = sh.total;
        w[i].r.lat_us = calloc((size_t)sh.total, sizeof(uint32_t));
        w[i].r.acked = calloc((size_t)sh.total, sizeof(long));
        if (w[i].c == NULL || w[i].r.lat_us == NULL || w[i].r.acked == NULL ||
            pthread_create(&w[i].t, NULL, worker_main, &w[i]) != 0)
            return 1;
    }
    for (int i = 0; i < sh.o.threads; i++)
        pthread_join(w[i].t, NULL);
    report(&sh, w, (double)(mono_us() - t0) / 1e6);
    if (sh.o.ack)
        write_acks(&sh, w);
    for (int i = 0; i < sh.o.threads; i++) {
        free(w[i].c);
        free(w[i].r.lat_us);
        free(w[i].r.acked);
    }
    free(w);
    free(sh.order);
    return 0;
}

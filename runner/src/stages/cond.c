/* stages/cond.c — see cond.h. A recursive-descent parser that counts its
 * depth (so no input can exhaust the stack) into a small tree whose "or"
 * and "and" nodes hold all their operands: the tree is at most about
 * 2 x COND_MAX_DEPTH deep, and so are the recursions that walk it. */
#include "stages/cond.h"

#include "stages/cond_re.h"
#include "lib/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum node_kind { N_OR, N_AND, N_NOT, N_TEST };
enum field_kind { F_SENDER_KEY, F_TUBE, F_SUBJECT, F_HEADER_FROM, F_ENVELOPE_SENDER, F_RECIPIENT,
                  F_RECIPIENTS, F_STATE };
enum op { OP_EQ, OP_NE, OP_MATCH, OP_NOMATCH, OP_LT, OP_LE, OP_GT, OP_GE, OP_EXISTS };

struct node {
    enum node_kind kind;
    size_t pos;                 /* 1-based byte position in the text */
    struct node **kids;         /* N_OR, N_AND: all operands; N_NOT: one */
    size_t n_kids;
    enum field_kind field;      /* N_TEST */
    char **path;                /* F_STATE: the keys */
    size_t n_path;
    enum op op;
    char *text;                 /* the value as text */
    double num;                 /* the value as a number */
    bool is_num;
    struct cond_re *re;         /* OP_MATCH, OP_NOMATCH */
};

struct cond {
    struct node *root;
    struct cond_re_set *res;    /* made with the first regex */
};

struct parser {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    bool failed;
    int depth;                  /* "not" and "(" around the current point */
    int n_tests;
    int n_regexes;
    struct cond *c;
};

static void fail_at(struct parser *p, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Records the first error: "condition at position N: WHAT" (at is 0-based;
 * the position first, so that a truncated log line still has it). */
static void fail_at(struct parser *p, size_t at, const char *fmt, ...)
{
    if (p->failed)
        return;
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->errlen, "condition at position %zu: %s", at + 1, what);
    p->failed = true;
}

static void fail(struct parser *p, const char *what)
{
    fail_at(p, p->pos, "%s", what);
}

static void skip_space(struct parser *p)
{
    while (isspace((unsigned char)p->s[p->pos]))
        p->pos++;
}

/* Whether the next token is the word w (followed by a non-word character). */
static bool accept_word(struct parser *p, const char *w)
{
    skip_space(p);
    size_t n = strlen(w);
    if (strncmp(p->s + p->pos, w, n) != 0)
        return false;
    char c = p->s[p->pos + n];
    if (isalnum((unsigned char)c) || c == '_' || c == '.')
        return false;
    p->pos += n;
    return true;
}

static bool accept_char(struct parser *p, char c)
{
    skip_space(p);
    if (p->s[p->pos] != c)
        return false;
    p->pos++;
    return true;
}

static struct node *node(enum node_kind k, size_t at)
{
    struct node *n = xcalloc(1, sizeof *n);
    n->kind = k;
    n->pos = at + 1;
    return n;
}

static void add_kid(struct node *n, struct node *kid)
{
    n->kids = xrealloc(n->kids, (n->n_kids + 1) * sizeof *n->kids);
    n->kids[n->n_kids++] = kid;
}

static void node_free(struct node *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n_kids; i++)
        node_free(n->kids[i]);
    free(n->kids);
    for (size_t i = 0; i < n->n_path; i++)
        free(n->path[i]);
    free(n->path);
    free(n->text);
    cond_re_free(n->re);
    free(n);
}

static struct node *parse_expr(struct parser *p);

static char *read_identifier(struct parser *p)
{
    skip_space(p);
    size_t start = p->pos;
    while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_' || p->s[p->pos] == '.' ||
           p->s[p->pos] == '-')
        p->pos++;
    if (p->pos == start)
        return NULL;
    char *id = xmalloc(p->pos - start + 1);
    memcpy(id, p->s + start, p->pos - start);
    id[p->pos - start] = '\0';
    return id;
}

static const struct {
    const char *name;
    enum field_kind kind;
} fields[] = {
    {"sender_key", F_SENDER_KEY},   {"tube", F_TUBE},       {"subject", F_SUBJECT},
    {"header_from", F_HEADER_FROM}, {"envelope_sender", F_ENVELOPE_SENDER},
    {"recipient", F_RECIPIENT},     {"recipients", F_RECIPIENTS},
};

/* state.a.b: the keys, split at dots. */
static int parse_path(struct node *c, const char *keys)
{
    char *copy = xstrdup(keys), *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
        c->path = xrealloc(c->path, (c->n_path + 1) * sizeof *c->path);
        c->path[c->n_path++] = xstrdup(k);
    }
    free(copy);
    return c->n_path ? 0 : -1;
}

static int parse_field(struct parser *p, struct node *c)
{
    skip_space(p);
    size_t at = p->pos;
    char *id = read_identifier(p);
    if (id == NULL) {
        fail(p, "expected a field (sender_key, tube, subject, header_from, envelope_sender, "
                "recipient, recipients or state.KEY)");
        return -1;
    }
    int rc = -1;
    if (strncmp(id, "state.", 6) == 0) {
        c->field = F_STATE;
        rc = parse_path(c, id + 6);
    } else {
        for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
            if (strcmp(id, fields[i].name) == 0) {
                c->field = fields[i].kind;
                rc = 0;
            }
    }
    if (rc != 0)
        fail_at(p, at, "unknown field \"%.100s\"", id);
    free(id);
    return rc;
}

static int parse_op(struct parser *p, struct node *c)
{
    static const struct {
        const char *text;
        enum op op;
    } ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"!~", OP_NOMATCH}, {"~", OP_MATCH},
               {"<=", OP_LE}, {">=", OP_GE}, {"<", OP_LT},       {">", OP_GT}};
    skip_space(p);
    if (accept_word(p, "exists")) {
        c->op = OP_EXISTS;
        return 0;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t n = strlen(ops[i].text);
        if (strncmp(p->s + p->pos, ops[i].text, n) == 0) {
            p->pos += n;
            c->op = ops[i].op;
            return 0;
        }
    }
    fail(p, "expected ==, !=, ~, !~, <, <=, >, >= or exists");
    return -1;
}

/* A "string": at most COND_MAX_STRING bytes once unescaped. */
static int parse_string(struct parser *p, struct node *c)
{
    size_t at = p->pos, n = 0;
    char *out = xmalloc(COND_MAX_STRING + 1);
    p->pos++; /* the opening quote */
    for (;;) {
        char ch = p->s[p->pos];
        if (ch == '\0') {
            free(out);
            fail_at(p, at, "unterminated string");
            return -1;
        }
        p->pos++;
        if (ch == '"')
            break;
        if (ch == '\\' && (p->s[p->pos] == '"' || p->s[p->pos] == '\\'))
            ch = p->s[p->pos++];
        if (n == COND_MAX_STRING) {
            free(out);
            fail_at(p, at, "string longer than %d bytes", COND_MAX_STRING);
            return -1;
        }
        out[n++] = ch;
    }
    out[n] = '\0';
    c->text = out;
    return 0;
}

static int parse_value(struct parser *p, struct node *c)
{
    skip_space(p);
    if (p->s[p->pos] == '"')
        return parse_string(p, c);
    char *end;
    c->num = strtod(p->s + p->pos, &end);
    if (end == p->s + p->pos) {
        fail(p, "expected a \"string\" or a number");
        return -1;
    }
    c->text = xmalloc((size_t)(end - (p->s + p->pos)) + 1);
    memcpy(c->text, p->s + p->pos, (size_t)(end - (p->s + p->pos)));
    c->text[end - (p->s + p->pos)] = '\0';
    c->is_num = true;
    p->pos = (size_t)(end - p->s);
    return 0;
}

static int compile_regex(struct parser *p, struct node *c, size_t at)
{
    char why[200];
    if (++p->n_regexes > COND_MAX_REGEXES) {
        fail_at(p, at, "more than %d regular expressions", COND_MAX_REGEXES);
        return -1;
    }
    if (p->c->res == NULL && (p->c->res = cond_re_set_new(why, sizeof why)) == NULL) {
        fail_at(p, at, "%s", why);
        return -1;
    }
    size_t off = 0;
    if ((c->re = cond_re_compile(p->c->res, c->text, strlen(c->text), &off, why, sizeof why)) == NULL) {
        fail_at(p, at, "bad regular expression \"%.80s\": %s (pattern offset %zu)", c->text, why, off);
        return -1;
    }
    return 0;
}

static struct node *parse_test(struct parser *p)
{
    skip_space(p);
    size_t at = p->pos;
    struct node *c = node(N_TEST, at);
    if (++p->n_tests > COND_MAX_TESTS) {
        fail_at(p, at, "more than %d tests", COND_MAX_TESTS);
        return c;
    }
    if (parse_field(p, c) != 0 || parse_op(p, c) != 0)
        return c;
    if (c->op == OP_EXISTS) {
        if (c->field != F_STATE)
            fail_at(p, at, "\"exists\" tests state fields only");
        return c;
    }
    skip_space(p);
    size_t value_at = p->pos;
    if (parse_value(p, c) != 0)
        return c;
    if ((c->op == OP_MATCH || c->op == OP_NOMATCH) && compile_regex(p, c, value_at) != 0)
        return c;
    if (c->op >= OP_LT && c->op <= OP_GE && !c->is_num)
        fail_at(p, value_at, "<, <=, > and >= compare numbers");
    return c;
}

/* "not" factor | "(" expr ")" | test; each "not" and "(" is one level of
 * depth, refused past COND_MAX_DEPTH before recursing further. */
static struct node *parse_factor(struct parser *p)
{
    skip_space(p);
    size_t at = p->pos;
    bool is_not = accept_word(p, "not");
    if (!is_not && !accept_char(p, '('))
        return parse_test(p);
    if (p->depth >= COND_MAX_DEPTH) {
        fail_at(p, at, "nesting deeper than %d", COND_MAX_DEPTH);
        return NULL;
    }
    p->depth++;
    struct node *c;
    if (is_not) {
        c = node(N_NOT, at);
        add_kid(c, parse_factor(p));
    } else {
        c = parse_expr(p);
        if (!accept_char(p, ')'))
            fail(p, "expected \")\"");
    }
    p->depth--;
    return c;
}

/* sub (word sub)*: one node holding every operand, or the single one. */
static struct node *parse_list(struct parser *p, const char *word, enum node_kind kind,
                               struct node *(*sub)(struct parser *))
{
    skip_space(p);
    size_t at = p->pos;
    struct node *first = sub(p);
    if (p->failed || !accept_word(p, word))
        return first;
    struct node *list = node(kind, at);
    add_kid(list, first);
    do
        add_kid(list, sub(p));
    while (!p->failed && accept_word(p, word));
    return list;
}

static struct node *parse_term(struct parser *p)
{
    return parse_list(p, "and", N_AND, parse_factor);
}

static struct node *parse_expr(struct parser *p)
{
    return parse_list(p, "or", N_OR, parse_term);
}

void cond_free(struct cond *c)
{
    if (c == NULL)
        return;
    node_free(c->root);
    cond_re_set_free(c->res);
    free(c);
}

struct cond *cond_compile(const char *text, char *err, size_t errlen)
{
    struct cond *c = xcalloc(1, sizeof *c);
    struct parser p = {text ? text : "", 0, err, errlen, false, 0, 0, 0, c};
    /* Before anything else: the length. */
    if (strnlen(p.s, COND_MAX_LENGTH + 1) > COND_MAX_LENGTH) {
        fail_at(&p, COND_MAX_LENGTH, "longer than %d bytes", COND_MAX_LENGTH);
        cond_free(c);
        return NULL;
    }
    c->root = parse_expr(&p);
    skip_space(&p);
    if (!p.failed && p.s[p.pos] != '\0')
        fail(&p, "unexpected text after the condition");
    if (p.failed) {
        cond_free(c);
        return NULL;
    }
    return c;
}

/* ---- evaluation ---- */

struct eval {
    struct cond *c;
    const struct pepsi_message *m;
    struct cond_budget budget;
    char *err;
    size_t errlen;
};

static int eval_error(struct eval *e, const struct node *n, const char *what)
{
    snprintf(e->err, e->errlen, "condition at position %zu: %s", n->pos, what);
    return -1;
}

/* A test on the text v: 1, 0, or -1 at a limit. */
static int compare_text(struct eval *e, const struct node *n, const char *v)
{
    size_t len = strlen(v);
    char why[300];
    e->budget.used += 1 + len / COND_STEP_BYTES;
    if (e->budget.used > e->budget.max) {
        snprintf(why, sizeof why, "evaluation exceeds %llu steps", (unsigned long long)e->budget.max);
        return eval_error(e, n, why);
    }
    int r;
    switch (n->op) {
    case OP_EQ:
        return strcmp(v, n->text) == 0;
    case OP_NE:
        return strcmp(v, n->text) != 0;
    case OP_MATCH:
    case OP_NOMATCH:
        r = cond_re_match(e->c->res, n->re, v, len, &e->budget, why, sizeof why);
        if (r < 0)
            return eval_error(e, n, why);
        return n->op == OP_MATCH ? r : !r;
    default: {
        char *end;
        double d = strtod(v, &end);
        if (end == v || *end != '\0')
            return 0;
        return n->op == OP_LT ? d < n->num : n->op == OP_LE ? d <= n->num : n->op == OP_GT ? d > n->num
                                                                                             : d >= n->num;
    }
    }
}

/* A JSON text being written, refused past COND_MAX_JSON_TEXT bytes. */
struct dump {
    char *text;
    size_t len;
};

static int dump_cb(const char *buf, size_t size, void *data)
{
    struct dump *d = data;
    if (size > COND_MAX_JSON_TEXT - d->len)
        return -1;
    memcpy(d->text + d->len, buf, size);
    d->len += size;
    return 0;
}

static int test_state(struct eval *e, const struct node *n)
{
    json_t *v = e->m->state;
    for (size_t i = 0; v && i < n->n_path; i++)
        v = json_is_object(v) ? json_object_get(v, n->path[i]) : NULL;
    if (n->op == OP_EXISTS)
        return v != NULL;
    if (v == NULL)
        return compare_text(e, n, "");
    if (json_is_string(v))
        return compare_text(e, n, json_string_value(v));
    char buf[64];
    if (json_is_number(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_number_value(v));
        return compare_text(e, n, buf);
    }
    /* Anything else as its JSON text, of at most COND_MAX_JSON_TEXT bytes:
     * the dump stops there, however large the value. */
    struct dump d = {xmalloc(COND_MAX_JSON_TEXT + 1), 0};
    int r;
    if (json_dump_callback(v, dump_cb, &d, JSON_COMPACT | JSON_ENCODE_ANY) != 0) {
        char why[160];
        snprintf(why, sizeof why, "a state value longer than %d bytes as JSON text", COND_MAX_JSON_TEXT);
        r = eval_error(e, n, why);
    } else {
        d.text[d.len] = '\0';
        r = compare_text(e, n, d.text);
    }
    free(d.text);
    return r;
}

static int test_eval(struct eval *e, const struct node *n)
{
    const struct pepsi_message *m = e->m;
    char count[32];
    switch (n->field) {
    case F_SENDER_KEY:
        return compare_text(e, n, m->sender_key ? m->sender_key : "");
    case F_TUBE:
        return compare_text(e, n, m->tube ? m->tube : "");
    case F_SUBJECT:
        return compare_text(e, n, m->subject ? m->subject : "");
    case F_HEADER_FROM:
        return compare_text(e, n, m->header_from ? m->header_from : "");
    case F_ENVELOPE_SENDER:
        return compare_text(e, n, m->envelope_sender ? m->envelope_sender : "");
    case F_RECIPIENT:
        for (size_t i = 0; i < m->n_recipients; i++) {
            int r = compare_text(e, n, m->recipients[i] ? m->recipients[i] : "");
            if (r != 0)
                return r;
        }
        return 0;
    case F_RECIPIENTS:
        snprintf(count, sizeof count, "%zu", m->n_recipients);
        return compare_text(e, n, count);
    default:
        return test_state(e, n);
    }
}

static int eval_node(struct eval *e, const struct node *n)
{
    int r;
    switch (n->kind) {
    case N_OR:
    case N_AND:
        /* Short-circuit: "or" stops at the first true, "and" at the first false. */
        for (size_t i = 0; i < n->n_kids; i++)
            if ((r = eval_node(e, n->kids[i])) < 0 || r == (n->kind == N_OR))
                return r;
        return n->kind == N_AND;
    case N_NOT:
        r = eval_node(e, n->kids[0]);
        return r < 0 ? r : !r;
    default:
        return test_eval(e, n);
    }
}

int cond_eval(struct cond *c, const struct pepsi_message *m, char *err, size_t errlen)
{
    struct eval e = {c, m, {0, COND_MAX_STEPS}, err, errlen};
    return eval_node(&e, c->root);
}
